#include "bridge/bridge_builder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "bridge/cache_dir.hpp"
#include "process/subprocess.hpp"
#include "ptprof/bridge_kit.hpp"
#include "ptprof/bridge_trust.hpp"
#include "ptprof/status.hpp"

namespace ptprof::launcher {
namespace {

using Outcome = BridgeBuildResult::Outcome;

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The compiler command: $CXX (which may carry flags, e.g. "ccache g++"), else
// the first of c++, g++, clang++ on PATH.
Result<std::vector<std::string>> find_compiler() {
  if (const char* cxx = std::getenv("CXX"); cxx && *cxx) {
    std::vector<std::string> words;
    std::istringstream in(cxx);
    for (std::string w; in >> w;) words.push_back(w);
    if (!words.empty() && !find_executable(words[0]).empty()) return words;
    return Status::error("no C++ compiler: CXX=" + std::string(cxx) +
                         " is not an executable (set CXX to a C++ compiler, or unset it)");
  }
  for (const char* name : {"c++", "g++", "clang++"})
    if (!find_executable(name).empty()) return std::vector<std::string>{name};
  return Status::error(
      "no C++ compiler: none of c++, g++, clang++ is on PATH (install one, e.g. `apt-get install g++`, or set CXX)");
}

// torch's C++ headers: torch/include beside a pip or conda torch's lib/, or
// <prefix>/include for a system torch in <prefix>/lib/<multiarch> (Debian).
Result<std::string> find_headers(const bridge::TorchInstall& torch) {
  const std::string candidates[] = {torch.lib_dir + "/../include", torch.lib_dir + "/../../include"};
  for (const auto& inc : candidates)
    if (exists(inc + "/ATen/record_function.h") && exists(inc + "/torch/csrc/api/include/torch/version.h")) return inc;
  return Status::error("no C++ headers for torch " + torch.version + " (ATen/record_function.h is in neither " +
                       candidates[0] + " nor " + candidates[1] +
                       "; pip and conda torches ship them, Debian's are in `apt-get install libtorch-dev`)");
}

// c10 sits beside libtorch_cpu; Debian names it by version (libc10.so.1.13).
std::string find_c10(const std::string& lib_dir) {
  std::string best;
  if (DIR* d = ::opendir(lib_dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind("libc10.so", 0) == 0 && (best.empty() || name.size() < best.size())) best = name;
    }
    ::closedir(d);
  }
  return best.empty() ? std::string() : lib_dir + "/" + best;
}

// Whether torch was built with the C++11 std::string ABI: its mangled names
// then mention std::__cxx11. Read from the library, so no Python is needed.
bool uses_cxx11_abi(const std::string& c10) {
  std::ifstream in(c10, std::ios::binary);
  static constexpr char kNeedle[] = "St7__cxx11";
  constexpr size_t kNeedleLen = sizeof(kNeedle) - 1;
  std::string carry;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    std::string chunk = carry + std::string(buf.data(), size_t(in.gcount()));
    if (chunk.find(kNeedle) != std::string::npos) return true;
    carry = chunk.size() >= kNeedleLen ? chunk.substr(chunk.size() - kNeedleLen) : chunk;
  }
  return false;
}

// The first line of a compiler log that says "error", to put in one line.
std::string first_error(const std::string& log) {
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find("error") != std::string::npos) return line.size() > 300 ? line.substr(0, 300) + "..." : line;
  return {};
}

std::string now_text() {
  char buf[64];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

BridgeBuildResult failed(std::string error) {
  BridgeBuildResult r;
  r.outcome = Outcome::Failed;
  r.error = std::move(error);
  return r;
}

// What the compiler needs to know of one torch.
struct Toolchain {
  std::vector<std::string> compiler;
  std::string include, c10;
  bool cxx11 = false;
};

Result<Toolchain> find_toolchain(const bridge::TorchInstall& torch) {
  Toolchain t;
  auto compiler = find_compiler();
  if (!compiler) return compiler.status();
  t.compiler = std::move(*compiler);
  auto include = find_headers(torch);
  if (!include) return include.status();
  t.include = std::move(*include);
  t.c10 = find_c10(torch.lib_dir);
  if (t.c10.empty())
    return Status::error("no libc10.so beside " + torch.library + " (an incomplete torch installation?)");
  t.cxx11 = uses_cxx11_abi(t.c10);
  return t;
}

std::vector<std::string> compile_command(const BridgeBuildRequest& req, const Toolchain& t, const std::string& out) {
  std::vector<std::string> argv = t.compiler;
  for (const char* flag : {"-std=c++20", "-O2", "-fPIC", "-shared", "-DNDEBUG", "-fvisibility=hidden",
                           "-fvisibility-inlines-hidden", "-w"})
    argv.push_back(flag);
  argv.push_back(std::string("-D_GLIBCXX_USE_CXX11_ABI=") + (t.cxx11 ? "1" : "0"));
  for (const char* dir : {"/common/include", "/agent/include", "/agent/torch"})
    argv.push_back("-I" + req.kit_dir + dir);
  // Not -isystem: for /usr/include (Debian's torch) that would reorder the
  // compiler's own system directories and break #include_next.
  if (t.include != "/usr/include" && t.include != "/usr/lib/../include") argv.push_back("-I" + t.include);
  argv.push_back("-I" + t.include + "/torch/csrc/api/include");
  for (const char* unit : bridge::kCompileUnits) argv.push_back(req.kit_dir + "/" + unit);
  // The libraries by path: Debian has no unversioned libc10.so without -dev.
  argv.insert(argv.end(), {req.torch.library, t.c10});
  if (!req.prebuilt) argv.push_back("-Wl,-rpath," + req.torch.lib_dir);
  argv.insert(argv.end(), {"-Wl,--as-needed", "-Wl,-z,now", "-o", out});
  return argv;
}

// bridge.info: what the bridge was built for and, for the check before every
// load (bridge_trust.hpp), the library's size and hash.
std::string info_text(const BridgeBuildRequest& req, const Toolchain& t, const bridge::LibraryFacts& lib,
                      double seconds) {
  const auto& torch = req.torch;
  std::ostringstream info;
  info << "torch_version = " << torch.version << "\n"
       << "libtorch_cpu = " << torch.library << "\n"
       << "libtorch_cpu_bytes = " << torch.library_bytes << "\n"
       << "headers = " << t.include << "\n"
       << "cxx11_abi = " << (t.cxx11 ? 1 : 0) << "\n"
       << "cuda = " << (exists(torch.lib_dir + "/libtorch_cuda.so") ? 1 : 0) << "\n"
       << "compiler = " << t.compiler[0] << "\n"
       << "bridge_sources = " << bridge::kSourceHash << "\n"
       << "kind = " << (req.prebuilt ? "prebuilt" : "cached") << "\n"
       << "built = " << now_text() << "\n"
       << "build_seconds = " << seconds << "\n"
       << "library_bytes = " << lib.bytes << "\n"
       << "library_hash = " << bridge::hash_text(lib.hash) << "\n";
  return info.str();
}

// One build in progress: its cache, key and work directory.
struct Build {
  const BridgeBuildRequest& req;
  const CacheDir& cache;
  std::string key;
  std::string marker() const { return "." + key + ".failed"; }
  // Remembers the failure for the rest of the run (the marker), then fails.
  BridgeBuildResult fail(const std::string& error) const {
    cache.write(marker(), req.run_id + "\n" + error);
    return failed(error);
  }
};

// Compiles into a fresh work directory and publishes it as the entry.
BridgeBuildResult compile_and_publish(const Build& b, const Toolchain& t, BridgeBuildResult r) {
  const auto& req = b.req;
  auto work = b.cache.make_work_dir("." + b.key + ".build.");
  if (!work) return b.fail(work.error());
  const std::string work_path = b.cache.path_of(*work);
  const std::string library = work_path + "/" + bridge::kLibraryName;
  const std::vector<std::string> argv = compile_command(req, t, library);
  const std::string log_path = work_path + "/" + bridge::kLogName;
  std::string cmdline;
  for (const auto& a : argv) cmdline += (cmdline.empty() ? "" : " ") + a;
  const auto t0 = std::chrono::steady_clock::now();
  Finished done = run_to_completion(argv, helper_environment(), log_path + ".out", req.timeout_s);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.compile_started = true;
  std::string log = read_file(log_path + ".out");
  ::unlink((log_path + ".out").c_str());
  write_new_file(log_path, cmdline + "\n" + log);
  if (!done.started || done.exit_status != 0) {
    const std::string kept_log = "." + b.key + ".build.log";
    b.cache.rename(*work + "/" + bridge::kLogName, kept_log);
    b.cache.remove(*work);
    std::string what =
        !done.started ? done.error
        : done.timed_out
            ? "the compiler (" + t.compiler[0] + ") did not finish within " + std::to_string(req.timeout_s) +
                  " s and was stopped (PTPROF_BRIDGE_BUILD_TIMEOUT=" + std::to_string(req.timeout_s) + ")"
            : "the compiler (" + t.compiler[0] + ") exited with status " + std::to_string(done.exit_status);
    std::string err = done.timed_out ? std::string() : first_error(log);
    auto f = b.fail(what + (err.empty() ? "" : ": " + err) + " (full log: " + b.cache.path_of(kept_log) + ")");
    f.compile_started = true;
    return f;
  }
  bridge::LibraryFacts lib;
  if (!bridge::library_facts(library, lib) ||
      !write_new_file(work_path + "/" + bridge::kInfoName, info_text(req, t, lib, r.seconds))) {
    b.cache.remove(*work);
    return b.fail("cannot write " + work_path);
  }
  // Publish whole or not at all: readers only ever see a complete entry.
  if (auto published = b.cache.publish(*work, b.key); !published) return b.fail(published.message());
  b.cache.unlink(b.marker());
  r.outcome = Outcome::Built;
  return r;
}

}  // namespace

BridgeBuildResult build_bridge(const BridgeBuildRequest& req) {
  const auto& torch = req.torch;
  if (torch.library.empty()) return failed("no libtorch_cpu.so to build against");
  if (req.cache_root.empty()) return failed("no cache directory: set PTPROF_BRIDGE_CACHE (or XDG_CACHE_HOME or HOME)");
  if (!exists(req.kit_dir + "/agent/torch/bridge.cpp"))
    return failed("the bridge sources are missing from " + req.kit_dir + " (is ptprof installed completely?)");
  auto cache = CacheDir::open(req.cache_root);
  if (!cache) return failed(cache.error());

  const Build b{
      req, *cache,
      req.prebuilt ? bridge::prebuilt_key(torch, bridge::kSourceHash) : bridge::cache_key(torch, bridge::kSourceHash)};
  BridgeBuildResult r;
  r.dir = cache->path_of(b.key);
  r.library = r.dir + "/" + bridge::kLibraryName;

  auto lock = cache->lock("." + b.key + ".lock", req.timeout_s, [&req] {
    if (req.on_lock_wait) req.on_lock_wait(req);
  });
  if (!lock) return failed(lock.error());
  auto verdict = bridge::check_entry(cache->path(), b.key, &torch, bridge::kSourceHash);
  if (!req.force && verdict.ok()) {
    r.outcome = Outcome::Cached;
    return r;
  }
  if (verdict.kind == bridge::Verdict::Kind::Untrusted) return failed(verdict.why);
  if (!req.run_id.empty()) {
    std::string text = cache->read(b.marker());
    auto nl = text.find('\n');
    if (nl != std::string::npos && text.substr(0, nl) == req.run_id) {
      auto f = failed(text.substr(nl + 1));
      f.failed_before = true;
      return f;
    }
  }
  const std::string broken =
      verdict.kind == bridge::Verdict::Kind::Broken ? "the cached torch bridge is broken (" + verdict.why + ")" : "";
  if (req.no_build)
    return b.fail(broken.empty()
                      ? "none is cached in " + req.cache_root + " and PTPROF_BRIDGE_BUILD=0 forbids building one"
                      : broken + " and PTPROF_BRIDGE_BUILD=0 forbids rebuilding it");
  auto toolchain = find_toolchain(torch);
  if (!toolchain) return b.fail(toolchain.error());
  if (req.on_compile_start) req.on_compile_start(req, broken);
  return compile_and_publish(b, *toolchain, std::move(r));
}

}  // namespace ptprof::launcher
