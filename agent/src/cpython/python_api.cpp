#include "cpython/python_api.hpp"

#include <dlfcn.h>

#include <cstring>
#include <string_view>

#include "base/log.hpp"

namespace ptprof::agent {
namespace {

template <class Fn>
bool find(Fn*& out, const char* name) {
  out = reinterpret_cast<Fn*>(::dlsym(RTLD_DEFAULT, name));
  return out != nullptr;
}

// CPython 3.11 on 64-bit (Include/cpython/pystate.h,
// Include/internal/pycore_frame.h; fixed within 3.11.x). Other versions lay
// these structures out differently and walk through the public API.
constexpr FrameLayout kLayout311{56, 8, 32, 48, 56};

}  // namespace

const PythonApi* PythonRuntime::resolve() {
  std::lock_guard lock(mu_);
  int s = state_.load(std::memory_order_acquire);
  if (s == kUnknown) {
    PythonApi a;
    // PyFrame_GetBack and PyFrame_GetCode came with 3.9: an older Python,
    // or a process without one, has no stacks.
    bool ok = find(a.is_initialized, "Py_IsInitialized") &&
              find(a.this_thread_state, "PyGILState_GetThisThreadState") && find(a.gil_check, "PyGILState_Check") &&
              find(a.gil_ensure, "PyGILState_Ensure") && find(a.gil_release, "PyGILState_Release") &&
              find(a.current_frame, "PyEval_GetFrame") && find(a.frame_back, "PyFrame_GetBack") &&
              find(a.frame_code, "PyFrame_GetCode") && find(a.frame_line, "PyFrame_GetLineNumber") &&
              find(a.get_attr, "PyObject_GetAttrString") && find(a.utf8, "PyUnicode_AsUTF8") &&
              find(a.import, "PyImport_ImportModule") && find(a.incref, "Py_IncRef") && find(a.decref, "Py_DecRef") &&
              find(a.err_fetch, "PyErr_Fetch") && find(a.err_restore, "PyErr_Restore");
    if (ok) {
      if (!find(a.is_finalizing, "Py_IsFinalizing")) find(a.is_finalizing, "_Py_IsFinalizing");
      find(a.frame_lasti, "PyFrame_GetLasti");
      if (!find(a.save_thread, "PyEval_SaveThread") || !find(a.restore_thread, "PyEval_RestoreThread"))
        a.save_thread = nullptr;
      const char* (*version)() = nullptr;
      const char* v = find(version, "Py_GetVersion") ? version() : "";
      if (std::strncmp(v, "3.11.", 5) == 0) a.layout = &kLayout311;
      // Once per process: which way stacks are read (gpu-check reports it).
      log(Level::Info, "python %.*s: frames read %s", int(std::strcspn(v, " ")), v,
          a.layout ? "through CPython 3.11's layout, without the GIL" : "through the public C API, with the GIL");
      api_ = a;
      raw_frames_.store(a.layout != nullptr, std::memory_order_relaxed);
    }
    s = ok ? kReady : kAbsent;
    state_.store(s, std::memory_order_release);
  }
  return s == kReady && api_.is_initialized() ? &api_ : nullptr;
}

bool PythonRuntime::user_file(const char* filename) {
  std::string_view f(filename);
  if (f.empty() || f.front() == '<') return false;
  if (f.find("/site-packages/") != std::string_view::npos || f.find("/dist-packages/") != std::string_view::npos)
    return false;
  if (!stdlib_known_) {
    stdlib_known_ = true;
    // The directory of the os module is the standard library's; ptprof's own
    // Python (the bootstrap's wrappers around the optimizer's step and the
    // DataLoader, ptprof.range as a decorator) is not the user's either.
    stdlib_dir_ = module_dir("os");
    ptprof_dir_ = module_dir("ptprof");
  }
  const auto in = [f](const std::string& dir) { return !dir.empty() && f.starts_with(dir); };
  return !in(stdlib_dir_) && !in(ptprof_dir_);
}

std::string PythonRuntime::module_dir(const char* name) {
  std::string dir;
  if (PythonApi::Object* module = api_.import(name)) {
    if (PythonApi::Object* file = api_.get_attr(module, "__file__")) {
      if (const char* path = api_.utf8(file)) {
        std::string_view p(path);
        if (size_t slash = p.rfind('/'); slash != std::string_view::npos) dir = p.substr(0, slash + 1);
      }
      api_.decref(file);
    }
    api_.decref(module);
  }
  return dir;
}

}  // namespace ptprof::agent
