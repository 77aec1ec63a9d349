// `ptprof memory`: where the memory went, from the Memory events of traces
// recorded with PTPROF_PROFILE_MEMORY=1 — peaks per device with the op at the
// peak, allocations still live at the end of each window (leak candidates),
// allocations per op, and the allocated/reserved timeline. Pure functions of
// decoded traces; docs/memory.md describes the output.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptprof/analysis/memory_categories.hpp"
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

// Memory still allocated at the end of one step, of one process and device:
// the blocks allocated in the step's window (trace file) and not freed by the
// step's end. change = live at its end less live at its start (what the step
// left behind).
struct StepLive {
  int32_t pid = 0;
  int8_t device_type = 0;
  int8_t device_index = -1;
  uint64_t step = 0;  // the step's number (ProfilerStep#N)
  int64_t end_ns = 0;
  int64_t live = 0;
  uint64_t blocks = 0;
  int64_t change = 0;
};

// Growth (a leak): blocks allocated in a step and still live at the end of
// every later step of their window through its last step, by the op that
// allocated them (outermost op, its shapes and concrete inputs), when they
// come from two or more steps. `steps` counts the steps that left such
// blocks; bytes is what they hold at the last step's end.
struct Growth {
  std::string op;
  std::string shapes;
  std::string inputs;
  int8_t device_type = 0;
  int8_t device_index = -1;
  uint64_t steps = 0;
  uint64_t count = 0;
  int64_t bytes = 0;
  uint64_t first_step = 0;
  uint64_t last_step = 0;          // the last step of the window (where `bytes` are live)
  std::vector<std::string> stack;  // the Python stack of its first block's op, innermost first; may be empty
};

struct TimelinePoint {
  int64_t ns = 0;
  int32_t pid = 0;
  int8_t device_type = 0;
  int8_t device_index = -1;
  int64_t allocated = 0;
  int64_t reserved = 0;
};

// A CUDA allocation that failed for want of memory (the CUDA hooks saw
// cudaErrorMemoryAllocation / CUDA_ERROR_OUT_OF_MEMORY), and the memory of
// its process at that moment.
struct OutOfMemory {
  int32_t pid = 0;
  int64_t ns = 0;
  std::string api;                   // cudaMalloc, cuMemAlloc_v2, ...
  uint64_t bytes = 0;                // asked for
  std::string op;                    // the outermost op or range open on the thread ("" = none)
  std::string inner;                 // the innermost
  std::vector<std::string> stack;    // the Python stack of the innermost op, innermost first; may be empty
  std::vector<TimelinePoint> state;  // per device of the process: torch's totals and reserved at that moment
};

// Memory by category (memory_categories.hpp) of one process and device at
// one moment: the end of a step, or the moment the categories' total peaked.
struct CategoryRow {
  int32_t pid = 0;
  int8_t device_type = 0;
  int8_t device_index = -1;
  bool peak = false;
  uint64_t step = 0;  // not peak: the step whose end this is
  int64_t ns = 0;
  std::array<int64_t, kCategories> bytes{};
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
  std::vector<Peak> peaks;                 // by pid, then device
  std::vector<LiveGroup> live;             // largest bytes first
  std::vector<OpMemory> ops;               // largest alloc_bytes first
  std::vector<OpMemory> segment_ops;       // CUDA segments per op, largest alloc_bytes first
  uint64_t segment_events = 0;             // of `events`, CUDA segments
  std::vector<TimelinePoint> timeline;     // by time
  uint64_t steps = 0;                      // steps recorded (ProfilerStep spans, not before/after them)
  std::vector<StepLive> step_live;         // by pid, device, then time
  std::vector<Growth> growth;              // largest bytes first
  std::vector<OutOfMemory> out_of_memory;  // by time
  // Memory by category, where tensor identity was recorded (--profile-memory
  // with --record-shapes): rows by file, pid, device, then time; the
  // timelines torch's export_memory_timeline would write.
  std::vector<CategoryRow> categories;
  std::vector<CategoryTimeline> category_timelines;
  std::string categories_unavailable;  // why none, when no file had tensor identity
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
// The category timelines as JSON: a list of {"pid", "device", "timeline"},
// timeline being torch's export_memory_timeline [times, sizes] (times in
// microseconds; sizes [0, parameter, optimizer state, input, temporary,
// activation, gradient, autograd detail, unknown]), and "step_ends_us":
// [[step, end], ...] of its process.
std::string render_categories_json(const Summary& s);

}  // namespace ptprof::memory
