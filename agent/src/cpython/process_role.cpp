#include "cpython/process_role.hpp"

#include <dlfcn.h>

#include <cstring>

#include "cpython/python_api.hpp"

namespace ptprof::agent {
namespace {

constexpr int kMaxFrames = 64;  // deeper than any fork the roles know

bool ends_with(const char* s, const char* suffix) {
  const size_t n = std::strlen(s), m = std::strlen(suffix);
  return n >= m && std::strcmp(s + n - m, suffix) == 0;
}

// The int local `name` of `frame`, or -1 (f_locals is a dict snapshot).
int32_t int_local(const PythonApi& py, PythonApi::Object* frame, const char* name) {
  using Object = PythonApi::Object;
  static auto* get_item =
      reinterpret_cast<Object* (*)(Object*, const char*)>(::dlsym(RTLD_DEFAULT, "PyDict_GetItemString"));
  static auto* as_long = reinterpret_cast<long (*)(Object*)>(::dlsym(RTLD_DEFAULT, "PyLong_AsLong"));
  if (!get_item || !as_long) return -1;
  Object* locals = py.get_attr(frame, "f_locals");
  if (!locals) return -1;
  long v = -1;
  if (Object* item = get_item(locals, name)) v = as_long(item);  // borrowed
  py.decref(locals);
  return v >= 0 && v <= INT32_MAX ? int32_t(v) : -1;
}

// What the code object `code` is: the role of a child forked under it.
wire::ProcessRole role_of_code(const PythonApi& py, PythonApi::Object* code) {
  wire::ProcessRole role = wire::ProcessRole::Unknown;
  PythonApi::Object* file = py.get_attr(code, "co_filename");
  PythonApi::Object* name = py.get_attr(code, "co_name");
  const char* f = file ? py.utf8(file) : nullptr;
  const char* n = name ? py.utf8(name) : nullptr;
  if (f && n) {
    if (ends_with(f, "torch/utils/data/dataloader.py") && std::strcmp(n, "__init__") == 0)
      role = wire::ProcessRole::DataLoaderWorker;
    else if (std::strstr(f, "torch/_inductor/"))
      role = wire::ProcessRole::CompileWorker;
  }
  if (file) py.decref(file);
  if (name) py.decref(name);
  return role;
}

}  // namespace

ProcessRoleInfo role_of_fork_child(PythonRuntime& python) {
  ProcessRoleInfo info;
  const PythonApi* py = python.api();
  if (!py || !py->gil_check() || (py->is_finalizing && py->is_finalizing())) return info;
  using Object = PythonApi::Object;
  Object *type = nullptr, *value = nullptr, *tb = nullptr;
  py->err_fetch(&type, &value, &tb);    // what the program's error state was stays
  Object* frame = py->current_frame();  // borrowed
  if (frame) py->incref(frame);
  for (int depth = 0; frame && depth < kMaxFrames && info.role == wire::ProcessRole::Unknown; ++depth) {
    if (Object* code = py->frame_code(frame)) {
      info.role = role_of_code(*py, code);
      py->decref(code);
    }
    if (info.role == wire::ProcessRole::DataLoaderWorker) info.index = int_local(*py, frame, "i");
    Object* back = py->frame_back(frame);
    py->decref(frame);
    frame = back;
  }
  if (frame) py->decref(frame);
  py->err_restore(type, value, tb);
  return info;
}

ProcessRoleInfo role_at_registration(const char* cmdline, ProcessRoleInfo from_fork) {
  if (std::strstr(cmdline, "compile_worker")) return {wire::ProcessRole::CompileWorker, -1};
  return from_fork;
}

}  // namespace ptprof::agent
