// Starts a daemonised child (its own session, the parent does not wait for
// it) that records "daemon.first", sleeps SECONDS, records "daemon.last" and
// exits; the parent exits at once: a descendant that outlives the target.
//   daemon_child <seconds>
#include <unistd.h>

#include <cstdlib>

#include "ptprof.h"

int main(int argc, char** argv) {
  const unsigned seconds = argc > 1 ? unsigned(std::atoi(argv[1])) : 4;
  ptprof_mark("parent");
  pid_t pid = ::fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    ::setsid();
    ptprof_mark("daemon.first");
    ::sleep(seconds);
    ptprof_mark("daemon.last");
    ::_exit(0);
  }
  return 0;
}
