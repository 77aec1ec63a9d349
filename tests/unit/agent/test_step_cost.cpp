// The cost measured on a process's own steps: which steps the agent's meter
// takes (agent/src/window/step_cost_meter.hpp) and the summary's line on them
// (cli/step_cost_line.hpp).
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "cli/step_cost_line.hpp"
#include "window/step_cost_meter.hpp"

using ptprof::agent::StepCostMeter;
using ptprof::launcher::StepFacts;

namespace {

// Feeds `meter` steps of a schedule wait=W, active=A from step 0 on one
// thread: recorded steps take `recorded_ns` and record `ops` operators,
// unrecorded ones take `unrecorded_ns`.
struct Feeder {
  StepCostMeter& meter;
  int thread_key = 0;
  uint64_t step = 0, cpu = 0, ops = 0;

  void step_of(bool recording, uint64_t ns, uint64_t step_ops, const void* thread = nullptr) {
    cpu += ns;
    ops += step_ops;
    meter.step_ended(step++, thread ? thread : &thread_key, cpu, ops, recording, recording);
  }
  void cycles(int n, int wait, int active, uint64_t recorded_ns, uint64_t unrecorded_ns, uint64_t step_ops) {
    for (int c = 0; c < n; ++c) {
      for (int i = 0; i < wait; ++i) step_of(false, unrecorded_ns, 0);
      for (int i = 0; i < active; ++i) step_of(true, recorded_ns, step_ops);
    }
  }
};

}  // namespace

TEST_CASE("StepCostMeter: each steady recorded step against the unrecorded one before it", "[agent][cost]") {
  StepCostMeter m;
  Feeder f{m};
  // wait=2, active=3: steady are the 2nd wait step and the 2nd and 3rd window steps.
  f.cycles(2, 2, 3, 1500, 1000, 400);
  CHECK_FALSE(m.figures());  // 2 pairs, 1 unrecorded step (steps 0 and 1 are never steady)
  f.cycles(2, 2, 3, 1500, 1000, 400);
  const auto fig = m.figures();
  REQUIRE(fig);
  CHECK(fig->added_ns == 500);
  CHECK(fig->unrecorded_ns == 1000);
  CHECK(fig->ops == 400);
  CHECK(fig->pairs == 6);             // the first cycle's recorded steps had no unrecorded one before them
  CHECK(fig->unrecorded_steps == 3);  // the first cycle's are steps 0 and 1
}

TEST_CASE("StepCostMeter: a machine that slows down moves both sides of a pair", "[agent][cost]") {
  StepCostMeter m;
  Feeder f{m};
  // Unrecorded steps are fewer than recorded ones: the newest 64 of each
  // kind would span different stretches of the run. Pairs do not.
  f.cycles(60, 2, 3, 1500, 1000, 400);
  f.cycles(30, 2, 3, 3500, 3000, 400);  // everything 2 us slower
  const auto fig = m.figures();
  REQUIRE(fig);
  CHECK(fig->added_ns == 500);
}

TEST_CASE("StepCostMeter: recorded steps faster than unrecorded ones give a negative difference", "[agent][cost]") {
  StepCostMeter m;
  Feeder f{m};
  f.cycles(4, 2, 3, 900, 1000, 400);
  const auto fig = m.figures();
  REQUIRE(fig);
  CHECK(fig->added_ns == -100);
}

TEST_CASE("StepCostMeter: a window's first step and the step after one are not steady", "[agent][cost]") {
  StepCostMeter m;
  Feeder f{m};
  f.step_of(false, 1000, 0);
  f.step_of(false, 1000, 0);
  for (int c = 0; c < 5; ++c) {
    f.step_of(true, 9000, 400);  // first of the window: cold
    f.step_of(true, 1500, 400);
    f.step_of(true, 1500, 400);
    f.step_of(false, 7000, 0);  // after the window: its end's work
    f.step_of(false, 1000, 0);
  }
  const auto fig = m.figures();
  REQUIRE(fig);
  CHECK(fig->added_ns == 500);
  CHECK(fig->unrecorded_ns == 1000);
}

TEST_CASE("StepCostMeter: a step that changed state inside, another thread, the first steps", "[agent][cost]") {
  StepCostMeter m;
  Feeder f{m};
  f.step_of(false, 50'000, 0);  // step 0: imports
  f.step_of(false, 50'000, 0);  // step 1: steady by state, but a first step
  CHECK(m.figures() == std::nullopt);
  for (int i = 0; i < 5; ++i) f.step_of(false, 1000, 0);
  // A window opened by time inside the step: neither kind, nor is the next.
  f.cpu += 3000;
  f.ops += 100;
  m.step_ended(f.step++, &f.thread_key, f.cpu, f.ops, false, true);
  f.step_of(true, 4000, 400);
  for (int i = 0; i < 3; ++i) f.step_of(true, 1500, 400);
  // Steps ended by another thread: its CPU time is not this one's, and no
  // unrecorded step of its own came before them.
  int other = 0;
  f.step_of(true, 1'000'000, 400, &other);
  f.step_of(true, 1'000'000, 400, &other);
  const auto fig = m.figures();
  REQUIRE(fig);
  CHECK(fig->unrecorded_ns == 1000);
  CHECK(fig->unrecorded_steps == 5);
  CHECK(fig->pairs == 3);
  CHECK(fig->added_ns == 500);
}

TEST_CASE("StepCostMeter: the newest steps are kept", "[agent][cost]") {
  StepCostMeter m;
  Feeder f{m};
  f.cycles(100, 2, 3, 5000, 1000, 400);  // a slow start
  f.cycles(100, 2, 3, 1500, 1000, 400);  // more than kKept steps of each kind since
  const auto fig = m.figures();
  REQUIRE(fig);
  CHECK(fig->added_ns == 500);
  CHECK(fig->pairs == 398);
}

TEST_CASE("step_cost_line: the cost per step and per op, or why none", "[launcher][cost]") {
  StepFacts f;
  f.pid = 42;
  CHECK_FALSE(ptprof::cli::step_cost_line(f, 300));  // no schedule with both kinds
  f.cost_pairs = 40;
  f.cost_unrecorded_steps = 20;
  f.cost_ops = 400;
  f.cost_added_ns = 120'000;
  f.cost_unrecorded_ns = 1'000'000;
  auto line = ptprof::cli::step_cost_line(f, 250);
  REQUIRE(line);
  CHECK(*line ==
        "ptprof: measured on its own steps (process 42, the stepping thread's CPU time: 40 steady recorded steps, "
        "each against the steady unrecorded step before it, of 20): +0.120 ms per recorded step (median; +12.0%), "
        "300.0 ns per op (400 ops per step; start-up estimate 250.0 ns)");
  f.cost_added_ns = -10'000;
  line = ptprof::cli::step_cost_line(f, 250);
  REQUIRE(line);
  CHECK(line->find("recorded steps were no slower than unrecorded ones (median difference -0.010 ms, unrecorded "
                   "step 1.000 ms; 400 ops per step)") != std::string::npos);
}
