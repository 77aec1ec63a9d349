// The schedule: exactly torch.profiler.schedule's semantics.
//
// Steps are numbered from 0. For step s:
//   s < skip_first                     -> None
//   k = s - skip_first, n = wait + warmup + active
//   repeat > 0 and k / n >= repeat     -> None
//   k % n < wait                       -> None
//   k % n < wait + warmup              -> Warmup
//   k % n < n - 1                      -> Record
//   otherwise                          -> RecordAndSave
// With no schedule every step is Record (one window for the whole run).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "ptprof/status.hpp"

namespace ptprof {

enum class StepAction : uint8_t { None, Warmup, Record, RecordAndSave };

struct Schedule {
  bool enabled = false;  // false: record everything as one window
  uint64_t skip_first = 0, wait = 0, warmup = 0, active = 1, repeat = 0;

  StepAction action(uint64_t step) const {
    if (!enabled) return StepAction::Record;
    if (step < skip_first) return StepAction::None;
    uint64_t k = step - skip_first;
    uint64_t n = wait + warmup + active;
    if (repeat > 0 && k / n >= repeat) return StepAction::None;
    uint64_t m = k % n;
    if (m < wait) return StepAction::None;
    if (m < wait + warmup) return StepAction::Warmup;
    return m < n - 1 ? StepAction::Record : StepAction::RecordAndSave;
  }

  static bool records(StepAction a) { return a == StepAction::Record || a == StepAction::RecordAndSave; }
  // True when no step after `step` can ever record again.
  bool finished_after(uint64_t step) const {
    if (!enabled || repeat == 0) return false;
    return step + 1 >= skip_first + repeat * (wait + warmup + active);
  }

  std::string to_string() const;
};

// The agent's window state between steps.
struct WindowState {
  uint32_t window = 0;     // index of the current or next window
  bool in_window = false;  // a WindowBegin is published and not yet ended
};

// What happens when the schedule moves to `step` (the agent's step boundary,
// Runtime::apply_step): which boundaries to publish, in this order, and
// whether the new step records. Pure, so it is table-tested.
struct StepTransition {
  bool end_window = false;     // publish WindowEnd of `before.window`
  bool begin_window = false;   // publish WindowBegin of `after.window`
  bool begin_at_zero = false;  // ... at tick 0: the window is open from the region's start
  bool recording = false;      // events of the new step are recorded (warmup included)
  WindowState after;
};

// `first`: the region's first step (no previous step: its action is None).
inline StepTransition step_transition(const Schedule& schedule, WindowState before, uint64_t previous_step,
                                      uint64_t step, bool first) {
  const StepAction prev = first ? StepAction::None : schedule.action(previous_step);
  const StepAction next = schedule.action(step);
  StepTransition t;
  t.after = before;
  if (before.in_window && (prev == StepAction::RecordAndSave || !Schedule::records(next))) {
    t.end_window = true;
    t.after.in_window = false;
    ++t.after.window;
  }
  if (!t.after.in_window && Schedule::records(next)) {
    t.begin_window = true;
    t.begin_at_zero = first;
    t.after.in_window = true;
  }
  t.recording = next != StepAction::None;
  return t;
}

// Parses "skip_first=N,wait=N,warmup=N,active=N,repeat=N" (any subset, any
// order, spaces allowed around items). Empty text means "no schedule".
// An error names the key, the value and what is accepted.
Result<Schedule> parse_schedule(std::string_view text);

// What ends a step (PTPROF_STEP).
struct StepRule {
  enum class Kind { Optimizer, Manual, CudaProfilerApi, Named } kind = Kind::Optimizer;
  std::string name;  // for Named: the RecordFunction / range name that ends a step

  // Whether the end of a scope called `scope` ends a step under this rule.
  bool ends_step(std::string_view scope) const {
    switch (kind) {
      case Kind::Optimizer:
        // torch names it "Optimizer.step#<ClassName>.step"
        return scope.size() > 20 && scope.substr(0, 15) == "Optimizer.step#" &&
               scope.substr(scope.size() - 5) == ".step";
      case Kind::Named:
        return scope == name;
      default:
        return false;
    }
  }
};

Result<StepRule> parse_step_rule(std::string_view text);

}  // namespace ptprof
