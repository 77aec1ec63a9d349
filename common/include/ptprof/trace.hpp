// The decoded trace: what one trace file holds once read, and what the
// launcher hands to the writer. Times are CLOCK_MONOTONIC nanoseconds.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ptprof::trace {

enum class EventKind : uint8_t {
  Op = 1,     // a RecordFunction scope (aten op, backward fn, user scope...)
  Range = 2,  // ptprof_range_push/pop (C API, Python ptprof.range)
  Mark = 3,   // ptprof_mark: an instant, end == start
  Step = 4,   // ProfilerStep#N span (arg = N)
  // CUDA (arg = 1 + index into Trace::cuda for all of these)
  CudaApi = 5,  // a hooked runtime/driver call, on the calling thread
  Kernel = 6,   // GPU activity, on a GPU lane thread (Thread::device >= 0)
  Memcpy = 7,   // name: Kineto's, "Memcpy HtoD (Pageable -> Device)" and so on
  Memset = 8,
  GpuSync = 9,       // CUPTI synchronization record
  GpuOverhead = 10,  // CUPTI overhead: never part of an op's CUDA time
  CuptiApi = 11,     // CUPTI's record of a runtime/driver call (correlation and timing)
  // An allocation or free: an instant on the thread that made it; arg = 1 +
  // index into Trace::memory.
  Memory = 12,
};

enum EventFlags : uint16_t {
  kTruncated = 1u << 0,  // the end was never seen (crash, kill): end is the last time seen
  kAsync = 1u << 1,
  kCallerStacks = 1u << 2,  // a backward function whose ops keep their own stacks (wire::kOpCallerStacks)
  // A Step-kind span that is no step: the time before the first step (the
  // setup: imports, the model's build) or after the last one. Kept out of
  // step counts, per-step statistics and the ProfilerStep* row.
  kBeforeSteps = 1u << 3,
  kAfterSteps = 1u << 4,
};

// Their names in a trace file.
inline constexpr std::string_view kBeforeStepsName = "before step 1";
inline constexpr std::string_view kAfterStepsName = "after the last step";

struct Event {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t name = 0;    // index into Trace::strings
  uint32_t thread = 0;  // index into Trace::threads
  EventKind kind = EventKind::Op;
  uint8_t scope = 0;    // wire::OpScope for ops
  uint16_t flags = 0;   // EventFlags
  uint32_t shapes = 0;  // index into Trace::strings of the torch-style input
                        // shapes text, e.g. "[[4, 3], [3]]"; 0 = not recorded
  int64_t seq_nr = -1;  // autograd sequence number
  uint64_t fwd_thread_id = 0;
  uint64_t arg = 0;    // Step: the step number; Op: its external correlation id
                       // (0 = none); CUDA kinds: 1 + index into Trace::cuda
  uint32_t stack = 0;  // Op: 1 + index into Trace::stacks, its call stack; 0 = none recorded
};

// An event's duration, never negative (an end before the start is damage).
inline int64_t duration_ns(const Event& e) { return e.end_ns > e.start_ns ? e.end_ns - e.start_ns : 0; }

// A Step event that is a step (not the time before or after the steps).
inline bool is_step(const Event& e) {
  return e.kind == EventKind::Step && (e.flags & (kBeforeSteps | kAfterSteps)) == 0;
}

// One frame of a call stack (FRAMES chunk).
enum class FrameKind : uint8_t { Python = 0, Native = 1 };
struct Frame {
  FrameKind kind = FrameKind::Python;
  uint32_t file = 0;      // strings index: Python: the code's file; Native: the module's path
  uint32_t function = 0;  // strings index: Python: the code's name; Native: 0 (symbolised when read)
  uint32_t line = 0;      // Python: the line
  uint64_t offset = 0;    // Native: the return address in the module's ELF image (address - load bias)
  bool operator==(const Frame&) const = default;
};

// A call stack (STACKS chunk): indices into Trace::frames, innermost first;
// Python frames first, then native ones.
struct Stack {
  std::vector<uint32_t> frames;
  bool operator==(const Stack&) const = default;
};

// How the work of a CUDA graph replay (a kernel, copy or set with a
// graph_node_id) was attributed: to the op open when its graph node was
// captured, not to the cudaGraphLaunch that replayed it.
enum class GraphCapture : uint8_t {
  None = 0,      // not graph work, or a file written before captures were recorded
  Recorded = 1,  // the capture was recorded: capture_op names the op (0: none was open)
  Outside = 2,   // the node was made while ptprof was not recording: "captured outside the window"
};

// What CUDA events carry beyond Event. Kernels, copies and sets are joined
// to the op that launched them strictly by correlation id: their
// external_id equals the launching Op's Event::arg in the same process.
// Graph work is the exception: its external_id is the op that captured its
// node (GraphCapture::Recorded), which may lie in an earlier window.
struct CudaInfo {
  uint64_t correlation_id = 0;
  uint64_t external_id = 0;  // the launching op's id; 0 = unmatched
  uint64_t stream = 0;
  uint64_t ptr = 0;
  uint64_t bytes = 0;
  uint64_t graph_node_id = 0;
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  int32_t device = -1;
  int32_t result = 0;        // CudaApi: the code returned
  uint32_t kernel_name = 0;  // CudaApi launches: strings index of the kernel
  uint8_t family = 0;        // CudaApi: wire::CudaApiFamily
  uint8_t copy_kind = 0;     // Memcpy: CUpti_ActivityMemcpyKind; CudaApi: cudaMemcpyKind
  uint32_t graph_id = 0;     // kernels, copies and sets run from a CUDA graph: CUPTI's graph id; 0 = none
  GraphCapture graph_capture = GraphCapture::None;  // graph work: how it was attributed
  uint32_t capture_op = 0;  // GraphCapture::Recorded: strings index of the capturing op's name; 0 = none
  // What CUPTI says of the work and its launch (0 where it did not say).
  uint32_t context = 0;         // kernels, copies, sets, syncs: CUDA context id
  uint32_t registers = 0;       // kernels: registers per thread
  uint32_t static_shared = 0;   // kernels: bytes of shared memory per block
  uint32_t dynamic_shared = 0;  //   (Kineto's "shared memory" is the sum)
  int64_t queued_ns = 0;        // kernels: when the launch was queued (session ns); 0 = not known
  uint32_t cbid = 0;            // CUPTI API records: the callback id of the function
  // A hooked call folded with CUPTI's record of it keeps the hook's times
  // where CUPTI's lie outside them (a replay, a poor clock fit), so that it
  // stays inside the op that made it; CUPTI's times, the ones torch.profiler
  // shows and launch latency is measured from, are then these (0: the
  // event's own).
  int64_t cupti_start_ns = 0;
  int64_t cupti_end_ns = 0;
};

// What a Memory event carries: torch's report of one allocation (bytes > 0)
// or free (bytes < 0), with the op it happened in, and for a free the
// allocation it ends when the launcher saw that allocation (this window or an
// earlier one of the same process).
struct MemoryInfo {
  uint64_t ptr = 0;
  int64_t bytes = 0;
  int64_t total_allocated = 0;  // the allocator's total after this event, as torch reports it
  int64_t total_reserved = 0;   // 0 for the CPU allocator
  int8_t device_type = 0;       // c10::DeviceType: 0 CPU, 1 CUDA, ...
  int8_t device_index = -1;
  uint32_t op = 0;         // strings index: the innermost op or range open on the thread; 0 = none
  uint32_t op_shapes = 0;  // strings index: that op's input shapes; 0 = not recorded
  // The outermost operator open on the thread (an op, not a user scope or
  // range): what the program called, e.g. aten::ones around aten::empty.
  uint32_t top_op = 0;
  uint32_t top_shapes = 0;
  // Frees only: the matching allocation, 0 when the launcher never saw it;
  // alloc_op/alloc_shapes are its top_op/top_shapes.
  int64_t alloc_ns = 0;
  uint32_t alloc_op = 0;
  uint32_t alloc_shapes = 0;
  // A CUDA segment: device memory the CUDA runtime or driver handed out
  // (cudaMalloc, cuMemAlloc*, cuMemCreate) or took back, recorded by ptprof's
  // CUDA wrappers as reserved memory: bytes is the segment's size (+/-),
  // total_reserved the process's segments on the device after it,
  // total_allocated torch's last allocated total of the device (0: none).
  bool segment = false;
  // With shapes recorded: the concrete inputs of top_op (and, for a free, of
  // the allocation's op): strings index of the text of its arguments that
  // have a value to show, e.g. "[512, 512]" for torch.ones(512, 512)
  // (shapes::concrete_text); 0 = none.
  uint32_t top_inputs = 0;
  uint32_t alloc_inputs = 0;
};

// c10::DeviceType values the analysis names.
inline constexpr int8_t kDeviceCpu = 0;
inline constexpr int8_t kDeviceCuda = 1;

// What torch knew of one collective call (its record_param_comms scope's
// facts: collective_facts.hpp), for the op event of thread `thread` that
// starts at `start_ns` (a record_param_comms op): the COLLECTIVES chunk,
// written before the events chunk that holds the op, so a reader that
// streams events has it first. Names are indices into Trace::strings (0: not
// given); -1: a number not given.
struct CollectiveInfo {
  uint32_t thread = 0;
  int64_t start_ns = 0;
  uint32_t name = 0;  // torch's collective name: "allreduce", "broadcast", ...
  uint32_t process_group = 0;
  uint32_t process_group_desc = 0;
  uint32_t dtype = 0;
  int64_t seq = -1;  // the process group's sequence number of this call
  int64_t in_elements = -1;
  int64_t out_elements = -1;
  int32_t group_size = -1;
  int32_t rank = -1;  // the process's rank in the group
  bool operator==(const CollectiveInfo&) const = default;
};

// The identity of tensors, for the memory categories (record.hpp's
// TensorGroup, the TENSORS chunk): an op's tensor inputs (kind OpInputs,
// naming its op by thread and start like CollectiveInfo) or what a module or
// optimizer held at its first call in the window (at ts_ns on `thread`).
struct TensorRef {
  uint64_t impl = 0;     // TensorImpl address
  uint64_t storage = 0;  // storage data pointer; 0 = none
  uint64_t nbytes = 0;   // max(size[i] * stride[i]) * element size
  uint16_t index = 0;    // input position, or parameter number
  int8_t device_type = 0;
  int8_t device_index = -1;
  uint8_t flags = 0;  // wire::TensorRefFlags
  uint8_t role = 0;   // wire::TensorRole
  bool operator==(const TensorRef&) const = default;
};
struct TensorGroup {
  uint32_t thread = 0;
  int64_t ts_ns = 0;   // OpInputs: the op's start; else when it was taken
  uint64_t owner = 0;  // the module's or optimizer's address; 0 for ops
  uint8_t kind = 0;    // wire::TensorGroupKind
  uint8_t flags = 0;   // wire::TensorGroupFlags
  std::vector<TensorRef> tensors;
  bool operator==(const TensorGroup&) const = default;
};

struct Process {
  int32_t pid = 0;
  int32_t ppid = 0;
  std::string cmdline;
  int64_t start_ns = 0;  // monotonic
  // Its place in a distributed job (RANK, LOCAL_RANK, WORLD_SIZE of its
  // environment; -1 = not set) and its host: the PROCESS_ATTRIBUTES chunk.
  int32_t rank = -1;
  int32_t local_rank = -1;
  int32_t world_size = -1;
  std::string host{};  // "" = not recorded (the file's header names the launcher's host)
  // What recording cost this process per event, measured by its agent at
  // start-up (cost.hpp), in picoseconds; 0 = not measured: the COSTS chunk.
  uint32_t op_cost_ps = 0;
  uint32_t record_cost_ps = 0;
  // What the agent told of it (wire::ProcessRole; process_role.hpp) and a
  // DataLoader worker's id (-1: none): PROCESS_ATTRIBUTES' appended fields.
  uint32_t role = 0;
  int32_t role_index = -1;
};

struct Thread {
  uint32_t process = 0;  // index into Trace::processes
  int32_t tid = 0;
  std::string name;
  uint64_t events = 0;   // events recorded in this file for the thread
  uint64_t dropped = 0;  // events the agent dropped (ring full) in this window
  int32_t device = -1;   // >= 0: a GPU lane of that device; tid is then the stream id
};

struct Header {
  uint32_t version = 0;
  std::string host;
  int64_t realtime_offset_ns = 0;  // wall clock = monotonic + offset
  uint32_t window = 0;             // schedule window index, 0-based
  int64_t window_start_ns = 0;
  int64_t window_end_ns = 0;
  std::string schedule;  // e.g. "wait=1,warmup=1,active=3,repeat=0" or ""
  std::string ptprof_version;
};

// The ledger of what a window lost besides ring drops (Thread::dropped):
// nothing is lost in silence. Counts are charged to the window whose file is
// written when the launcher sees them.
//
// Its fields, written once: X(field, generation), in the order the trace
// file's footer stores them (docs/format.md). A generation is a group of
// fields appended to the footer together; a file written before a generation
// existed ends before its fields. Adding a loss kind is a line here (a new
// generation at the end), then its wording in loss_lines() (losses.hpp).
#define PTPROF_LOSS_FIELDS(X)                                                                        \
  X(unnamed_events, 1)     /* recorded with an empty name: the string arena was full */              \
  X(names_refused, 1)      /* names the full string arena refused (once per thread and name) */      \
  X(lost_threads, 1)       /* threads beyond the agent's thread table: nothing of theirs recorded */ \
  X(lost_thread_events, 1) /* events those threads tried to record */                                \
  X(late_events, 1)        /* events that arrived after their window's file was written */           \
  X(malformed_bytes, 1)    /* ring bytes skipped as malformed records */                             \
  /* What a short /dev/shm cost (the agent could not reserve the memory): */                         \
  X(shm_short_threads, 2) /* threads that got no ring: nothing of theirs recorded */                 \
  X(shm_small_rings, 2)   /* threads recorded in a smaller ring than asked */                        \
  X(shm_short_names, 2)   /* names refused (also in names_refused): the arena could not grow */

struct Losses {
#define PTPROF_LOSS_MEMBER(field, generation) uint64_t field = 0;
  PTPROF_LOSS_FIELDS(PTPROF_LOSS_MEMBER)
#undef PTPROF_LOSS_MEMBER

  bool any() const;
  bool shm_short() const { return shm_short_threads || shm_small_rings || shm_short_names; }
  Losses& operator+=(const Losses& o);
  Losses& operator-=(const Losses& o);
  bool operator==(const Losses&) const = default;
};

// The fields of Losses as data: what every reader, writer and printer of the
// ledger iterates.
struct LossField {
  std::string_view name;
  uint64_t Losses::*member;
  uint32_t generation;
};

inline constexpr LossField kLossFields[] = {
#define PTPROF_LOSS_ENTRY(field, generation) {#field, &Losses::field, generation},
    PTPROF_LOSS_FIELDS(PTPROF_LOSS_ENTRY)
#undef PTPROF_LOSS_ENTRY
};

inline bool Losses::any() const {
  for (const LossField& f : kLossFields)
    if (this->*f.member) return true;
  return false;
}

inline Losses& Losses::operator+=(const Losses& o) {
  for (const LossField& f : kLossFields) this->*f.member += o.*f.member;
  return *this;
}

inline Losses& Losses::operator-=(const Losses& o) {
  for (const LossField& f : kLossFields) this->*f.member -= o.*f.member;
  return *this;
}

// A GPU as the agent described it (cuda_status.hpp, kCudaDevicePrefix): its
// entry of Kineto's deviceProperties, from the driver.
struct GpuDevice {
  int32_t id = 0;          // the CUDA device ordinal, as CudaInfo::device
  std::string properties;  // compact JSON object, Kineto's keys, "id" first
  bool operator==(const GpuDevice&) const = default;
};

struct Trace {
  Header header;
  Losses losses;
  std::vector<std::string> strings{std::string()};  // strings[0] is ""
  std::vector<Process> processes;
  std::vector<Thread> threads;
  std::vector<Event> events;                // any order; readers sort as they need
  std::vector<CudaInfo> cuda;               // referenced by CUDA events' arg
  std::vector<MemoryInfo> memory;           // referenced by Memory events' arg
  std::vector<Frame> frames;                // referenced by stacks
  std::vector<Stack> stacks;                // referenced by events' stack
  std::vector<CollectiveInfo> collectives;  // each names its op by thread and start
  std::vector<TensorGroup> tensor_groups;   // memory categories' tensor identity (TENSORS chunk)
  // The GPUs the agent described, one per id, by id: kept by the reader from
  // the names of the device marks (strings), so a summary read has them too.
  std::vector<GpuDevice> gpu_devices;
};

}  // namespace ptprof::trace
