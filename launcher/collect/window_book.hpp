// The schedule's windows as one process published them (its boundaries),
// and what each holds until it is written: its span of ticks, the spans
// begun in it and still open, its steps, and its trace. Events are sorted
// into windows by time: the book answers "which window holds this tick".
//
// Windows are kept in the order they began and never removed, so a window's
// slot (its place in the book) is stable; it is not the schedule's window
// number (Window::index), which a process may skip.
#pragma once
#include <chrono>
#include <cstdint>
#include <vector>

#include "collect/window_trace.hpp"
#include "ptprof/shm_abi.hpp"

namespace ptprof::launcher {

// A window's ProfilerStep spans: the one open, and those closed.
struct StepLog {
  struct Step {
    uint64_t number = 0, start = 0, end = 0;  // ticks
    uint32_t instance = 0;                    // the thread that began it
    uint16_t flags = 0;  // trace::kBeforeSteps, kAfterSteps, or kTruncated: a step the process's end cut short
  };
  bool open = false;
  Step current;  // while open; its end is not known yet
  std::vector<Step> closed;
};

struct Window {
  uint32_t index = 0;  // the schedule's window number
  uint64_t begin = 0;
  uint64_t end = UINT64_MAX;  // ticks; max while open
  std::chrono::steady_clock::time_point end_seen{};
  bool gpu_flushed = false;  // the agent's GpuFlushed boundary for it arrived
  bool done = false;         // written, or lost: never opened again
  uint32_t open_spans = 0;   // spans begun in it whose end is not seen yet
  StepLog steps;
  WindowTrace trace;
};

class WindowBook {
 public:
  // Takes in the boundaries the agent published since the last call.
  void read_boundaries(const wire::ProcessHeader& header);

  std::vector<Window>& windows() { return windows_; }
  const std::vector<Window>& windows() const { return windows_; }
  Window& at(int32_t slot) {
    PTPROF_DCHECK(slot >= 0 && size_t(slot) < windows_.size());
    return windows_[size_t(slot)];
  }
  // The slot of the window whose span of ticks holds `ticks`; -1 when none.
  // Inline, as window_for: every event drained asks.
  int32_t window_slot(uint64_t ticks) const {
    for (size_t i = windows_.size(); i-- > 0;) {
      const Window& w = windows_[i];
      if (ticks >= w.begin && ticks < w.end) return int32_t(i);
      if (ticks >= w.end) return -1;  // after this window, before the next began
    }
    return -1;
  }
  // The same for an event: one for a window already written is late (and
  // counted) and goes nowhere, -1.
  int32_t window_for(uint64_t ticks) {
    const int32_t slot = window_slot(ticks);
    if (slot < 0 || !windows_[size_t(slot)].done) return slot;
    ++late_events_;
    return -1;
  }
  // The same for work on a device that began at `ticks`, which may also go
  // to the window that ended last before it, while that window is not yet
  // written: the device runs behind the CPU, so work launched in a window
  // often starts after the window's CPU side ended, and comes in with the
  // agent's flush after that end (torch.profiler keeps it in its window).
  int32_t device_window_for(uint64_t ticks) {
    if (window_slot(ticks) >= 0) return window_for(ticks);
    for (size_t i = windows_.size(); i-- > 0;) {
      const Window& w = windows_[i];
      if (w.begin > ticks) continue;
      return w.done ? -1 : int32_t(i);  // the window just before: `ticks` is after its end
    }
    return -1;
  }
  uint64_t late_events() const { return late_events_; }

  // A span begun in window `slot` opens or closes: a window waits, within
  // the grace period, for the spans begun in it to end.
  void span_opened(int32_t slot) { ++at(slot).open_spans; }
  Window& span_closed(int32_t slot) {
    Window& w = at(slot);
    PTPROF_DCHECK(w.open_spans > 0);
    --w.open_spans;
    return w;
  }

  // A Step record: step `number` begins at `ts` on `instance`; the step
  // before it ends there, in whichever window it was.
  void step_began(uint64_t ts, uint64_t number, uint32_t instance);
  // The open step of `w` ends at `end` (cut at the window's end).
  static void close_step(Window& w, uint64_t end);
  // The process is gone and `w` was open to its end: its open step is the
  // process's last. After a clean exit it is the time after the last step
  // (a step ended before it) or nothing (no step ever ended: no span); after
  // a kill, the step that was running, marked partial.
  static void end_last_step(Window& w, uint64_t end, bool clean_exit);
  // Step 0's iteration began at `at` (SetupSplit): what came before it is
  // the setup, written as "before step 1".
  void split_first_step(uint64_t at);

  // Whether window number `index` began, and whether it is not yet written.
  bool begun(uint32_t index) const;
  bool open(uint32_t index) const;
  // Whether an ended window drained past can be written now: nothing begun
  // in it is still open and its GPU records are in (`gpu_flush`: the agent
  // flushes CUPTI per window), or its grace period is over.
  static bool ready(const Window& w, uint64_t drained_horizon, bool gpu_flush, std::chrono::milliseconds grace,
                    std::chrono::steady_clock::time_point now);

 private:
  std::vector<Window> windows_;
  uint32_t boundaries_read_ = 0;
  uint64_t late_events_ = 0;
};

}  // namespace ptprof::launcher
