#include "collect/span_stack.hpp"

#include "ptprof/shapes.hpp"

namespace ptprof::launcher {

void intern_shapes(OpenSpan& s, const decoded::OpBegin& op, const SpanStack& open, ShapeTexts& shapes) {
  if (auto text = shapes::shapes_text(op.shapes)) s.shapes = shapes.intern(*text);
  // The concrete inputs name what an outermost operator allocated (memory
  // events are charged to it): only those are worth the text.
  if (s.is_operator() && open.outermost_operator() == nullptr)
    if (auto text = shapes::concrete_text(op.shapes); text && !text->empty()) s.inputs = shapes.intern(*text);
}

}  // namespace ptprof::launcher
