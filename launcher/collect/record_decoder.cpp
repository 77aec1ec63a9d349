#include "collect/record_decoder.hpp"

#include <algorithm>
#include <iterator>

namespace ptprof::launcher {
namespace {

using trace::EventKind;

// What each kind of GPU activity becomes: its event kind, its name when
// the agent could not intern one, and whether it runs on a device lane.
// Copies and sets carry their names from the agent, as kernels theirs:
// Kineto's "Memcpy HtoD (Pageable -> Device)" and "Memset (Device)".
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

// What a hooked call and a CUPTI record both carry, by the same names.
template <class Payload>
void copy_common(const Payload& p, trace::CudaInfo& c) {
  c.correlation_id = p.correlation_id;
  c.stream = p.stream;
  c.bytes = p.bytes;
  std::copy(std::begin(p.grid), std::end(p.grid), c.grid);
  std::copy(std::begin(p.block), std::end(p.block), c.block);
  c.copy_kind = p.copy_kind;
}

}  // namespace

decoded::CudaApiCall decode_cuda_api_call(const wire::RecordHeader& h) {
  const auto p = decoded::read_payload<wire::CudaApiPayload>(h);
  decoded::CudaApiCall call;
  call.end_ts = std::max(p.end_ts, h.ts);
  trace::CudaInfo& c = call.info;
  copy_common(p, c);
  c.ptr = p.ptr;
  c.result = p.result;
  c.kernel_name = p.kernel_name;
  c.family = p.family;
  return call;
}

std::optional<decoded::GpuActivity> decode_gpu_activity(const wire::RecordHeader& h) {
  const auto p = decoded::read_payload<wire::GpuActivityPayload>(h);
  const std::optional<GpuKind> kind = gpu_kind(wire::GpuActivityKind(p.kind));
  if (!kind) return std::nullopt;
  decoded::GpuActivity a;
  a.kind = kind->kind;
  a.unnamed = kind->unnamed;
  a.on_lane = kind->on_lane;
  a.end_ts = std::max(p.end_ts, h.ts);
  trace::CudaInfo& c = a.info;
  copy_common(p, c);
  c.graph_node_id = p.graph_node_id;
  c.graph_id = p.graph_id;
  c.device = int32_t(p.device);
  c.context = p.context;
  c.registers = p.registers;
  c.static_shared = p.static_shared;
  c.dynamic_shared = p.dynamic_shared;
  c.cbid = p.cbid;
  a.queued_ts = p.queued_ts;
  if (a.kind == EventKind::Kernel) c.kernel_name = h.arg;
  if (a.kind == EventKind::CuptiApi) {
    a.tid = p.thread;
    c.family = uint8_t(p.kind == uint8_t(wire::GpuActivityKind::RuntimeApi) ? wire::CudaApiFamily::Runtime
                                                                            : wire::CudaApiFamily::Driver);
  }
  return a;
}

decoded::Memory decode_memory(const wire::RecordHeader& h) {
  const auto p = decoded::read_payload<wire::MemoryEventPayload>(h);
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

std::optional<decoded::StackDef> decode_stack_def(const wire::RecordHeader& h) {
  const auto p = decoded::read_payload<wire::StackDefPayload>(h);
  static_assert(sizeof(wire::PythonFrameRecord) == sizeof(wire::NativeFrameRecord));
  const size_t need =
      sizeof h + sizeof p + (size_t(p.python_frames) + p.native_frames) * sizeof(wire::PythonFrameRecord);
  if (h.arg == 0 || h.arg > (1u << 24) || need > h.size) return std::nullopt;
  decoded::StackDef s;
  s.id = h.arg;
  s.frames.reserve(size_t(p.python_frames) + p.native_frames);
  const uint8_t* at = decoded::payload_of(h) + sizeof p;
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

}  // namespace ptprof::launcher
