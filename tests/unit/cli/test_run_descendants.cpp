// Descendants that outlive the target (issue #13): by default they are cut
// off after a grace period, and the summary says so; --wait-descendants (or
// PTPROF_WAIT_DESCENDANTS=1) waits for the whole process tree.
#include <catch2/catch.hpp>
#include <string>

#include "launcher_fixtures.hpp"

using ptprof::testing::kPrograms;
using ptprof::testing::kPtprof;
using ptprof::testing::read_all;
using ptprof::testing::sh;
using ptprof::testing::TempDir;

namespace {

int marks_named(const std::vector<ptprof::trace::Trace>& traces, const std::string& name) {
  int n = 0;
  for (auto& t : traces)
    for (auto& e : t.events)
      if (e.kind == ptprof::trace::EventKind::Mark && t.strings.at(e.name) == name) ++n;
  return n;
}

}  // namespace

TEST_CASE("run: a descendant cut off after the target exits is named in the summary",
          "[launcher][descendants][reliability]") {
  TempDir out;
  // The daemon records its last mark 4 s after the target exits; the grace
  // period is 2 s.
  auto r = sh(kPtprof + " run -o " + out.path.string() + " -- " + kPrograms + "/daemon_child 4");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("1 process was still running") && Catch::Contains("--wait-descendants"));
  auto traces = read_all(out.path);
  CHECK(marks_named(traces, "daemon.first") == 1);
}

TEST_CASE("run --wait-descendants: every event of a descendant that outlives the target is there",
          "[launcher][descendants][reliability]") {
  for (const std::string how : {"--wait-descendants", "env"}) {
    INFO(how);
    TempDir out;
    std::string cmd = how == "env" ? "PTPROF_WAIT_DESCENDANTS=1 " : "";
    cmd += kPtprof + " run ";
    cmd += how == "env" ? "" : how + " ";
    cmd += "-o " + out.path.string() + " -- " + kPrograms + "/daemon_child 3";
    auto r = sh(cmd);
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, !Catch::Contains("still running"));
    auto traces = read_all(out.path);
    CHECK(marks_named(traces, "parent") == 1);
    CHECK(marks_named(traces, "daemon.first") == 1);
    CHECK(marks_named(traces, "daemon.last") == 1);
  }
}
