// `ptprof memory`: where the memory went, from the Memory events of traces
// recorded with PTPROF_PROFILE_MEMORY=1 — peaks per device with the op at the
// peak, allocations still live at the end of each window (leak candidates),
// allocations per op, and the allocated/reserved timeline. Pure functions of
// decoded traces; docs/memory.md describes the output.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptprof/trace.hpp"

namespace ptprof::memory {

// "CPU", "CUDA:0", or c10's number for devices this build does not name.
std::string device_name(int8_t type, int8_t index);

// The highest total_allocated and total_reserved torch reported for one
// device of one process, and where. Reserved memory is also what the CUDA
// segments (MemoryInfo::segment) add up to.
struct Peak {
  int32_t pid = 0;
  int8_t device_type = 0;
  int8_t device_index = -1;
  int64_t allocated = 0;
  int64_t allocated_ns = 0;
  std::string allocated_op;     // the outermost op at the peak's event ("" = none)
  std::string allocated_inner;  // the innermost op or range there
  std::string allocated_file;
  int64_t reserved = 0;
  int64_t reserved_ns = 0;
  std::string reserved_op;
  bool allocated_seen = false;  // some allocation or free of torch's (not only segments)
  // The Python stack of the op at each peak (with --with-stack or
  // --python-attribution): "file(line): function", innermost first; empty
  // when not recorded.
  std::vector<std::string> allocated_stack;
  std::vector<std::string> reserved_stack;
};

// Allocations still live at the end of their window, grouped by the op that
// made them (the outermost op), its input shapes and its concrete inputs.
struct LiveGroup {
  std::string op;
  std::string shapes;  // "" when not recorded
  std::string inputs;  // concrete inputs, e.g. "[512, 512]"; "" when none
  int8_t device_type = 0;
  int8_t device_index = -1;
  uint64_t count = 0;
  int64_t bytes = 0;
  int64_t block_bytes = 0;  // the size of each block when all are the same size, else 0
};

// Allocations and frees made inside each op (outermost op); for CUDA
// segments, the segments reserved and released.
struct OpMemory {
  std::string op;
  uint64_t allocs = 0;
  int64_t alloc_bytes = 0;
  uint64_t frees = 0;
  int64_t freed_bytes = 0;  // positive
};

struct TimelinePoint {
  int64_t ns = 0;
  int32_t pid = 0;
  int8_t device_type = 0;
  int8_t device_index = -1;
  int64_t allocated = 0;
  int64_t reserved = 0;
};

struct Summary {
  std::vector<std::string> files;
  uint64_t events = 0;  // Memory events read
  // Frees of blocks whose allocation no trace holds: allocated outside the
  // recorded windows (before the window), which torch tracks under
  // --profile-memory (docs/memory.md).
  uint64_t unmatched_frees = 0;
  int64_t unmatched_freed_bytes = 0;  // positive
  uint64_t earlier_frees = 0;         // frees of blocks the launcher saw allocated in an earlier window
  int64_t earlier_freed_bytes = 0;
  std::vector<Peak> peaks;              // by pid, then device
  std::vector<LiveGroup> live;          // largest bytes first
  std::vector<OpMemory> ops;            // largest alloc_bytes first
  std::vector<OpMemory> segment_ops;    // CUDA segments per op, largest alloc_bytes first
  uint64_t segment_events = 0;          // of `events`, CUDA segments
  std::vector<TimelinePoint> timeline;  // by time
};

class SummaryBuilder {
 public:
  SummaryBuilder();
  ~SummaryBuilder();
  SummaryBuilder(const SummaryBuilder&) = delete;
  SummaryBuilder& operator=(const SummaryBuilder&) = delete;
  // The trace need not outlive the call.
  void add(const std::string& path, const trace::Trace& t);
  Summary finish() &&;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// 1536 -> "1.50 KiB"; exact -> "1536".
std::string format_bytes(int64_t bytes, bool exact);

struct RenderOptions {
  bool exact_bytes = false;  // --bytes
  size_t row_limit = 20;     // 0 = all
};
std::string render_text(const Summary& s, const RenderOptions& o);
// time_ns,pid,device,allocated_bytes,reserved_bytes — one line per event.
std::string render_timeline_csv(const Summary& s);

}  // namespace ptprof::memory
