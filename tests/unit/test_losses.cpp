// Nothing lost in silence: a run that fills the 16 MiB string arena
// completes, every event is still recorded (those past the full arena with an
// empty name), and the loss is counted in the trace and shown by the run's
// summary, `info` and `report`.
#include <catch2/catch.hpp>

#include <string>

#include "launcher_fixtures.hpp"
#include "ptprof/trace.hpp"

using ptprof::testing::kPrograms;
using ptprof::testing::kPtprof;
using ptprof::testing::read_all;
using ptprof::testing::sh;
using ptprof::testing::TempDir;

TEST_CASE("a full string arena is a counted loss, shown by run, info and report", "[launcher][losses]") {
  TempDir out;
  const std::string dir = out.path.string();
  // 400,000 names of 60 bytes need ~27 MiB of arena; then 100,000 marks under
  // one more name that cannot be stored. The 500,000 marks (16 bytes each,
  // 7.6 MiB) fit a 16 MiB ring however late the launcher drains it: with the
  // default 2 MiB ring a loaded machine dropped named and unnamed marks alike
  // (260,821 of them), and the counts below no longer add up.
  auto run = sh(kPtprof + " run --ring-kb 16384 -o " + dir + " -- " + kPrograms + "/name_flood 400000 100000");
  INFO(run.output);
  REQUIRE(run.status == 0);
  CHECK(run.output.find("marks=500000") != std::string::npos);

  uint64_t marks = 0, unnamed = 0, dropped = 0;
  ptprof::trace::Losses losses;
  for (const auto& t : read_all(out.path)) {
    for (const auto& e : t.events) {
      if (e.kind != ptprof::trace::EventKind::Mark) continue;
      ++marks;
      if (t.strings.at(e.name).empty()) ++unnamed;
    }
    for (const auto& th : t.threads) dropped += th.dropped;
    losses += t.losses;
  }
  // Every event is recorded (none can be dropped: see the ring above); the
  // unnamed ones are exactly the ledger's.
  CHECK(marks + dropped == 500000);
  REQUIRE(dropped == 0);
  CHECK(unnamed > 100000);  // the repeated name and the flood's tail
  CHECK(losses.unnamed_events == unnamed);
  // Stored names are the marks with a name; each refused name is refused
  // once (the repeated one too: the thread's cache remembers the refusal).
  const uint64_t stored = marks - unnamed;
  CHECK(losses.names_refused == (400000 - stored) + 1);
  CHECK(losses.lost_threads == 0);

  // The words users read, written out here (not taken from ptprof's own
  // loss_lines), with the numbers counted above from the events.
  const std::string line = std::to_string(unnamed) +
                           " events were recorded without a name: the string arena was full (" +
                           std::to_string(400000 - stored + 1) + " names refused)";
  CHECK(run.output.find("ptprof: warning: " + line) != std::string::npos);
  auto info = sh(kPtprof + " info " + dir);
  CHECK(info.status == 0);
  CHECK(info.output.find("unnamed_events " + std::to_string(unnamed)) != std::string::npos);
  CHECK(info.output.find(line) != std::string::npos);
  auto report = sh(kPtprof + " report " + dir);
  CHECK(report.status == 0);
  CHECK(report.output.find("WARNING: " + line) != std::string::npos);
}
