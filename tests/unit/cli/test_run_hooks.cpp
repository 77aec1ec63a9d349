// `--on-trace-ready` (issue #13): the path reaches the command however `{}`
// is quoted, never as shell text, and a command that fails is reported.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "launcher_fixtures.hpp"

namespace fs = std::filesystem;

using ptprof::testing::kPrograms;
using ptprof::testing::kPtprof;
using ptprof::testing::sh;
using ptprof::testing::TempDir;

namespace {

// `s` as one word for sh.
std::string sh_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

TEST_CASE("on-trace-ready: {} works unquoted, in single and in double quotes, and never runs the path",
          "[launcher][hooks][reliability]") {
  TempDir tmp;
  // Spaces, both quotes and a command substitution in the output path.
  const fs::path out = tmp.path / "a b'c\"d$(touch pwned)`touch pwned2`";
  const std::string hook = "cp \"{}\" copy1 && cp '{}' copy2 && cp {} copy3 && cp \"$PTPROF_TRACE_FILE\" copy4";
  auto r = sh("cd " + sh_quote(tmp.path.string()) + " && " + kPtprof + " run -o " + sh_quote(out.string()) +
              " --on-trace-ready " + sh_quote(hook) + " -- " + kPrograms + "/mark_flood 10 1");
  INFO(r.output);
  REQUIRE(r.status == 0);
  for (const char* copy : {"copy1", "copy2", "copy3", "copy4"}) {
    INFO(copy);
    CHECK(fs::is_regular_file(tmp.path / copy));
  }
  CHECK(!fs::exists(tmp.path / "pwned"));
  CHECK(!fs::exists(tmp.path / "pwned2"));
  CHECK_THAT(r.output, !Catch::Contains("on-trace-ready"));
}

TEST_CASE("on-trace-ready: a command that fails is reported in the log and the summary",
          "[launcher][hooks][reliability]") {
  TempDir out;
  auto r =
      sh(kPtprof + " run -o " + out.path.string() + " --on-trace-ready 'exit 7' -- " + kPrograms + "/mark_flood 10 1");
  INFO(r.output);
  CHECK(r.status == 0);  // the target's status: the trace itself was written
  CHECK_THAT(r.output, Catch::Contains("on-trace-ready") && Catch::Contains("exit status 7"));
  r = sh(kPtprof + " run -o " + out.path.string() + " --on-trace-ready 'kill -9 $$' -- " + kPrograms +
         "/mark_flood 10 1");
  INFO(r.output);
  CHECK_THAT(r.output, Catch::Contains("on-trace-ready") && Catch::Contains("signal 9"));
}
