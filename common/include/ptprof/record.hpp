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
  Pad = 0,         // filler up to the end of the ring; skip `size` bytes
  RangePush = 1,   // arg = name id
  RangePop = 2,    // closes the innermost open range of the thread
  Mark = 3,        // arg = name id; an instant
  Step = 4,        // arg = number of the step that begins at ts (ProfilerStep#arg)
  OpBegin = 5,     // arg = name id; payload OpBeginPayload [+ encoded shapes]
  OpEnd = 6,       // payload OpEndPayload
  ThreadName = 7,  // arg = name id; the thread renamed itself
  // 32.. reserved for CUDA activity, 64.. for memory events.
};
// Types this version knows; a reader skips records of any other type.
constexpr uint16_t kRecordTypeCount = 8;

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
};

struct OpBeginPayload {
  uint64_t handle;         // RecordFunction handle; matches OpEnd
  int64_t seq_nr;          // autograd sequence number, -1 if none
  uint64_t fwd_thread_id;  // forward thread id for backward ops, 0 if none
  uint8_t scope;           // OpScope
  uint8_t flags;           // OpFlags
  uint16_t shapes_bytes;   // length of encoded shapes that follow (unpadded)
  uint32_t reserved;
};
static_assert(sizeof(OpBeginPayload) == 32);

struct OpEndPayload {
  uint64_t handle;
};

constexpr size_t kMaxRecordBytes = 4096;  // larger shape payloads are truncated

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
    {RecordType::ThreadName, sizeof(RecordHeader), true},
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
