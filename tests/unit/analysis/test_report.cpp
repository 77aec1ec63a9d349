// Report computation and rendering: self/total times on nested events, torch's
// value formatting, sort keys, row limits, shapes, CSV and JSON.
#include <catch2/catch.hpp>
#include <cmath>

#include "model/event_tree.hpp"
#include "ptprof/analysis/report.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "test_report_json.hpp"

using namespace ptprof;
using model::TreeNode;

namespace {

// A trace built by hand: one process, `threads` threads.
struct Builder {
  trace::Trace t;
  explicit Builder(int threads = 1, uint32_t window = 0) {
    t.header.window = window;
    t.processes.push_back({7, 1, "python", 0});
    for (int i = 0; i < threads; ++i) t.threads.push_back({0, 70 + i, "t" + std::to_string(i), 0, 0});
  }
  uint32_t str(const std::string& s) {
    for (uint32_t i = 0; i < t.strings.size(); ++i)
      if (t.strings[i] == s) return i;
    t.strings.push_back(s);
    return uint32_t(t.strings.size() - 1);
  }
  Builder& ev(const std::string& name, int64_t start_ns, int64_t end_ns, uint32_t thread = 0,
              trace::EventKind kind = trace::EventKind::Op, const std::string& shapes = "", uint64_t arg = 0) {
    trace::Event e;
    e.name = str(name);
    e.shapes = shapes.empty() ? 0 : str(shapes);
    e.start_ns = start_ns;
    e.end_ns = end_ns;
    e.thread = thread;
    e.kind = kind;
    e.arg = arg;
    t.events.push_back(e);
    return *this;
  }
};

report::Report run(const trace::Trace& t, report::Options o = {}) { return report::compute_report({{"t.bin", &t}}, o); }

const report::Row& row(const report::Report& r, const std::string& name, const std::string& shapes = "") {
  for (const auto& x : r.rows)
    if (x.name == name && x.input_shapes == shapes) return x;
  FAIL("no row " << name << " " << shapes);
  throw;
}

}  // namespace

TEST_CASE("tree: self time subtracts direct children only", "[report]") {
  // a [0,100) > b [10,60) > c [20,30); a > d [70,90); e [95,120) overlaps a
  // partially and so is a root, as in torch.
  std::vector<TreeNode> n{{0, 100, 1}, {10, 60, 2}, {20, 30, 3}, {70, 90, 4}, {95, 120, 5}};
  auto t = model::build_tree(n);
  CHECK(t.parent == std::vector<int32_t>{-1, 0, 1, 0, -1});
  CHECK(t.self_ns == std::vector<int64_t>{100 - 50 - 20, 50 - 10, 10, 20, 25});
  CHECK(t.folded == std::vector<uint8_t>{0, 0, 0, 0, 0});
}

TEST_CASE("tree: equal starts put the longer event outside", "[report]") {
  std::vector<TreeNode> n{{0, 10, 1}, {0, 50, 2}, {5, 5, 3}, {5, 6, 4}};
  auto t = model::build_tree(n);
  CHECK(t.parent == std::vector<int32_t>{1, -1, 3, 0});  // [5,5) sits in [5,6)
  CHECK(t.self_ns[1] == 40);
}

TEST_CASE("tree: a same-named only child folds into its parent, as _remove_dup_nodes", "[report]") {
  // relu [0,100) > relu [10,90) > relu [20,80) > clamp [30,40)
  std::vector<TreeNode> n{{0, 100, 1}, {10, 90, 1}, {20, 80, 1}, {30, 40, 2}};
  auto t = model::build_tree(n);
  CHECK(t.folded == std::vector<uint8_t>{0, 1, 1, 0});
  CHECK(t.self_ns[0] == 90);
  // Two same-named children: nothing folds.
  std::vector<TreeNode> m{{0, 100, 1}, {10, 20, 1}, {30, 40, 1}};
  auto u = model::build_tree(m);
  CHECK(u.folded == std::vector<uint8_t>{0, 0, 0});
  CHECK(u.self_ns[0] == 80);
}

TEST_CASE("report: totals, self, counts, percentages across threads", "[report]") {
  Builder b(2);
  b.ev("outer", 0, 10'000).ev("inner", 1'000, 4'000).ev("inner", 5'000, 6'000);
  b.ev("inner", 0, 2'000, 1);  // same name, other thread: a root there
  b.ev("ptprof.mark", 3'000, 3'000, 0, trace::EventKind::Mark);
  auto r = run(b.t);
  REQUIRE(r.rows.size() == 3);
  CHECK(row(r, "outer").stats.self_cpu_ns == 6'000);
  CHECK(row(r, "outer").stats.cpu_total_ns == 10'000);
  CHECK(row(r, "inner").stats.count == 3);
  CHECK(row(r, "inner").stats.cpu_total_ns == 6'000);
  CHECK(row(r, "inner").stats.self_cpu_ns == 6'000);
  CHECK(row(r, "ptprof.mark").stats.count == 1);
  CHECK(row(r, "ptprof.mark").stats.cpu_total_ns == 0);
  CHECK(r.self_cpu_total_ns == 12'000);
  // Default sort: cpu_time_total, descending.
  CHECK(r.rows[0].name == "outer");
  CHECK(r.rows[1].name == "inner");
  std::string csv = report::render_csv(r, 0);
  CHECK(csv.find("outer,50.00,6.000,83.33,10.000,10.000,1\n") != std::string::npos);
}

TEST_CASE("report: every sort key orders rows", "[report]") {
  Builder b;
  // many: 3 calls of 1us; long: 1 call of 10us holding 4us of child.
  b.ev("many", 0, 1'000).ev("many", 2'000, 3'000).ev("many", 4'000, 5'000);
  b.ev("long", 10'000, 20'000).ev("child", 11'000, 15'000);
  auto order = [&](const char* key) {
    report::Options o;
    o.sort_by = *report::parse_sort_key(key);
    std::string s;
    for (const auto& x : run(b.t, o).rows) s += x.name + " ";
    return s;
  };
  CHECK(order("cpu_time_total") == "long child many ");
  CHECK(order("self_cpu_time_total") == "long child many ");
  CHECK(order("cpu_time") == "long child many ");
  CHECK(order("count") == "many long child ");
  // Keys without data yet keep the first-seen order, as torch's stable sort.
  for (const char* k : {"cuda_time", "cuda_time_total", "self_cuda_time_total", "cpu_memory_usage",
                        "self_cpu_memory_usage", "cuda_memory_usage", "self_cuda_memory_usage"})
    CHECK(order(k) == "many long child ");
  CHECK(report::sort_key_names().size() == 11);
  for (auto name : report::sort_key_names()) CHECK(report::sort_key_name(*report::parse_sort_key(name)) == name);
  CHECK_FALSE(report::parse_sort_key("cpu_total"));
  CHECK_FALSE(report::parse_sort_key(""));
}

TEST_CASE("torch value formatting", "[report]") {
  CHECK(report::format_time_us(0) == "0.000us");
  CHECK(report::format_time_us(123.456) == "123.456us");
  CHECK(report::format_time_us(999.999) == "999.999us");
  CHECK(report::format_time_us(1000) == "1.000ms");
  CHECK(report::format_time_us(12345.678) == "12.346ms");
  CHECK(report::format_time_us(1e6) == "1.000s");
  CHECK(report::format_time_us(1234567.0) == "1.235s");
  CHECK(report::format_time_share(1, 3) == "33.33%");
  CHECK(report::format_time_share(0, 0) == "NaN");
  CHECK(report::format_time_share(5, 5) == "100.00%");
  CHECK(report::format_memory(512) == "512 b");
  CHECK(report::format_memory(-2048) == "-2.00 Kb");
  CHECK(report::format_memory(3 * 1024 * 1024) == "3.00 Mb");
  CHECK(report::format_memory(int64_t(5) << 30) == "5.00 Gb");
  CHECK(report::parse_format("csv") == report::Format::Csv);
  CHECK_FALSE(report::parse_format("xml"));
}

TEST_CASE("report: group by input shape, CSV quoting and row limit", "[report]") {
  Builder b;
  b.ev("aten::add", 0, 1'000, 0, trace::EventKind::Op, "[[4, 3], [4, 3]]");
  b.ev("aten::add", 2'000, 4'000, 0, trace::EventKind::Op, "[[8], [8]]");
  b.ev("aten::add", 5'000, 6'000, 0, trace::EventKind::Op, "[[4, 3], [4, 3]]");
  b.ev("aten::empty", 7'000, 7'500);
  report::Options o;
  auto flat = run(b.t, o);
  REQUIRE(flat.rows.size() == 2);
  CHECK_FALSE(flat.has_input_shapes);
  CHECK(row(flat, "aten::add").stats.count == 3);

  o.group_by_input_shape = true;
  auto r = run(b.t, o);
  REQUIRE(r.rows.size() == 3);
  CHECK(r.has_input_shapes);
  CHECK(row(r, "aten::add", "[[4, 3], [4, 3]]").stats.count == 2);
  CHECK(row(r, "aten::add", "[[8], [8]]").stats.count == 1);
  CHECK(row(r, "aten::empty", "[]").stats.count == 1);

  std::string csv = report::render_csv(r, 0);
  CHECK(csv.substr(0, csv.find('\n')) ==
        "Name,Self CPU %,Self CPU,CPU total %,CPU total,CPU time avg,# of Calls,Input Shapes");
  CHECK(csv.find("aten::add,44.44,2.000,44.44,2.000,1.000,2,\"[[4, 3], [4, 3]]\"\n") != std::string::npos);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 4);
  std::string limited = report::render_csv(r, 1);
  CHECK(std::count(limited.begin(), limited.end(), '\n') == 2);
  std::string table = report::render_table(r, 2);
  CHECK(table.find("Input Shapes") != std::string::npos);
  CHECK(table.find("aten::empty") == std::string::npos);  // third row, cut by the limit
  CHECK(table.find("Self CPU time total: 4.500us") != std::string::npos);

  // No shapes recorded at all: no Input Shapes column even when grouping.
  Builder plain;
  plain.ev("x", 0, 10);
  auto p = run(plain.t, o);
  CHECK_FALSE(p.has_input_shapes);
  CHECK(report::render_csv(p, 0).find("Input Shapes") == std::string::npos);
}

TEST_CASE("report: steps, drops and windows", "[report]") {
  Builder b;
  b.ev("ProfilerStep#3", 0, 10'000, 0, trace::EventKind::Step, "", 3);
  b.ev("aten::mm", 1'000, 4'000).ev("aten::mul", 1'500, 2'000);  // nested: not top-level
  b.ev("my_range", 5'000, 7'000, 0, trace::EventKind::Range);
  b.ev("ProfilerStep#4", 10'000, 12'000, 0, trace::EventKind::Step, "", 4);
  b.ev("aten::mm", 10'500, 11'000);
  b.t.threads[0].dropped = 42;
  auto r = run(b.t);
  REQUIRE(r.steps.size() == 2);
  CHECK(r.steps[0].step == 3);
  CHECK(r.steps[0].wall_ns == 10'000);
  CHECK(r.steps[0].operator_ns == 5'000);
  CHECK(r.steps[1].step == 4);
  CHECK(r.steps[1].operator_ns == 500);
  CHECK(row(r, "ProfilerStep*").stats.count == 2);
  CHECK(row(r, "ProfilerStep*").stats.self_cpu_ns == 5'000 + 1'500);
  REQUIRE(r.drops.size() == 1);
  CHECK(r.drops[0].dropped == 42);
  CHECK(r.drops[0].pid == 7);
  CHECK(r.drops[0].tid == 70);
  std::string table = report::render_table(r, 0);
  CHECK(table.find("WARNING: 42 events were dropped") != std::string::npos);
  CHECK(table.find("t.bin: pid 7 tid 70 (t0): 42 dropped") != std::string::npos);
  CHECK(table.find("Per-step times") != std::string::npos);
  CHECK(table.find("50.00%") != std::string::npos);  // step 3: 5us of ops in 10us

  Builder w1(1, 1);
  w1.ev("other", 0, 100);
  report::Options o;
  o.window = 1;
  auto only1 = report::compute_report({{"w0.bin", &b.t}, {"w1.bin", &w1.t}}, o);
  CHECK(only1.files == std::vector<std::string>{"w1.bin"});
  CHECK(only1.windows == std::vector<uint32_t>{1});
  REQUIRE(only1.rows.size() == 1);
  auto all = report::compute_report({{"w0.bin", &b.t}, {"w1.bin", &w1.t}}, {});
  CHECK(all.windows == std::vector<uint32_t>{0, 1});
  CHECK(all.rows.size() == 5);
}

TEST_CASE("report: JSON is valid and holds rows, steps and drops", "[report]") {
  Builder b;
  b.ev("ProfilerStep#1", 0, 10'000, 0, trace::EventKind::Step, "", 1);
  b.ev("quote\"and\\back\nslash", 100, 2'100, 0, trace::EventKind::Op, "[[1, 2]]");
  b.ev("aten::zero", 3'000, 3'000);
  b.t.threads[0].dropped = 5;
  auto r = run(b.t);
  testing::Json j = testing::JsonParser(report::render_json(r, 0)).parse();
  CHECK(j["files"].arr.at(0).str == "t.bin");
  CHECK(j["windows"].arr.at(0).num == 0);
  CHECK(j["sort_by"].str == "cpu_time_total");
  CHECK(j["dropped"].num == 5);
  CHECK(j["drops"].arr.at(0)["tid"].num == 70);
  CHECK(j["self_cpu_time_total_us"].num == Approx(10.0));
  const auto& rows = j["rows"].arr;
  REQUIRE(rows.size() == 3);
  CHECK(rows[0]["name"].str == "ProfilerStep*");
  CHECK(rows[0]["cpu_total_us"].num == Approx(10.0));
  CHECK(rows[0]["self_cpu_us"].num == Approx(8.0));
  CHECK(rows[0]["self_cpu_pct"].num == Approx(80.0));
  CHECK(rows[0]["calls"].num == 1);
  CHECK(rows[1]["name"].str == "quote\"and\\back\nslash");
  CHECK(rows[1]["cpu_time_avg_us"].num == Approx(2.0));
  CHECK(j["steps"].arr.at(0)["operators_us"].num == Approx(2.0));
  CHECK(j["columns"].arr.size() == 7);
  CHECK(testing::JsonParser(report::render_json(r, 1)).parse()["rows"].arr.size() == 1);

  // An empty report is valid JSON too, with null percentages impossible to hit.
  trace::Trace empty;
  testing::Json e = testing::JsonParser(report::render_json(run(empty), 0)).parse();
  CHECK(e["rows"].arr.empty());
  CHECK(report::render_table(run(empty), 0).empty());
}

TEST_CASE("report: async events have no self time and no children", "[report]") {
  Builder b;
  trace::Event a;
  a.name = b.str("async");
  a.start_ns = 0;
  a.end_ns = 10'000;
  a.flags = trace::kAsync;
  b.t.events.push_back(a);
  b.ev("op", 1'000, 2'000);
  auto r = run(b.t);
  CHECK(row(r, "async").is_async);
  CHECK(row(r, "async").stats.self_cpu_ns == 0);
  CHECK(row(r, "async").stats.cpu_total_ns == 10'000);
  CHECK(row(r, "op").stats.self_cpu_ns == 1'000);
  CHECK(report::render_csv(r, 0).find("async,0.00,0.000,0,10.000,10.000,1") != std::string::npos);
}

TEST_CASE("report: the text table shows a name's controls as escapes, never to the terminal", "[report]") {
  Builder b;
  b.ev("red\x1b[31m\x1b]0;title\x07", 0, 1'000);
  b.ev(
      "evil\xe2\x80\xae"
      "cod.exe",
      2'000, 3'000);  // U+202E RIGHT-TO-LEFT OVERRIDE
  b.ev("forged\n  aten::fake  99.99%", 4'000, 5'000);
  b.ev("bad\xff\xc3utf8\xc2\x9b", 6'000, 7'000);  // invalid bytes, then U+009B (CSI)
  b.t.threads[0].name = "thread\x1b[2J";
  b.t.threads[0].dropped = 1;
  const std::string table = report::render_table(run(b.t), 0);
  INFO(table);
  CHECK(table.find('\x1b') == std::string::npos);
  CHECK(table.find('\x07') == std::string::npos);
  CHECK(table.find("\xe2\x80\xae") == std::string::npos);
  CHECK(table.find("\xc2\x9b") == std::string::npos);
  CHECK(table.find('\xff') == std::string::npos);
  CHECK(table.find("\n  aten::fake") == std::string::npos);  // no forged row
  CHECK(table.find("red\\x1b[31m\\x1b]0;title\\x07") != std::string::npos);
  CHECK(table.find("evil\\u202ecod.exe") != std::string::npos);
  CHECK(table.find("forged\\x0a  aten::fake") != std::string::npos);
  CHECK(table.find("bad\\xff\\xc3utf8\\u009b") != std::string::npos);
  CHECK(table.find("thread\\x1b[2J") != std::string::npos);
}

TEST_CASE("report: --group-by-compiled-source folds kernel ranges onto their aten ops", "[report][compiled]") {
  // A compiled graph's call [0,100) runs two kernels (the bootstrap's ranges,
  // named with inductor's Original ATen) and an extern kernel; an eager
  // aten::relu runs after it.
  Builder b;
  const auto range = trace::EventKind::Range;
  b.ev("## Call CompiledFxGraph fabc ##", 0, 100)
      .ev("aten::addmm", 5, 8)
      .ev("cpp_fused_relu_0 [aten.relu]", 10, 30, 0, range)
      .ev("cpp_fused_sum_threshold_backward_0 [aten.sum, aten.threshold_backward]", 40, 50, 0, range)
      .ev("aten::relu", 200, 207);
  const auto plain = run(b.t);
  CHECK(row(plain, "cpp_fused_relu_0 [aten.relu]").stats.count == 1);
  CHECK(row(plain, "aten::relu").stats.count == 1);

  report::Options o;
  o.group_by_compiled_source = true;
  const auto folded = run(b.t, o);
  for (const auto& r : folded.rows) CHECK(r.name.rfind("cpp_", 0) == std::string::npos);
  CHECK(row(folded, "aten::relu").stats.count == 2);
  CHECK(row(folded, "aten::relu").stats.self_cpu_ns == 20 + 7);
  CHECK(row(folded, "aten::sum + aten::threshold_backward").stats.count == 1);
  CHECK(row(folded, "aten::sum + aten::threshold_backward").stats.self_cpu_ns == 10);
  // The graph's own time and the other rows are as without the option.
  CHECK(row(folded, "## Call CompiledFxGraph fabc ##").stats.self_cpu_ns == 100 - 3 - 20 - 10);
  CHECK(row(folded, "aten::addmm").stats.count == 1);
  CHECK(folded.self_cpu_total_ns == plain.self_cpu_total_ns);
}
