// Loads the torch bridge once libtorch is in the process, however it got
// there. The dlopen hook (api/libc_hooks.cpp) asks after every library load; nothing
// is loaded before libtorch is, so a process without torch never sees it.
// The bridge is compiled per torch: the one for this process's torch comes
// from the bridge cache (ptprof/bridge_cache.hpp), built on demand by
// `ptprof bridge build` the first time a torch is met.
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "base/real_libc.hpp"
#include "ptprof/bridge_api.h"
#include "ptprof/bridge_cache.hpp"
#include "ptprof/bridge_kit.hpp"
#include "ptprof/bridge_trust.hpp"
#include "ptprof/torch_version.hpp"
#include "runtime/runtime.hpp"

extern char** environ;

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

// The directory this agent library was loaded from.
std::string agent_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&libtorch_loaded), &info) && info.dli_fname) {
    std::string self = info.dli_fname;
    auto slash = self.rfind('/');
    return slash == std::string::npos ? "." : self.substr(0, slash);
  }
  return ".";
}

// Runs `ptprof bridge build` for `torch` and waits: the process is in the
// middle of importing torch, which waits with it (seconds, once per torch).
// The builder tells the user what happens, on the target's stderr; it also
// remembers a failure for the rest of the run, so that it is said once (a
// marker in the cache, and the session's said_once where that cannot be
// written: `--for-run` names the session).
// Returns whether the builder said it succeeded (false when unknown).
bool build_bridge(const bridge::TorchInstall& torch, bool allowed) {
  const char* launcher_env = std::getenv(env::kLauncher);
  std::string launcher = launcher_env && *launcher_env ? launcher_env : agent_dir() + "/../bin/ptprof";
  const char* session = std::getenv(wire::kSessionEnv);
  const char* argv[] = {launcher.c_str(),
                        "bridge",
                        "build",
                        "--libtorch",
                        torch.library.c_str(),
                        "--for-run",
                        session ? session : "",
                        allowed ? nullptr : "--no-build",
                        nullptr};
  // The builder must not load the agent (it would join this session).
  std::vector<char*> envp;
  const size_t session_len = std::strlen(wire::kSessionEnv);
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "LD_PRELOAD=", 11) == 0) continue;
    if (std::strncmp(*e, wire::kSessionEnv, session_len) == 0 && (*e)[session_len] == '=') continue;
    envp.push_back(*e);
  }
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // Its stdout carries the bridge's path, which is not the target's output.
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, launcher.c_str(), &actions, nullptr, const_cast<char**>(argv), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    if (g_runtime.first_to_say(wire::kSaidBuilderMissing))
      log(Level::Warn, "no torch bridge for torch %s and cannot run %s to build one (%s); operator events are off",
          torch.version.c_str(), launcher.c_str(), std::strerror(rc));
    return false;
  }
  // The import holds the GIL: without this every other Python thread of the
  // target (a heartbeat, a data loader) stops until the build is done.
  GilReleased others_run(g_runtime.python().api());
  int status = 0;
  // ECHILD: the target ignores SIGCHLD, so the child was reaped for us; the
  // caller looks for the bridge either way.
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return false;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// PTPROF_TORCH_BRIDGE: loaded as given, but only when it passes the same
// ownership check as the cache's (bridge_trust.hpp); it has no bridge.info.
std::string explicit_bridge(const char* path) {
  auto verdict = bridge::check_explicit(path);
  if (verdict.ok()) return path;
  if (g_runtime.first_to_say(wire::kSaidBridgeRefused))
    log(Level::Warn, "refusing the torch bridge %s=%s: %s; operator events are off", env::kTorchBridge, path,
        verdict.why.c_str());
  return {};
}

// One prebuilt for this torch where ptprof was built (the wheel), found
// beside this agent: no compiler needed. The agent is in <prefix>/lib, or
// <prefix>/lib/<multiarch> in a system install. One that fails the check is
// skipped with one line (a build may still provide one).
std::string prebuilt_bridge(const bridge::TorchInstall& torch) {
  const std::string key = bridge::prebuilt_key(torch, bridge::kSourceHash);
  for (const char* up : {"/..", "/../.."}) {
    const std::string root = agent_dir() + up + "/" + bridge::kPrebuiltDir;
    auto verdict = bridge::check_entry(root, key, &torch, bridge::kSourceHash);
    if (verdict.kind == bridge::Verdict::Kind::Missing) continue;
    if (!verdict.ok()) {
      if (g_runtime.first_to_say(wire::kSaidPrebuiltSkipped))
        log(Level::Warn, "skipping the prebuilt torch bridge for torch %s: %s", torch.version.c_str(),
            verdict.why.c_str());
      continue;
    }
    std::string prebuilt = root;
    prebuilt.append("/").append(key).append("/").append(bridge::kLibraryName);
    log(Level::Info, "torch %s: the prebuilt torch bridge %s", torch.version.c_str(), prebuilt.c_str());
    return prebuilt;
  }
  return {};
}

// The bridge for the torch in this process: PTPROF_TORCH_BRIDGE, else the
// cache's entry for this torch, else one prebuilt for it beside the agent
// (share/ptprof/bridges: the wheel's), else one built now. Every candidate
// passes bridge_trust.hpp's checks first. Empty when there is none to load;
// every reason has been told to the user.
std::string find_bridge(const Config& config) {
  if (const char* p = std::getenv(env::kTorchBridge); p && *p) return explicit_bridge(p);
  const auto loaded = torch_bridge::loaded_torch_libraries();
  if (loaded.size() != 1) {
    std::string paths;
    for (const auto& t : loaded) paths += (paths.empty() ? "" : ", ") + t.path;
    if (g_runtime.first_to_say(wire::kSaidTorchLibraries))
      log(Level::Warn, "the process has %zu torch libraries (%s); operator events are off", loaded.size(),
          loaded.empty() ? "libtorch without libtorch_cpu" : paths.c_str());
    return {};
  }
  const auto torch = bridge::describe_torch(loaded.front().path);
  const std::string& root = config.bridge_cache;  // read at start: a chdir since must not move it
  if (torch.library.empty() || root.empty()) {
    if (g_runtime.first_to_say(wire::kSaidNoBridgeCache))
      log(Level::Warn, "%s; operator events are off",
          root.empty() ? "no bridge cache directory (set PTPROF_BRIDGE_CACHE, XDG_CACHE_HOME or HOME)"
                       : "cannot read the process's libtorch_cpu");
    return {};
  }
  const std::string key = bridge::cache_key(torch, bridge::kSourceHash);
  std::string path = root;
  path.append("/").append(key).append("/").append(bridge::kLibraryName);
  auto cached = bridge::check_entry(root, key, &torch, bridge::kSourceHash);
  if (cached.ok()) return path;
  if (cached.kind == bridge::Verdict::Kind::Untrusted) {
    if (g_runtime.first_to_say(wire::kSaidBridgeRefused))
      log(Level::Warn, "refusing the torch bridge cache: %s; operator events are off (docs/security.md)",
          cached.why.c_str());
    return {};
  }
  // Missing, or broken: the builder replaces a broken entry and says so.
  if (cached.kind == bridge::Verdict::Kind::Missing)
    if (std::string prebuilt = prebuilt_bridge(torch); !prebuilt.empty()) return prebuilt;
  // With PTPROF_BRIDGE_BUILD=0 the builder only says that there is none, once
  // per run however many processes import torch.
  const bool built = build_bridge(torch, config.bridge_build);
  auto after = bridge::check_entry(root, key, &torch, bridge::kSourceHash);
  if (after.ok()) return path;
  if (built && g_runtime.first_to_say(wire::kSaidBuiltUnusable))  // the builder and this agent disagree
    log(Level::Warn, "the torch bridge was built but %s; operator events are off",
        after.why.empty() ? ("is not at " + path).c_str() : after.why.c_str());
  return {};
}

}  // namespace

void Runtime::maybe_load_torch_bridge() {
  if (!active() || bridge_state_.load(std::memory_order_acquire) != BridgeState::NotLoaded) return;
  if (!config_->activities.cpu) return;
  if (!libtorch_loaded()) return;
  BridgeState expected = BridgeState::NotLoaded;
  if (!bridge_state_.compare_exchange_strong(expected, BridgeState::Loading)) return;

  std::string path = find_bridge(*config_);
  if (path.empty()) {
    bridge_state_.store(BridgeState::Failed, std::memory_order_release);
    return;
  }
  void* h = real_dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* err = dlerror();
    if (first_to_say(wire::kSaidBridgeLoadFailed))
      log(Level::Warn, "torch bridge %s could not be loaded (%s); operator events are off", path.c_str(),
          err ? err : "unknown error");
    bridge_state_.store(BridgeState::Failed, std::memory_order_release);
    return;
  }
  auto init = reinterpret_cast<ptprof_torch_bridge_init_fn>(dlsym(h, "ptprof_torch_bridge_init"));
  char why[512] = {};
  void (*set_recording)(int) = nullptr;
  if (!init || init(&set_recording, why, sizeof why) != 0) {
    // A bridge that fails without saying why must still leave a line that says what happened.
    const char* said = !init    ? "torch bridge has no ptprof_torch_bridge_init; operator events are off"
                       : why[0] ? why
                                : "torch bridge failed to initialise and gave no reason; operator events are off";
    if (first_to_say(wire::kSaidBridgeLoadFailed)) log(Level::Warn, "%s", said);
    bridge_state_.store(BridgeState::Failed, std::memory_order_release);
    return;
  }
  windows_.install_bridge_switch(set_recording);
  // Absent from a bridge built before it existed: then nothing steps aside.
  bridge_step_aside_.store(reinterpret_cast<void (*)()>(dlsym(h, "ptprof_torch_bridge_step_aside")),
                           std::memory_order_release);
  bridge_state_.store(BridgeState::Loaded, std::memory_order_release);
  log(Level::Debug, "torch bridge loaded from %s", path.c_str());
}

}  // namespace ptprof::agent
