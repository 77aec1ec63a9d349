// `ptprof report` and `ptprof info` as a user runs them.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>

#include "test_cli_run.hpp"
#include "test_format_fixtures.hpp"
#include "test_report_json.hpp"

using namespace ptprof;
using ptprof::testing::Run;
using ptprof::testing::TempDir;

namespace {

Run run(const std::string& args, bool with_stderr = true) { return testing::run_ptprof(args, with_stderr); }

std::string sample(const TempDir& dir, const std::string& name, uint32_t window) {
  trace::Header h = testing::sample_header();
  h.window = window;
  auto w = testing::open_writer(dir.file(name), h);
  REQUIRE(w);
  uint32_t p = w->add_process({4242, 1, "python train.py", 0});
  uint32_t t = w->add_thread({p, 4243, "main", 0, 0});
  trace::Event e;
  e.thread = t;
  e.name = w->intern("aten::add");
  e.shapes = w->intern("[[4], [4]]");
  for (int i = 0; i < 10; ++i) {
    e.start_ns = i * 1000;
    e.end_ns = i * 1000 + 500;
    w->add_event(e);
  }
  w->set_thread_dropped(t, 90);
  REQUIRE(w->finish().ok());
  return dir.file(name);
}

}  // namespace

TEST_CASE("ptprof report: formats, options and errors", "[report][cli]") {
  TempDir dir;
  std::string f0 = sample(dir, "h.1.w000.bin", 0);
  sample(dir, "h.1.w001.bin", 1);

  Run table = run("report " + dir.path().string(), false);
  CHECK(table.status == 0);
  CHECK(table.out.find("aten::add") != std::string::npos);
  CHECK(table.out.find("# of Calls") != std::string::npos);
  CHECK(table.out.find("            20  ") != std::string::npos);  // both windows merged
  CHECK(table.out.find("WARNING: 180 events were dropped") != std::string::npos);

  Run w1 = run("report --window 1 --format csv " + dir.path().string(), false);
  CHECK(w1.status == 0);
  CHECK(w1.out ==
        "Name,Self CPU %,Self CPU,CPU total %,CPU total,CPU time avg,# of Calls\n"
        "aten::add,100.00,5.000,100.00,5.000,0.500,10\n");

  Run shapes = run("report --group-by-input-shape --format csv " + f0, false);
  CHECK(shapes.out.find(",Input Shapes\n") != std::string::npos);
  CHECK(shapes.out.find("\"[[4], [4]]\"") != std::string::npos);

  Run json = run("report --format json " + f0, false);
  CHECK(json.status == 0);
  testing::Json j = testing::JsonParser(json.out).parse();
  CHECK(j["rows"].arr.at(0)["calls"].num == 10);
  CHECK(j["dropped"].num == 90);

  Run bad_key = run("report --sort-by cpu_total " + f0);
  CHECK(bad_key.status == 2);
  CHECK(bad_key.out.find("unknown --sort-by 'cpu_total'") != std::string::npos);
  CHECK(bad_key.out.find("self_cuda_memory_usage") != std::string::npos);

  CHECK(run("report --window 7 " + f0).status == 2);
  CHECK(run("report --window x " + f0).status == 2);
  CHECK(run("report --format xml " + f0).status == 2);
  CHECK(run("report " + dir.file("missing")).status == 2);
  testing::spit(dir.file("junk.bin"), "not a trace");
  Run junk = run("report " + dir.file("junk.bin"));
  CHECK(junk.status == 2);
  CHECK(junk.out.find("bad magic") != std::string::npos);
}

TEST_CASE("ptprof info: exact per-thread counts", "[report][cli]") {
  TempDir dir;
  std::string f = sample(dir, "h.1.w000.bin", 0);
  Run info = run("info " + f, false);
  CHECK(info.status == 0);
  CHECK(info.out.find("host       node-17") != std::string::npos);
  CHECK(info.out.find("pid 4242  ppid 1  python train.py") != std::string::npos);
  CHECK(info.out.find("4242       4243  main                           10           90") != std::string::npos);
  CHECK(info.out.find("total      events 10  dropped 90") != std::string::npos);
  CHECK(info.out.find("schedule   wait=1,warmup=1,active=3,repeat=0") != std::string::npos);
  CHECK(run("info " + dir.file("nope.bin")).status == 2);
  testing::spit(dir.file("junk.bin"), "\x89PTPROF\n\x09");
  Run junk = run("info " + dir.file("junk.bin"));
  CHECK(junk.status == 2);
  CHECK(junk.out.find("truncated at byte 9") != std::string::npos);
}
