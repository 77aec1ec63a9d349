#include "base/agent_thread.hpp"

#include <pthread.h>

#include <csignal>

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

}  // namespace ptprof::agent
