#include "collect/memory_ledger.hpp"

namespace ptprof::launcher {

LedgerEntry MemoryLedger::book(wire::MemorySource source, trace::MemoryInfo& m, const BlockOwner& here) {
  return source == wire::MemorySource::Torch ? book_block(m, here) : book_segment(source, m, here);
}

LedgerEntry MemoryLedger::book_block(trace::MemoryInfo& m, const BlockOwner& here) {
  LedgerEntry entry;
  if (m.device_type == trace::kDeviceCuda) cuda_allocated_[m.device_index] = m.total_allocated;
  const BlockKey key{m.ptr, int16_t(uint16_t(uint8_t(m.device_type)) << 8 | uint8_t(m.device_index))};
  if (m.bytes > 0) {
    live_blocks_[key] = here;
  } else if (m.bytes < 0) {
    if (auto it = live_blocks_.find(key); it != live_blocks_.end()) {
      entry.allocation = it->second;
      entry.matched = true;
      live_blocks_.erase(it);
    }
  }
  return entry;
}

LedgerEntry MemoryLedger::book_segment(wire::MemorySource source, trace::MemoryInfo& m, const BlockOwner& here) {
  LedgerEntry entry;
  const BlockKey key{m.ptr, int16_t(source)};
  if (m.bytes > 0) {
    LiveSegment& s = live_segments_[key];
    // The same address again without its free (a free the agent could not
    // see): the old segment is gone.
    if (s.bytes > 0) segment_reserved_[s.device] -= s.bytes;
    s = LiveSegment{here, m.bytes, m.device_index};
    segment_reserved_[m.device_index] += m.bytes;
  } else {
    auto it = live_segments_.find(key);
    if (it == live_segments_.end()) {
      entry.write = false;  // allocated before the agent saw it: size unknown
      return entry;
    }
    entry.allocation = it->second.owner;
    entry.matched = true;
    m.bytes = -it->second.bytes;
    m.device_index = it->second.device;
    segment_reserved_[m.device_index] -= it->second.bytes;
    live_segments_.erase(it);
  }
  m.device_type = trace::kDeviceCuda;
  m.total_reserved = segment_reserved_[m.device_index];
  auto a = cuda_allocated_.find(m.device_index);
  m.total_allocated = a == cuda_allocated_.end() ? 0 : a->second;
  return entry;
}

MemoryContext memory_context(const SpanStack& open, uint64_t ticks) {
  MemoryContext where;
  if (const OpenSpan* inner = open.innermost()) {
    where.inner_op = inner->name;
    where.inner_shapes = inner->shapes;
  }
  where.here.ticks = ticks;
  if (const OpenSpan* top = open.outermost_operator()) where.here = {ticks, top->name, top->shapes, top->inputs};
  return where;
}

void write_memory_event(WindowTrace& trace, const clock::Converter& conv, uint32_t instance, uint64_t ticks,
                        trace::MemoryInfo m, const MemoryContext& context, const LedgerEntry& entry) {
  m.op = context.inner_op ? trace.name(context.inner_op) : 0;
  m.op_shapes = trace.shapes(context.inner_shapes);
  m.top_op = context.here.op ? trace.name(context.here.op) : 0;
  m.top_shapes = trace.shapes(context.here.shapes);
  m.top_inputs = trace.shapes(context.here.inputs);
  if (entry.matched) {
    m.alloc_ns = conv.to_ns(entry.allocation.ticks);
    m.alloc_op = entry.allocation.op ? trace.name(entry.allocation.op) : 0;
    m.alloc_shapes = trace.shapes(entry.allocation.shapes);
    m.alloc_inputs = trace.shapes(entry.allocation.inputs);
  }
  trace::Event e;
  e.kind = trace::EventKind::Memory;
  e.start_ns = e.end_ns = conv.to_ns(ticks);
  e.name = trace.text("[memory]");
  e.thread = trace.thread(instance);
  e.arg = uint64_t(trace.writer().add_memory(m)) + 1;
  trace.add(e);
}

}  // namespace ptprof::launcher
