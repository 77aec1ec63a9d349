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
#include <algorithm>
#include <cstdint>
#include <optional>
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

// What happens at one of the agent's boundaries (a step's, a capture
// range's Start or Stop, a trigger's by time): which boundaries to publish,
// in this order, and what records after it. Every kind is decided by a pure
// function (step_transition, capture_transition; the triggers' in the agent)
// and applied by one apply step (agent/src/window/window_controller.hpp).
struct StepTransition {
  bool end_window = false;     // publish WindowEnd of `before.window`
  bool begin_window = false;   // publish WindowBegin of `after.window`
  bool begin_at_zero = false;  // ... at tick 0: the window is open from the region's start
  bool recording = false;      // events of the new step are recorded (warmup included)
  // The step that begins here; none when a window opens or ends inside a
  // step (by time), or when a capture range stops.
  std::optional<uint64_t> step;
  WindowState after;
};

// The schedule moves to `step` (the agent's step boundary). `first`: the
// region's first step (no previous step: its action is None).
inline StepTransition step_transition(const Schedule& schedule, WindowState before, uint64_t previous_step,
                                      uint64_t step, bool first) {
  const StepAction prev = first ? StepAction::None : schedule.action(previous_step);
  const StepAction next = schedule.action(step);
  StepTransition t;
  t.after = before;
  t.step = step;
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

// A process's window state as one word (wire::ProcessHeader::window_state),
// for its children to follow: (window << 1) | 1 while window `window` is
// open, (next window << 1) while none is.
constexpr uint32_t window_word(WindowState w) { return (w.window << 1) | (w.in_window ? 1u : 0u); }
constexpr WindowState window_of_word(uint32_t word) { return WindowState{word >> 1, (word & 1u) != 0}; }

// A child without steps of its own (a DataLoader worker, a spawned helper)
// follows its nearest ancestor's windows: it is in window k exactly while
// the ancestor is. `ancestor` is the ancestor's window_word(). A window of
// the child's that the ancestor is no longer in ends; the ancestor's open
// window begins. No step begins: a child never invents steps.
inline StepTransition follow_transition(WindowState before, uint32_t ancestor) {
  const WindowState a = window_of_word(ancestor);
  StepTransition t;
  t.after = before;
  if (before.in_window && (!a.in_window || a.window != before.window)) {
    t.end_window = true;
    t.after.in_window = false;
    ++t.after.window;
  }
  if (a.in_window && !t.after.in_window) {
    t.begin_window = true;
    t.after.in_window = true;
  }
  // The child's next window is the ancestor's: its files join the ancestor's
  // window of the same number.
  t.after.window = a.in_window ? a.window : std::max(t.after.window, a.window);
  t.recording = t.after.in_window;
  return t;
}

// PTPROF_STEP=cudaProfilerApi: where the capture ranges are.
struct CaptureState {
  bool capturing = false;  // between a cudaProfilerStart and its Stop
  uint64_t ranges = 0;     // capture ranges begun so far: range k is step k
};

struct CaptureTransition {
  StepTransition step;  // applied as a step boundary's is
  CaptureState after;
};

// cudaProfilerStart (`start`) or cudaProfilerStop under
// PTPROF_STEP=cudaProfilerApi. Without a schedule each capture range is a
// window of its own (as nsys writes one report per range); with one, the
// schedule groups them. A Start begins its step, and the window if the step
// records and none is open; a Stop ends the window when its step was the
// window's last, so the steps inside a window run from one Start to the
// next; from a Stop to the next Start nothing records. None for a Start
// inside a range or a Stop outside one: nothing moves.
inline std::optional<CaptureTransition> capture_transition(const Schedule& schedule, WindowState before,
                                                           CaptureState capture, bool start) {
  if (start == capture.capturing) return std::nullopt;
  // No schedule: active=1, every range RecordAndSave.
  const Schedule s = schedule.enabled ? schedule : Schedule{.enabled = true};
  CaptureTransition c;
  c.after = CaptureState{start, capture.ranges + (start ? 1 : 0)};
  StepTransition& t = c.step;
  t.after = before;
  if (start) {
    const StepAction action = s.action(capture.ranges);
    t.step = capture.ranges;
    if (!before.in_window && Schedule::records(action)) {
      t.begin_window = true;
      t.after.in_window = true;
    }
    t.recording = action != StepAction::None;
    return c;
  }
  const uint64_t step = capture.ranges - 1;  // the range that stops
  if (before.in_window && (s.action(step) != StepAction::Record || s.finished_after(step))) {
    t.end_window = true;
    t.after.in_window = false;
    ++t.after.window;
  }
  return c;
}

// Parses "skip_first=N,wait=N,warmup=N,active=N,repeat=N" (any subset, any
// order, spaces allowed around items). Empty text means "no schedule".
// An error names the key, the value and what is accepted.
Result<Schedule> parse_schedule(std::string_view text);

// What ends a step (PTPROF_STEP).
struct StepRule {
  // Auto: the optimizer if one steps, else the DataLoader, else the model's
  // forward (the agent decides as the program runs: the first Optimizer.step
  // makes it the rule). Forward: the end of the outermost call of the model
  // (the first nn.Module called outside any other), which the in-target
  // Python bootstrap reports (python/ptprof/_boot.py).
  enum class Kind { Optimizer, Manual, CudaProfilerApi, Named, DataLoader, Auto, Forward } kind = Kind::Optimizer;
  std::string name;  // for Named: the RecordFunction / range / op name that ends a step

  // torch names them "Optimizer.step#<ClassName>.step" and
  // "enumerate(DataLoader)#<IterClass>.__next__".
  static bool is_optimizer_step(std::string_view scope) {
    return scope.size() > 20 && scope.substr(0, 15) == "Optimizer.step#" && scope.substr(scope.size() - 5) == ".step";
  }
  static bool is_dataloader_next(std::string_view scope) {
    return scope.size() > 31 && scope.substr(0, 22) == "enumerate(DataLoader)#" &&
           scope.substr(scope.size() - 9) == ".__next__";
  }

  // Whether the end of a scope called `scope` ends a step under this rule
  // (Auto: see the agent's Runtime::step_ends_at).
  bool ends_step(std::string_view scope) const {
    switch (kind) {
      case Kind::Optimizer:
        return is_optimizer_step(scope);
      case Kind::DataLoader:
        return is_dataloader_next(scope);
      case Kind::Named:
        return scope == name;
      default:
        return false;
    }
  }
  // Whether the name is an operator's rather than a user scope's: the torch
  // bridge then watches every operator's end (which costs every operator a
  // callback, in skip and wait steps too). Operators are namespaced
  // (aten::embedding, c10d::allreduce_); autograd's are <Op>Backward<N>.
  bool watches_ops() const {
    return kind == Kind::Named && (name.find("::") != std::string::npos || name.find("Backward") != std::string::npos);
  }
  // For the run's summary: "optimizer (the end of Optimizer.step)".
  std::string describe() const;
};

Result<StepRule> parse_step_rule(std::string_view text);

}  // namespace ptprof
