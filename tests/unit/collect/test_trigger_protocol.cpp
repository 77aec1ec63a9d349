// `ptprof trigger` and the session's trigger protocol (issue 28, defect 9):
// a window of many processes whose file list is longer than 4 KiB is printed
// whole, no path cut; a request another trigger has claimed is refused, never
// written over (the claim is a compare-and-swap on trigger_claim).
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <future>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "collect/live_sessions.hpp"
#include "launcher_fixtures.hpp"

using ptprof::testing::kPrograms;
using ptprof::testing::kPtprof;
using ptprof::testing::sh;
using ptprof::testing::ShellRun;
using ptprof::testing::TempDir;
namespace fs = std::filesystem;

namespace {

constexpr int kChildren = 40;

// The session a process of this user's runs belongs to ("" when none).
std::string session_of(int pid) {
  for (auto& s : ptprof::launcher::list_live_sessions())
    for (int32_t p : s->running_pids())
      if (p == pid) return s->name();
  return {};
}

// A `ptprof run --on-demand` of step_family, running until the test ends it.
class FamilyRun {
 public:
  explicit FamilyRun(const fs::path& dir) : dir_(dir), out_(dir / std::string(150, 'o')) {
    run_ = std::async(std::launch::async, [this] {
      return sh(kPtprof + " run --on-demand -o " + out_.string() + " -- " + kPrograms + "/step_family " +
                std::to_string(kChildren) + " " + (dir_ / "ready").string() + " " + (dir_ / "stop").string());
    });
  }
  ~FamilyRun() { stop(); }

  // Waits until every process has run a step; returns one of their pids (0: they did not).
  int wait_ready() {
    for (int i = 0; i < 3000; ++i) {
      int ready = 0, pid = 0;
      for (const auto& e : fs::directory_iterator(dir_))
        if (e.path().filename().string().starts_with("ready.")) {
          ++ready;
          pid = std::stoi(e.path().extension().string().substr(1));
        }
      if (ready == kChildren + 1) return pid;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return 0;
  }
  // The run's session once every process has run a step ("": they did not).
  std::string session() {
    const int pid = wait_ready();
    return pid ? session_of(pid) : std::string();
  }
  ShellRun stop() {
    if (!run_.valid()) return {};
    std::fclose(std::fopen((dir_ / "stop").c_str(), "w"));
    return run_.get();
  }

 private:
  fs::path dir_, out_;
  std::future<ShellRun> run_;
};

}  // namespace

TEST_CASE("trigger: a window's file list longer than 4 KiB is printed whole", "[launcher][trigger]") {
  TempDir dir;
  FamilyRun family(dir.path);
  const std::string session = family.session();
  REQUIRE(!session.empty());
  // Its paths alone: stderr (the request's line) goes nowhere.
  auto trig = sh("(" + kPtprof + " trigger --session " + session + " --duration 300ms 2>/dev/null)");
  INFO(trig.output);
  CHECK(trig.status == 0);
  std::istringstream lines(trig.output);
  std::set<std::string> paths;
  size_t bytes = 0;
  for (std::string line; std::getline(lines, line);) {
    bytes += line.size() + 1;
    CHECK(fs::exists(line));  // no path cut
    paths.insert(line);
  }
  CHECK(bytes > 4096);
  CHECK(paths.size() == kChildren + 1);  // one file per process of the window
  const ShellRun run = family.stop();
  INFO(run.output);
  CHECK(run.status == 0);
}

TEST_CASE("trigger: a request another trigger has claimed is refused, not written over", "[launcher][trigger]") {
  TempDir dir;
  FamilyRun family(dir.path);
  const std::string session = family.session();
  REQUIRE(!session.empty());
  {
    // Another trigger between its claim and its request: it holds trigger_claim.
    auto s = ptprof::launcher::LiveSession::open(session);
    REQUIRE(s);
    ptprof::wire::SessionHeader& h = *(*s)->header();
    const uint32_t seq = h.trigger_seq.load();
    h.trigger_claim.store(seq + 1);
    auto refused = sh(kPtprof + " trigger --session " + session + " --steps 1");
    INFO(refused.output);
    CHECK(refused.status == 1);
    CHECK(refused.output.find("another trigger is requesting window " + std::to_string(seq)) != std::string::npos);
    CHECK(h.trigger_seq.load() == seq);  // nothing requested
    h.trigger_claim.store(seq);          // that trigger gave up
  }
  auto trig = sh("(" + kPtprof + " trigger --session " + session + " --steps 1 2>/dev/null)");
  INFO(trig.output);
  CHECK(trig.status == 0);
  family.stop();
}

TEST_CASE("trigger: a claim whose trigger died before publishing does not block later triggers",
          "[launcher][trigger]") {
  TempDir dir;
  FamilyRun family(dir.path);
  const std::string session = family.session();
  REQUIRE(!session.empty());
  // A pid that is certainly gone: a child already reaped.
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  REQUIRE(dead > 0);
  REQUIRE(::waitpid(dead, nullptr, 0) == dead);
  {
    // A trigger killed between its claim and its request: trigger_claim
    // holds seq + 1, trigger_seq is still seq, its pid is the claimer's.
    auto s = ptprof::launcher::LiveSession::open(session);
    REQUIRE(s);
    ptprof::wire::SessionHeader& h = *(*s)->header();
    const uint32_t seq = h.trigger_seq.load();
    h.trigger_claim.store(seq + 1);
    h.trigger_claimer.store(int32_t(dead));
  }
  auto trig = sh("(" + kPtprof + " trigger --session " + session + " --steps 1)");
  INFO(trig.output);
  CHECK(trig.status == 0);
  CHECK(trig.output.find("is gone; requesting it instead") != std::string::npos);
  {
    auto s = ptprof::launcher::LiveSession::open(session);
    REQUIRE(s);
    CHECK((*s)->header()->trigger_claimer.load() == 0);  // cleared when the request was published
  }
  family.stop();
}
