#include "agent_thread.hpp"

#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <csignal>
#include <ctime>

namespace ptprof::agent {

bool start_agent_thread(void* (*fn)(void*), void* arg, const char* name, int* error) {
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64u << 10);
  pthread_t thread;
  const int rc = pthread_create(&thread, &attr, fn, arg);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    *error = rc;
    return false;
  }
  pthread_setname_np(thread, name);
  return true;
}

void futex_wait_shared(const void* word, uint32_t expected, uint64_t timeout_ns) {
  constexpr uint64_t kNsPerSecond = 1'000'000'000ull;
  timespec ts{};
  ts.tv_sec = time_t(timeout_ns / kNsPerSecond);
  ts.tv_nsec = long(timeout_ns % kNsPerSecond);
  ::syscall(SYS_futex, word, FUTEX_WAIT, expected, timeout_ns ? &ts : nullptr, nullptr, 0);
}

void futex_wake_shared(void* word) { ::syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0); }

}  // namespace ptprof::agent
