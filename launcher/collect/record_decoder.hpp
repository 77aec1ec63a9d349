// The first stage of the collector: one ring record, as the agent wrote it,
// becomes one typed event, validated against wire::kRecordTypes. Every copy
// of a wire payload into a launcher or trace struct happens here, so the
// stages after it never see a raw payload (and never trust one: a record too
// short for its payload is Malformed, a type of a later version Skipped).
//
// The typed event is handed to a callback rather than returned in a variant:
// the drain runs this for every record, and a variant as large as its
// largest event (a GPU record) costs more than the rest of a mark's path.
#pragma once
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "ptprof/record.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::launcher::decoded {

struct Skipped {};  // Pad, the reserved type, a type or kind of a later version
struct Malformed {
  uint32_t bytes = 0;  // what the ring loses by it (the ledger's malformed_bytes)
};
struct RangePush {};
struct RangePop {};
struct Mark {};
struct Step {
  uint64_t number = 0;  // the step that begins at the record's time
};
struct OpBegin {
  uint64_t handle = 0;
  int64_t seq_nr = -1;
  uint64_t fwd_thread_id = 0;
  uint8_t scope = 0;   // wire::OpScope
  uint16_t flags = 0;  // trace::EventFlags
  uint32_t stack = 0;  // the thread's stack id, 0 = none
  bool has_shapes = false;
  std::span<const uint8_t> shapes;  // shapes.hpp encoding, inside the ring: valid while the record is
};
struct OpEnd {
  uint64_t handle = 0;
};
// A hooked CUDA call; info.kernel_name is still an arena id.
struct CudaApiCall {
  uint64_t end_ts = 0;  // raw ticks, never before the call's start
  trace::CudaInfo info;
};
// A CUPTI activity record; info.kernel_name (kernels) is still an arena id.
struct GpuActivity {
  uint64_t end_ts = 0;  // raw ticks, never before the record's start
  trace::EventKind kind = trace::EventKind::Kernel;
  const char* unnamed = "";  // the event's name when the agent could not intern one
  bool on_lane = true;       // on its (device, stream) lane, else on a CPU thread
  int32_t tid = 0;           // CUPTI API records: the thread that made the call
  uint64_t queued_ts = 0;    // kernels: raw ticks; 0 = not known
  trace::CudaInfo info;
};
struct Correlation {
  uint64_t correlation_id = 0;
  uint64_t external_id = 0;  // the launching op's handle
};
// An allocation or free; `info` holds what the agent measured (no names yet).
struct Memory {
  wire::MemorySource source = wire::MemorySource::Torch;
  trace::MemoryInfo info;
};
// A stack of the thread; frames name arena ids.
struct StackDef {
  uint32_t id = 0;  // 1-based, per thread
  std::vector<trace::Frame> frames;
};

// A collective call's facts, for the op `handle` (names still arena ids:
// the record's own name is the collective's).
struct Collective {
  uint64_t handle = 0;
  trace::CollectiveInfo info;
};

// Tensor identity (record.hpp's TensorGroup); thread and time come later.
struct TensorGroup {
  uint64_t handle = 0;  // OpInputs: the op's handle
  trace::TensorGroup group;
};

// A CUDA graph node created (original_id 0) or cloned, on the thread that
// made it; op is the handle of the op open there (0 = none).
struct GraphNode {
  uint64_t node_id = 0;
  uint64_t original_id = 0;
  uint64_t op = 0;
  uint32_t graph_id = 0;
};

// What every record has.
struct Record {
  uint64_t ts = 0;    // raw ticks
  uint32_t name = 0;  // arena id of the record's name, for types whose arg is one (0: none or lost)
};

}  // namespace ptprof::launcher::decoded

namespace ptprof::launcher {

// The payloads too large to decode inline; `h` lies in a ring, followed by
// its payload (h.size bytes in all), which record_size_ok has checked.
decoded::CudaApiCall decode_cuda_api_call(const wire::RecordHeader& h);
std::optional<decoded::GpuActivity> decode_gpu_activity(const wire::RecordHeader& h);  // none: a later kind
decoded::Memory decode_memory(const wire::RecordHeader& h);
std::optional<decoded::StackDef> decode_stack_def(const wire::RecordHeader& h);  // none: malformed

namespace decoded {

inline const uint8_t* payload_of(const wire::RecordHeader& h) {
  return reinterpret_cast<const uint8_t*>(&h) + sizeof h;
}

// The record's fixed payload; record_size_ok has checked that it is there.
template <class Payload>
Payload read_payload(const wire::RecordHeader& h) {
  Payload p;
  std::memcpy(&p, payload_of(h), sizeof p);
  return p;
}

inline OpBegin op_begin(const wire::RecordHeader& h) {
  const auto p = read_payload<wire::OpBeginPayload>(h);
  OpBegin op;
  op.handle = p.handle;
  op.seq_nr = p.seq_nr;
  op.fwd_thread_id = p.fwd_thread_id;
  op.scope = p.scope;
  op.stack = p.stack;
  if (p.flags & wire::kOpAsync) op.flags |= trace::kAsync;
  if (p.flags & wire::kOpCallerStacks) op.flags |= trace::kCallerStacks;
  if ((p.flags & wire::kOpHasShapes) && sizeof h + sizeof p + p.shapes_bytes <= h.size) {
    op.has_shapes = true;
    op.shapes = std::span<const uint8_t>(payload_of(h) + sizeof p, p.shapes_bytes);
  }
  return op;
}

inline Collective collective(const wire::RecordHeader& h) {
  const auto p = read_payload<wire::CollectivePayload>(h);
  Collective c;
  c.handle = p.handle;
  c.info.name = h.arg;
  if (p.fields & wire::kCollectiveSeq) c.info.seq = p.seq;
  if (p.fields & wire::kCollectiveGroupSize) c.info.group_size = p.group_size;
  if (p.fields & wire::kCollectiveProcessGroup) {
    c.info.process_group = p.process_group;
    c.info.process_group_desc = p.process_group_desc;
  }
  if (p.fields & wire::kCollectiveElementCounts) {
    c.info.in_elements = p.in_elements;
    c.info.out_elements = p.out_elements;
  }
  c.info.dtype = p.dtype;
  c.info.rank = p.rank;
  return c;
}

// nullopt when the record is shorter than the tensors it counts.
inline std::optional<TensorGroup> tensor_group(const wire::RecordHeader& h) {
  const auto p = read_payload<wire::TensorGroupPayload>(h);
  const size_t fixed = sizeof h + sizeof p;
  if (p.count > wire::kMaxTensorRefs || fixed + size_t(p.count) * sizeof(wire::TensorRefRecord) > h.size)
    return std::nullopt;
  TensorGroup g;
  g.handle = p.handle;
  g.group.owner = p.owner;
  g.group.kind = p.kind;
  g.group.flags = p.flags;
  g.group.tensors.reserve(p.count);
  const auto* at = reinterpret_cast<const uint8_t*>(&h) + fixed;
  for (uint32_t i = 0; i < p.count; ++i) {
    wire::TensorRefRecord r;
    std::memcpy(&r, at + i * sizeof r, sizeof r);
    g.group.tensors.push_back({r.impl, r.storage, r.nbytes, r.index, r.device_type, r.device_index, r.flags, r.role});
  }
  return g;
}

}  // namespace decoded

// Decodes `h` (in a ring, followed by its payload) and calls
// `on(const decoded::Record&, event)` with its typed event, one of the
// decoded:: types.
template <class On>
void decode_record(const wire::RecordHeader& h, On&& on) {
  using wire::RecordType;
  decoded::Record r{h.ts, 0};
  const wire::RecordTypeInfo* info = wire::record_type_info(h.type);
  if (info == nullptr) return on(r, decoded::Skipped{});  // a type of a later version
  if (!wire::record_size_ok(h)) return on(r, decoded::Malformed{h.size});
  if (info->arg_is_name) r.name = h.arg;
  switch (RecordType(h.type)) {
    case RecordType::RangePush:
      return on(r, decoded::RangePush{});
    case RecordType::RangePop:
      return on(r, decoded::RangePop{});
    case RecordType::Mark:
      return on(r, decoded::Mark{});
    case RecordType::Step:
      return on(r, decoded::Step{h.arg});
    case RecordType::OpBegin:
      return on(r, decoded::op_begin(h));
    case RecordType::OpEnd:
      return on(r, decoded::OpEnd{decoded::read_payload<wire::OpEndPayload>(h).handle});
    case RecordType::CudaApi:
      return on(r, decode_cuda_api_call(h));
    case RecordType::GpuActivity: {
      if (auto a = decode_gpu_activity(h)) return on(r, *a);
      return on(r, decoded::Skipped{});
    }
    case RecordType::ExternalCorrelation: {
      const auto p = decoded::read_payload<wire::ExternalCorrelationPayload>(h);
      return on(r, decoded::Correlation{p.correlation_id, p.external_id});
    }
    case RecordType::MemoryEvent:
      return on(r, decode_memory(h));
    case RecordType::StackDef: {
      if (auto s = decode_stack_def(h)) return on(r, *s);
      return on(r, decoded::Malformed{h.size});
    }
    case RecordType::Collective:
      return on(r, decoded::collective(h));
    case RecordType::TensorGroup: {
      if (auto g = decoded::tensor_group(h)) return on(r, *g);
      return on(r, decoded::Malformed{h.size});
    }
    case RecordType::GraphNode: {
      const auto p = decoded::read_payload<wire::GraphNodePayload>(h);
      return on(r, decoded::GraphNode{p.node_id, p.original_id, p.op, p.graph_id});
    }
    default:
      return on(r, decoded::Skipped{});  // Pad, wire::kReservedRecordType
  }
}

}  // namespace ptprof::launcher
