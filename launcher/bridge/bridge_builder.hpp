// Builds the torch bridge for one torch installation into the bridge cache
// (common/include/ptprof/bridge_cache.hpp): finds a compiler and torch's
// headers, compiles the bridge kit against that torch's own libraries, and
// publishes the result atomically. Concurrent builds of the same torch (two
// ranks starting together) wait for each other on a lock file, for at most
// the build's time limit. Every write to the cache goes through CacheDir
// (cache_dir.hpp): a verified root, no link followed.
#pragma once
#include <string>

#include "ptprof/bridge_cache.hpp"

namespace ptprof::launcher {

struct BridgeBuildRequest {
  bridge::TorchInstall torch;
  std::string kit_dir;     // share/ptprof/bridge
  std::string cache_root;  // bridge::cache_root()
  bool force = false;      // rebuild even when cached
  bool no_build = false;   // PTPROF_BRIDGE_BUILD=0: fail unless cached
  // Build a bridge to ship with ptprof (cache_root is then an install's
  // share/ptprof/bridges): keyed without the torch's path, which differs in
  // every environment that installs the same torch, and linked without an
  // rpath into this machine (the target process has torch loaded already).
  bool prebuilt = false;
  // Set when the agent asks during a run: a build that failed earlier in the
  // same run is not tried again (each process of the run would otherwise pay
  // for the same failure).
  std::string run_id;
  // Called once the quick checks have passed, just before compiling (seconds
  // of work): lets the caller say what is happening. `replacing`: why the
  // cached entry is broken, when the build replaces one (else empty).
  void (*on_compile_start)(const BridgeBuildRequest&, const std::string& replacing) = nullptr;
  // Called once when another process holds the build's lock.
  void (*on_lock_wait)(const BridgeBuildRequest&) = nullptr;
  // The most seconds the wait for that lock, and the compile, may each take
  // (PTPROF_BRIDGE_BUILD_TIMEOUT).
  int timeout_s = 600;
};

struct BridgeBuildResult {
  enum class Outcome { Built, Cached, Failed } outcome = Outcome::Failed;
  std::string dir;               // the cache entry (Built, Cached)
  std::string library;           // dir/libptprof_torch.so
  double seconds = 0;            // compile time (Built)
  std::string error;             // what went wrong and what to do (Failed)
  bool failed_before = false;    // Failed: a marker from earlier in this run
  bool compile_started = false;  // on_compile_start was called
};

BridgeBuildResult build_bridge(const BridgeBuildRequest& request);

}  // namespace ptprof::launcher
