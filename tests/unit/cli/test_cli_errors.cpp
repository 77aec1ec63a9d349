// Bad command lines get a clear message and exit status 2 (issue #13): option
// values that are not values, empty and negative values, unknown commands.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "launcher_fixtures.hpp"

namespace fs = std::filesystem;

using ptprof::testing::kPtprof;
using ptprof::testing::sh;
using ptprof::testing::ShellRun;
using ptprof::testing::TempDir;

namespace {

// `ptprof run ARGS -- touch MARKER` in TMP with ENV before it: what ptprof
// said, and whether the target started (MARKER exists; removed first).
struct Attempt {
  ShellRun run;
  bool started;
};

Attempt run_touch(const TempDir& tmp, const std::string& env, const std::string& args) {
  const fs::path marker = tmp.path / "started";
  fs::remove(marker);
  std::string cmd = "cd " + tmp.path.string() + " && " + env;
  cmd += " " + kPtprof + " run " + args + " -- touch " + marker.string();
  ShellRun r = sh(cmd);
  return {r, fs::exists(marker)};
}

}  // namespace

TEST_CASE("cli: an option given '--' as its value is an error, not a value", "[cli][reliability]") {
  TempDir tmp;
  for (const std::string opt : {"-o", "--output", "--on-trace-ready"}) {
    INFO(opt);
    auto [r, started] = run_touch(tmp, "", opt);
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::Contains(opt.substr(0, 2) == "--" ? opt : std::string("--output")));
    CHECK(!started);
    CHECK(!fs::exists(tmp.path / "--"));
  }
}

TEST_CASE("cli: --output '' and PTPROF_OUTPUT='' are rejected alike", "[cli][reliability]") {
  TempDir tmp;
  auto flag = run_touch(tmp, "", "--output ''");
  auto env = run_touch(tmp, "PTPROF_OUTPUT=", "");
  INFO(flag.run.output);
  INFO(env.run.output);
  CHECK(flag.run.status == 2);
  CHECK(env.run.status == 2);
  CHECK(flag.run.output == env.run.output);
  CHECK(!flag.started);
  CHECK(!env.started);
  CHECK(!fs::exists(tmp.path / "ptprof-out"));
}

TEST_CASE("cli: --ring-kb -5 is reported as -5, with the accepted range", "[cli][reliability]") {
  TempDir tmp;
  auto r = sh(kPtprof + " run -o " + tmp.path.string() + " --ring-kb -5 -- true");
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("'-5'") && Catch::Contains("64 to 1048576"));
  CHECK_THAT(r.output, !Catch::Contains("18446744073709551611"));
}

TEST_CASE("cli: an unknown command is named, with the commands there are", "[cli][reliability]") {
  auto r = sh(kPtprof + " reprot out/");
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("unknown command 'reprot'") && Catch::Contains("run") &&
                           Catch::Contains("report") && Catch::Contains("info"));
  CHECK_THAT(r.output, !Catch::Contains("A subcommand is required"));
}

TEST_CASE("cli: PTPROF_DRAIN_THREADS that is not a number of threads stops run before the target starts",
          "[cli][reliability]") {
  TempDir tmp;
  for (const std::string value : {"0", "-2", "two", "3x", "2000"}) {
    INFO(value);
    auto [r, started] = run_touch(tmp, "PTPROF_DRAIN_THREADS=" + value, "");
    INFO(r.output);
    CHECK(r.status == 2);
    std::string said = "PTPROF_DRAIN_THREADS='";
    said += value;
    said += "' is not a number of threads from 1 to 1024";
    CHECK_THAT(r.output, Catch::Contains(said));
    CHECK(!started);
  }
  // Empty is unset: the default.
  auto [r, started] = run_touch(tmp, "PTPROF_DRAIN_THREADS=", "");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(started);
}
