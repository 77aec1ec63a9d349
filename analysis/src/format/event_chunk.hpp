// The EVENTS chunk being filled (docs/format.md): each event's fields as
// varints in their columns, times and sequence numbers as differences from
// the same thread's previous event in the chunk. The writer checks an event
// before it comes here; the launcher writes every event it drains through
// append().
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "format/byte_io.hpp"
#include "format/event_columns.hpp"
#include "format/format_layout.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::format::detail {

class EventChunk {
 public:
  // Thread ids are the order of add_thread() calls.
  void add_thread() { deltas_.emplace_back(); }
  uint32_t events() const { return events_; }

  // `e`, checked (its thread added), into the chunk. True when the chunk is
  // full: take() it.
  [[gnu::always_inline]] bool append(const trace::Event& e) {
    ThreadDelta& d = deltas_[e.thread];
    if (d.chunk != index_) d = ThreadDelta{index_, 0, 0};
    const bool has_seq = e.seq_nr != -1;
    columns_.reserve_event();
    // Differences wrap in uint64 so every int64 pair round-trips exactly.
    columns_.put_varint(kColThread, e.thread);
    columns_.put_varint(kColKind, uint64_t(e.kind) | (has_seq ? kKindHasSeqNr : 0));
    columns_.put_varint(kColName, e.name);
    columns_.put_svarint(kColStart, int64_t(uint64_t(e.start_ns) - uint64_t(d.start)));
    columns_.put_varint(kColDuration, uint64_t(e.end_ns) - uint64_t(e.start_ns));
    columns_.put_varint(kColScope, e.scope);
    columns_.put_varint(kColFlags, e.flags);
    columns_.put_varint(kColShapes, e.shapes);
    if (has_seq) {
      columns_.put_svarint(kColSeqNr, int64_t(uint64_t(e.seq_nr) - uint64_t(d.seq_nr)));
      d.seq_nr = e.seq_nr;
    }
    columns_.put_varint(kColFwdThread, e.fwd_thread_id);
    columns_.put_varint(kColArg, e.arg);
    columns_.put_varint(kColStack, e.stack);
    d.start = e.end_ns;
    return ++events_ == kEventsPerChunk;
  }

  // The chunk's payload; the next chunk starts empty, its delta bases at zero.
  std::string take() {
    std::string raw;
    size_t total = 0;
    for (size_t c = 0; c < kEventColumns; ++c) total += columns_.size(c);
    raw.reserve(total + 64);
    put_varint(raw, events_);
    put_varint(raw, kEventColumns);
    for (size_t c = 0; c < kEventColumns; ++c) put_varint(raw, columns_.size(c));
    for (size_t c = 0; c < kEventColumns; ++c) raw += columns_.view(c);
    columns_.clear();
    events_ = 0;
    ++index_;
    return raw;
  }

 private:
  // Delta bases of one thread within the current chunk; `chunk` tells
  // whether they belong to it or are stale (and so reset to zero).
  struct ThreadDelta {
    uint64_t chunk = UINT64_MAX;
    int64_t start = 0;
    int64_t seq_nr = 0;
  };

  EventColumns<kEventColumns> columns_;
  uint32_t events_ = 0;
  uint64_t index_ = 0;
  std::vector<ThreadDelta> deltas_;
};

}  // namespace ptprof::format::detail
