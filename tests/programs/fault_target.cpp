// A target that records a known amount and then ends as told, for the
// fault-injection tests (tests/integration/test_fault_injection.py).
//   fault_target <ending> <ranges> [threads] [children]
// Each of `threads` threads (default 1) records <ranges> nested pairs,
// "outer" around "inner", and one mark "done"; `children` forked children
// (default 0) do the same; then the process ends by <ending>: exit (status
// 0), exit3, _exit5, sigkill, sigsegv, abort, or wait_fork5 (reads stdin to
// its end, then forks five children that record a range "late" each, and
// exits 0: the test decides when). It prints "pid <pid>" first and, before
// ending, "recorded <n> ranges": what this process and its children recorded.
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ptprof.h"

namespace {

void record(long ranges) {
  for (long i = 0; i < ranges; ++i) {
    ptprof_range_push("outer");
    ptprof_range_push("inner");
    ptprof_range_pop();
    ptprof_range_pop();
  }
  ptprof_mark("done");
}

void record_threads(long ranges, int threads) {
  std::vector<std::thread> pool;
  pool.reserve(size_t(threads));
  for (int t = 0; t < threads; ++t) pool.emplace_back(record, ranges);
  for (auto& t : pool) t.join();
}

[[noreturn]] void end(const char* how) {
  std::fflush(stdout);
  if (!std::strcmp(how, "exit")) std::exit(0);
  if (!std::strcmp(how, "exit3")) std::exit(3);
  if (!std::strcmp(how, "_exit5")) _exit(5);
  if (!std::strcmp(how, "sigkill")) ::raise(SIGKILL);
  if (!std::strcmp(how, "sigsegv")) {
    std::signal(SIGSEGV, SIG_DFL);
    ::raise(SIGSEGV);
  }
  if (!std::strcmp(how, "abort")) std::abort();
  if (!std::strcmp(how, "wait_fork5")) {
    char buf[256];
    while (std::fread(buf, 1, sizeof buf, stdin) > 0) {
    }
    for (int c = 0; c < 5; ++c) {
      if (::fork() == 0) {
        ptprof_range_push("late");
        ptprof_range_pop();
        _exit(0);
      }
    }
    while (::wait(nullptr) > 0) {
    }
    std::exit(0);
  }
  std::fprintf(stderr, "fault_target: unknown ending '%s'\n", how);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: fault_target <ending> <ranges> [threads] [children]\n");
    return 2;
  }
  const char* how = argv[1];
  const long ranges = std::atol(argv[2]);
  const int threads = argc > 3 ? std::atoi(argv[3]) : 1;
  const int children = argc > 4 ? std::atoi(argv[4]) : 0;
  std::printf("pid %d\n", int(::getpid()));
  std::fflush(stdout);
  std::vector<pid_t> pids;
  for (int c = 0; c < children; ++c) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      record_threads(ranges, threads);
      _exit(0);
    }
    if (pid > 0) pids.push_back(pid);
  }
  record_threads(ranges, threads);
  int failed = 0;
  for (pid_t pid : pids) {
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  std::printf("recorded %ld ranges\n", ranges * threads * 2 * long(1 + pids.size() - size_t(failed)));
  end(how);
}
