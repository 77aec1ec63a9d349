// One thread's open spans (ranges and operators begun, their end not yet
// seen), and the pairing of ends with begins. Records of one thread arrive
// in order, so the stack is exact: an end closes the innermost span it
// matches, and whatever is still open above that span lost its end (a
// dropped record) and is closed with it, marked truncated.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "collect/process_names.hpp"
#include "collect/record_decoder.hpp"
#include "ptprof/check.hpp"
#include "ptprof/record.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::launcher {

struct OpenSpan {
  uint64_t start = 0;  // ticks
  uint64_t handle = 0;
  int64_t seq_nr = -1;
  uint64_t fwd_thread_id = 0;
  uint32_t name = 0;    // arena id
  uint32_t shapes = 0;  // ShapeTexts id, 0 when none
  uint32_t inputs = 0;  // ShapeTexts id of the concrete inputs (outermost operators only), 0 when none
  uint32_t stack = 0;   // the thread's stack id (ThreadInstance::stacks), 0 when none
  int32_t window = -1;  // the window book's slot it is recorded in, -1: none
  trace::EventKind kind = trace::EventKind::Op;
  uint8_t scope = 0;
  uint16_t flags = 0;

  // An operator, as opposed to a user scope (record_function) or a range.
  bool is_operator() const { return kind == trace::EventKind::Op && scope != uint8_t(wire::OpScope::UserScope); }
};

class SpanStack;

// The span a begin record opens on a thread whose open spans are `open`
// (not yet in any window); an op's shapes texts are interned in `shapes`.
// A range's or a mark's: its kind, time and name.
inline OpenSpan span_of(const decoded::Record& r, trace::EventKind kind) {
  OpenSpan s;
  s.kind = kind;
  s.start = r.ts;
  s.name = r.name;
  return s;
}
inline OpenSpan span_of(const decoded::Record& r, const decoded::RangePush&) {
  return span_of(r, trace::EventKind::Range);
}
inline OpenSpan span_of(const decoded::Record& r, const decoded::Mark&) { return span_of(r, trace::EventKind::Mark); }
// An op's shapes texts (only an outermost operator's concrete inputs).
void intern_shapes(OpenSpan& s, const decoded::OpBegin& op, const SpanStack& open, ShapeTexts& shapes);
inline OpenSpan span_of(const decoded::Record& r, const decoded::OpBegin& op, const SpanStack& open,
                        ShapeTexts& shapes) {
  OpenSpan s;
  s.kind = trace::EventKind::Op;
  s.start = r.ts;
  s.name = r.name;
  s.handle = op.handle;
  s.seq_nr = op.seq_nr;
  s.fwd_thread_id = op.fwd_thread_id;
  s.scope = op.scope;
  s.stack = op.stack;
  s.flags = op.flags;
  if (op.has_shapes) intern_shapes(s, op, open, shapes);
  return s;
}

class SpanStack {
 public:
  // `s` opens, recorded in window `window` (a slot of the book, -1: none).
  void push(const OpenSpan& s, int32_t window) {
    spans_.push_back(s);
    spans_.back().window = window;
  }
  bool empty() const { return spans_.empty(); }
  size_t size() const { return spans_.size(); }
  // The innermost span open, null when none.
  const OpenSpan* innermost() const { return spans_.empty() ? nullptr : &spans_.back(); }
  // The outermost operator open (what the program called), null when none.
  const OpenSpan* outermost_operator() const {
    for (const OpenSpan& s : spans_)
      if (s.is_operator()) return &s;
    return nullptr;
  }
  // The innermost open op of that handle, null when none.
  const OpenSpan* find_op(uint64_t handle) const {
    for (size_t i = spans_.size(); i-- > 0;)
      if (spans_[i].kind == trace::EventKind::Op && spans_[i].handle == handle) return &spans_[i];
    return nullptr;
  }

  // Each closing call gives `closed(span, end, flags)` for every span it
  // pops, innermost first.
  // A RangePop: the innermost range.
  template <class Closed>
  void close_range(uint64_t end, Closed&& closed) {
    for (size_t i = spans_.size(); i-- > 0;) {
      if (spans_[i].kind == trace::EventKind::Range) return close_from(i, end, 0, closed);
    }
  }
  // An OpEnd: the innermost op of that handle.
  template <class Closed>
  void close_op(uint64_t handle, uint64_t end, Closed&& closed) {
    for (size_t i = spans_.size(); i-- > 0;) {
      if (spans_[i].kind == trace::EventKind::Op && spans_[i].handle == handle) return close_from(i, end, 0, closed);
    }
  }
  // The thread is gone: everything, truncated.
  template <class Closed>
  void close_all(uint64_t end, Closed&& closed) {
    if (!spans_.empty()) close_from(0, end, trace::kTruncated, closed);
  }
  // Window `slot` is being written: its spans still open go into it as they
  // are now (`cut(span)`), and stay open in no window.
  template <class Cut>
  void leave_window(int32_t slot, Cut&& cut) {
    PTPROF_DCHECK(slot >= 0);
    for (OpenSpan& s : spans_) {
      if (s.window != slot) continue;
      cut(static_cast<const OpenSpan&>(s));
      s.window = -1;
    }
  }

 private:
  // Closes spans_[index] at `end` with `flags`, and everything above it
  // truncated.
  template <class Closed>
  void close_from(size_t index, uint64_t end, uint16_t flags, Closed& closed) {
    PTPROF_DCHECK(index < spans_.size());
    while (spans_.size() > index) {
      const OpenSpan s = spans_.back();
      spans_.pop_back();
      closed(s, end, uint16_t(flags | (spans_.size() > index ? trace::kTruncated : 0)));
    }
  }

  std::vector<OpenSpan> spans_;
};

}  // namespace ptprof::launcher
