// Integration: the real `ptprof run` on real programs, read back with the
// analysis library.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "launcher_fixtures.hpp"
#include "ptprof/analysis/trace_file.hpp"

namespace fs = std::filesystem;

using ptprof::testing::kPrograms;
using ptprof::testing::kPtprof;
using ptprof::testing::read_all;
using ptprof::testing::sh;
using ptprof::testing::TempDir;

TEST_CASE("run exits with the target's status", "[launcher]") {
  TempDir out;
  CHECK(sh(kPtprof + " run -o " + out.path.string() + " -- sh -c 'exit 3'").status == 3);
  CHECK(sh(kPtprof + " run -o " + out.path.string() + " -- sh -c 'exit 0'").status == 0);
  // Killed by a signal: 128 + N, as a shell reports it.
  CHECK(sh(kPtprof + " run -o " + out.path.string() + " -- sh -c 'kill -9 $$'").status == 137);
}

TEST_CASE("run reports a program that cannot start with 127", "[launcher]") {
  TempDir out;
  auto r = sh(kPtprof + " run -o " + out.path.string() + " -- /nonexistent/program");
  CHECK(r.status == 127);
  CHECK_THAT(r.output, Catch::Contains("/nonexistent/program") && Catch::Contains("No such file"));
}

TEST_CASE("run rejects a malformed schedule before starting the target", "[launcher]") {
  TempDir out;
  fs::path marker = out.path / "started";
  auto r = sh(kPtprof + " run -o " + out.path.string() + " --schedule 'wait=x' -- touch " + marker.string());
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("wait") && Catch::Contains("'x'") && Catch::Contains("accepted"));
  CHECK(!fs::exists(marker));
  r = sh("PTPROF_SCHEDULE='active=0' " + kPtprof + " run -o " + out.path.string() + " -- touch " + marker.string());
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("PTPROF_SCHEDULE") && Catch::Contains("active"));
  CHECK(!fs::exists(marker));
}

TEST_CASE("run's schedule flags override their keys of the schedule, which the target gets whole", "[launcher]") {
  TempDir out;
  const std::string run = kPtprof + " run -o " + out.path.string();
  const std::string print = " -- sh -c 'echo \"schedule:$PTPROF_SCHEDULE\"'";
  auto r = sh("PTPROF_SCHEDULE='wait=5, repeat=2' " + run + " --wait 2 --active 3" + print);
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("schedule:skip_first=0,wait=2,warmup=0,active=3,repeat=2\n"));
  r = sh("PTPROF_SCHEDULE= " + run + " --warmup 1" + print);  // a flag alone makes a schedule
  CHECK_THAT(r.output, Catch::Contains("schedule:skip_first=0,wait=0,warmup=1,active=1,repeat=0\n"));
  r = sh("PTPROF_SCHEDULE='repeat=4' " + run + print);  // no flag: the text as given
  CHECK_THAT(r.output, Catch::Contains("schedule:repeat=4\n"));
  // A flag's value is checked by the schedule's parser and named by the flag.
  r = sh(run + " --active 0" + print);
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("--active='0'") && Catch::Contains("at least 1 step must be active"));
  CHECK_THAT(r.output, !Catch::Contains("schedule:"));
  r = sh(run + " --wait x" + print);
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("--wait='x'") && Catch::Contains("not a non-negative whole number"));
  r = sh(run + " --wait 1,active=9" + print);  // one number, not another key
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("--wait takes one number"));
  r = sh("PTPROF_SCHEDULE='wait=1,bogus=2' " + run + " --wait 3" + print);
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("PTPROF_SCHEDULE='wait=1,bogus=2'") && Catch::Contains("unknown key 'bogus'"));
}

TEST_CASE("every range and mark of 4 threads in 3 processes is recorded once, in its pid and tid", "[launcher]") {
  TempDir out;
  const int per_thread = 200;
  // The processes drained on one thread, and on two (DrainPool), which the
  // debug log says it used.
  const int drain_threads = GENERATE(1, 2);
  auto r = sh("PTPROF_LOG_LEVEL=debug PTPROF_DRAIN_THREADS=" + std::to_string(drain_threads) + " " + kPtprof +
              " run -o " + out.path.string() + " -- " + kPrograms + "/capi_threads_fork " + std::to_string(per_thread));
  INFO(r.output);
  REQUIRE(r.status == 0);
  if (drain_threads > 1)
    CHECK_THAT(r.output, Catch::Contains("processes: drained on " + std::to_string(drain_threads) + " threads"));
  else
    CHECK_THAT(r.output, !Catch::Contains("drained on"));
  auto traces = read_all(out.path);

  // name -> (pid, tid) of each occurrence
  std::map<std::string, std::vector<std::pair<int, int>>> seen;
  std::set<int> pids;
  for (auto& t : traces) {
    for (auto& e : t.events) {
      if (e.kind != ptprof::trace::EventKind::Range && e.kind != ptprof::trace::EventKind::Mark) continue;
      const auto& th = t.threads.at(e.thread);
      const auto& pr = t.processes.at(th.process);
      seen[t.strings.at(e.name)].push_back({pr.pid, th.tid});
      pids.insert(pr.pid);
    }
  }
  CHECK(pids.size() == 3);
  // role<pid>.t<k>.tid<tid>.{r,m}<i>
  std::regex pattern(R"(([a-z]+)(\d+)\.t(\d)\.tid(\d+)\.([rm])(\d+))");
  std::map<std::string, int> per_role;
  for (auto& [name, where] : seen) {
    std::smatch m;
    INFO(name);
    REQUIRE(std::regex_match(name, m, pattern));
    CHECK(where.size() == 1);  // none twice
    CHECK(where[0].first == std::stoi(m[2]));
    CHECK(where[0].second == std::stoi(m[4]));
    per_role[m[1].str() + m[2].str()]++;
  }
  // parent before and after the forks, two children: 4 threads x N x (range + mark) each.
  CHECK(per_role.size() == 4);
  for (auto& [role, n] : per_role) {
    INFO(role);
    CHECK(n == 4 * per_thread * 2);
  }
  // Ranges are spans that end after they begin; marks are instants.
  for (auto& t : traces)
    for (auto& e : t.events) {
      if (e.kind == ptprof::trace::EventKind::Range) {
        CHECK(e.end_ns >= e.start_ns);
        CHECK((e.flags & ptprof::trace::kTruncated) == 0);
      }
    }
}

TEST_CASE("recorded + dropped equals what each thread wrote, exactly", "[launcher]") {
  TempDir out;
  // Small rings so that drops certainly happen.
  auto r = sh(kPtprof + " run --ring-kb 64 -o " + out.path.string() + " -- " + kPrograms + "/mark_flood 2000000 2");
  INFO(r.output);
  REQUIRE(r.status == 0);
  auto traces = read_all(out.path);
  uint64_t total_dropped = 0;
  int writer_threads = 0;
  for (auto& t : traces) {
    std::vector<uint64_t> marks(t.threads.size());
    for (auto& e : t.events)
      if (e.kind == ptprof::trace::EventKind::Mark) marks[e.thread]++;
    for (size_t i = 0; i < t.threads.size(); ++i) {
      if (marks[i] == 0 && t.threads[i].dropped == 0) continue;
      ++writer_threads;
      CHECK(marks[i] + t.threads[i].dropped == 2000000);
      CHECK(t.threads[i].events >= marks[i]);
      total_dropped += t.threads[i].dropped;
    }
  }
  CHECK(writer_threads == 2);
  CHECK(total_dropped > 0);
}

TEST_CASE("a process without a session is untouched by the agent", "[agent]") {
  // The test programs link the agent; run alone there is no session.
  auto r = sh("env -u PTPROF_SESSION " + kPrograms + "/capi_threads_fork 10");
  CHECK(r.status == 0);
  CHECK_THAT(r.output, !Catch::Contains("ptprof"));
}

TEST_CASE("the agent exports its API and the calls it interposes, nothing else", "[agent]") {
  // A preloaded library's exports interpose on the whole process: an exported
  // std:: instantiation would replace the target's own.
  auto r = sh("nm -D --defined-only " + kPrograms + "/../lib/libptprof_agent.so");
  REQUIRE(r.status == 0);
  std::istringstream lines(r.output);
  std::string line;
  int exported = 0;
  while (std::getline(lines, line)) {
    auto name = line.substr(line.rfind(' ') + 1);
    INFO(name);
    // The CUDA runtime and driver entry points it wraps (cuda*, cu[A-Z]*),
    // dlsym (for the driver a CUDA runtime loads itself) and NVTX's
    // injection entry point; torch's three profiler-enable functions
    // (torch_profiler_hooks.cpp), which step ptprof's memory reporter aside.
    const bool cuda =
        name.rfind("cuda", 0) == 0 || (name.size() > 2 && name.rfind("cu", 0) == 0 && std::isupper(name[2]));
    const bool torch_profiler_enable =
        name.rfind("_ZN5torch8autograd8profiler14enableProfilerERK", 0) == 0 ||
        name.rfind("_ZN5torch8autograd8profiler20enableProfilerLegacyERK", 0) == 0 ||
        name.rfind("_ZN5torch8autograd8profiler34enableProfilerWithEventPostProcessERK", 0) == 0;
    CHECK((name.rfind("ptprof_", 0) == 0 || name == "dlopen" || name == "dlsym" || name == "pthread_setname_np" ||
           name == "InitializeInjectionNvtx2" || cuda || torch_profiler_enable));
    ++exported;
  }
  CHECK(exported >= 8);
}

TEST_CASE("children forked in bursts are all profiled, and nothing is left in /dev/shm", "[launcher]") {
  TempDir out;
  const int children = 200;
  // Drained on one thread and on three (processes attach, finish and are
  // written while the pool drains the others).
  const int drain_threads = GENERATE(1, 3);
  // Debug logging names the session (other tests' sessions may come and go
  // meanwhile, so /dev/shm is checked for this one's objects only).
  auto r = sh("PTPROF_LOG_LEVEL=debug PTPROF_DRAIN_THREADS=" + std::to_string(drain_threads) + " " + kPtprof +
              " run -o " + out.path.string() + " -- " + kPrograms + "/fork_burst " + std::to_string(children) + " 50");
  INFO(r.output);
  REQUIRE(r.status == 0);
  if (drain_threads > 1) CHECK_THAT(r.output, Catch::Contains("processes: drained on 3 threads"));
  std::set<int> pids;
  int child_marks = 0;
  for (auto& t : read_all(out.path)) {
    for (auto& e : t.events) {
      if (e.kind != ptprof::trace::EventKind::Mark) continue;
      const auto& pr = t.processes.at(t.threads.at(e.thread).process);
      pids.insert(pr.pid);
      if (t.strings.at(e.name) == "child" + std::to_string(pr.pid)) ++child_marks;
    }
  }
  CHECK(child_marks == children);
  CHECK(pids.size() == size_t(children) + 1);
  CHECK_THAT(r.output, !Catch::Contains("could not be profiled"));
  std::smatch m;
  REQUIRE(std::regex_search(r.output, m, std::regex(R"(session /(ptprof-[0-9a-f]+))")));
  std::vector<std::string> left;
  for (auto& e : fs::directory_iterator("/dev/shm"))
    if (e.path().filename().string().rfind(m[1].str(), 0) == 0) left.push_back(e.path().filename().string());
  CHECK(left.empty());
}
