// Loads the torch bridge once libtorch is in the process, however it got
// there. The dlopen hook (hooks.cpp) asks after every library load; nothing
// is loaded before libtorch is, so a process without torch never sees it.
#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "bridge_api.h"
#include "log.hpp"
#include "runtime.hpp"
#include "thread_state.hpp"
#include "torch_version.hpp"

namespace ptprof::agent {
namespace {

int find_libtorch(dl_phdr_info* info, size_t, void* found) {
  const char* name = info->dlpi_name;
  if (name && (std::strstr(name, "/libtorch_cpu.so") || std::strstr(name, "/libtorch.so"))) {
    *static_cast<bool*>(found) = true;
    return 1;
  }
  return 0;
}

bool libtorch_loaded() {
  bool found = false;
  dl_iterate_phdr(find_libtorch, &found);
  return found;
}

std::string bridge_path() {
  if (const char* p = std::getenv(env::kTorchBridge); p && *p) return p;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&libtorch_loaded), &info) && info.dli_fname) {
    std::string self = info.dli_fname;
    auto slash = self.rfind('/');
    std::string dir = slash == std::string::npos ? "." : self.substr(0, slash);
    return dir + "/libptprof_torch.so";
  }
  return "libptprof_torch.so";
}

// Whether the torch in the process is the one the bridge was built for. The
// bridge itself checks again; this check keeps us from dlopen-ing a bridge
// that would drag a second libtorch into the process.
bool torch_matches_bridge() {
#ifdef PTPROF_TORCH_BUILT_VERSION
  int built_major = -1, built_minor = -1;
  if (!torch_bridge::parse_major_minor(PTPROF_TORCH_BUILT_VERSION, built_major, built_minor)) return true;
  for (const auto& t : torch_bridge::loaded_torch_libraries()) {
    if (t.major < 0) continue;  // unknown: let the bridge decide
    if (t.major != built_major || t.minor != built_minor) {
      log(Level::Warn,
          "ptprof's torch bridge was built for torch %s but the process has torch %s (%s); operator events are "
          "off (rebuild ptprof against this torch)",
          PTPROF_TORCH_BUILT_VERSION, t.version.c_str(), t.path.c_str());
      return false;
    }
  }
#endif
  return true;
}

}  // namespace

// Defined in hooks.cpp: glibc's dlopen, bypassing our interposer.
void* real_dlopen(const char* file, int mode);

void Runtime::maybe_load_torch_bridge() {
  if (!active() || bridge_state_.load(std::memory_order_acquire) != 0) return;
  if (!config_->activities.cpu) return;
  if (!libtorch_loaded()) return;
  int expected = 0;
  if (!bridge_state_.compare_exchange_strong(expected, 1)) return;

  if (!torch_matches_bridge()) {
    bridge_state_.store(3, std::memory_order_release);
    return;
  }
  std::string path = bridge_path();
  void* h = real_dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* err = dlerror();
    log(Level::Warn, "torch bridge %s could not be loaded (%s); operator events are off", path.c_str(),
        err ? err : "unknown error");
    bridge_state_.store(3, std::memory_order_release);
    return;
  }
  auto init = reinterpret_cast<ptprof_torch_bridge_init_fn>(dlsym(h, "ptprof_torch_bridge_init"));
  char why[512] = {};
  void (*set_recording)(int) = nullptr;
  if (!init || init(&set_recording, why, sizeof why) != 0) {
    log(Level::Warn, "%s", init ? why : "torch bridge has no ptprof_torch_bridge_init; operator events are off");
    bridge_state_.store(3, std::memory_order_release);
    return;
  }
  {
    // Publish under step_mu_ so a concurrent step change cannot miss it.
    std::lock_guard lock(step_mu_);
    bridge_set_recording_ = set_recording;
    if (set_recording) set_recording(recording() ? 1 : 0);
    // No operator can run before torch is loaded: a first step still in
    // progress restarts here, so that it does not hold the import of torch.
    if (step_ == 0 && recording()) {
      if (ThreadState* t = thread_state()) t->write(wire::RecordType::Step, 0, t->now());
    }
  }
  bridge_state_.store(2, std::memory_order_release);
  log(Level::Debug, "torch bridge loaded from %s", path.c_str());
}

}  // namespace ptprof::agent
