// step_transition (schedule.hpp): the agent's step boundaries, table-tested.
// Each row runs a schedule over steps 0..N-1 and writes what the agent
// publishes at each step: 'E' a WindowEnd, 'B' a WindowBegin ('Z' at tick
// 0), then 'r' when the step records (warmup too: the launcher discards
// warmup events, which fall outside any window) or '.' when not; steps are
// separated by spaces.
#include <catch2/catch.hpp>

#include <string>

#include "ptprof/schedule.hpp"

using ptprof::Schedule;
using ptprof::step_transition;
using ptprof::WindowState;

namespace {

std::string run_steps(const Schedule& s, uint64_t steps) {
  std::string out;
  WindowState state;
  uint32_t windows_ended = 0;
  for (uint64_t step = 0; step < steps; ++step) {
    const auto t = step_transition(s, state, step == 0 ? 0 : step - 1, step, step == 0);
    if (!out.empty()) out += ' ';
    if (t.end_window) {
      out += 'E';
      CHECK(state.window == windows_ended);  // ends the window that was open
      ++windows_ended;
    }
    if (t.begin_window) out += t.begin_at_zero ? 'Z' : 'B';
    out += t.recording ? 'r' : '.';
    state = t.after;
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
