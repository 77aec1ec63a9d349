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
using ptprof::testing::TempDir;

TEST_CASE("cli: an option given '--' as its value is an error, not a value", "[cli][reliability]") {
  TempDir tmp;
  const fs::path marker = tmp.path / "started";
  const std::string in_tmp = "cd " + tmp.path.string() + " && " + kPtprof + " run ";
  const std::string touch = " -- touch " + marker.string();
  for (const std::string opt : {"-o", "--output", "--on-trace-ready"}) {
    INFO(opt);
    std::string cmd = in_tmp;
    cmd += opt;
    cmd += touch;
    auto r = sh(cmd);
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::Contains(opt.substr(0, 2) == "--" ? opt : std::string("--output")));
    CHECK(!fs::exists(marker));
    CHECK(!fs::exists(tmp.path / "--"));
  }
}

TEST_CASE("cli: --output '' and PTPROF_OUTPUT='' are rejected alike", "[cli][reliability]") {
  TempDir tmp;
  const fs::path marker = tmp.path / "started";
  auto flag = sh("cd " + tmp.path.string() + " && " + kPtprof + " run --output '' -- touch " + marker.string());
  auto env = sh("cd " + tmp.path.string() + " && PTPROF_OUTPUT= " + kPtprof + " run -- touch " + marker.string());
  INFO(flag.output);
  INFO(env.output);
  CHECK(flag.status == 2);
  CHECK(env.status == 2);
  CHECK(flag.output == env.output);
  CHECK(!fs::exists(marker));
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
  const fs::path marker = tmp.path / "started";
  const std::string in_tmp = "cd " + tmp.path.string() + " && PTPROF_DRAIN_THREADS=";
  const std::string run = " " + kPtprof + " run -- touch " + marker.string();
  for (const std::string value : {"0", "-2", "two", "3x", "2000"}) {
    INFO(value);
    std::string cmd = in_tmp;
    cmd += value;
    cmd += run;
    auto r = sh(cmd);
    INFO(r.output);
    CHECK(r.status == 2);
    std::string said = "PTPROF_DRAIN_THREADS='";
    said += value;
    said += "' is not a number of threads from 1 to 1024";
    CHECK_THAT(r.output, Catch::Contains(said));
    CHECK(!fs::exists(marker));
  }
  // Empty is unset: the default.
  auto r = sh("cd " + tmp.path.string() + " && PTPROF_DRAIN_THREADS= " + kPtprof + " run -- touch " + marker.string());
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(fs::exists(marker));
}
