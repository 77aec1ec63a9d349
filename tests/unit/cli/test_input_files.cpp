// Inputs of report, info and export that are not regular files (issue #13):
// refused at once with a clear message and exit status 2, never waited on.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "launcher_fixtures.hpp"

namespace fs = std::filesystem;

using ptprof::testing::kPtprof;
using ptprof::testing::sh;
using ptprof::testing::TempDir;

TEST_CASE("cli: report and info refuse a FIFO instead of waiting on it", "[cli][reliability]") {
  TempDir tmp;
  const fs::path fifo = tmp.path / "t.bin";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string& cmd :
       std::vector<std::string>{"report", "info", "export --chrome " + (tmp.path / "x.json").string()}) {
    INFO(cmd);
    // timeout: a hang fails the test instead of blocking it.
    std::string line = "timeout 20 " + kPtprof + " ";
    line += cmd;
    line += " " + fifo.string() + " < /dev/null";
    auto r = sh(line);
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::Contains("not a regular file"));
  }
}
