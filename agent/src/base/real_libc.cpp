#include "base/real_libc.hpp"

#include <dlfcn.h>

#include <atomic>

namespace ptprof::agent {

DlopenFn next_dlopen() {
  static DlopenFn fn = reinterpret_cast<DlopenFn>(dlsym(RTLD_NEXT, "dlopen"));
  return fn;
}

// Found with dlvsym, which the agent does not interpose. glibc 2.34 moved
// dlsym into libc under a new version; older ones have only GLIBC_2.2.5.
// No function-local static: its guard (__cxa_guard_*) is intercepted by
// sanitizer runtimes, which call dlsym while they start, before they can take
// it. A relaxed atomic suffices: every thread that races finds the same value.
DlsymFn next_dlsym() {
  static std::atomic<DlsymFn> cached{nullptr};  // constant-initialised: no guard
  DlsymFn fn = cached.load(std::memory_order_relaxed);
  if (fn) return fn;
  void* p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  fn = reinterpret_cast<DlsymFn>(p);
  cached.store(fn, std::memory_order_relaxed);
  return fn;
}

}  // namespace ptprof::agent
