#include "process/install_paths.hpp"

#include "process/sanitizer_runtime.hpp"
#include "ptprof/bridge_cache.hpp"

#include <unistd.h>

#include <filesystem>

namespace ptprof::launcher {

Result<InstallPaths> find_install_paths() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    return Status::error("cannot locate the ptprof executable: " + ec.message());
  }
  fs::path prefix = exe.parent_path().parent_path();
  InstallPaths p;
  p.launcher = exe.string();
  for (const fs::path& candidate :
       {prefix / PTPROF_INSTALL_LIBDIR / "libptprof_agent.so", prefix / "lib" / "libptprof_agent.so"}) {
    if (fs::exists(candidate, ec)) {
      p.agent = candidate.string();
      break;
    }
  }
  if (p.agent.empty()) {
    return Status::error("cannot find libptprof_agent.so in " + (prefix / PTPROF_INSTALL_LIBDIR).string() +
                         " (is ptprof installed completely?)");
  }
  const std::string runtime = sanitizer_runtime();
  p.preload = runtime.empty() ? p.agent : runtime + ":" + p.agent;
  for (const fs::path& candidate :
       {prefix / PTPROF_INSTALL_DATADIR / "ptprof" / "python", fs::path(PTPROF_SOURCE_PYTHON_DIR)}) {
    if (fs::exists(candidate / "ptprof" / "__init__.py", ec)) {
      p.python_dir = candidate.string();
      break;
    }
  }
  for (const fs::path& candidate :
       {prefix / PTPROF_INSTALL_DATADIR / "ptprof" / "bridge", prefix / "share" / "ptprof" / "bridge"}) {
    if (fs::exists(candidate / "agent" / "torch" / "bridge.cpp", ec)) {
      p.bridge_kit = candidate.string();
      break;
    }
  }
  p.prebuilt_bridges = (prefix / bridge::kPrebuiltDir).string();
  return p;
}

}  // namespace ptprof::launcher
