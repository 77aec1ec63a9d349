// The running CPython's C API, found at run time (dlsym on the process's
// global scope), so that the agent never links libpython and stays inert in
// a process without Python. Only the public, stable entry points are used;
// the frame internals differ between 3.9 and 3.13.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>

namespace ptprof::agent {

// Where a thread's frames lie in CPython's own structures (byte offsets), for
// the versions whose layout the agent knows. The calling thread's frames are
// read there with plain loads, without the GIL: torch's bindings release it
// around every op, and taking it back per op costs more than the rest of the
// op's record. The thread is inside a call made by its innermost frame, so
// its frames, and the code objects they hold, stay put while they are read;
// nothing is allocated or reference-counted.
struct FrameLayout {
  size_t thread_cframe;   // PyThreadState.cframe (3.11)
  size_t cframe_frame;    // _PyCFrame.current_frame: the innermost _PyInterpreterFrame
  size_t frame_code;      // _PyInterpreterFrame.f_code
  size_t frame_previous;  // _PyInterpreterFrame.previous: its caller's
  size_t frame_instr;     // _PyInterpreterFrame.prev_instr: where it is in its code
};

// A frame read through a FrameLayout: its code object and the address of its
// current instruction (a position in the code, unique while the code lives).
// Trivial (no member initializers), so that arrays of them cost nothing per op.
struct RawFrame {
  const void* code;
  const void* instr;
};

// The calling thread's frames, innermost first, read through a FrameLayout.
class FrameCursor {
 public:
  FrameCursor(const FrameLayout& layout, const void* thread) : layout_(layout) {
    const void* cframe = load(thread, layout_.thread_cframe);
    frame_ = cframe ? load(cframe, layout_.cframe_frame) : nullptr;
  }
  explicit operator bool() const { return frame_ != nullptr; }
  RawFrame operator*() const { return RawFrame{load(frame_, layout_.frame_code), load(frame_, layout_.frame_instr)}; }
  FrameCursor& operator++() {
    frame_ = load(frame_, layout_.frame_previous);
    return *this;
  }

 private:
  static const void* load(const void* base, size_t offset) {
    const void* p;
    std::memcpy(&p, static_cast<const char*>(base) + offset, sizeof p);
    return p;
  }
  const FrameLayout& layout_;
  const void* frame_;
};

struct PythonApi {
  using Object = void;  // PyObject, PyFrameObject, PyCodeObject, PyThreadState: opaque here

  int (*is_initialized)() = nullptr;                          // Py_IsInitialized
  int (*is_finalizing)() = nullptr;                           // Py_IsFinalizing / _Py_IsFinalizing; may be null
  Object* (*this_thread_state)() = nullptr;                   // PyGILState_GetThisThreadState
  int (*gil_check)() = nullptr;                               // PyGILState_Check
  int (*gil_ensure)() = nullptr;                              // PyGILState_Ensure (PyGILState_STATE is an int enum)
  void (*gil_release)(int) = nullptr;                         // PyGILState_Release
  Object* (*current_frame)() = nullptr;                       // PyEval_GetFrame: borrowed
  Object* (*frame_back)(Object*) = nullptr;                   // PyFrame_GetBack: new reference
  Object* (*frame_code)(Object*) = nullptr;                   // PyFrame_GetCode: new reference
  int (*frame_line)(Object*) = nullptr;                       // PyFrame_GetLineNumber
  int (*frame_lasti)(Object*) = nullptr;                      // PyFrame_GetLasti (3.11+); may be null
  Object* (*get_attr)(Object*, const char*) = nullptr;        // PyObject_GetAttrString: new reference
  const char* (*utf8)(Object*) = nullptr;                     // PyUnicode_AsUTF8
  Object* (*import)(const char*) = nullptr;                   // PyImport_ImportModule
  void (*incref)(Object*) = nullptr;                          // Py_IncRef
  void (*decref)(Object*) = nullptr;                          // Py_DecRef
  void (*err_fetch)(Object**, Object**, Object**) = nullptr;  // PyErr_Fetch
  void (*err_restore)(Object*, Object*, Object*) = nullptr;   // PyErr_Restore
  Object* (*save_thread)() = nullptr;                         // PyEval_SaveThread; may be null
  void (*restore_thread)(Object*) = nullptr;                  // PyEval_RestoreThread; may be null
  const FrameLayout* layout = nullptr;                        // this version's, when known (3.11)

  // The frames of `thread` (the calling thread's state), innermost first, at
  // most `max`, read through `layout` (which must be set) without the GIL.
  uint32_t read_frames(const Object* thread, RawFrame* out, uint32_t max) const {
    uint32_t n = 0;
    for (FrameCursor f(*layout, thread); f && n < max; ++f) out[n++] = *f;
    return n;
  }
};

// Lets the other Python threads run while the calling thread waits on
// something long outside Python (the torch bridge's build: the thread is
// inside `import torch`, holding the GIL, and every other thread would stop
// for the whole build). Released only when the calling thread holds it; taken
// back on destruction. A no-op without Python, or while it finalizes.
class GilReleased {
 public:
  explicit GilReleased(const PythonApi* py) {
    if (!py || !py->save_thread || !py->restore_thread) return;
    if (py->is_finalizing && py->is_finalizing()) return;
    if (py->gil_check() != 1 || !py->this_thread_state()) return;
    api_ = py;
    state_ = py->save_thread();
  }
  ~GilReleased() {
    if (api_) api_->restore_thread(state_);
  }
  GilReleased(const GilReleased&) = delete;
  GilReleased& operator=(const GilReleased&) = delete;

 private:
  const PythonApi* api_ = nullptr;
  PythonApi::Object* state_ = nullptr;
};

// Resolves the API once, the first time a thread asks.
class PythonRuntime {
 public:
  // The API, or null when the process has no CPython 3.9+ (or it is not
  // initialized yet).
  const PythonApi* api() {
    int s = state_.load(std::memory_order_acquire);
    if (s == kReady) [[likely]]
      return api_.is_initialized() ? &api_ : nullptr;
    if (s == kAbsent) return nullptr;
    return resolve();
  }

  // Whether frames may be read through the API's layout: set when the
  // version has one, cleared for good when a walk through the public API
  // disagreed with one through the layout (capture_python_stack checks).
  bool raw_frames() const { return raw_frames_.load(std::memory_order_relaxed); }
  // Whether this call dropped it (the first one to).
  bool distrust_layout() { return raw_frames_.exchange(false, std::memory_order_relaxed); }

  // Whether `filename` is the user's code rather than the library's: not in
  // the interpreter's standard library, site-packages, dist-packages, ptprof's
  // own Python package, nor "<frozen ...>" code. Call with the GIL held (the
  // first call asks the interpreter where the standard library and ptprof
  // are); a Python error it raises is the caller's to drop.
  bool user_file(const char* filename);

 private:
  static constexpr int kUnknown = 0, kReady = 1, kAbsent = 2;
  const PythonApi* resolve();

  std::atomic<int> state_{kUnknown};
  std::atomic<bool> raw_frames_{false};
  std::mutex mu_;
  PythonApi api_;
  // Guarded by the GIL (user_file's callers hold it), not by mu_: a thread
  // holding mu_ while it waits for the GIL would deadlock a fork's handlers.
  bool stdlib_known_ = false;
  std::string stdlib_dir_;  // "/usr/lib/python3.11/"
  std::string ptprof_dir_;  // the directory of ptprof's package, where `ptprof run` put it
  // The directory of module `name`'s file ("" when it cannot be imported).
  std::string module_dir(const char* name);
};

}  // namespace ptprof::agent
