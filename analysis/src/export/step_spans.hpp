// The ProfilerStep spans of an export's inputs, widened to enclose what
// starts in them. The launcher closes a window's last step at the last time
// it saw, which can come a few ns before the end of an op still running then;
// torch's ProfilerStep#N, a RecordFunction around the step, always encloses
// its ops, and viewers and HTA rely on it. A span is widened to the end of
// the events of its thread that start inside it, never past the next step's
// start on that thread.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ptprof/trace.hpp"

namespace ptprof::exporting::detail {

class StepSpans {
 public:
  // First pass: every event of file `file` (steps are kept, others ignored).
  void add_step(size_t file, const trace::Event& e);
  // Between the passes.
  void sort();
  // Second pass: every event; widens the step it starts in.
  void cover(size_t file, const trace::Event& e);
  // The end to write for a step event (its own end if it was not seen).
  int64_t end_of(size_t file, const trace::Event& step) const;

 private:
  struct Span {
    int64_t start;
    int64_t recorded_end;
    int64_t end;    // widened
    int64_t limit;  // the next step's start on the thread
  };
  std::vector<Span>* spans(size_t file, uint32_t thread);
  const std::vector<Span>* spans(size_t file, uint32_t thread) const {
    return const_cast<StepSpans*>(this)->spans(file, thread);
  }
  std::vector<std::vector<std::vector<Span>>> by_file_thread_;
};

}  // namespace ptprof::exporting::detail
