// A child follows its ancestor's windows (issue 23): a DataLoader worker, a
// multiprocessing child, any process of the target's tree that has no steps
// of its own records while its nearest ancestor's window is open, and its
// events join that window's files. The window follower, a thread of the
// agent's own, sleeps on the window word of the ancestor's session slot (a
// shared futex the ancestor wakes at each WindowBegin and WindowEnd, and at
// its exit) and applies follow_transition under step_mu_, as a step boundary
// does; it never records an event. The hot path is untouched: it reads the
// same recording flag the follower flips.
//
// A child never invents steps, and one that has steps of its own (a rank
// torchrun spawned, which itself has none) runs its own schedule: the first
// step boundary of the child's own ends the following (stop_following).
#include "base/agent_thread.hpp"
#include "base/log.hpp"
#include "window/ancestor_slot.hpp"
#include "window/window_controller.hpp"

namespace ptprof::agent {

void WindowController::follow(wire::ProcessSlot* ancestor) { ancestor_ = ancestor; }

// Without a schedule every process records its whole life already; on
// demand the triggers name the processes; capture ranges are the program's
// own.
bool WindowController::follows() const {
  return ancestor_ != nullptr && config_->schedule.enabled && !config_->on_demand &&
         config_->step.kind != StepRule::Kind::CudaProfilerApi;
}

void* WindowController::follower_main(void* self) {
  static_cast<WindowController*>(self)->follow_ancestor();
  return nullptr;
}

void WindowController::start_follower() {
  int error = 0;
  if (!start_agent_thread(follower_main, this, "ptprof-follow", &error))
    log(Level::Warn, "cannot start the window follower (error %d): this process records only in steps of its own",
        error);
}

void WindowController::follow_ancestor() {
  for (;;) {
    uint32_t word = 0;
    std::optional<uint32_t> ended;
    {
      std::lock_guard lock(step_mu_);
      if (stopped_ || !following_) return;
      word = slot_window_word(*ancestor_).load(std::memory_order_acquire);
      const StepTransition t = follow_transition(windows_, word);
      if (t.end_window || t.begin_window) ended = apply(t, clock::ticks_ordered(clock_kind_));
    }
    notify_window_end(ended);  // outside step_mu_: the CUPTI flush takes it
    futex_wait_shared(&ancestor_->reserved, word, 0);
  }
}

std::optional<uint32_t> WindowController::stop_following(uint64_t ticks) {
  following_ = false;
  header_->follows_pid.store(0, std::memory_order_relaxed);
  if (!windows_.in_window) return std::nullopt;
  StepTransition t;
  t.end_window = true;
  t.after = WindowState{windows_.window + 1, false};
  return apply(t, ticks);
}

}  // namespace ptprof::agent
