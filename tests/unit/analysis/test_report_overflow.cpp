// Crafted traces with a valid checksum and absurd times (issue #13): the
// reader rejects times no clock gives as damage, and sums of huge but
// plausible durations saturate instead of wrapping negative.
#include <catch2/catch.hpp>
#include <climits>
#include <string>

#include "ptprof/analysis/report.hpp"
#include "test_cli_run.hpp"
#include "test_format_fixtures.hpp"

using namespace ptprof;
using ptprof::testing::TempDir;

namespace {

// A trace with one event per thread, at the given [start, end).
std::string crafted(const TempDir& dir, const std::string& name,
                    const std::vector<std::pair<int64_t, int64_t>>& spans) {
  auto w = testing::open_writer(dir.file(name), testing::sample_header());
  uint32_t p = w->add_process({4242, 1, "prog", 0});
  trace::Event e;
  e.name = w->intern("aten::huge");
  int32_t tid = 4243;
  for (auto [start, end] : spans) {
    e.thread = w->add_thread({p, tid++, "worker", 0, 0});
    e.start_ns = start;
    e.end_ns = end;
    w->add_event(e);
  }
  REQUIRE(w->finish().ok());
  return dir.file(name);
}

}  // namespace

// A file with a valid checksum and a duration of 2^63-1 ns. ptprof's writer
// clamps such times (so it never writes it), hence a file crafted byte by
// byte: the fuzz corpus's reproducer of the defect.
TEST_CASE("a duration of 2^63-1 ns is damage, not a negative total", "[report][reliability]") {
  const std::string f = std::string(PTPROF_SOURCE_DIR) +
                        "/tests/fuzz/corpus/fuzz_trace_reader/crash-duration-overflow-awaits-defect16.bin";
  std::vector<std::string> warnings;
  auto t = format::read_trace(f, &warnings);
  REQUIRE(!t);
  CHECK_THAT(t.error(), Catch::Contains("chunk at byte") && Catch::Contains("out of range"));
  auto r = testing::run_ptprof("report " + f);
  INFO(r.out);
  CHECK(r.status == 2);
  CHECK_THAT(r.out, Catch::Contains("out of range"));
  CHECK_THAT(r.out, !Catch::Contains("-9"));
}

// The writer never writes a time a reader refuses: it clamps it and marks the
// event truncated (a garbled ring can give any tick count).
TEST_CASE("the writer clamps times beyond 2^61 ns instead of writing an unreadable file", "[format][reliability]") {
  TempDir dir;
  const std::string f =
      crafted(dir, "h.1.w000.bin", {{1000, 1000 + 10}, {2000, int64_t(uint64_t(2000) + uint64_t(INT64_MAX))}});
  std::vector<std::string> warnings;
  auto t = format::read_trace(f, &warnings);
  REQUIRE(t);
  REQUIRE(t->events.size() == 2);
  CHECK(t->events[1].end_ns >= t->events[1].start_ns);  // the wrapped end (before its start) is clamped to it
  CHECK(t->events[1].end_ns <= int64_t(1) << 61);
  CHECK((t->events[1].flags & trace::kTruncated) != 0);
  CHECK((t->events[0].flags & trace::kTruncated) == 0);
}

TEST_CASE("sums of huge durations saturate instead of wrapping negative", "[report][reliability]") {
  TempDir dir;
  // Each within the range a clock gives (73 years either side of its zero);
  // their sum is not an int64.
  const int64_t huge = int64_t(1) << 61;
  std::vector<std::pair<int64_t, int64_t>> spans(8, {-huge, huge});
  const std::string f = crafted(dir, "h.1.w000.bin", spans);
  std::vector<std::string> warnings;
  auto t = format::read_trace(f, &warnings);
  INFO(t.error());
  REQUIRE(t);
  report::Report r = report::compute_report({{f, &*t}}, report::Options{});
  REQUIRE(!r.rows.empty());
  for (const auto& row : r.rows) {
    CHECK(row.stats.cpu_total_ns > 0);
    CHECK(row.stats.self_cpu_ns > 0);
  }
  CHECK(r.self_cpu_total_ns > 0);
  auto cli = testing::run_ptprof("report --format csv " + f, false);
  INFO(cli.out);
  CHECK(cli.status == 0);
  CHECK_THAT(cli.out, !Catch::Contains(",-"));
}
