#include "collect/record_decoder.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <optional>

namespace ptprof::launcher {
namespace {

using trace::EventKind;

const uint8_t* payload_of(const wire::RecordHeader& h) { return reinterpret_cast<const uint8_t*>(&h) + sizeof h; }

// The record's fixed payload; record_size_ok has checked that it is there.
template <class Payload>
Payload read_payload(const wire::RecordHeader& h) {
  Payload p;
  std::memcpy(&p, payload_of(h), sizeof p);
  return p;
}

decoded::OpBegin op_begin(const wire::RecordHeader& h) {
  const auto p = read_payload<wire::OpBeginPayload>(h);
  decoded::OpBegin op;
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

decoded::CudaApiCall cuda_api_call(const wire::RecordHeader& h) {
  const auto p = read_payload<wire::CudaApiPayload>(h);
  decoded::CudaApiCall call;
  call.end_ts = std::max(p.end_ts, h.ts);
  trace::CudaInfo& c = call.info;
  c.correlation_id = p.correlation_id;
  c.stream = p.stream;
  c.ptr = p.ptr;
  c.bytes = p.bytes;
  std::copy(std::begin(p.grid), std::end(p.grid), c.grid);
  std::copy(std::begin(p.block), std::end(p.block), c.block);
  c.result = p.result;
  c.kernel_name = p.kernel_name;
  c.family = p.family;
  c.copy_kind = p.copy_kind;
  return call;
}

// What each kind of GPU activity becomes: its event kind, its name when
// the agent could not intern one, and whether it runs on a device lane.
// Copies carry their "Memcpy HtoD" style name from the agent, as kernels
// theirs.
struct GpuKind {
  EventKind kind;
  const char* unnamed;
  bool on_lane;
};

std::optional<GpuKind> gpu_kind(wire::GpuActivityKind kind) {
  using K = wire::GpuActivityKind;
  switch (kind) {
    case K::Kernel:
      return GpuKind{EventKind::Kernel, "<unnamed kernel>", true};
    case K::Memcpy:
      return GpuKind{EventKind::Memcpy, "Memcpy", true};
    case K::Memset:
      return GpuKind{EventKind::Memset, "Memset", true};
    case K::Sync:
      return GpuKind{EventKind::GpuSync, "Synchronize", true};
    case K::Overhead:
      return GpuKind{EventKind::GpuOverhead, "CUPTI overhead", false};
    case K::RuntimeApi:
    case K::DriverApi:
      return GpuKind{EventKind::CuptiApi, "<unnamed CUDA call>", false};
  }
  return std::nullopt;  // a kind of a later version
}

decoded::Payload gpu_activity(const wire::RecordHeader& h) {
  const auto p = read_payload<wire::GpuActivityPayload>(h);
  const std::optional<GpuKind> kind = gpu_kind(wire::GpuActivityKind(p.kind));
  if (!kind) return decoded::Skipped{};
  decoded::GpuActivity a;
  a.kind = kind->kind;
  a.unnamed = kind->unnamed;
  a.on_lane = kind->on_lane;
  a.end_ts = std::max(p.end_ts, h.ts);
  trace::CudaInfo& c = a.info;
  c.correlation_id = p.correlation_id;
  c.bytes = p.bytes;
  c.graph_node_id = p.graph_node_id;
  c.graph_id = p.graph_id;
  c.device = int32_t(p.device);
  c.stream = p.stream;
  c.copy_kind = p.copy_kind;
  std::copy(std::begin(p.grid), std::end(p.grid), c.grid);
  std::copy(std::begin(p.block), std::end(p.block), c.block);
  if (a.kind == EventKind::Kernel) c.kernel_name = h.arg;
  if (a.kind == EventKind::CuptiApi) {
    a.tid = p.thread;
    c.family = uint8_t(p.kind == uint8_t(wire::GpuActivityKind::RuntimeApi) ? wire::CudaApiFamily::Runtime
                                                                            : wire::CudaApiFamily::Driver);
  }
  return a;
}

decoded::Memory memory(const wire::RecordHeader& h) {
  const auto p = read_payload<wire::MemoryEventPayload>(h);
  decoded::Memory m;
  m.source = wire::MemorySource(p.source);
  m.info.ptr = p.ptr;
  m.info.bytes = p.bytes;
  m.info.total_allocated = p.total_allocated;
  m.info.total_reserved = p.total_reserved;
  m.info.device_type = p.device_type;
  m.info.device_index = p.device_index;
  m.info.segment = m.source != wire::MemorySource::Torch;
  return m;
}

decoded::Payload stack_def(const wire::RecordHeader& h) {
  const auto p = read_payload<wire::StackDefPayload>(h);
  static_assert(sizeof(wire::PythonFrameRecord) == sizeof(wire::NativeFrameRecord));
  const size_t need =
      sizeof h + sizeof p + (size_t(p.python_frames) + p.native_frames) * sizeof(wire::PythonFrameRecord);
  if (h.arg == 0 || h.arg > (1u << 24) || need > h.size) return decoded::Malformed{h.size};
  decoded::StackDef s;
  s.id = h.arg;
  s.frames.reserve(size_t(p.python_frames) + p.native_frames);
  const uint8_t* at = payload_of(h) + sizeof p;
  for (uint32_t i = 0; i < p.python_frames; ++i, at += sizeof(wire::PythonFrameRecord)) {
    wire::PythonFrameRecord r;
    std::memcpy(&r, at, sizeof r);
    s.frames.push_back(trace::Frame{trace::FrameKind::Python, r.file, r.function, r.line, 0});
  }
  for (uint32_t i = 0; i < p.native_frames; ++i, at += sizeof(wire::NativeFrameRecord)) {
    wire::NativeFrameRecord r;
    std::memcpy(&r, at, sizeof r);
    s.frames.push_back(trace::Frame{trace::FrameKind::Native, r.module, 0, 0, r.offset});
  }
  return s;
}

decoded::Payload payload(const wire::RecordHeader& h) {
  using wire::RecordType;
  switch (RecordType(h.type)) {
    case RecordType::RangePush:
      return decoded::RangePush{};
    case RecordType::RangePop:
      return decoded::RangePop{};
    case RecordType::Mark:
      return decoded::Mark{};
    case RecordType::Step:
      return decoded::Step{h.arg};
    case RecordType::OpBegin:
      return op_begin(h);
    case RecordType::OpEnd:
      return decoded::OpEnd{read_payload<wire::OpEndPayload>(h).handle};
    case RecordType::CudaApi:
      return cuda_api_call(h);
    case RecordType::GpuActivity:
      return gpu_activity(h);
    case RecordType::ExternalCorrelation: {
      const auto p = read_payload<wire::ExternalCorrelationPayload>(h);
      return decoded::Correlation{p.correlation_id, p.external_id};
    }
    case RecordType::MemoryEvent:
      return memory(h);
    case RecordType::StackDef:
      return stack_def(h);
    default:
      return decoded::Skipped{};  // Pad, ThreadName
  }
}

}  // namespace

decoded::Record decode_record(const wire::RecordHeader& h) {
  decoded::Record r;
  r.ts = h.ts;
  const wire::RecordTypeInfo* info = wire::record_type_info(h.type);
  if (info == nullptr) return r;  // a type of a later version: Skipped
  if (!wire::record_size_ok(h)) {
    r.payload = decoded::Malformed{h.size};
    return r;
  }
  if (info->arg_is_name) r.name = h.arg;
  r.payload = payload(h);
  return r;
}

}  // namespace ptprof::launcher
