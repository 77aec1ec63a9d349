// PTPROF_* environment: the one place that names the variables, parses and
// validates them. The launcher checks everything before it starts the target
// (exit 2 on error); the agent reads the same variables with the same code.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ptprof/schedule.hpp"
#include "ptprof/status.hpp"

namespace ptprof {

namespace env {
inline constexpr const char* kSchedule = "PTPROF_SCHEDULE";
inline constexpr const char* kStep = "PTPROF_STEP";
inline constexpr const char* kActivities = "PTPROF_ACTIVITIES";
inline constexpr const char* kRecordShapes = "PTPROF_RECORD_SHAPES";
inline constexpr const char* kProfileMemory = "PTPROF_PROFILE_MEMORY";
inline constexpr const char* kWithStack = "PTPROF_WITH_STACK";
// 1: each operator called from Python carries the line of the user's code
// that called it (the innermost frame outside the standard library and
// site-packages), cheap enough to leave on. PTPROF_WITH_STACK supersedes it.
inline constexpr const char* kPythonAttribution = "PTPROF_PYTHON_ATTRIBUTION";
// 0: PTPROF_WITH_STACK records Python frames only, no native ones (which
// cost most of a stack: an unwind of the whole native stack per op).
inline constexpr const char* kNativeStack = "PTPROF_NATIVE_STACK";
inline constexpr const char* kOutput = "PTPROF_OUTPUT";
inline constexpr const char* kOnTraceReady = "PTPROF_ON_TRACE_READY";
inline constexpr const char* kLogLevel = "PTPROF_LOG_LEVEL";
inline constexpr const char* kRingKb = "PTPROF_RING_KB";            // per-thread ring size
inline constexpr const char* kNamesMb = "PTPROF_NAMES_MB";          // string arena's limit, MiB
inline constexpr const char* kTorchBridge = "PTPROF_TORCH_BRIDGE";  // a bridge to load, not the cache's
inline constexpr const char* kBridgeCache = "PTPROF_BRIDGE_CACHE";  // see bridge_cache.hpp
inline constexpr const char* kBridgeBuild = "PTPROF_BRIDGE_BUILD";  // 0: never build on demand
// Seconds a bridge build (its wait for another build's lock included) may
// take before it is given up: a hung compiler must not hang `import torch`.
inline constexpr const char* kBridgeBuildTimeout = "PTPROF_BRIDGE_BUILD_TIMEOUT";
inline constexpr const char* kLauncher = "PTPROF_LAUNCHER";                 // set by ptprof run: its own path
inline constexpr const char* kOnDemand = "PTPROF_ON_DEMAND";                // 1: record only what `ptprof trigger` asks
inline constexpr const char* kWaitDescendants = "PTPROF_WAIT_DESCENDANTS";  // 1: wait for the whole tree
}  // namespace env

struct Activities {
  bool cpu = true;
  bool cuda = true;
};

struct Config {
  Schedule schedule;
  StepRule step;
  Activities activities;
  bool record_shapes = false;
  bool profile_memory = false;
  bool with_stack = false;
  bool python_attribution = false;
  bool native_stack = true;  // with with_stack: native frames too
  std::string output = "./ptprof-out";
  std::string on_trace_ready;
  std::string log_level = "warn";
  uint64_t ring_bytes = 0;                // 0: default
  uint64_t names_bytes = 0;               // the string arena's capacity; 0: default (wire::kStringArenaBytes)
  bool bridge_build = true;               // build a missing torch bridge on demand
  uint32_t bridge_build_timeout_s = 600;  // PTPROF_BRIDGE_BUILD_TIMEOUT
  // The bridge cache's root, absolute, as it was when the variables were
  // read (bridge::cache_root); empty when there is none.
  std::string bridge_cache;
  bool on_demand = false;  // no schedule: windows only when `ptprof trigger` asks
  // ptprof run waits for the target's whole process tree, not only the
  // target (and a grace period for its descendants).
  bool wait_descendants = false;
};

// Reads the PTPROF_* variables through `getenv_fn` (getenv in production).
// An error when any value is malformed: one line per bad variable.
using GetEnv = std::function<const char*(const char*)>;
Result<Config> config_from_env(const GetEnv& getenv_fn);

}  // namespace ptprof
