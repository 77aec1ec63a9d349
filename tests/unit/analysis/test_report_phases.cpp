// Steps split into phases (report_phases.hpp) on hand-built traces, checked
// to the ns; the phases in the JSON and the HTML report; the HTML report's
// comparison with a baseline, and `report --baseline` on the command line.
#include <catch2/catch.hpp>

#include "ptprof/analysis/diff.hpp"
#include "ptprof/analysis/report.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "ptprof/analysis/report_html.hpp"
#include "ptprof/analysis/report_phases.hpp"
#include "ptprof/record.hpp"
#include "test_cli_run.hpp"
#include "test_format_fixtures.hpp"
#include "test_report_json.hpp"
#include "text/utf8.hpp"

using namespace ptprof;
using report::Phase;

namespace {

constexpr auto kBackward = uint8_t(wire::OpScope::BackwardFunction);
constexpr auto kUser = uint8_t(wire::OpScope::UserScope);

// Process 7 with a main thread (0) and an autograd thread (1); process 8
// with one thread (2).
struct PhaseTrace {
  trace::Trace t;
  PhaseTrace() {
    t.processes.push_back({7, 1, "python train.py", 0});
    t.processes.push_back({8, 1, "python other.py", 0});
    t.threads.push_back({0, 70, "main", 0, 0});
    t.threads.push_back({0, 71, "autograd", 0, 0});
    t.threads.push_back({1, 80, "main", 0, 0});
  }
  PhaseTrace& ev(const std::string& name, int64_t start_ns, int64_t end_ns, uint32_t thread, uint8_t scope = 0,
                 trace::EventKind kind = trace::EventKind::Op, uint64_t arg = 0) {
    t.strings.push_back(name);
    trace::Event e;
    e.name = uint32_t(t.strings.size() - 1);
    e.start_ns = start_ns;
    e.end_ns = end_ns;
    e.thread = thread;
    e.scope = scope;
    e.kind = kind;
    e.arg = arg;
    t.events.push_back(e);
    return *this;
  }
  PhaseTrace& step(uint64_t n, int64_t start_ns, int64_t end_ns, uint32_t thread = 0) {
    return ev("ProfilerStep#" + std::to_string(n), start_ns, end_ns, thread, 0, trace::EventKind::Step, n);
  }
};

int64_t ns(const report::StepPhases& s, Phase p) { return s.ns[size_t(p)]; }

// Step 3 [1000, 2000) and step 4 [2000, 2500) on the main thread. Worked out:
// step 3: data loading [1000,1100) = 100; optimizer [1300,1350) + [1700,1800)
// = 150; backward [1400,1450) (main) + [1450,1600) + [1620,1650) + [1950,2000)
// (autograd thread) = 280; forward: the rest of [1000,1900) = 900 - 100 - 150 -
// 230 = 420; other: [1900,1950) = 50. Step 4: backward [2000,2100) = 100,
// forward [2200,2300) = 100, other 300 (aten::slow crosses the step's end, so
// it is not inside it).
PhaseTrace training_loop() {
  PhaseTrace p;
  p.step(3, 1000, 2000).step(4, 2000, 2500);
  p.ev("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 1000, 1100, 0, kUser)
      .ev("aten::stack", 1020, 1080, 0)
      .ev("model_train", 1100, 1900, 0, kUser)
      .ev("aten::linear", 1150, 1300, 0)
      .ev("Optimizer.zero_grad#SGD.zero_grad", 1300, 1350, 0, kUser)
      .ev("autograd::engine::evaluate_function: AddmmBackward0", 1400, 1450, 0)
      .ev("Optimizer.step#SGD.step", 1700, 1800, 0, kUser)
      .ev("aten::add_", 1710, 1790, 0)
      .ev("aten::mul", 2200, 2300, 0)
      .ev("aten::slow", 2400, 2600, 0);
  p.ev("autograd::engine::evaluate_function: MmBackward0", 1450, 1600, 1, kBackward)
      .ev("MmBackward0", 1460, 1590, 1, kBackward)
      .ev("aten::mm", 1470, 1580, 1)
      .ev("AccumulateGrad", 1620, 1650, 1, kBackward)  // by its scope alone
      .ev("autograd::engine::evaluate_function: AddBackward0", 1950, 2100, 1);
  // Another process's backward ops are not this step's.
  p.ev("autograd::engine::evaluate_function: MmBackward0", 1000, 2500, 2, kBackward);
  return p;
}

}  // namespace

TEST_CASE("phases: each instant of a step goes to one phase, by priority", "[report][phases]") {
  PhaseTrace p = training_loop();
  std::vector<report::StepPhases> steps = report::step_phases(p.t);
  REQUIRE(steps.size() == 2);
  const report::StepPhases& s3 = steps[0];
  CHECK(s3.step == 3);
  CHECK(s3.pid == 7);
  CHECK(s3.tid == 70);
  CHECK(s3.wall_ns == 1000);
  CHECK(ns(s3, Phase::DataLoading) == 100);
  CHECK(ns(s3, Phase::Optimizer) == 150);
  CHECK(ns(s3, Phase::Backward) == 280);
  CHECK(ns(s3, Phase::Forward) == 420);
  CHECK(ns(s3, Phase::Other) == 50);
  const report::StepPhases& s4 = steps[1];
  CHECK(s4.step == 4);
  CHECK(s4.wall_ns == 500);
  CHECK(ns(s4, Phase::Backward) == 100);
  CHECK(ns(s4, Phase::Forward) == 100);
  CHECK(ns(s4, Phase::Optimizer) == 0);
  CHECK(ns(s4, Phase::DataLoading) == 0);
  CHECK(ns(s4, Phase::Other) == 300);

  report::PhaseTimes total = report::phase_totals(steps);
  CHECK(total == report::PhaseTimes{520, 380, 150, 100, 0, 350});
}

TEST_CASE("phases: optimizer outranks backward, the multiprocess loader counts, no steps no rows", "[report][phases]") {
  PhaseTrace p;
  p.step(0, 0, 1000);
  p.ev("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 0, 200, 0, kUser)
      .ev("Optimizer.step#Adam.step", 500, 800, 0, kUser)
      .ev("AccumulateGrad", 600, 900, 0, kBackward)  // overlaps the optimizer step
      .ev("ptprof range", 900, 950, 0, 0, trace::EventKind::Range)
      .ev("marker", 960, 960, 0, 0, trace::EventKind::Mark);
  std::vector<report::StepPhases> steps = report::step_phases(p.t);
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].ns == report::PhaseTimes{50, 100, 300, 200, 0, 350});

  PhaseTrace none;
  none.ev("aten::add", 0, 10, 0);
  CHECK(report::step_phases(none.t).empty());
}

TEST_CASE("phases: in the report, its JSON and its HTML page", "[report][phases]") {
  PhaseTrace p = training_loop();
  report::Report r = report::compute_report({{"t.bin", &p.t}}, {});
  REQUIRE(r.phases.size() == 2);
  CHECK(r.phases[0].step == 3);

  testing::Json j = testing::JsonParser(report::render_json(r, 0)).parse();
  const testing::Json& total = j["phases"]["total"];
  CHECK(total["forward_us"].num == Approx(0.52));
  CHECK(total["backward_us"].num == Approx(0.38));
  CHECK(total["optimizer_us"].num == Approx(0.15));
  CHECK(total["data_loading_us"].num == Approx(0.1));
  CHECK(total["other_us"].num == Approx(0.35));
  REQUIRE(j["phases"]["steps"].arr.size() == 2);
  CHECK(j["phases"]["steps"].arr[0]["step"].num == 3);
  CHECK(j["phases"]["steps"].arr[0]["wall_us"].num == Approx(1.0));
  CHECK(j["phases"]["steps"].arr[1]["other_us"].num == Approx(0.3));

  std::string page = html::render_html(r);
  CHECK(page.find("Time per step by phase") != std::string::npos);
  CHECK(page.find("<table class=\"ops\" id=\"phases\">") != std::string::npos);
  // Step 3's backward cell, then the totals with their share of 1.5 us.
  CHECK(page.find("<td data-v=\"280\">0.280us</td>") != std::string::npos);
  CHECK(page.find("<td data-v=\"520\">0.520us (34.67%)</td>") != std::string::npos);
  CHECK(page.find("step 3: Backward 0.280us") != std::string::npos);
  CHECK(page.find("id=\"diff\"") == std::string::npos);
}

TEST_CASE("html: the comparison with a baseline", "[report][html][diff]") {
  PhaseTrace base = training_loop();
  PhaseTrace run = training_loop();
  // On a thread without steps, so that no step's self time changes.
  run.ev("aten::linear", 3000, 3080, 2).ev("<new> & op", 3100, 3105, 2);
  report::Report a = report::compute_report({{"base.bin", &base.t}}, {});
  report::Report b = report::compute_report({{"run.bin", &run.t}}, {});
  html::HtmlBaseline baseline{diff::compare(a, b, diff::SortKey::SelfCpuTime), {"base.bin"}, 1};
  std::string page = html::render_html(b, &baseline);
  CHECK(page.find("Compared with the baseline") != std::string::npos);
  CHECK(page.find("Baseline: base.bin.") != std::string::npos);
  REQUIRE(page.find("<table class=\"ops\" id=\"diff\">") != std::string::npos);
  // aten::linear: 1 call of 150 ns, then 2 of 230 ns: the largest change.
  CHECK(page.find("<tr><td>aten::linear</td><td></td><td data-v=\"1\">1</td><td data-v=\"2\">2</td>"
                  "<td data-v=\"1\">+1</td><td data-v=\"150\">0.150us</td><td data-v=\"230\">0.230us</td>"
                  "<td data-v=\"80\">+0.080us</td>") != std::string::npos);
  CHECK(page.find(std::to_string(baseline.diff.rows.size() - 1) + " more names with smaller changes are left out") !=
        std::string::npos);

  baseline.rows = 30;
  page = html::render_html(b, &baseline);
  CHECK(page.find("<tr><td>&lt;new&gt; &amp; op</td><td>added</td>") != std::string::npos);
  CHECK(page.find("more names") == std::string::npos);
}

TEST_CASE("ptprof report --baseline", "[report][html][cli]") {
  testing::TempDir dir;
  std::string a = dir.file("a.bin"), b = dir.file("b.bin"), page = dir.file("page.html");
  REQUIRE(testing::write_realistic(a, 300, 1));
  REQUIRE(testing::write_realistic(b, 600, 2));
  testing::Run ok = testing::run_ptprof("report " + b + " --html " + page + " --baseline " + a);
  INFO(ok.out);
  REQUIRE(ok.status == 0);
  std::string text = testing::slurp(page);
  CHECK(text.find("id=\"diff\"") != std::string::npos);
  CHECK(text.find("Baseline: " + a) != std::string::npos);

  testing::Run no_html = testing::run_ptprof("report " + b + " --baseline " + a);
  CHECK(no_html.status == 2);
  CHECK(no_html.out.find("--baseline needs --html") != std::string::npos);
  testing::Run missing = testing::run_ptprof("report " + b + " --html " + page + " --baseline " + dir.file("none"));
  CHECK(missing.status == 2);
  CHECK(missing.out.find("none") != std::string::npos);
}

TEST_CASE("phases: merged traces' huge steps saturate the page's total and recorded_ms, never negative",
          "[report][phases][html]") {
  // Each trace is valid; together their steps' walls pass INT64_MAX.
  constexpr int64_t kLong = 6'000'000'000'000'000'000;
  PhaseTrace a, b;
  a.step(1, 0, kLong).ev("aten::mm", 10, 20, 0);
  b.step(1, 0, kLong).ev("aten::mm", 10, 20, 0);
  report::Report r = report::compute_report({{"a.bin", &a.t}, {"b.bin", &b.t}}, {});
  REQUIRE(r.phases.size() == 2);
  const std::string page = html::render_html(r);
  CHECK(page.find("data-v=\"-") == std::string::npos);
  CHECK(page.find("<td data-v=\"9223372036854775807\">") != std::string::npos);  // the wall total, saturated
  testing::Json j = testing::JsonParser(report::render_json(r, 0)).parse();
  CHECK(j["ptprof_cost"]["recorded_ms"].num > 0);
}

TEST_CASE("html: the page is valid UTF-8 and its operator table ends in a line saying how many more rows",
          "[report][html]") {
  PhaseTrace p;
  p.ev("bad \xff\xfe bytes", 0, 10, 0).ev("truncated \xe2\x82", 10, 20, 0).ev("surrogate \xed\xa0\x80", 20, 30, 0);
  p.ev(std::string(38, 'x') + "\xe2\x82\xac\xe2\x82\xac tail cut in the plot", 30, 40, 0);
  for (int i = 0; i < 6000; ++i) p.ev("op" + std::to_string(i), 100 + i * 10, 105 + i * 10, 0);
  report::Report r = report::compute_report({{"t.bin", &p.t}}, {});
  REQUIRE(r.rows.size() == 6004);
  const std::string page = html::render_html(r);
  size_t invalid = 0;
  ptprof::text::for_each_utf8_sequence(
      page, [](std::string_view) {}, [&](unsigned char) { ++invalid; });
  CHECK(invalid == 0);
  CHECK(page.find("bad \xef\xbf\xbd\xef\xbf\xbd bytes") != std::string::npos);  // each byte replaced
  const size_t rows = [&] {
    size_t n = 0;
    for (size_t at = page.find("id=\"ops\""); (at = page.find("<tr>", at + 1)) != std::string::npos;) ++n;
    return n;
  }();
  CHECK(rows == 1 + 5000);  // the titles, then the rows shown
  CHECK(page.find("<p id=\"more-rows\">1004 more rows are left out") != std::string::npos);
}
