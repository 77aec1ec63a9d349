// step_transition and capture_transition (schedule.hpp): the agent's step
// boundaries and cudaProfilerApi capture ranges, table-tested. Each row runs
// a schedule over steps 0..N-1 (or over a sequence of cudaProfilerStart and
// Stop calls) and writes what the agent publishes at each: 'E' a WindowEnd,
// 'B' a WindowBegin ('Z' at tick 0), then 'r' when what follows records
// (warmup too: the launcher discards warmup events, which fall outside any
// window) or '.' when not, or '-' when nothing moves; separated by spaces.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "ptprof/schedule.hpp"
#include "ptprof/slot_window.hpp"

using ptprof::capture_transition;
using ptprof::CaptureState;
using ptprof::Schedule;
using ptprof::step_transition;
using ptprof::StepTransition;
using ptprof::WindowState;

namespace {

// Appends what `t` publishes and whether what follows records.
void describe(const StepTransition& t, const WindowState& before, uint32_t& windows_ended, std::string& out) {
  if (!out.empty()) out += ' ';
  if (t.end_window) {
    out += 'E';
    CHECK(before.window == windows_ended);  // ends the window that was open
    ++windows_ended;
  }
  if (t.begin_window) out += t.begin_at_zero ? 'Z' : 'B';
  out += t.recording ? 'r' : '.';
}

std::string run_steps(const Schedule& s, uint64_t steps) {
  std::string out;
  WindowState state;
  uint32_t windows_ended = 0;
  for (uint64_t step = 0; step < steps; ++step) {
    const auto t = step_transition(s, state, step == 0 ? 0 : step - 1, step, step == 0);
    CHECK(t.step == step);
    describe(t, state, windows_ended, out);
    state = t.after;
  }
  return out;
}

// `calls`: 'S' a cudaProfilerStart, 'T' a cudaProfilerStop.
std::string run_captures(const Schedule& s, const std::string& calls) {
  std::string out;
  WindowState state;
  CaptureState capture;
  uint32_t windows_ended = 0;
  uint64_t ranges_started = 0;
  for (char call : calls) {
    const bool start = call == 'S';
    const auto c = capture_transition(s, state, capture, start);
    if (!c) {
      out += out.empty() ? "-" : " -";
      continue;
    }
    // A Start begins step k (the k-th range); a Stop begins no step.
    CHECK(c->step.step == (start ? std::optional<uint64_t>(ranges_started) : std::nullopt));
    CHECK_FALSE(c->step.begin_at_zero);
    ranges_started += start ? 1 : 0;
    CHECK(c->after.capturing == start);
    CHECK(c->after.ranges == ranges_started);
    describe(c->step, state, windows_ended, out);
    state = c->step.after;
    capture = c->after;
  }
  return out;
}

Schedule schedule(uint64_t skip_first, uint64_t wait, uint64_t warmup, uint64_t active, uint64_t repeat) {
  Schedule s;
  s.enabled = true;
  s.skip_first = skip_first;
  s.wait = wait;
  s.warmup = warmup;
  s.active = active;
  s.repeat = repeat;
  return s;
}

}  // namespace

TEST_CASE("step_transition: boundaries the agent publishes, step by step", "[schedule]") {
  struct Row {
    const char* name;
    Schedule schedule;
    uint64_t steps;
    const char* expected;
  };
  const Row rows[] = {
      {"no schedule: one window from tick 0", Schedule{}, 4, "Zr r r r"},
      {"wait=1,warmup=1,active=2", schedule(0, 1, 1, 2, 0), 8, ". r Br r E. r Br r"},
      {"active from step 0 begins at tick 0", schedule(0, 0, 0, 2, 0), 5, "Zr r EBr r EBr"},
      {"skip_first=2 then warmup=1,active=1,repeat=1", schedule(2, 0, 1, 1, 1), 6, ". . r Br E. ."},
      {"wait=2,active=1,repeat=2", schedule(0, 2, 0, 1, 2), 7, ". . Br E. . Br E."},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    CHECK(run_steps(row.schedule, row.steps) == row.expected);
  }
}

TEST_CASE("step_transition: a window ends at a non-recording step even without RecordAndSave", "[schedule]") {
  // A window left open by a fork child's first step (in_window, step None).
  WindowState open{3, true};
  const auto t = step_transition(schedule(0, 1, 0, 1, 0), open, 0, 0, /*first=*/true);
  CHECK(t.end_window);
  CHECK_FALSE(t.begin_window);
  CHECK(t.after.window == 4);
  CHECK_FALSE(t.after.in_window);
  CHECK_FALSE(t.recording);
}

TEST_CASE("capture_transition: cudaProfilerApi capture ranges are the steps", "[schedule]") {
  struct Row {
    const char* name;
    Schedule schedule;
    const char* calls;
    const char* expected;
  };
  const Row rows[] = {
      {"no schedule: each range a window of its own", Schedule{}, "STSTST", "Br E. Br E. Br E."},
      {"wait=1,active=1,repeat=1: ranges before and after record nothing", schedule(0, 1, 0, 1, 1), "STSTST",
       ". . Br E. . ."},
      {"active=2: the window spans two ranges, idle between them", schedule(0, 0, 0, 2, 0), "STSTST", "Br . r E. Br ."},
      {"warmup=1,active=1: the warmup range records outside any window", schedule(0, 0, 1, 1, 0), "STST", "r . Br E."},
      {"a Start inside a range and a Stop outside one move nothing", Schedule{}, "SSTTS", "Br - E. - Br"},
      {"a Stop before any Start moves nothing", Schedule{}, "TST", "- Br E."},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    CHECK(run_captures(row.schedule, row.calls) == row.expected);
  }
}

// follow_transition: a child without steps follows its ancestor's windows.
// Each row feeds the ancestor's window words in order and writes, per word,
// what the child publishes ('E' a WindowEnd, 'B' a WindowBegin, then 'r' or
// '.', as above; '-' when nothing moves) and the child's window after it.
TEST_CASE("follow_transition: a child is in its ancestor's window, and only then", "[schedule]") {
  using ptprof::follow_transition;
  using ptprof::window_word;
  const auto run = [](WindowState child, const std::vector<WindowState>& ancestor) {
    std::string out;
    for (const WindowState& a : ancestor) {
      const StepTransition t = follow_transition(child, window_word(a));
      CHECK_FALSE(t.step.has_value());  // a child never invents steps
      if (!out.empty()) out += ' ';
      if (t.end_window) {
        out += 'E' + std::to_string(child.window);
        CHECK(child.in_window);
      }
      if (t.begin_window) out += 'B' + std::to_string(t.after.window);
      if (!t.end_window && !t.begin_window) out += '-';
      out += t.recording ? 'r' : '.';
      CHECK(t.after.in_window == a.in_window);
      CHECK(t.after.window == a.window);
      child = t.after;
    }
    return out;
  };
  // A DataLoader worker forked before the first window: waits, then records
  // windows 0 and 1 with its parent.
  CHECK(run(WindowState{0, false}, {{0, false}, {0, true}, {1, false}, {1, true}, {2, false}}) == "-. B0r E0. B1r E1.");
  // Forked inside window 2: in it from the fork, ends with it.
  CHECK(run(WindowState{2, true}, {{2, true}, {3, false}}) == "-r E2.");
  // Woken late, after the ancestor's window 0 ended and window 1 began: 0
  // ends, 1 begins, in one transition.
  CHECK(run(WindowState{0, true}, {{1, true}}) == "E0B1r");
  // Woken only after window 0 came and went: nothing to record.
  CHECK(run(WindowState{0, false}, {{1, false}}) == "-.");
  CHECK(window_word(WindowState{5, true}) == 11u);
  CHECK(ptprof::window_of_word(10u).window == 5u);
}

// close_slot_window (slot_window.hpp): what the launcher does for a process
// killed in a window, as its own exit would have (the window's end, the next
// window's number), and nothing to one that was in no window.
TEST_CASE("close_slot_window: a dead process's open window ends, as its exit would end it", "[schedule]") {
  using ptprof::window_of_word;
  using ptprof::window_word;
  ptprof::wire::ProcessSlot slot;
  auto word = ptprof::wire::slot_window_word(slot);
  word.store(window_word(WindowState{3, true}));
  CHECK(ptprof::wire::close_slot_window(slot));
  CHECK(word.load() == window_word(WindowState{4, false}));
  // A child that followed window 3 ends it, and begins nothing.
  const StepTransition t = ptprof::follow_transition(WindowState{3, true}, word.load());
  CHECK(t.end_window);
  CHECK_FALSE(t.begin_window);
  CHECK_FALSE(t.recording);
  // Already out of any window (it exited through its agent): unchanged.
  CHECK_FALSE(ptprof::wire::close_slot_window(slot));
  CHECK(word.load() == window_word(WindowState{4, false}));
  CHECK(window_of_word(word.load()).window == 4u);
}
