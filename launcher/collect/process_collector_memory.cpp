// Memory events: torch's allocation and free reports become instants on the
// thread that made them, named "[memory]" as torch names them, with their
// details in the trace's memory table; CUDA segments (cudaMalloc, cuMemAlloc,
// cuMemCreate and their frees) become the same, marked as reserved memory.
#include <cstring>

#include "collect/process_collector.hpp"
#include "ptprof/record.hpp"

namespace ptprof::launcher {

bool ProcessCollector::segment_record(wire::MemoryEventPayload& p, const LiveBlock& here, LiveBlock* allocation) {
  const BlockKey key{p.ptr, int16_t(p.source)};
  if (p.bytes > 0) {
    LiveSegment& s = live_segments_[key];
    // The same address again without its free (a free the agent could not
    // see): the old segment is gone.
    if (s.bytes > 0) segment_reserved_[s.device] -= s.bytes;
    s = LiveSegment{here, p.bytes, p.device_index};
    segment_reserved_[p.device_index] += p.bytes;
  } else {
    auto it = live_segments_.find(key);
    if (it == live_segments_.end()) return false;  // allocated before the agent saw it: size unknown
    *allocation = it->second.block;
    p.bytes = -it->second.bytes;
    p.device_index = it->second.device;
    segment_reserved_[p.device_index] -= it->second.bytes;
    live_segments_.erase(it);
  }
  p.device_type = trace::kDeviceCuda;
  p.total_reserved = segment_reserved_[p.device_index];
  auto a = cuda_allocated_.find(p.device_index);
  p.total_allocated = a == cuda_allocated_.end() ? 0 : a->second;
  return true;
}

void ProcessCollector::memory_record(ThreadDecode& t, const wire::RecordHeader& h) {
  wire::MemoryEventPayload p;
  std::memcpy(&p, reinterpret_cast<const uint8_t*>(&h) + sizeof h, sizeof p);
  // The op it happened in: the innermost span open on the thread (records
  // of one thread arrive in order, so this is exact), and the outermost
  // operator, what the program called.
  uint32_t inner_op = 0, inner_shapes = 0;
  if (!t.stack.empty()) {
    inner_op = t.stack.back().name;
    inner_shapes = t.stack.back().shapes;
  }
  LiveBlock here{h.ts, 0, 0, 0};
  for (const OpenSpan& s : t.stack) {
    if (s.kind == trace::EventKind::Op && s.scope != uint8_t(wire::OpScope::UserScope)) {
      here.op = s.name;
      here.shapes = s.shapes;
      here.inputs = s.inputs;
      break;
    }
  }
  LiveBlock allocation{};
  bool matched = false;
  const bool segment = p.source != uint8_t(wire::MemorySource::Torch);
  if (segment) {
    if (!segment_record(p, here, &allocation)) return;
    matched = p.bytes < 0;
  } else {
    if (p.device_type == trace::kDeviceCuda) cuda_allocated_[p.device_index] = p.total_allocated;
    const BlockKey key{p.ptr, int16_t(uint16_t(uint8_t(p.device_type)) << 8 | uint8_t(p.device_index))};
    if (p.bytes > 0) {
      live_blocks_[key] = here;
    } else if (p.bytes < 0) {
      if (auto it = live_blocks_.find(key); it != live_blocks_.end()) {
        allocation = it->second;
        matched = true;
        live_blocks_.erase(it);
      }
    }
  }
  const int32_t wi = window_for(h.ts);
  if (wi < 0) return;
  Window& w = windows_[size_t(wi)];
  if (!ensure_writer(w)) return;
  trace::MemoryInfo m;
  m.ptr = p.ptr;
  m.bytes = p.bytes;
  m.total_allocated = p.total_allocated;
  m.total_reserved = p.total_reserved;
  m.device_type = p.device_type;
  m.device_index = p.device_index;
  m.op = inner_op ? file_name(w, inner_op) : 0;
  m.op_shapes = file_shapes(w, inner_shapes);
  m.top_op = here.op ? file_name(w, here.op) : 0;
  m.top_shapes = file_shapes(w, here.shapes);
  m.top_inputs = file_shapes(w, here.inputs);
  if (matched) {
    m.alloc_ns = conv_.to_ns(allocation.ticks);
    m.alloc_op = allocation.op ? file_name(w, allocation.op) : 0;
    m.alloc_shapes = file_shapes(w, allocation.shapes);
    m.alloc_inputs = file_shapes(w, allocation.inputs);
  }
  m.segment = segment;
  trace::Event e;
  e.kind = trace::EventKind::Memory;
  e.start_ns = e.end_ns = conv_.to_ns(h.ts);
  e.name = w.writer->intern("[memory]");
  e.thread = file_thread(w, t.instance);
  e.arg = uint64_t(w.writer->add_memory(m)) + 1;
  w.writer->add_event(e);
  charge(w, e);
  ++w.events;
  ++events_total_;
}

}  // namespace ptprof::launcher
