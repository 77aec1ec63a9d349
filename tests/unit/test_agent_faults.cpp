// Fault injection on the agent's side of a session (issue 13): a short
// /dev/shm, rings overflowing mid-nesting, thousands of short-lived threads,
// malformed session objects, squatted region names, a launcher killed with
// SIGKILL. Each asserts that the target's exit status is unchanged, that what
// was recorded is right, that what was not is counted, and that nothing is
// left in /dev/shm.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "launcher_fixtures.hpp"
#include "process/sanitizer_runtime.hpp"
#include "ptprof/shm_abi.hpp"
#include "test_skip.hpp"

using namespace ptprof::testing;
using ptprof::trace::EventKind;

namespace {

const std::string kAgent = kPrograms + "/../lib/libptprof_agent.so";

// Names in /dev/shm that start with `prefix` (a session's name without its '/').
std::vector<std::string> shm_objects(const std::string& prefix) {
  std::vector<std::string> found;
  for (auto& e : fs::directory_iterator("/dev/shm"))
    if (e.path().filename().string().rfind(prefix, 0) == 0) found.push_back(e.path().filename().string());
  return found;
}

// What a run left in /dev/shm: the objects named after the session that its
// debug log names (PTPROF_LOG_LEVEL=debug).
std::vector<std::string> left_by_run(const std::string& output) {
  std::smatch m;
  REQUIRE(std::regex_search(output, m, std::regex(R"(session /(ptprof-[0-9a-f]+))")));
  return shm_objects(m[1].str());
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// How to run a command in a private mount namespace, or "" when this
// machine allows none (root: unshare -m; otherwise a user namespace).
std::string mount_namespace_prefix() {
  for (const char* prefix : {"unshare -m", "unshare -rm"})
    if (sh(std::string(prefix) + " sh -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm'").status == 0)
      return std::string(prefix) + " ";
  return "";
}

int lines_mentioning(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line.find(word) != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("a short /dev/shm costs rings, never the target: exit 0 and the shortage counted", "[faults][shm]") {
  const std::string ns = mount_namespace_prefix();
  if (ns.empty()) {
    PTPROF_SKIP("no private mount namespace on this machine (unshare -m / -rm failed)");
  }
  TempDir out;
  // 8 threads that each fill a 2 MiB ring want 16 MiB; /dev/shm has 12.
  const uint64_t per_thread = 300000, threads = 8;
  auto r = sh(ns + "sh -c 'mount -t tmpfs -o size=12m tmpfs /dev/shm && " + kPtprof + " run -o " + out.path.string() +
              " -- " + kPrograms + "/mark_flood " + std::to_string(per_thread) + " " + std::to_string(threads) +
              "; rc=$?; echo left-in-shm=$(ls /dev/shm | wc -l); exit $rc'");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("left-in-shm=0"));
  CHECK_THAT(r.output, Catch::Contains("/dev/shm was short"));
  uint64_t marks = 0, dropped = 0, lost = 0;
  for (auto& t : read_all(out.path)) {
    for (auto& e : t.events) marks += e.kind == EventKind::Mark;
    for (auto& th : t.threads) dropped += th.dropped;
    lost += t.losses.lost_thread_events;
  }
  // Every mark was recorded (in a ring cut to what fit), dropped from a full
  // ring, or counted as lost with a thread that got no ring at all.
  CHECK(marks + dropped + lost == per_thread * threads);
  // The shortage is in the trace: `info` and `report` say it too.
  auto info = sh(kPtprof + " info " + out.path.string());
  CHECK_THAT(info.output, Catch::Contains("/dev/shm was short"));
  auto report = sh(kPtprof + " report " + out.path.string());
  CHECK_THAT(report.output, Catch::Contains("WARNING: /dev/shm was short"));
}

TEST_CASE("nested ranges under ring overflow close their own range, and recorded + dropped is exact",
          "[faults][ring]") {
  TempDir out;
  const long iterations = 300000;
  const int depth = 6;
  auto r = sh("PTPROF_LOG_LEVEL=debug " + kPtprof + " run --ring-kb 64 -o " + out.path.string() + " -- " + kPrograms +
              "/range_flood " + std::to_string(iterations) + " " + std::to_string(depth) + " 2");
  INFO(r.output);
  REQUIRE(r.status == 0);
  uint64_t total_dropped = 0;
  int writers = 0;
  for (auto& t : read_all(out.path)) {
    std::map<uint32_t, std::vector<const ptprof::trace::Event*>> by_thread;
    for (auto& e : t.events)
      if (e.kind == EventKind::Range) by_thread[e.thread].push_back(&e);
    for (auto& [thread, events] : by_thread) {
      ++writers;
      const uint64_t dropped = t.threads.at(thread).dropped;
      total_dropped += dropped;
      CHECK(events.size() + dropped == uint64_t(iterations) * depth);
      // Ranges nest: each lies inside the one enclosing it, which is of a
      // lower depth, and none was cut short.
      // Outer first; ranges a tick apart can have the same times in ns, and
      // then the name says which is outer.
      auto depth_of = [&](const ptprof::trace::Event* e) { return std::stoi(t.strings.at(e->name).substr(1)); };
      std::sort(events.begin(), events.end(), [&](auto* a, auto* b) {
        if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns;
        if (a->end_ns != b->end_ns) return a->end_ns > b->end_ns;
        return depth_of(a) < depth_of(b);
      });
      std::vector<const ptprof::trace::Event*> open;
      size_t bad = 0;
      for (auto* e : events) {
        bad += (e->flags & ptprof::trace::kTruncated) != 0;
        while (!open.empty() && open.back()->end_ns <= e->start_ns) open.pop_back();
        if (!open.empty()) {
          const int outer = depth_of(open.back());
          const int inner = depth_of(e);
          if (e->end_ns > open.back()->end_ns || inner <= outer) {
            if (++bad <= 3)
              UNSCOPED_INFO("d" << inner << " [" << e->start_ns << ", " << e->end_ns << "] in d" << outer << " ["
                                << open.back()->start_ns << ", " << open.back()->end_ns << "]");
          }
        }
        open.push_back(e);
      }
      CHECK(bad == 0);
    }
  }
  CHECK(writers == 2);
  CHECK(total_dropped > 0);
  CHECK(left_by_run(r.output).empty());
}

TEST_CASE("10,000 short-lived threads in one process are all recorded, or counted as lost threads",
          "[faults][threads]") {
  TempDir out;
  auto r = sh("PTPROF_LOG_LEVEL=debug " + kPtprof + " run -o " + out.path.string() + " -- " + kPrograms +
              "/thread_churn 100 100");
  INFO(r.output);
  REQUIRE(r.status == 0);
  uint64_t ranges = 0, lost_events = 0, dropped = 0;
  for (auto& t : read_all(out.path)) {
    for (auto& e : t.events) ranges += e.kind == EventKind::Range && t.strings.at(e.name) == "work";
    lost_events += t.losses.lost_thread_events;
    for (auto& th : t.threads) dropped += th.dropped;
  }
  CHECK(ranges + lost_events == 10000);
  CHECK(dropped == 0);
  // More than the thread table holds: the slots of exited threads were reused.
  CHECK(ranges > ptprof::wire::kMaxThreads);
  // A thread that could not be recorded is not blamed on the ring.
  CHECK_THAT(r.output, !Catch::Contains("--ring-kb"));
  CHECK(left_by_run(r.output).empty());
}

TEST_CASE("threads beyond the thread table are counted as lost threads, with the thread table's advice",
          "[faults][threads]") {
  TempDir out;
  // 1,100 threads alive at once: the table holds 1,024 (the main thread's included).
  const uint64_t threads = 1100;
  auto r =
      sh(kPtprof + " run -o " + out.path.string() + " -- " + kPrograms + "/thread_churn 1 " + std::to_string(threads));
  INFO(r.output);
  REQUIRE(r.status == 0);
  uint64_t ranges = 0, dropped = 0;
  ptprof::trace::Losses losses;
  for (auto& t : read_all(out.path)) {
    for (auto& e : t.events) ranges += e.kind == EventKind::Range && t.strings.at(e.name) == "work";
    for (auto& th : t.threads) dropped += th.dropped;
    losses += t.losses;
  }
  CHECK(dropped == 0);
  CHECK(losses.lost_threads == threads - (ptprof::wire::kMaxThreads - 1));
  CHECK(ranges + losses.lost_thread_events == threads);
  CHECK(ranges == ptprof::wire::kMaxThreads - 1);
  CHECK_THAT(r.output, Catch::Contains("threads beyond the thread table were not recorded"));
  CHECK_THAT(r.output, !Catch::Contains("--ring-kb"));
  auto info = sh(kPtprof + " info " + out.path.string());
  CHECK_THAT(info.output, Catch::Contains("lost_threads " + std::to_string(losses.lost_threads)));
  auto report = sh(kPtprof + " report " + out.path.string());
  CHECK_THAT(report.output, Catch::Contains("WARNING: " + std::to_string(losses.lost_threads) + " threads beyond"));
}

TEST_CASE("a malformed session object leaves every preloaded process untouched", "[faults][agent]") {
  const std::string name = "/ptprof-test-malformed-" + std::to_string(getpid());
  struct Case {
    const char* what;
    size_t bytes;  // of the object
    std::function<void(ptprof::wire::SessionHeader&)> edit;
  };
  auto valid = [&](ptprof::wire::SessionHeader& h) {
    h.magic = ptprof::wire::kSessionMagic;
    h.version = ptprof::wire::kWireVersion;
    h.clock_kind = 0;
    h.ring_bytes = ptprof::wire::kDefaultRingBytes;
    std::snprintf(h.name, sizeof h.name, "%s", name.c_str());
  };
  const size_t full = sizeof(ptprof::wire::SessionHeader);
  const std::vector<Case> cases = {
      {"empty", 0, nullptr},
      {"truncated", 4096, valid},
      {"huge ring_bytes", full, [&](auto& h) { valid(h), h.ring_bytes = uint64_t(1) << 62; }},
      {"ring_bytes not a power of two", full, [&](auto& h) { valid(h), h.ring_bytes = 3 << 20; }},
      {"bad magic", full, [&](auto& h) { valid(h), h.magic = 42; }},
      {"bad version", full, [&](auto& h) { valid(h), h.version = 999; }},
      {"bad clock", full, [&](auto& h) { valid(h), h.clock_kind = 77; }},
      {"name not terminated", full, [&](auto& h) { valid(h), std::memset(h.name, 'x', sizeof h.name); }},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    int fd = shm_open(name.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, off_t(c.bytes)) == 0);
    if (c.edit && c.bytes) {
      void* p = mmap(nullptr, c.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      REQUIRE(p != MAP_FAILED);
      std::vector<uint8_t> copy(full, 0);
      auto* h = std::construct_at(reinterpret_cast<ptprof::wire::SessionHeader*>(copy.data()));
      c.edit(*h);
      std::memcpy(p, copy.data(), std::min(c.bytes, full));
      munmap(p, c.bytes);
    }
    close(fd);
    // A sanitizer build's agent needs its runtime first, as `ptprof run` arranges.
    const std::string runtime = ptprof::launcher::sanitizer_runtime();
    std::string env = "LD_PRELOAD=";
    if (!runtime.empty()) env += runtime + ":";
    env += kAgent;
    env += " PTPROF_SESSION=" + name + " ";
    auto echo = sh(env + "/bin/echo hello-from-echo");
    INFO(echo.output);
    CHECK(echo.status == 0);
    CHECK_THAT(echo.output, Catch::Contains("hello-from-echo"));
    CHECK(lines_mentioning(echo.output, "ptprof") <= 1);
    auto flood = sh(env + kPrograms + "/mark_flood 1000 4");
    INFO(flood.output);
    CHECK(flood.status == 0);
    CHECK(lines_mentioning(flood.output, "ptprof") <= 1);
    shm_unlink(name.c_str());
    // The agent created nothing of its own (a region would be <name>.<hex>).
    const auto left = shm_objects(name.substr(1));
    CHECK(left.empty());
    for (const std::string& object : left) shm_unlink(("/" + object).c_str());
  }
}

TEST_CASE("pre-created region names cannot keep a process from being profiled", "[faults][agent]") {
  TempDir out;
  const int children = 10;
  auto r = sh("PTPROF_LOG_LEVEL=debug " + kPtprof + " run -o " + out.path.string() + " -- " + kPrograms +
              "/squat_regions " + std::to_string(children) + " 64");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("squatted 64 names"));
  int child_marks = 0;
  for (auto& t : read_all(out.path))
    for (auto& e : t.events)
      if (e.kind == EventKind::Mark && t.strings.at(e.name).rfind("child", 0) == 0) ++child_marks;
  CHECK(child_marks == children);
  CHECK_THAT(r.output, !Catch::Contains("could not be profiled"));
  CHECK(left_by_run(r.output).empty());
}

TEST_CASE("after the launcher is killed, the target's later children create nothing in /dev/shm", "[faults][agent]") {
  TempDir out;
  const fs::path session_file = out.path / "session";
  const fs::path done_file = out.path / "done";
  const std::string trickle = kPrograms + "/fork_trickle";
  const std::string dir = (out.path / "traces").string();
  std::vector<std::string> args = {
      kPtprof, "run", "-o", dir, "--", trickle, "30", "20", session_file.string(), done_file.string()};
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t launcher = 0;
  REQUIRE(posix_spawn(&launcher, kPtprof.c_str(), nullptr, nullptr, argv.data(), environ) == 0);
  // Kill the launcher once the target runs (it has written its session's name).
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::minutes(10);  // a hang guard only
  while (!fs::exists(session_file) && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(fs::exists(session_file));
  REQUIRE(kill(launcher, SIGKILL) == 0);
  int status = 0;
  REQUIRE(waitpid(launcher, &status, 0) == launcher);
  // The orphaned target goes on forking; wait for it to end.
  while (!fs::exists(done_file) && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE(fs::exists(done_file));
  std::string session = read_text(session_file);
  REQUIRE(session.size() > 1);
  const auto left = shm_objects(session.substr(1));
  for (const std::string& name : left) shm_unlink(("/" + name).c_str());
  INFO("left in /dev/shm: " << left.size());
  CHECK(left.empty());
}
