// Every file ptprof writes besides its traces goes through the one output
// writer (ptprof/analysis/output_file.hpp): written under a temporary name
// and renamed into place, so a symlink planted at the output's name is
// replaced, never written through, and a file under its name is complete.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "launcher_fixtures.hpp"

using ptprof::testing::kPrograms;
using ptprof::testing::kPtprof;
using ptprof::testing::sh;
using ptprof::testing::TempDir;

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs `command` (its output path is OUT) with OUT a symlink to a victim file.
void check_not_written_through(const std::string& what, const std::string& command, bool empty_output = false) {
  TempDir dir;
  const fs::path victim = dir.path / "victim", out = dir.path / "out";
  std::ofstream(victim) << "precious\n";
  fs::create_symlink(victim, out);
  auto trace = sh(kPtprof + " run -o " + (dir.path / "trace").string() + " -- " + kPrograms + "/odd_names");
  REQUIRE(trace.status == 0);
  std::string cmd = command;
  cmd.replace(cmd.find("TRACE"), 5, (dir.path / "trace").string());
  cmd.replace(cmd.find("OUT"), 3, out.string());
  auto r = sh(kPtprof + " " + cmd);
  INFO(what << ": " << r.output);
  CHECK(r.status == 0);
  CHECK(slurp(victim) == "precious\n");
  CHECK(fs::is_regular_file(fs::symlink_status(out)));  // the link was replaced by the output
  CHECK((fs::file_size(out) == 0) == empty_output);
  CHECK_FALSE(fs::exists(out.string() + ".tmp"));
}

}  // namespace

TEST_CASE("report --html writes through the output writer", "[output]") {
  check_not_written_through("report --html", "report TRACE --html OUT");
}

TEST_CASE("memory --timeline writes through the output writer", "[output]") {
  check_not_written_through("memory --timeline", "memory TRACE --timeline OUT");
}

TEST_CASE("flamegraph -o writes through the output writer", "[output]") {
  // The program records ranges, no ops: no folded stacks, an empty file.
  check_not_written_through("flamegraph -o", "flamegraph TRACE -o OUT", true);
}
