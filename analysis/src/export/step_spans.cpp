#include "export/step_spans.hpp"

#include <algorithm>
#include <limits>

namespace ptprof::exporting::detail {

void StepSpans::add_step(size_t file, const trace::Event& e) {
  if (e.kind != trace::EventKind::Step) return;
  if (by_file_thread_.size() <= file) by_file_thread_.resize(file + 1);
  auto& threads = by_file_thread_[file];
  if (threads.size() <= e.thread) threads.resize(size_t(e.thread) + 1);
  int64_t end = std::max(e.end_ns, e.start_ns);
  threads[e.thread].push_back({e.start_ns, end, end, 0});
}

void StepSpans::sort() {
  for (auto& threads : by_file_thread_)
    for (auto& list : threads) {
      std::sort(list.begin(), list.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
      for (size_t i = 0; i < list.size(); ++i)
        list[i].limit = i + 1 < list.size() ? list[i + 1].start : std::numeric_limits<int64_t>::max();
    }
}

std::vector<StepSpans::Span>* StepSpans::spans(size_t file, uint32_t thread) {
  if (file >= by_file_thread_.size() || thread >= by_file_thread_[file].size()) return nullptr;
  return &by_file_thread_[file][thread];
}

void StepSpans::cover(size_t file, const trace::Event& e) {
  if (e.kind == trace::EventKind::Step) return;
  auto* list = spans(file, e.thread);
  if (!list || list->empty()) return;
  auto it =
      std::upper_bound(list->begin(), list->end(), e.start_ns, [](int64_t t, const Span& s) { return t < s.start; });
  if (it == list->begin()) return;
  Span& s = *--it;
  if (e.start_ns < s.recorded_end && e.end_ns > s.end) s.end = std::min(e.end_ns, s.limit);
}

int64_t StepSpans::end_of(size_t file, const trace::Event& step) const {
  auto* list = spans(file, step.thread);
  if (!list) return step.end_ns;
  auto it =
      std::lower_bound(list->begin(), list->end(), step.start_ns, [](const Span& s, int64_t t) { return s.start < t; });
  return it != list->end() && it->start == step.start_ns ? std::max(it->end, step.end_ns) : step.end_ns;
}

}  // namespace ptprof::exporting::detail
