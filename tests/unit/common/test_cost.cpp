// Every run states its own cost (ptprof/cost.hpp): the arithmetic of the
// estimate, the COSTS chunk's round trip, and the report's figures. No timing
// here: the costs are given, only what is done with them is checked.
#include <catch2/catch.hpp>
#include <string>

#include "ptprof/analysis/report.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "ptprof/analysis/trace_file.hpp"
#include "ptprof/cost.hpp"
#include "test_format_fixtures.hpp"

using namespace ptprof;
using ptprof::testing::TempDir;

namespace {

trace::Event event(trace::EventKind kind, uint32_t thread, uint32_t name, int64_t start, int64_t end) {
  trace::Event e;
  e.kind = kind;
  e.thread = thread;
  e.name = name;
  e.start_ns = start;
  e.end_ns = end;
  return e;
}

// Process 0 measured 300 ns per op and 10 ns per record; process 1 nothing.
trace::Trace sample_trace(bool with_steps) {
  trace::Trace t;
  t.strings = {"", "aten::add", "ProfilerStep#1", "range", "[memory]"};
  trace::Process p0;
  p0.pid = 10;
  p0.op_cost_ps = 300'000;
  p0.record_cost_ps = 10'000;
  trace::Process p1;
  p1.pid = 11;
  t.processes = {p0, p1};
  t.threads = {{0, 10, "main", 0, 0}, {1, 11, "other", 0, 0}, {0, 12, "gpu", 0, 0, 0}};
  for (int i = 0; i < 4; ++i) t.events.push_back(event(trace::EventKind::Op, 0, 1, 1000 + i * 100, 1050 + i * 100));
  t.events.push_back(event(trace::EventKind::Range, 0, 3, 1000, 1500));  // a push and a pop
  t.events.push_back(event(trace::EventKind::Mark, 0, 3, 1600, 1600));
  t.events.push_back(event(trace::EventKind::Memory, 0, 4, 1700, 1700));
  t.events.push_back(event(trace::EventKind::Kernel, 2, 1, 1000, 9000));  // CUPTI's: not charged
  t.events.push_back(event(trace::EventKind::Op, 1, 1, 1000, 2000));      // process 1: not measured
  if (with_steps) t.events.push_back(event(trace::EventKind::Step, 0, 2, 0, 100'000));
  return t;
}

}  // namespace

TEST_CASE("an operator is charged the operator cost, other records the record cost", "[cost]") {
  cost::Tally t;
  t.charge(trace::EventKind::Op, 250'000, 8'000);
  t.charge(trace::EventKind::Op, 250'000, 8'000);
  t.charge(trace::EventKind::Range, 250'000, 8'000);  // push and pop: two records
  t.charge(trace::EventKind::Mark, 250'000, 8'000);
  t.charge(trace::EventKind::CudaApi, 250'000, 8'000);
  t.charge(trace::EventKind::Kernel, 250'000, 8'000);  // written off the target's threads
  t.charge(trace::EventKind::Step, 250'000, 8'000);    // written by the launcher
  t.charge(trace::EventKind::Op, 0, 8'000);            // no operator cost measured
  REQUIRE(t.ops == 2);
  REQUIRE(t.records == 4);
  REQUIRE(t.uncalibrated == 1);
  REQUIRE(t.op_ns() == Approx(500.0));
  REQUIRE(t.record_ns() == Approx(32.0));
  REQUIRE(t.added_ns() == Approx(532.0));
  REQUIRE(t.share() == 0);  // no recorded time known
  t.recorded_ns = 5320;
  REQUIRE(t.share() == Approx(0.1));

  cost::Tally u;
  u.charge(trace::EventKind::Op, 100'000, 0);
  u.recorded_ns = 1000;
  t += u;
  REQUIRE(t.ops == 3);
  REQUIRE(t.op_ns() == Approx(600.0));
  REQUIRE(t.recorded_ns == 6320);
}

TEST_CASE("a trace's tally charges each event with its own process's costs", "[cost]") {
  cost::Tally t = cost::tally(sample_trace(true));
  REQUIRE(t.ops == 4);
  REQUIRE(t.records == 4);  // range (2), mark, memory
  REQUIRE(t.uncalibrated == 1);
  REQUIRE(t.op_ns() == Approx(1200.0));
  REQUIRE(t.record_ns() == Approx(40.0));
  REQUIRE(t.recorded_ns == 100'000);  // the step
  REQUIRE(t.share() == Approx(1240.0 / 100'000));

  // Without steps the share is of the span of its operators and records
  // (process 1's operator included: it ran in the window).
  cost::Tally n = cost::tally(sample_trace(false));
  REQUIRE(n.recorded_ns == 2000 - 1000);
}

TEST_CASE("the cost line says ms, share and per-event costs", "[cost]") {
  cost::Tally t;
  for (int i = 0; i < 30000; ++i) t.charge(trace::EventKind::Op, 310'000, 9'500);
  for (int i = 0; i < 1200; ++i) t.charge(trace::EventKind::Mark, 310'000, 9'500);
  t.recorded_ns = 1'000'000'000;
  const std::string line = cost::describe(t);
  INFO(line);
  REQUIRE(line.find("about 9.3 ms") != std::string::npos);  // 30000 x 310 ns + 1200 x 9.5 ns = 9.31 ms
  REQUIRE(line.find("0.9% of the recorded time") != std::string::npos);
  REQUIRE(line.find("30000 ops x 310.0 ns") != std::string::npos);
  REQUIRE(line.find("1200 records x 9.5 ns") != std::string::npos);

  // A share under 0.1% keeps two significant digits (a run whose import
  // took seconds), never "0.0%".
  t.recorded_ns = 1'000'000'000'000;
  REQUIRE(cost::describe(t).find(", 0.00093% of the recorded time") != std::string::npos);
  t.recorded_ns = 20'000'000'000;
  REQUIRE(cost::describe(t).find(", 0.047% of the recorded time") != std::string::npos);

  cost::Tally small;
  for (int i = 0; i < 100; ++i) small.charge(trace::EventKind::Op, 345'000, 0);
  REQUIRE(cost::describe(small).find("about 34.5 us (100 ops x 345.0 ns") != std::string::npos);

  cost::Tally none;
  none.charge(trace::EventKind::Op, 0, 0);
  REQUIRE(cost::describe(none).find("not measured") != std::string::npos);
}

TEST_CASE("process costs survive a trace file (COSTS chunk)", "[cost][format]") {
  TempDir dir;
  const std::string path = dir.file("t.bin");
  auto w = testing::open_writer(path, testing::sample_header());
  REQUIRE(w);
  trace::Process measured;
  measured.pid = 1;
  measured.op_cost_ps = 123'456;  // given at add_process...
  const uint32_t p0 = w->add_process(measured);
  const uint32_t p1 = w->add_process({2, 1, "b", 0});
  const uint32_t p2 = w->add_process({3, 1, "c", 0});
  w->set_process_cost(p1, 400'000, 7'000);  // ...or once measured, the last call winning
  w->set_process_cost(p1, 410'000, 7'500);
  const uint32_t th = w->add_thread({p1, 2, "main", 0, 0});
  w->add_event(event(trace::EventKind::Op, th, w->intern("aten::mm"), 10, 20));
  REQUIRE(w->finish().ok());

  std::vector<std::string> warnings;
  auto t = format::read_trace(path, &warnings);
  REQUIRE(t);
  REQUIRE(warnings.empty());
  REQUIRE(t->processes[p0].op_cost_ps == 123'456);
  REQUIRE(t->processes[p0].record_cost_ps == 0);
  REQUIRE(t->processes[p1].op_cost_ps == 410'000);
  REQUIRE(t->processes[p1].record_cost_ps == 7'500);
  REQUIRE(t->processes[p2].op_cost_ps == 0);
  auto summary = format::read_trace_summary(path, &warnings);  // `ptprof info` reads it too
  REQUIRE(summary);
  REQUIRE(summary->processes[p1].op_cost_ps == 410'000);

  // A cost for a process the file does not have is misuse.
  auto bad = testing::open_writer(dir.file("bad.bin"), testing::sample_header());
  bad->set_process_cost(0, 1, 1);
  REQUIRE_FALSE(bad->finish().ok());
}

TEST_CASE("the report sums the cost over its inputs", "[cost][report]") {
  trace::Trace a = sample_trace(true), b = sample_trace(false);
  report::Report r = report::compute_report({{"a.bin", &a}, {"b.bin", &b}}, report::Options{});
  REQUIRE(r.cost.ops == 8);
  REQUIRE(r.cost.records == 8);
  REQUIRE(r.cost.added_ns() == Approx(2 * 1240.0));
  REQUIRE(r.cost.recorded_ns == 100'000 + 1000);
  const std::string table = report::render_table(r, 10);
  INFO(table);
  REQUIRE(table.find("ptprof's own cost: about 2.5 us, 2.5% of the recorded time") != std::string::npos);
  REQUIRE(table.find("8 ops x 300.0 ns, 8 records x 10.0 ns") != std::string::npos);
  const std::string json = report::render_json(r, 10);
  INFO(json);
  REQUIRE(json.find("\"ptprof_cost\": {\"added_ms\": 0.002480, \"share\": 0.02455") != std::string::npos);
  REQUIRE(json.find("\"ops\": 8, \"op_ns\": 300.0, \"records\": 8, \"record_ns\": 10.0") != std::string::npos);
}

TEST_CASE("the agent's note on CUDA is not charged", "[cost]") {
  trace::Trace t = sample_trace(true);
  t.strings.push_back("ptprof: CUDA not recorded: no driver");
  t.events.push_back(event(trace::EventKind::Mark, 0, uint32_t(t.strings.size() - 1), 1800, 1800));
  REQUIRE(cost::tally(t).records == 4);  // as without the note
}
