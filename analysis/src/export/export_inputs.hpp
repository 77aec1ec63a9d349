// What every export needs to know about its inputs before the first event:
// the processes and threads of all files (one entry per pid and per
// (pid, tid), however many windows they appear in) and the time base.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptprof/status.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::exporting::detail {

struct ProcessInfo {
  int32_t pid = 0;
  std::string name;  // the program's file name, as Kineto's process_name; "python3 [rank 1]" for a rank
  std::string cmdline;
  int32_t rank = -1;  // RANK of a process of a distributed job, -1 = none
};

struct ThreadInfo {
  int32_t pid = 0;
  int32_t tid = 0;
  std::string name;  // as recorded, or "thread TID" when the thread had none
};

// Kineto's `distributedInfo` for HTA: set when every process of the inputs
// that has a rank has the same one (one rank's files, its DataLoader workers
// included); HTA maps one file to one rank.
struct DistributedInfo {
  int32_t rank = -1;
  int32_t world_size = -1;  // -1: not recorded
  std::string backend;      // "gloo", "nccl", ... from its collectives' names; "" when none was recorded
};

struct InputSummary {
  std::vector<ProcessInfo> processes;  // in order of first appearance
  std::vector<ThreadInfo> threads;
  std::string host;          // of the first file
  int64_t base_wall_ns = 0;  // the earliest window start, down to a whole second
  uint64_t dropped = 0;      // events the agent dropped, all files
  size_t ranks = 0;          // distinct ranks among the processes
  std::optional<DistributedInfo> distributed;
  // The GPUs the agents described (Trace::gpu_devices), one per id, by id:
  // Kineto's deviceProperties.
  std::vector<trace::GpuDevice> gpu_devices;
  // What the events hold, when an export has looked (Kineto's top-level
  // "record_shapes" and "profile_memory"): ops with input shapes, memory events.
  bool record_shapes = false;
  bool profile_memory = false;
};

// Reads the files' metadata and footers (not their events); an error when
// one is not a readable trace.
Result<InputSummary> summarize_inputs(const std::vector<std::string>& files, std::vector<std::string>* warnings);

}  // namespace ptprof::exporting::detail
