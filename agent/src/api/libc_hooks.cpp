// Interposed libc entry points. Each calls the real function and tells the
// runtime what happened; none records anything of its own.
#include <dlfcn.h>
#include <pthread.h>

#include <cstring>

#include "base/real_libc.hpp"
#include "base/visibility.hpp"
#include "cuda/cuda_hook_support.hpp"
#include "cuda/wrappers.hpp"
#include "record/thread_state.hpp"
#include "runtime/runtime.hpp"

namespace ptprof::agent {
namespace {

using SetnameFn = int (*)(pthread_t, const char*);

// dlopen calls in progress on this thread. A library's constructor may call
// dlopen while the outer dlopen is still initializing libraries (libtorch's
// dependencies among them); the bridge must wait for the outermost to finish.
thread_local int tls_dlopen_depth = 0;

struct DepthGuard {
  DepthGuard() { ++tls_dlopen_depth; }
  ~DepthGuard() { --tls_dlopen_depth; }
};

}  // namespace
}  // namespace ptprof::agent

using namespace ptprof::agent;

// glibc resolves a bare library name against the *caller's* RUNPATH, and
// expands $ORIGIN (any dynamic string token: a '$') to the caller's
// directory; the caller it sees is whoever called the real dlopen. For those
// names we must therefore leave by a tail call, so glibc sees the original
// caller; a load that such a call made is noticed on the next dlopen.
PTPROF_EXPORT void* dlopen(const char* file, int mode) {
  bool outermost = tls_dlopen_depth == 0;
  if (outermost) {
    g_runtime.maybe_load_torch_bridge();
    g_runtime.check_for_cuda();
  }
  DlopenFn real = next_dlopen();
  if (!file || !std::strchr(file, '/') || std::strchr(file, '$')) return real(file, mode);
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

// The CUDA runtime (dynamic or static) loads the driver itself, RTLD_LOCAL,
// and takes cuGetProcAddress from it with dlsym on that handle, which no
// preloaded definition can interpose: this hands out the wrapper instead
// (cuda/cuda_hook_support.hpp). RTLD_NEXT and RTLD_DEFAULT are relative to the
// caller, which glibc finds from the return address: every lookup that is
// not for a hooked CUDA name leaves by a tail call, so glibc sees the
// original caller. A hooked name asked of RTLD_DEFAULT finds the agent's
// export first: it is handed out only where a real definition is loaded.
#if PTPROF_CUDA_HOOKS
PTPROF_EXPORT void* dlsym(void* handle, const char* name) {
  DlsymFn real = next_dlsym();
  if (handle == RTLD_NEXT || name[0] != 'c' || name[1] != 'u') return real(handle, name);
  namespace cuda = ptprof::agent::cuda;
  if (handle == RTLD_DEFAULT) return cuda::default_symbol(name, real(handle, name), cuda::wrapper);
  return cuda::wrap_resolved_symbol(name, real(handle, name), cuda::wrapper);
}
#endif

PTPROF_EXPORT int pthread_setname_np(pthread_t thread, const char* name) {
  static SetnameFn real = reinterpret_cast<SetnameFn>(dlsym(RTLD_NEXT, "pthread_setname_np"));
  int rc = real(thread, name);
  if (rc == 0 && pthread_equal(thread, pthread_self())) {
    if (ThreadState* t = detail::tls_thread) g_runtime.rename_thread(t, name);
  }
  return rc;
}
