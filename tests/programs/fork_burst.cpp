// Forks children in bursts that register with the session at the same moment;
// each child records one mark named after its pid and exits.
//   fork_burst <children> <burst>
// Processes that register together used to be lost in silence when a later
// slot became ready first (tests/unit/cli/test_launcher_run.cpp).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ptprof.h"

int main(int argc, char** argv) {
  const int children = argc > 1 ? std::atoi(argv[1]) : 200;
  const int burst = argc > 2 ? std::atoi(argv[2]) : 50;
  ptprof_mark("parent");
  int failed = 0;
  for (int done = 0; done < children; done += burst) {
    std::vector<pid_t> pids;
    for (int i = 0; i < burst && done + i < children; ++i) {
      pid_t pid = fork();
      if (pid == 0) {
        std::string name = "child" + std::to_string(getpid());
        ptprof_mark(name.c_str());
        _exit(0);
      }
      if (pid > 0) pids.push_back(pid);
    }
    for (pid_t pid : pids) {
      int status = 0;
      if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
    }
  }
  std::printf("forked %d, %d failed\n", children, failed);
  return failed ? 1 : 0;
}
