// Forks children one at a time, `interval_ms` apart; each records a mark and
// exits. Writes PTPROF_SESSION to `session_file` first and "done" to
// `done_file` at the end, so that a test can kill the launcher mid-run and
// then wait for the orphaned target (tests/unit/test_agent_faults.cpp).
//   fork_trickle <children> <interval_ms> <session_file> <done_file>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "ptprof.h"

namespace {
void write_file(const char* path, const char* text) {
  const std::string tmp = std::string(path) + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) return;
  std::fputs(text, f);
  std::fclose(f);
  std::rename(tmp.c_str(), path);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) return 2;
  const int children = std::atoi(argv[1]);
  const int interval_ms = std::atoi(argv[2]);
  const char* session = std::getenv("PTPROF_SESSION");
  write_file(argv[3], session ? session : "");
  for (int i = 0; i < children; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      ptprof_mark("child");
      _exit(0);
    }
    if (pid > 0) waitpid(pid, nullptr, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
  }
  write_file(argv[4], "done\n");
  return 0;
}
