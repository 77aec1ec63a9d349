// `ptprof diff`: rows matched by name, largest change first, added/removed
// names, JSON, and the command line's errors.
#include <catch2/catch.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "ptprof/analysis/diff.hpp"
#include "test_cli_run.hpp"
#include "test_format_fixtures.hpp"
#include "test_report_json.hpp"

using namespace ptprof;
using namespace ptprof::testing;

namespace {

report::Row row(const std::string& name, uint64_t count, int64_t self_ns, int64_t total_ns) {
  report::Row r;
  r.name = name;
  r.stats.count = count;
  r.stats.self_cpu_ns = self_ns;
  r.stats.cpu_total_ns = total_ns;
  return r;
}

// A trace file of top-level ops, each (name, calls, ns per call), one after
// another on one thread: its report rows are known without reading it.
void write_ops(const std::string& path, const std::vector<std::tuple<std::string, int, int64_t>>& ops) {
  auto w = open_writer(path, sample_header());
  const uint32_t process = w->add_process({4242, 1, "python train.py", 1000});
  const uint32_t thread = w->add_thread({process, 4242, "main", 0, 0});
  int64_t now = 1'000'000;
  for (const auto& [name, calls, ns] : ops) {
    const uint32_t id = w->intern(name);
    for (int i = 0; i < calls; ++i) {
      trace::Event e;
      e.thread = thread;
      e.name = id;
      e.start_ns = now;
      e.end_ns = now + ns;
      w->add_event(e);
      now += ns + 100;
    }
  }
  REQUIRE(w->finish().ok());
}

report::Report side(std::vector<report::Row> rows) {
  report::Report r;
  for (const auto& row : rows) r.self_cpu_total_ns += row.stats.self_cpu_ns;
  r.rows = std::move(rows);
  return r;
}

}  // namespace

TEST_CASE("diff: rows by name, biggest change first", "[diff]") {
  auto a = side({row("aten::mm", 10, 5'000, 5'000), row("aten::add", 4, 1'000, 1'000), row("gone", 1, 300, 300)});
  auto b = side({row("aten::add", 8, 9'000, 9'000), row("aten::mm", 10, 5'200, 5'200), row("new_op", 2, 100, 700)});
  diff::Diff d = diff::compare(a, b, diff::SortKey::SelfCpuTime);
  REQUIRE(d.rows.size() == 4);
  CHECK(d.rows[0].name == "aten::add");
  CHECK(d.rows[0].delta_self_cpu_ns() == 8'000);
  CHECK(d.rows[0].delta_calls() == 4);
  CHECK(d.rows[1].name == "gone");
  CHECK(d.rows[1].in_a);
  CHECK(!d.rows[1].in_b);
  CHECK(d.rows[2].name == "aten::mm");
  CHECK(d.rows[3].name == "new_op");

  diff::Diff by_count = diff::compare(a, b, diff::SortKey::Count);
  CHECK(by_count.rows[0].name == "aten::add");
  CHECK(by_count.rows[1].name == "new_op");

  std::string table = diff::render_table(d, 2);
  CHECK(table.find("aten::add") != std::string::npos);
  CHECK(table.find("+8.000us") != std::string::npos);
  CHECK(table.find("removed") != std::string::npos);
  CHECK(table.find("2 more names") != std::string::npos);
  CHECK(table.find("new_op") == std::string::npos);

  Json j = JsonParser(diff::render_json(d, 0)).parse();
  REQUIRE(j["rows"].arr.size() == 4);
  CHECK(j["rows"].arr[3]["change"].str == "added");
  CHECK(j["rows"].arr[3]["calls_a"].num == 0);
  CHECK(j["rows"].arr[3]["cpu_total_us_b"].num == Approx(0.7));
}

TEST_CASE("diff: command line", "[diff][cli]") {
  TempDir dir;
  const std::string a = dir.file("a.bin");
  const std::string b = dir.file("b.bin");
  write_ops(a, {{"aten::mm", 10, 500}, {"aten::add", 4, 250}, {"gone", 1, 300}});
  write_ops(b, {{"aten::mm", 10, 520}, {"aten::add", 8, 1'125}, {"new_op", 2, 50}});
  Run run = run_ptprof("diff " + a + " " + b + " --format json");
  INFO(run.out);
  REQUIRE(run.status == 0);
  Json j = JsonParser(run.out).parse();
  // Largest change of self CPU time first: add +8,000 ns, gone -300, mm +200, new_op +100.
  REQUIRE(j["rows"].arr.size() == 4);
  const Json& add = j["rows"].arr[0];
  CHECK(add["name"].str == "aten::add");
  CHECK(add["change"].str.empty());  // in both
  CHECK(add["calls_a"].num == 4);
  CHECK(add["calls_b"].num == 8);
  CHECK(add["self_cpu_us_a"].num == Approx(1.0));
  CHECK(add["self_cpu_us_b"].num == Approx(9.0));
  CHECK(j["rows"].arr[1]["name"].str == "gone");
  CHECK(j["rows"].arr[1]["change"].str == "removed");
  CHECK(j["rows"].arr[1]["calls_b"].num == 0);
  CHECK(j["rows"].arr[2]["name"].str == "aten::mm");
  CHECK(j["rows"].arr[2]["self_cpu_us_b"].num == Approx(5.2));
  CHECK(j["rows"].arr[3]["name"].str == "new_op");
  CHECK(j["rows"].arr[3]["change"].str == "added");
  CHECK(j["rows"].arr[3]["calls_b"].num == 2);
  CHECK(j["self_cpu_time_total_us"]["a"].num == Approx(6.3));
  CHECK(j["self_cpu_time_total_us"]["b"].num == Approx(14.3));

  Run same = run_ptprof("diff " + a + " " + a + " --format json");
  REQUIRE(same.status == 0);
  Json none = JsonParser(same.out).parse();
  REQUIRE(none["rows"].arr.size() == 3);  // every name of A, each unchanged
  for (const Json& r : none["rows"].arr) {
    CHECK(r["change"].str.empty());
    CHECK(r["calls_a"].num == r["calls_b"].num);
    CHECK(r["self_cpu_us_a"].num == r["self_cpu_us_b"].num);
  }

  CHECK(run_ptprof("diff " + a + " " + b + " --sort-by speed").status == 2);
  CHECK(run_ptprof("diff " + a + " " + b + " --format csv").status == 2);
  Run missing = run_ptprof("diff " + a + " " + dir.file("none"));
  CHECK(missing.status == 2);
  CHECK(missing.out.find("none") != std::string::npos);
}

TEST_CASE("diff: different step counts compare per-step averages", "[diff]") {
  auto a = side({row("aten::mm", 30, 30'000, 30'000)});
  auto b = side({row("aten::mm", 50, 50'000, 50'000)});
  auto steps = [](report::Report& r, int n) {
    for (int i = 1; i <= n; ++i) r.steps.push_back(report::StepRow{uint64_t(i)});
  };
  steps(a, 3);
  steps(b, 5);
  diff::SideInfo info_a, info_b;
  info_a.schedule = "wait=1,warmup=1,active=3,repeat=0";
  info_b.schedule = "wait=1,warmup=1,active=5,repeat=0";
  info_b.shapes = true;
  diff::Diff d = diff::compare(a, b, diff::SortKey::SelfCpuTime, info_a, info_b);
  CHECK(d.per_step);
  REQUIRE(d.rows.size() == 1);
  CHECK(d.rows[0].calls_a() == 10.0);
  CHECK(d.rows[0].calls_b() == 10.0);
  CHECK(d.rows[0].self_cpu_b_ns() - d.rows[0].self_cpu_a_ns() == 0.0);
  REQUIRE(d.warnings.size() == 2);
  CHECK(d.warnings[0].find("schedules differ") != std::string::npos);
  CHECK(d.warnings[1].find("only B") != std::string::npos);
  const std::string table = diff::render_table(d, 0);
  CHECK(table.rfind("Per-step averages: A recorded 3 steps, B 5", 0) == 0);
  CHECK(table.find("10.00") != std::string::npos);
  CHECK(table.find("WARNING: A and B differ") != std::string::npos);
  Json j = JsonParser(diff::render_json(d, 0)).parse();
  CHECK(j["per_step"].b);
  CHECK(j["steps"]["a"].num == 3);
  CHECK(j["rows"].arr[0]["calls_a"].num == 10);

  diff::Diff same = diff::compare(a, a, diff::SortKey::SelfCpuTime);
  CHECK(!same.per_step);
  CHECK(same.rows[0].calls_a() == 30.0);
}
