// A program that moves into a mount namespace of its own with a fresh
// /dev/shm (as a sandbox may) after it has recorded, then records from a new
// thread. The session's name is not in that /dev/shm: the agent took that
// for a dead launcher ("the launcher ... is gone") and the thread's marks
// were lost. Needs CAP_SYS_ADMIN: exits 77 (skipped) without it.
#include <sched.h>
#include <sys/mount.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "ptprof.h"

int main() {
  ptprof_mark("own-shm.before");
  if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      ::mount("tmpfs", "/dev/shm", "tmpfs", 0, nullptr) != 0) {
    std::printf("cannot make a /dev/shm of its own: %s\n", std::strerror(errno));
    return 77;
  }
  std::thread t([] {
    for (int i = 0; i < 10; ++i) ptprof_mark("own-shm.thread");
  });
  t.join();
  ptprof_mark("own-shm.after");
  std::printf("done\n");
  return 0;
}
