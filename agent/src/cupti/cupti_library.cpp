#include "cupti/cupti_library.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstring>
#include <string_view>

#include "base/real_libc.hpp"

namespace ptprof::agent::cupti {

namespace {

std::string_view basename_of(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string dirname_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void add_unique(std::vector<std::string>& v, std::string s) {
  for (const auto& e : v)
    if (e == s) return;
  v.push_back(std::move(s));
}

// The libcupti file names a directory may hold, newest soname first.
void add_dir(std::vector<std::string>& v, const std::string& dir) {
  for (const char* name : {"libcupti.so", "libcupti.so.13", "libcupti.so.12", "libcupti.so.11.8"})
    add_unique(v, dir + "/" + name);
}

}  // namespace

std::vector<std::string> cupti_candidates(const char* env_path, const std::vector<std::string>& loaded) {
  std::vector<std::string> v;
  if (env_path && *env_path) {
    std::string p = env_path;
    if (is_dir(p))
      add_dir(v, p);
    else
      v.push_back(p);
    return v;  // an explicit choice: nothing else is tried
  }
  for (const auto& path : loaded)
    if (starts_with(basename_of(path), "libcupti.so")) add_unique(v, path);
  for (const auto& path : loaded) {
    if (!starts_with(basename_of(path), "libcudart.so")) continue;
    const std::string dir = dirname_of(path);
    add_dir(v, dir);
    // pip: nvidia/cuda_runtime/lib/libcudart.so.12 beside nvidia/cuda_cupti/lib.
    const std::string nvidia = dirname_of(dirname_of(dir));
    add_dir(v, nvidia + "/cuda_cupti/lib");
    add_dir(v, nvidia + "/cu13/lib");
  }
  for (const char* dir : {"/usr/local/cuda/extras/CUPTI/lib64", "/usr/local/cuda/lib64"}) add_dir(v, dir);
  return v;
}

template <class Fn>
static bool resolve(void* handle, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(handle, name));
  return fn != nullptr;
}

Result<Library> open_cupti(const std::vector<std::string>& candidates) {
  std::string why;
  for (const auto& path : candidates) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) continue;
    void* h = real_dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* err = dlerror();
      why += (why.empty() ? "" : "; ") + std::string(err ? err : path.c_str());
      continue;
    }
    Api a;
    bool ok = resolve(h, "cuptiSubscribe", a.subscribe) && resolve(h, "cuptiUnsubscribe", a.unsubscribe) &&
              resolve(h, "cuptiActivityRegisterCallbacks", a.register_callbacks) &&
              resolve(h, "cuptiActivityEnable", a.enable) && resolve(h, "cuptiActivityDisable", a.disable) &&
              resolve(h, "cuptiActivityFlushAll", a.flush_all) &&
              resolve(h, "cuptiActivityGetNextRecord", a.get_next_record) &&
              resolve(h, "cuptiGetTimestamp", a.get_timestamp) &&
              resolve(h, "cuptiActivityPushExternalCorrelationId", a.push_external) &&
              resolve(h, "cuptiActivityPopExternalCorrelationId", a.pop_external) &&
              resolve(h, "cuptiGetCallbackName", a.callback_name) &&
              resolve(h, "cuptiGetResultString", a.result_string);
    if (!ok) {
      why += (why.empty() ? "" : "; ") + path + " lacks a CUPTI entry point";
      continue;  // left loaded: unloading a library the process may share is not ours to do
    }
    // Graph attribution is an extra: a CUPTI without these records the rest.
    (void)resolve(h, "cuptiEnableCallback", a.enable_callback);
    (void)resolve(h, "cuptiGetGraphNodeId", a.graph_node_id);
    (void)resolve(h, "cuptiGetGraphId", a.graph_id);
    (void)resolve(h, "cuptiActivityGetNumDroppedRecords", a.dropped_records);
    return Library{h, path, a};
  }
  return Status::error(why);
}

std::string result_text(const Api& api, CUptiResult r) {
  const char* s = nullptr;
  if (api.result_string && api.result_string(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error " + std::to_string(int(r));
}

}  // namespace ptprof::agent::cupti
