// `ptprof memory --snapshot FILE`: a memory snapshot in PyTorch's format
// (torch.cuda.memory._snapshot(): a pickled dict of plain lists and dicts),
// which PyTorch's memory viewer (pytorch.org/memory_viz) and the functions of
// torch.cuda._memory_viz read, built from what ptprof recorded: torch's
// CUDA allocator reports (alloc, free), the CUDA hooks' segments
// (segment_alloc, segment_free) and failed allocations (oom), with the
// Python stacks of the ops that made them where recorded; the segments and
// their blocks as they stood at the end of the recorded data.
// docs/memory.md, "Snapshots".
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "ptprof/trace.hpp"

namespace ptprof::memory {

struct Snapshot {
  std::string pickle;     // the file's bytes
  int32_t pid = 0;        // the process it describes (the one with the most CUDA memory events)
  size_t processes = 0;   // processes with CUDA memory events or failed allocations
  uint64_t entries = 0;   // trace entries (alloc, free_requested, free_completed, segment_*, oom)
  uint64_t segments = 0;  // segments live at the end
  uint64_t blocks = 0;    // torch's blocks live in them (active_allocated)
  uint64_t ooms = 0;
};

class SnapshotBuilder {
 public:
  SnapshotBuilder();
  ~SnapshotBuilder();
  SnapshotBuilder(const SnapshotBuilder&) = delete;
  SnapshotBuilder& operator=(const SnapshotBuilder&) = delete;
  // The trace need not outlive the call.
  void add(const trace::Trace& t);
  Snapshot finish() &&;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ptprof::memory
