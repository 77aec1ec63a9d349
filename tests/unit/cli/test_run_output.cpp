// `ptprof run` and its output directory when things go wrong (issue #13): an
// unwritable directory, a full disk, a launcher killed mid-run, runs that share
// a directory and a pid, a host name that is not a file name.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>

#include "launcher_fixtures.hpp"
#include "ptprof/analysis/trace_file.hpp"
#include "test_skip.hpp"

namespace fs = std::filesystem;

using ptprof::testing::kPrograms;
using ptprof::testing::kPtprof;
using ptprof::testing::sh;
using ptprof::testing::TempDir;

namespace {

// `unshare` with a private mount (and other) namespaces: as root directly,
// otherwise mapped to root in a user namespace. Empty when unavailable.
std::string unshare(const std::string& flags) {
  std::string cmd = std::string("unshare ") + (::geteuid() == 0 ? "" : "-r ") + flags;
  if (sh(cmd + " true").status != 0) return {};
  return cmd;
}

std::vector<fs::path> files_with(const fs::path& dir, const std::string& suffix) {
  std::vector<fs::path> out;
  for (auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(e.path());
  }
  return out;
}

}  // namespace

TEST_CASE("run: an output directory that cannot be written stops the run before the target starts",
          "[launcher][reliability]") {
  const std::string ns = unshare("-m");
  if (ns.empty()) {
    PTPROF_SKIP("mount namespaces are unavailable here (unshare -m)");
  }
  TempDir tmp;
  const fs::path out = tmp.path / "ro";
  fs::create_directories(out);
  const fs::path marker = tmp.path / "started";
  // Read-only even for root: a read-only mount.
  auto r = sh(ns + " sh -c 'mount -t tmpfs -o ro,size=64k none " + out.string() + " && " + kPtprof + " run -o " +
              out.string() + " -- touch " + marker.string() + "'");
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains(out.string()) && Catch::Contains("not writable") &&
                           Catch::Contains("Read-only file system"));
  CHECK(!fs::exists(marker));
}

TEST_CASE("run: a full disk mid-run is an error in the summary and exit status 3", "[launcher][reliability]") {
  const std::string ns = unshare("-m");
  if (ns.empty()) {
    PTPROF_SKIP("mount namespaces are unavailable here (unshare -m)");
  }
  TempDir tmp;
  const fs::path out = tmp.path / "small";
  fs::create_directories(out);
  // 8 KiB of disk for millions of events.
  auto r = sh(ns + " sh -c 'mount -t tmpfs -o size=8k none " + out.string() + " && " + kPtprof + " run -o " +
              out.string() + " -- " + kPrograms + "/mark_flood 1000000 2'");
  INFO(r.output);
  CHECK(r.status == 3);
  CHECK_THAT(r.output, Catch::Contains("No space left on device") && Catch::Contains("error"));
  CHECK_THAT(r.output, !Catch::Contains("no events were recorded"));
  // The target's own failure is passed on as it is.
  r = sh(ns + " sh -c 'mount -t tmpfs -o size=8k none " + out.string() + " && " + kPtprof + " run -o " + out.string() +
         " -- sh -c \"" + kPrograms + "/mark_flood 1000000 2; exit 5\"'");
  INFO(r.output);
  CHECK(r.status == 5);
  CHECK_THAT(r.output, Catch::Contains("No space left on device"));
}

TEST_CASE("run: a launcher killed with SIGKILL leaves a .tmp readable up to its last flushed chunk",
          "[launcher][reliability]") {
  TempDir tmp;
  const fs::path out = tmp.path / "out";
  const fs::path ready = tmp.path / "ready";
  const fs::path pidfile = tmp.path / "launcher.pid";
  // Fewer marks than an event chunk holds, and few enough for the ring: all
  // of them are drained, and on disk only if the launcher flushes as it goes.
  const int marks = 20000;
  auto started =
      sh("( " + kPtprof + " run -o " + out.string() + " -- " + kPrograms + "/mark_and_wait " + std::to_string(marks) +
         " " + ready.string() + " >/dev/null 2>&1 & echo $! > " + pidfile.string() + " )");
  REQUIRE(started.status == 0);
  pid_t launcher = 0;
  std::ifstream(pidfile) >> launcher;
  REQUIRE(launcher > 0);
  // Wait for the target to have recorded its marks, then for the launcher to
  // put them on disk (bounded: a launcher that never flushes fails here).
  int on_disk = 0;
  fs::path partial;
  for (int i = 0; i < 600 && on_disk < marks; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!fs::exists(ready) || !fs::exists(out)) continue;
    for (auto& f : files_with(out, ".bin.tmp")) {
      std::vector<std::string> warnings;
      auto t = ptprof::format::read_trace(f.string(), &warnings);
      if (!t) continue;
      on_disk = 0;
      for (auto& e : t->events)
        if (e.kind == ptprof::trace::EventKind::Mark) ++on_disk;
      partial = f;
    }
  }
  ::kill(launcher, SIGKILL);
  pid_t target = 0;
  std::ifstream(ready) >> target;
  if (target > 0) ::kill(target, SIGKILL);
  CHECK(on_disk == marks);
  REQUIRE(!partial.empty());
  // What is on disk after the kill: the valid part, with a warning.
  auto info = sh(kPtprof + " info " + partial.string());
  INFO(info.output);
  CHECK(info.status == 0);
  CHECK_THAT(info.output, Catch::Contains("truncated"));
  auto report = sh(kPtprof + " report " + partial.string());
  INFO(report.output);
  CHECK(report.status == 0);
  CHECK_THAT(report.output, Catch::Contains("waiting"));
  // A directory scan reads finished files only, and says what it left out.
  auto scan = sh(kPtprof + " info " + out.string());
  INFO(scan.output);
  CHECK_THAT(scan.output, Catch::Contains(".bin.tmp"));
}

TEST_CASE("run: runs with the same host and pid in one directory write files of their own", "[launcher][reliability]") {
  // In a new pid namespace the launcher is pid 1 and its target pid 2, run
  // after run: what containers sharing a volume see.
  const std::string ns = unshare("-pf --mount-proc");
  if (ns.empty()) {
    PTPROF_SKIP("pid namespaces are unavailable here (unshare -pf)");
  }
  TempDir out;
  const std::string run_in_ns =
      ns + " " + kPtprof + " run -o " + out.path.string() + " -- " + kPrograms + "/mark_flood 10 1";
  for (int run = 0; run < 2; ++run) {
    auto r = sh(run_in_ns);
    INFO(r.output);
    REQUIRE(r.status == 0);
  }
  auto files = files_with(out.path, ".bin");
  REQUIRE(files.size() == 2);
  std::vector<int> pids;
  for (auto& f : files) {
    std::vector<std::string> warnings;
    auto t = ptprof::format::read_trace(f.string(), &warnings);
    REQUIRE(t);
    REQUIRE(t->processes.size() == 1);
    pids.push_back(t->processes[0].pid);
  }
  CHECK(pids[0] == pids[1]);  // the collision this is about did happen
}

TEST_CASE("run: a host name is made safe before it is part of a file name", "[launcher][reliability]") {
  const std::string ns = unshare("-u");
  if (ns.empty()) {
    PTPROF_SKIP("UTS namespaces are unavailable here (unshare -u)");
  }
  TempDir tmp;
  const fs::path out = tmp.path / "a" / "b";
  fs::create_directories(out);
  auto r = sh(ns + " sh -c 'echo ../../evil > /proc/sys/kernel/hostname && " + kPtprof + " run -o " + out.string() +
              " -- " + kPrograms + "/mark_flood 10 1'");
  INFO(r.output);
  REQUIRE(r.status == 0);
  // Everything stays inside the output directory, under a plain name.
  std::vector<std::string> outside;
  for (auto& e : fs::recursive_directory_iterator(tmp.path))
    if (e.is_regular_file() && e.path().parent_path() != out) outside.push_back(e.path().string());
  CHECK(outside.empty());
  auto files = files_with(out, ".bin");
  REQUIRE(files.size() == 1);
  const std::string name = files[0].filename().string();
  CHECK(std::regex_match(name, std::regex(R"([A-Za-z0-9_][A-Za-z0-9._-]*\.w000\.bin)")));
  CHECK(name.find("..") == std::string::npos);
}
