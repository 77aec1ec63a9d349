// The table must equal torch's: the expected strings below were printed by
// torch 1.13's own EventList.key_averages().table() (profiler_util.py) for the
// same events, built as FunctionEvents (generator: docs/report.md, "Checking
// against torch").
#include <catch2/catch.hpp>

#include "ptprof/analysis/report.hpp"
#include "ptprof/analysis/report_format.hpp"

using namespace ptprof;

namespace {

// The events torch saw, in microseconds, plus what torch would have filtered
// before building its list (aten::is_leaf).
trace::Trace torch_scenario() {
  trace::Trace t;
  t.processes.push_back({100, 1, "python", 0});
  t.threads.push_back({0, 100, "main", 0, 0});
  t.threads.push_back({0, 101, "worker", 0, 0});
  auto str = [&](const std::string& s) {
    t.strings.push_back(s);
    return uint32_t(t.strings.size() - 1);
  };
  auto ev = [&](const std::string& name, uint32_t thread, int64_t s_us, int64_t e_us, const std::string& shapes = "",
                trace::EventKind kind = trace::EventKind::Op, uint16_t flags = 0, uint64_t arg = 0) {
    trace::Event e;
    e.name = str(name);
    e.shapes = shapes.empty() ? 0 : str(shapes);
    e.thread = thread;
    e.start_ns = s_us * 1000;
    e.end_ns = e_us * 1000;
    e.kind = kind;
    e.flags = flags;
    e.arg = arg;
    // Launcher order: an event is emitted when it ends.
    t.events.push_back(e);
  };
  using K = trace::EventKind;
  ev("aten::t", 0, 20, 50, "[[3, 3]]");
  ev("aten::addmm", 0, 60, 390, "[[3], [4, 3], [3, 3]]");
  ev("aten::linear", 0, 10, 400, "[[4, 3], [3, 3]]");
  ev("aten::clamp_min", 0, 430, 470, "[[4, 3], []]");
  ev("aten::relu", 0, 420, 480, "[[4, 3]]");
  ev("aten::relu", 0, 410, 500, "[[4, 3]]");
  ev("aten::addmm", 0, 520, 880, "[[3], [8, 3], [3, 3]]");
  ev("aten::linear", 0, 510, 900, "[[8, 3], [3, 3]]");
  ev("ProfilerStep#1", 0, 0, 1000, "", K::Step, 0, 1);
  ev("aten::add", 0, 1020, 1100, "[[4], [4]]");
  ev("aten::add", 0, 1100, 1200, "[[4], [4]]");
  ev("my_range", 0, 1010, 1400, "", K::Range);
  ev("ProfilerStep#2", 0, 1000, 1500, "", K::Step, 0, 2);
  ev("aten::is_leaf", 1, 10, 20);  // filtered: its time stays in aten::mul's self time
  ev("aten::mul", 1, 0, 2000000, "[[1000, 1000], [1000, 1000]]");
  ev("async_op", 0, 100, 5100, "", K::Op, trace::kAsync);
  ev("an_operator_with_a_very_long_name_that_torch_will_truncate_somewhere", 1, 2000001, 2000002);
  return t;
}

std::string table_for(bool by_shape, const char* sort_by, size_t row_limit) {
  trace::Trace t = torch_scenario();
  report::Options o;
  o.group_by_input_shape = by_shape;
  o.sort_by = *report::parse_sort_key(sort_by);
  report::Report r = report::compute_report({{"t.bin", &t}}, o);
  std::string table = report::render_table(r, row_limit);
  // Only torch's operator table is compared; ptprof's step table follows it.
  return table.substr(0, table.find("\nPer-step times"));
}

}  // namespace

TEST_CASE("table equals torch: group_by_input_shape=false sort_by=cpu_time_total row_limit=100", "[report][torch]") {
  const std::string expected =
      R"TORCH(-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  
                                                   Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  
                                              aten::mul        99.93%        2.000s        99.93%        2.000s        2.000s             1  
                                               async_op         0.00%       0.000us             0       5.000ms       5.000ms             1  
                                          ProfilerStep*         0.01%     240.000us         0.07%       1.500ms     750.000us             2  
                                           aten::linear         0.00%      60.000us         0.04%     780.000us     390.000us             2  
                                            aten::addmm         0.03%     690.000us         0.03%     690.000us     345.000us             2  
                                               my_range         0.01%     210.000us         0.02%     390.000us     390.000us             1  
                                              aten::add         0.01%     180.000us         0.01%     180.000us      90.000us             2  
                                             aten::relu         0.00%      50.000us         0.00%      90.000us      90.000us             1  
                                        aten::clamp_min         0.00%      40.000us         0.00%      40.000us      40.000us             1  
                                                aten::t         0.00%      30.000us         0.00%      30.000us      30.000us             1  
an_operator_with_a_very_long_name_that_torch_will_tr...         0.00%       1.000us         0.00%       1.000us       1.000us             1  
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  
Self CPU time total: 2.002s
)TORCH";
  CHECK(table_for(false, "cpu_time_total", 100) == expected);
}

TEST_CASE("table equals torch: group_by_input_shape=true sort_by=self_cpu_time_total row_limit=100",
          "[report][torch]") {
  const std::string expected =
      R"TORCH(-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  --------------------------------  
                                                   Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls                      Input Shapes  
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  --------------------------------  
                                              aten::mul        99.93%        2.000s        99.93%        2.000s        2.000s             1      [[1000, 1000], [1000, 1000]]  
                                            aten::addmm         0.02%     360.000us         0.02%     360.000us     360.000us             1             [[3], [8, 3], [3, 3]]  
                                            aten::addmm         0.02%     330.000us         0.02%     330.000us     330.000us             1             [[3], [4, 3], [3, 3]]  
                                          ProfilerStep*         0.01%     240.000us         0.07%       1.500ms     750.000us             2                                []  
                                               my_range         0.01%     210.000us         0.02%     390.000us     390.000us             1                                []  
                                              aten::add         0.01%     180.000us         0.01%     180.000us      90.000us             2                        [[4], [4]]  
                                             aten::relu         0.00%      50.000us         0.00%      90.000us      90.000us             1                          [[4, 3]]  
                                        aten::clamp_min         0.00%      40.000us         0.00%      40.000us      40.000us             1                      [[4, 3], []]  
                                           aten::linear         0.00%      30.000us         0.02%     390.000us     390.000us             1                  [[4, 3], [3, 3]]  
                                                aten::t         0.00%      30.000us         0.00%      30.000us      30.000us             1                          [[3, 3]]  
                                           aten::linear         0.00%      30.000us         0.02%     390.000us     390.000us             1                  [[8, 3], [3, 3]]  
an_operator_with_a_very_long_name_that_torch_will_tr...         0.00%       1.000us         0.00%       1.000us       1.000us             1                                []  
                                               async_op         0.00%       0.000us             0       5.000ms       5.000ms             1                                []  
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  --------------------------------  
Self CPU time total: 2.002s
)TORCH";
  CHECK(table_for(true, "self_cpu_time_total", 100) == expected);
}

TEST_CASE("table equals torch: group_by_input_shape=false sort_by=count row_limit=3", "[report][torch]") {
  const std::string expected =
      R"TORCH(-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  
                                                   Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  
                                          ProfilerStep*         0.01%     240.000us         0.07%       1.500ms     750.000us             2  
                                           aten::linear         0.00%      60.000us         0.04%     780.000us     390.000us             2  
                                            aten::addmm         0.03%     690.000us         0.03%     690.000us     345.000us             2  
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  
Self CPU time total: 2.002s
)TORCH";
  CHECK(table_for(false, "count", 3) == expected);
}

TEST_CASE("table equals torch: group_by_input_shape=false sort_by=cpu_time row_limit=100", "[report][torch]") {
  const std::string expected =
      R"TORCH(-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  
                                                   Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  
                                              aten::mul        99.93%        2.000s        99.93%        2.000s        2.000s             1  
                                               async_op         0.00%       0.000us             0       5.000ms       5.000ms             1  
                                          ProfilerStep*         0.01%     240.000us         0.07%       1.500ms     750.000us             2  
                                           aten::linear         0.00%      60.000us         0.04%     780.000us     390.000us             2  
                                               my_range         0.01%     210.000us         0.02%     390.000us     390.000us             1  
                                            aten::addmm         0.03%     690.000us         0.03%     690.000us     345.000us             2  
                                             aten::relu         0.00%      50.000us         0.00%      90.000us      90.000us             1  
                                              aten::add         0.01%     180.000us         0.01%     180.000us      90.000us             2  
                                        aten::clamp_min         0.00%      40.000us         0.00%      40.000us      40.000us             1  
                                                aten::t         0.00%      30.000us         0.00%      30.000us      30.000us             1  
an_operator_with_a_very_long_name_that_torch_will_tr...         0.00%       1.000us         0.00%       1.000us       1.000us             1  
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  
Self CPU time total: 2.002s
)TORCH";
  CHECK(table_for(false, "cpu_time", 100) == expected);
}
