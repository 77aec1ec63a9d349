#include "collect/window_book.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace ptprof::launcher {

void WindowBook::read_boundaries(const wire::ProcessHeader& header) {
  const uint32_t count = header.boundary_count.load(std::memory_order_acquire);
  if (count - boundaries_read_ > wire::kMaxBoundaries) {
    spdlog::warn("process {}: schedule boundaries were overwritten before they were read", header.pid);
    boundaries_read_ = count - wire::kMaxBoundaries;
  }
  for (; boundaries_read_ < count; ++boundaries_read_) {
    const wire::Boundary& b = header.boundaries[boundaries_read_ % wire::kMaxBoundaries];
    if (b.kind == uint32_t(wire::BoundaryKind::WindowBegin)) {
      Window w;
      w.index = b.window;
      w.begin = b.ticks;
      windows_.push_back(std::move(w));
    } else if (b.kind == uint32_t(wire::BoundaryKind::GpuFlushed)) {
      for (auto& w : windows_)
        if (w.index == b.window) w.gpu_flushed = true;
    } else if (b.kind == uint32_t(wire::BoundaryKind::WindowEnd)) {
      for (auto it = windows_.rbegin(); it != windows_.rend(); ++it) {
        if (it->index == b.window && it->end == UINT64_MAX) {
          it->end = b.ticks;
          it->end_seen = std::chrono::steady_clock::now();
          break;
        }
      }
    }
  }
}

void WindowBook::step_began(uint64_t ts, uint64_t number, uint32_t instance) {
  int32_t slot = window_slot(ts);
  if (slot >= 0 && windows_[size_t(slot)].done) slot = -1;  // a step is not an event: never late
  // The same step again: it restarts (the agent moves step 0 past the
  // import of torch).
  if (slot >= 0) {
    StepLog& steps = windows_[size_t(slot)].steps;
    if (steps.open && steps.current.number == number && steps.current.instance == instance) {
      steps.current.start = ts;
      return;
    }
  }
  for (auto& w : windows_)
    if (!w.done && w.steps.open && w.steps.current.start <= ts) close_step(w, ts);
  if (slot < 0) return;
  StepLog& steps = windows_[size_t(slot)].steps;
  steps.open = true;
  steps.current = StepLog::Step{number, ts, 0, instance};
}

// Steps are kept aside and written with the window: a window holding
// nothing but steps (a shell, a helper process) gets no file.
void WindowBook::close_step(Window& w, uint64_t end) {
  if (!w.steps.open) return;
  w.steps.open = false;
  StepLog::Step s = w.steps.current;
  s.end = std::min(end, w.end);
  w.steps.closed.push_back(s);
}

void WindowBook::end_last_step(Window& w, uint64_t end, bool clean_exit) {
  if (!w.steps.open) return;
  if (w.steps.current.number == 0 && clean_exit) {
    w.steps.open = false;  // no step ever ended: a child process, or a rule that never matched
    return;
  }
  w.steps.current.flags = clean_exit ? trace::kAfterSteps : trace::kTruncated;
  close_step(w, end);
}

void WindowBook::split_first_step(uint64_t at) {
  for (Window& w : windows_) {
    if (w.done) continue;
    auto& closed = w.steps.closed;
    for (size_t i = 0; i < closed.size(); ++i) {
      StepLog::Step& s = closed[i];
      if (s.number != 0 || s.flags != 0 || at <= s.start || at >= s.end) continue;
      StepLog::Step setup = s;
      setup.end = at;
      setup.flags = trace::kBeforeSteps;
      s.start = at;
      closed.insert(closed.begin() + ptrdiff_t(i), setup);
      return;
    }
  }
}

bool WindowBook::begun(uint32_t index) const {
  return std::any_of(windows_.begin(), windows_.end(), [&](const Window& w) { return w.index == index; });
}

bool WindowBook::open(uint32_t index) const {
  return std::any_of(windows_.begin(), windows_.end(), [&](const Window& w) { return w.index == index && !w.done; });
}

bool WindowBook::ready(const Window& w, uint64_t drained_horizon, bool gpu_flush, std::chrono::milliseconds grace,
                       std::chrono::steady_clock::time_point now) {
  if (w.done || w.end == UINT64_MAX || drained_horizon <= w.end) return false;
  // While the agent collects GPU activity, an ended window waits for its
  // word that CUPTI's buffers are flushed (BoundaryKind::GpuFlushed): its
  // kernels and copies may still be on their way.
  const bool holds_for_gpu = gpu_flush && !w.gpu_flushed;
  return (w.open_spans == 0 && !holds_for_gpu) || now - w.end_seen >= grace;
}

}  // namespace ptprof::launcher
