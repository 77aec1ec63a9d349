// The in-target Python bootstrap's view of the windows (docs/bootstrap.md).
//
// torch's Python code emits some scopes only while its own profiler is on:
// it reads the module global torch.autograd.profiler._is_profiler_enabled
// (compiled graphs' "## Call CompiledFxGraph ... ##", "Pregraph bytecode",
// Dynamo's compile-time "(dynamo_timed)" scopes...). The bootstrap
// (python/ptprof/_boot.py) registers a callback here that sets that
// flag; the agent tells it when a window starts or stops recording, so the
// flag is on exactly while ptprof records and costs nothing outside windows.
//
// The callback runs Python, so it is never called from the thread that moved
// the window (it may hold step_mu_, a torch lock, or no GIL): the change is
// queued with Py_AddPendingCall, which any thread may call, and the
// interpreter's main thread runs it at its next bytecode boundary with the
// GIL held. Only the latest state is delivered: a burst of changes costs one
// call.
#pragma once
#include <atomic>

namespace ptprof::agent {

class PythonWindowFlag {
 public:
  using Callback = void (*)(int recording);
  using AddPendingCall = int (*)(int (*)(void*), void*);

  // The bootstrap's callback (a ctypes function, kept alive by the
  // bootstrap), with CPython's Py_AddPendingCall. The caller applies the
  // current state itself (it holds the GIL and is Python).
  void install(Callback fn, AddPendingCall add_pending) {
    add_pending_ = add_pending;
    fn_.store(fn, std::memory_order_release);
  }
  // A window started or stopped recording: any thread.
  void recording_changed(bool recording);

 private:
  static int deliver(void* self);  // a pending call: the main thread, GIL held

  std::atomic<Callback> fn_{nullptr};
  AddPendingCall add_pending_ = nullptr;  // set before fn_ (release/acquire)
  std::atomic<int> wanted_{0};
  std::atomic<bool> queued_{false};
  int delivered_ = -1;  // touched by deliver only (the main thread)
};

}  // namespace ptprof::agent
