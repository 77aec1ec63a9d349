// Memory events: torch's allocation and free reports become instants on the
// thread that made them, named "[memory]" as torch names them, with their
// details in the trace's memory table.
#include <cstring>

#include "process_collector.hpp"
#include "ptprof/record.hpp"

namespace ptprof::launcher {

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
  LiveBlock here{h.ts, 0, 0};
  for (const OpenSpan& s : t.stack) {
    if (s.kind == trace::EventKind::Op && s.scope != uint8_t(wire::OpScope::UserScope)) {
      here.op = s.name;
      here.shapes = s.shapes;
      break;
    }
  }
  const BlockKey key{p.ptr, int16_t(uint16_t(uint8_t(p.device_type)) << 8 | uint8_t(p.device_index))};
  LiveBlock allocation{};
  bool matched = false;
  if (p.bytes > 0) {
    live_blocks_[key] = here;
  } else if (p.bytes < 0) {
    if (auto it = live_blocks_.find(key); it != live_blocks_.end()) {
      allocation = it->second;
      matched = true;
      live_blocks_.erase(it);
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
  if (matched) {
    m.alloc_ns = conv_.to_ns(allocation.ticks);
    m.alloc_op = allocation.op ? file_name(w, allocation.op) : 0;
    m.alloc_shapes = file_shapes(w, allocation.shapes);
  }
  trace::Event e;
  e.kind = trace::EventKind::Memory;
  e.start_ns = e.end_ns = conv_.to_ns(h.ts);
  e.name = w.writer->intern("[memory]");
  e.thread = file_thread(w, t.slot);
  e.arg = uint64_t(w.writer->add_memory(m)) + 1;
  w.writer->add_event(e);
  charge(w, e);
  ++w.events;
  ++events_total_;
}

}  // namespace ptprof::launcher
