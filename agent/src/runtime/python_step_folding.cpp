// The step ends the Python bootstrap reports (the optimizer's step, the
// DataLoader iterator; python/ptprof/_step_scopes.py), folded outside
// windows.
//
// A report is a call through ctypes and a step end in the agent: about 1 us
// warm and several in a real step, where the agent's and ctypes' code and
// data are cold (bench/registered_callbacks.py --agent-steps). Outside
// windows most of them change nothing but the step's number, so each call
// says how many of the next ends of its kind change nothing else, and the
// bootstrap counts those in Python and hands the count over with the next
// report it makes (or at exit). What stays exact:
//   - the schedule: only steps whose action is None are folded, and the last
//     kMeteredSteps of them before a window are reported one by one, so the
//     cost meter (window/step_cost_meter.hpp) has its unrecorded steps just before;
//   - on demand: a trigger sets fold_wake, which the bootstrap reads before
//     each fold, so the window opens at the next step's end as before; and
//     the first kReportedAfterWindow ends after a window, and the end after
//     each folded call, are reported alone, so the meter has an unrecorded
//     step close before the next window to pair its steps with;
//   - the counts: a folded end is counted as a step candidate (and a step)
//     when it is handed over; at most kMaxFoldedSteps ends are held at once.
// Not folded: windows, a child that follows its ancestor's windows, the
// cudaProfilerApi rule, auto before the optimizer has stepped (a batch may
// end steps until then), a rule that names a scope (the bridge watches it).
// The window controller's side (which ends may be folded, and counting
// them in) is window/step_folding.cpp.
#include "record/thread_state.hpp"
#include "runtime/runtime.hpp"
#include "window/window_controller.hpp"

namespace ptprof::agent {

namespace {
// The most ends the bootstrap holds: what a process that ends without
// running Python's atexit (os._exit, a signal) leaves uncounted.
constexpr uint32_t kMaxFoldedSteps = 32;
// Unrecorded steps reported one by one before a scheduled window.
constexpr uint32_t kMeteredSteps = 3;
}  // namespace

uint32_t Runtime::python_scopes_ended(const char* name, uint32_t count) {
  if (!active() || !name || count == 0 || !python_steps_.load(std::memory_order_acquire)) return 0;
  const bool optimizer = StepRule::is_optimizer_step(name);
  if (!optimizer && !StepRule::is_dataloader_next(name)) return 0;
  // The folded ends came where the last call said they could: each is what
  // this one would be without a window (foldable_python_ends).
  if (count > 1 && step_ends_at(name, count - 1)) windows_.fold_steps(count - 1);
  ThreadState* t = thread_state();
  if (t && t->take_step_end(step_ends_at(name), current_step())) end_step();
  return foldable_python_ends(optimizer);
}

uint32_t Runtime::foldable_python_ends(bool optimizer) {
  bool ends_steps = false;
  switch (config_->step.kind) {
    case StepRule::Kind::Optimizer:
      ends_steps = optimizer;
      break;
    case StepRule::Kind::DataLoader:
      ends_steps = !optimizer;
      break;
    case StepRule::Kind::Forward:
      break;
    case StepRule::Kind::Auto:
      // Settled once the optimizer has stepped: its ends end steps, no batch does.
      if (header_->auto_rule.load(std::memory_order_relaxed) != uint32_t(StepRule::Kind::Optimizer) + 1) return 0;
      ends_steps = optimizer;
      break;
    default:
      return 0;
  }
  return ends_steps ? windows_.foldable_steps(kMaxFoldedSteps, kMeteredSteps) : kMaxFoldedSteps;
}

}  // namespace ptprof::agent
