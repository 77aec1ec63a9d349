// Interposed libc entry points. Each calls the real function and tells the
// runtime what happened; none records anything of its own.
#include <dlfcn.h>
#include <pthread.h>

#include <cstring>

#include "export.hpp"
#include "thread_state.hpp"

namespace ptprof::agent {
namespace {

using DlopenFn = void* (*)(const char*, int);
using SetnameFn = int (*)(pthread_t, const char*);

// dlopen calls in progress on this thread. A library's constructor may call
// dlopen while the outer dlopen is still initializing libraries (libtorch's
// dependencies among them); the bridge must wait for the outermost to finish.
thread_local int tls_dlopen_depth = 0;

struct DepthGuard {
  DepthGuard() { ++tls_dlopen_depth; }
  ~DepthGuard() { --tls_dlopen_depth; }
};

DlopenFn next_dlopen() {
  static DlopenFn fn = reinterpret_cast<DlopenFn>(dlsym(RTLD_NEXT, "dlopen"));
  return fn;
}

}  // namespace

void* real_dlopen(const char* file, int mode) { return next_dlopen()(file, mode); }

}  // namespace ptprof::agent

using namespace ptprof::agent;

// glibc resolves a bare library name against the *caller's* RUNPATH, and the
// caller it sees is whoever called the real dlopen. For bare names we must
// therefore leave by a tail call, so glibc sees the original caller; a load
// that such a call made is noticed on the next dlopen.
PTPROF_EXPORT void* dlopen(const char* file, int mode) {
  bool outermost = tls_dlopen_depth == 0;
  if (outermost) {
    g_runtime.maybe_load_torch_bridge();
    g_runtime.check_for_cuda();
  }
  DlopenFn real = next_dlopen();
  if (!file || !std::strchr(file, '/')) return real(file, mode);
  void* handle;
  {
    DepthGuard guard;
    handle = real(file, mode);
  }
  if (handle && outermost) {
    g_runtime.maybe_load_torch_bridge();
    g_runtime.check_for_cuda();
  }
  return handle;
}

PTPROF_EXPORT int pthread_setname_np(pthread_t thread, const char* name) {
  static SetnameFn real = reinterpret_cast<SetnameFn>(dlsym(RTLD_NEXT, "pthread_setname_np"));
  int rc = real(thread, name);
  if (rc == 0 && pthread_equal(thread, pthread_self())) {
    if (ThreadState* t = detail::tls_thread) g_runtime.rename_thread(t, name);
  }
  return rc;
}
