// Event records as the agent writes them into a thread's ring.
//
// Every record starts with the same 16-byte header and is a multiple of 8 bytes
// long. The thread is implicit: each ring belongs to one thread (its slot in the
// process region names it), so the header spends no bytes on it. Timestamps are
// raw clock ticks of the session's clock (see clock.hpp); the launcher converts
// them to nanoseconds.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

namespace ptprof::wire {

enum class RecordType : uint16_t {
  Pad = 0,                   // filler up to the end of the ring; skip `size` bytes
  RangePush = 1,             // arg = name id
  RangePop = 2,              // closes the innermost open range of the thread
  Mark = 3,                  // arg = name id; an instant
  Step = 4,                  // arg = number of the step that begins at ts (ProfilerStep#arg)
  OpBegin = 5,               // arg = name id; payload OpBeginPayload [+ encoded shapes]
  OpEnd = 6,                 // payload OpEndPayload
                             // 7: reserved (kReservedRecordType)
  CudaApi = 8,               // arg = name id of the entry point; payload CudaApiPayload; ts = call
  GpuActivity = 9,           // arg = name id (kernel name; 0 otherwise); payload GpuActivityPayload
  ExternalCorrelation = 10,  // payload ExternalCorrelationPayload; ts = when CUPTI reported it
  MemoryEvent = 11,          // payload MemoryEventPayload; an allocation or free, on the thread that made it
  StackDef = 12,             // arg = stack id (per thread, 1-based); payload StackDefPayload + frames
  Collective = 13,           // arg = name id of the collective ("allreduce"); payload CollectivePayload
  GraphNode = 14,            // payload GraphNodePayload; a CUDA graph node created or cloned (CUPTI's callback)
  TensorGroup = 15,          // payload TensorGroupPayload + `count` TensorRefRecord
};
// Types this version knows; a reader skips records of any other type.
constexpr uint16_t kRecordTypeCount = 16;
// Type 7 was to carry a thread's new name, which no version ever wrote. Its
// number stays taken, so that no later type means something else by it, and
// so does its entry in kRecordTypes: readers skip it as they always have.
constexpr RecordType kReservedRecordType = RecordType{7};

struct RecordHeader {
  uint16_t type;  // RecordType
  uint16_t size;  // whole record in bytes, header included, multiple of 8
  uint32_t arg;   // type-specific (usually an interned name id)
  uint64_t ts;    // raw clock ticks
};
static_assert(sizeof(RecordHeader) == 16);

// The scope of a RecordFunction. Numerically equal to at::RecordScope of
// torch 1.13 and 2.x; the bridge maps by name, so a torch that renumbers
// does not change the trace.
enum class OpScope : uint8_t {
  Function = 0,
  BackwardFunction = 1,
  TorchScriptFunction = 2,
  KernelFunctionDtype = 3,
  CustomClass = 4,
  BuildFeature = 5,
  LiteInterpreter = 6,
  UserScope = 7,
  StaticRuntimeOp = 8,
  StaticRuntimeModel = 9,
  Unknown = 255,
};

enum OpFlags : uint8_t {
  kOpHasShapes = 1u << 0,  // shapes were recorded: shapes_bytes of shapes.hpp encoding follow (0 bytes: no inputs)
  kOpAsync = 1u << 1,
  // A backward function whose ops torch.profiler attributes to the Python
  // frame that runs them (the caller of backward(): torch 2.x), not to the
  // forward op of its sequence number (torch 1.x). Set by the bridge.
  kOpCallerStacks = 1u << 2,
};

struct OpBeginPayload {
  uint64_t handle;         // RecordFunction handle; matches OpEnd
  int64_t seq_nr;          // autograd sequence number, -1 if none
  uint64_t fwd_thread_id;  // forward thread id for backward ops, 0 if none
  uint8_t scope;           // OpScope
  uint8_t flags;           // OpFlags
  uint16_t shapes_bytes;   // length of encoded shapes that follow (unpadded)
  uint32_t stack;          // the thread's stack id (a StackDef written earlier in this ring); 0 = none
};
static_assert(sizeof(OpBeginPayload) == 32);

struct OpEndPayload {
  uint64_t handle;
};

// One call of a hooked CUDA runtime or driver entry point, written by the
// wrapper on the calling thread when the call returns.
enum class CudaApiFamily : uint8_t { Runtime = 0, Driver = 1 };

struct CudaApiPayload {
  uint64_t end_ts;          // raw ticks when the call returned
  uint64_t correlation_id;  // CUPTI's correlation id of this call, 0 when CUPTI was not recording
  uint64_t stream;          // cudaStream_t / CUstream as an integer; 0 = default stream or none
  uint64_t ptr;             // the pointer argument or result (allocation, free, copy destination); 0 = none
  uint64_t bytes;           // bytes allocated, copied or set; 0 = none
  uint32_t grid[3];         // launches; 0 otherwise
  uint32_t block[3];
  int32_t result;        // cudaError_t / CUresult as returned to the caller
  uint32_t kernel_name;  // name id of the launched kernel; 0 = unknown or not a launch
  uint8_t family;        // CudaApiFamily
  uint8_t copy_kind;     // cudaMemcpyKind of a copy; 0 otherwise
  uint16_t reserved0;
  uint32_t reserved1;
};
static_assert(sizeof(CudaApiPayload) == 80);

// What a GpuActivity record describes (one CUPTI activity record each).
enum class GpuActivityKind : uint8_t {
  Kernel = 1,
  Memcpy = 2,
  Memset = 3,
  Sync = 4,        // CUPTI_ACTIVITY_KIND_SYNCHRONIZATION
  Overhead = 5,    // CUPTI's own overhead: reported apart, never added to kernel time
  RuntimeApi = 6,  // CUPTI's record of a runtime call (gives the launch's correlation id and time)
  DriverApi = 7,
};

// Activity taken from CUPTI's buffers, written by the agent on the thread
// CUPTI hands completed buffers to. ts and end_ts are raw ticks of the
// session's clock: the agent converts GPU timestamps before writing.
struct GpuActivityPayload {
  uint64_t end_ts;
  uint64_t correlation_id;  // CUPTI correlation id (links to the API call and to ExternalCorrelation)
  uint64_t bytes;           // memcpy / memset bytes
  uint64_t graph_node_id;   // kernels launched from a CUDA graph; 0 = none
  uint32_t device;
  uint32_t context;
  uint32_t stream;
  uint8_t kind;        // GpuActivityKind
  uint8_t copy_kind;   // CUpti_ActivityMemcpyKind for Memcpy; CUpti_ActivityOverheadKind for Overhead
  uint16_t registers;  // Kernel: registers per thread
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t graph_id;  // 0 = none
  int32_t thread;     // RuntimeApi/DriverApi: the calling thread's tid; 0 otherwise
  // Kernel: shared memory per block, bytes (Kineto's "shared memory" is their sum).
  uint32_t static_shared;
  uint32_t dynamic_shared;
  uint64_t queued_ts;  // Kernel: when the launch was queued (session ticks, as ts); 0 = CUPTI did not say
  uint32_t cbid;       // RuntimeApi/DriverApi: CUPTI's callback id of the function
  uint32_t reserved0;
};
static_assert(sizeof(GpuActivityPayload) == 104);

// CUPTI's EXTERNAL_CORRELATION record: the correlation id of a CUDA call made
// while the bridge had pushed an op's handle as the external id.
struct ExternalCorrelationPayload {
  uint64_t correlation_id;
  uint64_t external_id;  // OpBeginPayload::handle of the op
};

// A CUDA graph node was created (stream capture, or a graph built by its
// API) or cloned (cudaGraphInstantiate and cudaGraphClone copy every node,
// and the kernels a replay runs name the copy's id). Written by CUPTI's
// resource callback on the thread that made the node, so the op open there
// is the op the node's work belongs to: a replay's kernels are attributed to
// it rather than to the cudaGraphLaunch call. Only while CUPTI is held (a
// recording window); a node made when it was not is unknown to the launcher.
struct GraphNodePayload {
  uint64_t node_id;      // cuptiGetGraphNodeId of the node
  uint64_t original_id;  // cloned: the node it was cloned from; 0 = created
  uint64_t op;           // created: OpBeginPayload::handle of the innermost op open on the thread; 0 = none
  uint32_t graph_id;     // cuptiGetGraphId of the graph holding the node; 0 = unknown
  uint32_t reserved0;
};
static_assert(sizeof(GraphNodePayload) == 32);

// Where a MemoryEvent comes from.
enum class MemorySource : uint8_t {
  Torch = 0,         // torch's report to a profiler (c10::reportMemoryUsageToProfiler)
  CudaSegment = 1,   // device memory from the CUDA runtime or driver (cudaMalloc, cuMemAlloc*): reserved memory
  CudaPhysical = 2,  // physical memory of cuMemCreate; ptr is the allocation handle
};

// One allocation (bytes > 0) or free (bytes < 0) as torch reports it to a
// profiler (c10::reportMemoryUsageToProfiler), written on the thread that
// made it, inside whatever op is open there. A CUDA segment (source != Torch)
// is written by the CUDA wrappers whenever PTPROF_PROFILE_MEMORY is set,
// windows or not, so that the launcher knows every live segment: its free
// has bytes 0 (the size is the launcher's to find) and no totals.
struct MemoryEventPayload {
  uint64_t ptr;
  int64_t bytes;
  int64_t total_allocated;  // the allocator's total after this event (CPU: blocks allocated while profiled)
  int64_t total_reserved;   // 0 for the CPU allocator
  int8_t device_type;       // c10::DeviceType: 0 CPU, 1 CUDA, ...
  int8_t device_index;      // -1: none
  uint8_t source;           // MemorySource
  uint8_t reserved0[5];
};
static_assert(sizeof(MemoryEventPayload) == 40);

// What torch knows of one collective call (its ParamCommsDebugInfo and the
// inputs of its `record_param_comms` scope), written right after that
// scope's OpBegin on the same thread: it describes the op `handle` names.
enum CollectiveFields : uint8_t {
  kCollectiveSeq = 1u << 0,            // seq holds the process group's sequence number
  kCollectiveGroupSize = 1u << 1,      // group_size holds the group's size
  kCollectiveProcessGroup = 1u << 2,   // process_group (and process_group_desc, 0 = none) hold names
  kCollectiveElementCounts = 1u << 3,  // in_elements and out_elements hold counts
};
struct CollectivePayload {
  uint64_t handle;              // OpBeginPayload::handle of the op it describes
  int64_t seq;                  // the process group's sequence number of this call
  int64_t in_elements;          // elements of the input message
  int64_t out_elements;         // of the output message
  int32_t group_size;           // ranks in the process group
  int32_t rank;                 // this process's rank in it; -1 = not given
  uint32_t process_group;       // name id of the process group's name ("0", "1", ...)
  uint32_t process_group_desc;  // name id of its description ("default_pg"); 0 = none
  uint32_t dtype;               // name id of the element type ("Float"); 0 = none
  uint8_t fields;               // CollectiveFields: which of the above hold values
  uint8_t reserved0[3];
};
static_assert(sizeof(CollectivePayload) == 56);

// The identity of tensors, for the memory categories (parameters, gradients,
// activations...: torch's memory profiler's rules), recorded only in windows
// that profile memory and record shapes. Either an op's tensor inputs,
// written right after its OpBegin on the same thread (`handle` names it), or
// what a module or an optimizer holds, written by the Python bootstrap at its
// first call in a window (as torch's Python tracer takes them).
enum class TensorGroupKind : uint8_t {
  OpInputs = 0,   // an op's inputs: TensorRefRecord::index is the input's position
  Module = 1,     // an nn.Module's own parameters: index = parameter, role Parameter or Gradient
  Optimizer = 2,  // an optimizer's parameters: role Parameter, Gradient or State
};
enum TensorGroupFlags : uint8_t {
  kTensorGroupSchema = 1u << 0,  // OpInputs: the op has an operator schema (an aten op, not a scope)
};
struct TensorGroupPayload {
  uint64_t handle;  // OpInputs: OpBeginPayload::handle of the op; 0 otherwise
  uint64_t owner;   // Module/Optimizer: the object's address (its Python id); 0 otherwise
  uint32_t count;   // TensorRefRecord entries that follow
  uint8_t kind;     // TensorGroupKind
  uint8_t flags;    // TensorGroupFlags
  uint8_t reserved0[2];
};
static_assert(sizeof(TensorGroupPayload) == 24);

enum TensorRefFlags : uint8_t {
  kTensorMutable = 1u << 0,       // OpInputs: the schema writes this argument (alias_info is_write)
  kTensorInList = 1u << 1,        // OpInputs: an element of a Tensor[] argument
  kTensorStrided = 1u << 2,       // the tensor's layout is strided (nbytes is meaningful)
  kTensorNoMutability = 1u << 3,  // OpInputs: the schema has no argument at this position
};
enum class TensorRole : uint8_t { Input = 0, Parameter = 1, Gradient = 2, State = 3 };
struct TensorRefRecord {
  uint64_t impl;     // the TensorImpl's address
  uint64_t storage;  // the storage's data pointer; 0 = none
  uint64_t nbytes;   // max(size[i] * stride[i]) * element size, as torch's memory profiler sizes it
  uint16_t index;    // the input's position (OpInputs) or the parameter's (Module/Optimizer)
  int8_t device_type;
  int8_t device_index;
  uint8_t flags;  // TensorRefFlags
  uint8_t role;   // TensorRole
  uint8_t reserved0[2];
};
static_assert(sizeof(TensorRefRecord) == 32);
// The most tensors one TensorGroup record carries; more are left out.
constexpr uint32_t kMaxTensorRefs = 120;

// A call stack, defined once per thread before the first record that refers
// to it by id: `python_frames` PythonFrameRecord then `native_frames`
// NativeFrameRecord follow, innermost first.
struct StackDefPayload {
  uint16_t python_frames;
  uint16_t native_frames;
  uint32_t reserved;
};
static_assert(sizeof(StackDefPayload) == 8);

struct PythonFrameRecord {
  uint32_t file;      // name id of co_filename
  uint32_t function;  // name id of co_name
  uint32_t line;
  uint32_t reserved;
};
static_assert(sizeof(PythonFrameRecord) == 16);

// A return address as the module it lies in (name id of the module's path)
// and its offset from the module's load bias: an address of the module's
// ELF image, symbolised when the trace is read.
struct NativeFrameRecord {
  uint32_t module;
  uint32_t reserved;
  uint64_t offset;
};
static_assert(sizeof(NativeFrameRecord) == 16);

constexpr size_t kMaxRecordBytes = 4096;  // larger shape payloads are truncated
// The most encoded shapes an OpBegin carries: what a record holds after its
// header and payload (a multiple of 8, so the record's rounding adds none).
constexpr size_t kMaxOpShapesBytes = kMaxRecordBytes - sizeof(RecordHeader) - sizeof(OpBeginPayload);
static_assert(kMaxOpShapesBytes % 8 == 0 && kMaxOpShapesBytes <= UINT16_MAX);

constexpr uint32_t align8(uint32_t n) { return (n + 7u) & ~7u; }

// What each record type is, in one place: the writer checks against it and
// the reader validates with it.
struct RecordTypeInfo {
  RecordType type;
  uint16_t min_size;  // header and fixed payload, bytes
  bool arg_is_name;   // RecordHeader::arg holds a string-arena id (0: the name was lost)
};

inline constexpr std::array<RecordTypeInfo, kRecordTypeCount> kRecordTypes = {{
    {RecordType::Pad, sizeof(RecordHeader), false},
    {RecordType::RangePush, sizeof(RecordHeader), true},
    {RecordType::RangePop, sizeof(RecordHeader), false},
    {RecordType::Mark, sizeof(RecordHeader), true},
    {RecordType::Step, sizeof(RecordHeader), false},
    {RecordType::OpBegin, sizeof(RecordHeader) + sizeof(OpBeginPayload), true},
    {RecordType::OpEnd, sizeof(RecordHeader) + sizeof(OpEndPayload), false},
    {kReservedRecordType, sizeof(RecordHeader), true},
    {RecordType::CudaApi, sizeof(RecordHeader) + sizeof(CudaApiPayload), true},
    {RecordType::GpuActivity, sizeof(RecordHeader) + sizeof(GpuActivityPayload), true},
    {RecordType::ExternalCorrelation, sizeof(RecordHeader) + sizeof(ExternalCorrelationPayload), false},
    {RecordType::MemoryEvent, sizeof(RecordHeader) + sizeof(MemoryEventPayload), false},
    {RecordType::StackDef, sizeof(RecordHeader) + sizeof(StackDefPayload), false},
    {RecordType::Collective, sizeof(RecordHeader) + sizeof(CollectivePayload), true},
    {RecordType::GraphNode, sizeof(RecordHeader) + sizeof(GraphNodePayload), false},
    {RecordType::TensorGroup, sizeof(RecordHeader) + sizeof(TensorGroupPayload), false},
}};

constexpr bool record_table_is_complete() {
  for (size_t i = 0; i < kRecordTypes.size(); ++i) {
    const RecordTypeInfo& info = kRecordTypes[i];
    if (static_cast<size_t>(info.type) != i || info.min_size % 8 != 0 || info.min_size > kMaxRecordBytes) return false;
  }
  return true;
}
static_assert(record_table_is_complete(), "kRecordTypes: one entry per RecordType, in order, sizes multiple of 8");

// The table's entry for a raw type, or null for a type this version does not know.
constexpr const RecordTypeInfo* record_type_info(uint16_t type) {
  return type < kRecordTypes.size() ? &kRecordTypes[type] : nullptr;
}

// Whether a record of a known type is long enough for its fixed payload.
// Unknown types are not malformed: they are later versions' records.
constexpr bool record_size_ok(const RecordHeader& h) {
  const RecordTypeInfo* info = record_type_info(h.type);
  return info == nullptr || h.size >= info->min_size;
}

}  // namespace ptprof::wire
