// The window controller's side of the step ends the Python bootstrap folds
// outside windows (runtime/python_step_folding.cpp says what stays exact):
// how many of the next ends change nothing but the step's number, and
// counting folded ends in.
#include "window/window_controller.hpp"

namespace ptprof::agent {

namespace {
// On demand, unrecorded steps reported one by one after a window.
constexpr uint32_t kReportedAfterWindow = 16;
}  // namespace

void WindowController::fold_steps(uint64_t count) {
  std::lock_guard lock(step_mu_);
  step_ += count;
  current_step_.store(step_, std::memory_order_relaxed);
  header_->steps_ended.store(step_, std::memory_order_relaxed);
  meter_.steps_folded();
  folded_last_ = true;
}

uint32_t WindowController::foldable_steps(uint32_t most, uint32_t metered) {
  std::lock_guard lock(step_mu_);
  if (config_->step.kind == StepRule::Kind::CudaProfilerApi || following_ || stopped_) return 0;
  if (windows_.in_window || recording()) {
    reported_unrecorded_ = 0;
    return 0;
  }
  // The meter's steps, each reported alone: the one after each folded call,
  // and on demand the first kReportedAfterWindow after a window, so that a
  // window triggered soon after another is measured against the step before
  // it (the steps right after a window are slower: the launcher drains it).
  if (config_->on_demand && reported_unrecorded_ < kReportedAfterWindow) {
    ++reported_unrecorded_;
    return 0;
  }
  if (folded_last_) {
    folded_last_ = false;
    return 0;
  }
  if (config_->on_demand) return session_->trigger_seq.load(std::memory_order_acquire) == trigger_seen_ ? most : 0;
  uint32_t none = 0;  // steps after this one that begin with nothing to record
  while (none < most + metered && config_->schedule.action(step_ + 1 + none) == StepAction::None) ++none;
  return none > metered ? none - metered : 0;
}

}  // namespace ptprof::agent
