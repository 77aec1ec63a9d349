// Records N marks, then writes its pid to READY_FILE and sleeps (at most a minute) until
// it is killed: a target that is still running, with events already recorded,
// when a test kills the launcher.
//   mark_and_wait <marks> <ready-file>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "ptprof.h"

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const long marks = std::atol(argv[1]);
  for (long i = 0; i < marks; ++i) ptprof_mark("waiting");
  // Complete before it has its name: a reader never sees it half-written.
  const std::string tmp = std::string(argv[2]) + ".part";
  const std::string pid = std::to_string(::getpid()) + "\n";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || ::write(fd, pid.data(), pid.size()) != ssize_t(pid.size()) || ::close(fd) != 0) return 1;
  if (::rename(tmp.c_str(), argv[2]) != 0) return 1;
  for (int i = 0; i < 60; ++i) ::sleep(1);
  return 0;
}
