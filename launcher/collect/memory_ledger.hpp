// The memory stage of the collector. torch's allocation and free reports
// become instants on the thread that made them, named "[memory]" as torch
// names them, with their details in the trace's memory table; CUDA segments
// (cudaMalloc, cuMemAlloc, cuMemCreate and their frees) become the same,
// marked as reserved memory.
//
// The ledger keeps what is live across windows, so that a free is matched
// to its allocation whichever window saw it, and a segment's free (which the
// agent sends without a size) gets its size.
#pragma once
#include <cstdint>
#include <functional>
#include <unordered_map>

#include "collect/record_decoder.hpp"
#include "collect/span_stack.hpp"
#include "collect/window_trace.hpp"

namespace ptprof::launcher {

// What was open on the thread when a block was allocated or freed.
struct BlockOwner {
  uint64_t ticks = 0;
  uint32_t op = 0;      // arena id of the outermost operator, 0 = none
  uint32_t shapes = 0;  // ShapeTexts id of its shapes, 0 = none
  uint32_t inputs = 0;  // ShapeTexts id of its concrete inputs, 0 = none
};

// The spans around a memory event: the innermost (any kind) and the
// outermost operator (what the program called).
struct MemoryContext {
  uint32_t inner_op = 0;  // arena id
  uint32_t inner_shapes = 0;
  BlockOwner here;
};
// The spans open on a thread when it allocates or frees at `ticks` (records
// of one thread arrive in order, so this is exact).
MemoryContext memory_context(const SpanStack& open, uint64_t ticks);

struct LedgerEntry {
  bool write = true;     // false: a segment's free the ledger never saw allocated (its size is unknown)
  bool matched = false;  // a free whose allocation the ledger saw: `allocation` says where
  BlockOwner allocation;
};

class MemoryLedger {
 public:
  // Books an allocation or free; fills in a segment's device, a free's size
  // and the device totals.
  LedgerEntry book(wire::MemorySource source, trace::MemoryInfo& m, const BlockOwner& here);

 private:
  struct BlockKey {
    uint64_t ptr;
    int16_t device;  // device_type << 8 | device_index; a segment: its source
    bool operator==(const BlockKey&) const = default;
  };
  struct BlockKeyHash {
    size_t operator()(const BlockKey& k) const {
      return std::hash<uint64_t>{}(k.ptr ^ (uint64_t(uint16_t(k.device)) << 48));
    }
  };
  struct LiveSegment {
    BlockOwner owner;
    int64_t bytes = 0;
    int8_t device = -1;
  };
  LedgerEntry book_block(trace::MemoryInfo& m, const BlockOwner& here);
  LedgerEntry book_segment(wire::MemorySource source, trace::MemoryInfo& m, const BlockOwner& here);

  std::unordered_map<BlockKey, BlockOwner, BlockKeyHash> live_blocks_;
  // CUDA segments live in the process, windows or not, by address (or
  // handle) and source; what each device holds of them; and torch's last
  // allocated total of each device, which a segment's event carries so that
  // the timeline does not drop to 0.
  std::unordered_map<BlockKey, LiveSegment, BlockKeyHash> live_segments_;
  std::unordered_map<int8_t, int64_t> segment_reserved_;
  std::unordered_map<int8_t, int64_t> cuda_allocated_;
};

// Writes a booked memory event, made on thread `instance` at `ticks`, into
// `trace`.
void write_memory_event(WindowTrace& trace, const clock::Converter& conv, uint32_t instance, uint64_t ticks,
                        trace::MemoryInfo m, const MemoryContext& context, const LedgerEntry& entry);

}  // namespace ptprof::launcher
