// Uses the C API from 4 threads, then forks twice; each child does the same.
// Every range is named after its process role and thread, so a test can check
// that each one appears exactly once, in the right process and thread.
//   capi_threads_fork [ranges-per-thread]
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ptprof.h"

namespace {

int g_per_thread = 100;

void work(const std::string& role, int thread) {
  std::string prefix = role + ".t" + std::to_string(thread) + ".tid" + std::to_string(syscall(SYS_gettid));
  for (int i = 0; i < g_per_thread; ++i) {
    std::string range = prefix + ".r" + std::to_string(i);
    ptprof_range_push(range.c_str());
    std::string mark = prefix + ".m" + std::to_string(i);
    ptprof_mark(mark.c_str());
    ptprof_range_pop();
  }
}

void run_threads(const std::string& role) {
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) threads.emplace_back(work, role, t);
  for (auto& t : threads) t.join();
  std::printf("%s pid=%d done\n", role.c_str(), int(getpid()));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_per_thread = std::atoi(argv[1]);
  run_threads("parent" + std::to_string(getpid()));
  std::vector<pid_t> children;
  for (int c = 0; c < 2; ++c) {
    pid_t pid = fork();
    if (pid == 0) {
      run_threads("child" + std::to_string(getpid()));
      std::fflush(stdout);
      _exit(0);
    }
    children.push_back(pid);
  }
  // The parent records more after the forks: its rings must be untouched.
  run_threads("parentafter" + std::to_string(getpid()));
  int failed = 0;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    failed |= !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return failed;
}
