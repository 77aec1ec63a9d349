#include "collect/span_stack.hpp"

#include "ptprof/shapes.hpp"

namespace ptprof::launcher {

OpenSpan span_of(const decoded::Record& r, const decoded::RangePush&) {
  OpenSpan s;
  s.kind = trace::EventKind::Range;
  s.start = r.ts;
  s.name = r.name;
  return s;
}

OpenSpan span_of(const decoded::Record& r, const decoded::Mark&) {
  OpenSpan s;
  s.kind = trace::EventKind::Mark;
  s.start = r.ts;
  s.name = r.name;
  return s;
}

OpenSpan span_of(const decoded::Record& r, const decoded::OpBegin& op, const SpanStack& open, ShapeTexts& shapes) {
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
  if (!op.has_shapes) return s;
  if (auto text = shapes::shapes_text(op.shapes)) s.shapes = shapes.intern(*text);
  // The concrete inputs name what an outermost operator allocated (memory
  // events are charged to it): only those are worth the text.
  if (s.is_operator() && open.outermost_operator() == nullptr)
    if (auto text = shapes::concrete_text(op.shapes); text && !text->empty()) s.inputs = shapes.intern(*text);
  return s;
}

}  // namespace ptprof::launcher
