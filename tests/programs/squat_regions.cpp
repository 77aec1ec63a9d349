// Plays another local user who pre-creates the shared-memory names that the
// agent used to give process regions (<session>.<slot>, slots 0..N), then
// forks children that each record a mark named after their pid; removes the
// names it created at the end (tests/unit/test_agent_faults.cpp).
//   squat_regions <children> <names>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ptprof.h"

int main(int argc, char** argv) {
  const int children = argc > 1 ? std::atoi(argv[1]) : 10;
  const int names = argc > 2 ? std::atoi(argv[2]) : 64;
  const char* session = std::getenv("PTPROF_SESSION");
  std::vector<std::string> squatted;
  for (int i = 0; session && i < names; ++i) {
    std::string name = std::string(session) + "." + std::to_string(i);
    int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd >= 0) {
      close(fd);
      squatted.push_back(name);
    }
  }
  ptprof_mark("parent");
  int failed = 0;
  for (int i = 0; i < children; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      std::string mark = "child" + std::to_string(getpid());
      ptprof_mark(mark.c_str());
      _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  for (const std::string& name : squatted) shm_unlink(name.c_str());
  std::printf("squatted %zu names, forked %d, %d failed\n", squatted.size(), children, failed);
  return failed ? 1 : 0;
}
