// The CUDA API summary of `ptprof report` (nsys stats' cuda_api_sum),
// checked value by value on a hand-built trace.
#include <catch2/catch.hpp>

#include "ptprof/analysis/report.hpp"
#include "ptprof/analysis/report_format.hpp"

using namespace ptprof;

namespace {

trace::Trace api_trace(trace::EventKind kind) {
  trace::Trace t;
  t.strings = {"", "cudaMalloc", "cudaFree", "aten::mm"};
  t.processes.push_back({1, 0, "p", 0});
  t.threads.push_back({0, 1, "main", 0, 0});
  auto call = [&](uint32_t name, int64_t start, int64_t dur) {
    trace::Event e;
    e.kind = kind;
    e.name = name;
    e.start_ns = start;
    e.end_ns = start + dur;
    t.cuda.emplace_back();
    e.arg = t.cuda.size();
    t.events.push_back(e);
  };
  call(1, 0, 10);
  call(1, 100, 60);
  call(1, 200, 20);
  call(2, 300, 5);
  trace::Event op;
  op.name = 3;
  op.start_ns = 0;
  op.end_ns = 1000;
  t.events.push_back(op);
  return t;
}

}  // namespace

TEST_CASE("CUDA API summary: nsys's statistics per entry point", "[report][cuda]") {
  trace::Trace t = api_trace(trace::EventKind::CudaApi);
  report::Report r = report::compute_report({{"t.bin", &t}}, {});
  REQUIRE(r.cuda_api.size() == 2);
  const report::CudaApiRow& m = r.cuda_api[0];
  CHECK(m.name == "cudaMalloc");
  CHECK(m.calls == 3);
  CHECK(m.total_ns == 90);
  CHECK(m.avg_ns == Approx(30.0));
  CHECK(m.median_ns == Approx(20.0));
  CHECK(m.min_ns == 10);
  CHECK(m.max_ns == 60);
  CHECK(m.stddev_ns == Approx(26.4575131));  // sqrt((400 + 100 + 900) / 2)
  CHECK(m.time_percent == Approx(100.0 * 90 / 95));
  const report::CudaApiRow& f = r.cuda_api[1];
  CHECK(f.name == "cudaFree");
  CHECK(f.calls == 1);
  CHECK(f.median_ns == Approx(5.0));
  CHECK(f.stddev_ns == 0.0);

  const std::string table = report::render_table(r, 0);
  CHECK_THAT(table, Catch::Contains("CUDA API summary"));
  CHECK_THAT(table, Catch::Contains("    94.7               90          3      30.0      20.0        10        60"));
  const std::string csv = report::render_csv(r, 0);
  CHECK_THAT(csv,
             Catch::Contains(
                 "\n\nCUDA API summary\nTime (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev "
                 "(ns),Name\n94.7,90,3,30.0,20.0,10,60,26.5,cudaMalloc\n5.3,5,1,5.0,5.0,5,5,0.0,"
                 "cudaFree\n"));
  const std::string json = report::render_json(r, 0);
  CHECK_THAT(json,
             Catch::Contains("\"cuda_api_summary\": [\n    {\"name\": \"cudaMalloc\", \"time_percent\": 94.74, "
                             "\"total_ns\": 90, \"calls\": 3, \"avg_ns\": 30.0, \"med_ns\": 20.0, \"min_ns\": 10, "
                             "\"max_ns\": 60, \"stddev_ns\": 26.5}"));
}

TEST_CASE("CUDA API summary: absent without CUDA calls; CUPTI's records when nothing was hooked", "[report][cuda]") {
  trace::Trace cpu = api_trace(trace::EventKind::CudaApi);
  cpu.events.erase(cpu.events.begin(), cpu.events.begin() + 4);
  report::Report none = report::compute_report({{"t.bin", &cpu}}, {});
  CHECK(none.cuda_api.empty());
  CHECK_THAT(report::render_table(none, 0), !Catch::Contains("CUDA API summary"));
  CHECK_THAT(report::render_json(none, 0), !Catch::Contains("cuda_api_summary"));

  trace::Trace cupti = api_trace(trace::EventKind::CuptiApi);
  report::Report r = report::compute_report({{"t.bin", &cupti}}, {});
  REQUIRE(r.cuda_api.size() == 2);
  CHECK(r.cuda_api[0].calls == 3);
}
