// `ptprof diff`: rows matched by name, largest change first, added/removed
// names, JSON, and the command line's errors.
#include <catch2/catch.hpp>

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
  std::string err;
  std::string path = dir.file("t.bin");
  REQUIRE(write_realistic(path, 500, 1));
  Run same = run_ptprof("diff " + path + " " + path + " --format json");
  REQUIRE(same.status == 0);
  Json j = JsonParser(same.out).parse();
  for (const Json& r : j["rows"].arr) CHECK(r["calls_a"].num == r["calls_b"].num);
  CHECK(run_ptprof("diff " + path + " " + path + " --sort-by speed").status == 2);
  CHECK(run_ptprof("diff " + path + " " + path + " --format csv").status == 2);
  Run missing = run_ptprof("diff " + path + " " + dir.file("none"));
  CHECK(missing.status == 2);
  CHECK(missing.out.find("none") != std::string::npos);
}
