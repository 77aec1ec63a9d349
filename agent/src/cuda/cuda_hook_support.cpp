#include "cuda/cuda_hook_support.hpp"

#include <dlfcn.h>
#include <link.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "base/real_libc.hpp"
#include "record/thread_state.hpp"
#include "runtime/runtime.hpp"

namespace ptprof::agent::cuda {

constinit thread_local uint32_t tls_call_depth = 0;
constinit thread_local uint64_t tls_correlation_id = 0;

namespace {

constexpr std::array<HookEntry, kHookCount> kHooks = {{
#define PTPROF_RUNTIME_ENTRY(id, api) {#id, api, wire::CudaApiFamily::Runtime},
#define PTPROF_DRIVER_ENTRY(id, api) {#id, api, wire::CudaApiFamily::Driver},
    PTPROF_CUDA_RUNTIME_HOOKS(PTPROF_RUNTIME_ENTRY) PTPROF_CUDA_DRIVER_HOOKS(PTPROF_DRIVER_ENTRY)
#undef PTPROF_RUNTIME_ENTRY
#undef PTPROF_DRIVER_ENTRY
}};

// The resolved real functions, one per entry; null until looked up, absent()
// when no loaded library had it. A cache of what the dynamic linker knows
// (like the function-local statics of base/real_libc.cpp), filled once per entry; a
// miss holds only until another object is loaded (the runtime may come
// later), and until then cuGetProcAddress, which asks about each name again
// and again, does not walk the loaded objects each time.
std::array<std::atomic<void*>, kHookCount>& real_slots() {
  static std::array<std::atomic<void*>, kHookCount> slots{};
  return slots;
}

// Per entry: how many objects had been loaded when its lookup missed.
std::array<std::atomic<uint64_t>, kHookCount>& miss_generations() {
  static std::array<std::atomic<uint64_t>, kHookCount> generations{};
  return generations;
}

void* absent() {
  static const char kMarker = 0;
  return const_cast<char*>(&kMarker);
}

// How many objects the process has loaded so far (dlpi_adds): a load since a
// miss makes the lookup worth doing again.
uint64_t loaded_objects_generation() {
  uint64_t adds = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* out) {
        if (size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds)
          *static_cast<uint64_t*>(out) = info->dlpi_adds;
        return 1;  // the first object says it
      },
      &adds);
  return adds;
}

// Sonames under which the libraries are found when they were loaded
// RTLD_LOCAL (RTLD_NEXT does not see those).
constexpr const char* kDriverSonames[] = {"libcuda.so.1", "libcuda.so"};
constexpr const char* kRuntimeSonames[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"};

void* find_in_loaded(const char* soname, const char* symbol, void* self) {
  void* h = real_dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return nullptr;
  void* p = real_dlsym(h, symbol);
  dlclose(h);
  return p == self ? nullptr : p;
}

// Every loaded object but the agent, by path: the last resort for a library
// loaded RTLD_LOCAL under a name we do not know.
void* find_in_any_object(const char* symbol, void* self) {
  std::vector<std::string> paths;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name && info->dlpi_name[0] == '/')
          static_cast<std::vector<std::string>*>(out)->emplace_back(info->dlpi_name);
        return 0;
      },
      &paths);
  Dl_info self_info{};
  dladdr(self, &self_info);
  for (const std::string& path : paths) {
    if (self_info.dli_fname && path == self_info.dli_fname) continue;
    if (void* p = find_in_loaded(path.c_str(), symbol, self)) return p;
  }
  return nullptr;
}

void* lookup(const char* symbol, wire::CudaApiFamily family, void* self) {
  const bool driver = family == wire::CudaApiFamily::Driver;
  // The driver first by soname: there is one driver per process, and the
  // runtime loads it RTLD_LOCAL.
  if (driver)
    for (const char* soname : kDriverSonames)
      if (void* p = find_in_loaded(soname, symbol, self)) return p;
  if (void* p = real_dlsym(RTLD_NEXT, symbol); p && p != self) return p;
  if (!driver)
    for (const char* soname : kRuntimeSonames)
      if (void* p = find_in_loaded(soname, symbol, self)) return p;
  return find_in_any_object(symbol, self);
}

}  // namespace

const HookEntry& hook_entry(HookId id) { return kHooks[size_t(id)]; }

const HookEntry* find_hook(const char* symbol, HookId* id) {
  for (size_t i = 0; i < kHooks.size(); ++i) {
    if (std::strcmp(kHooks[i].symbol, symbol) == 0) {
      *id = HookId(i);
      return &kHooks[i];
    }
  }
  return nullptr;
}

void* real_function(HookId id, WrapperOf wrappers) {
  std::atomic<void*>& slot = real_slots()[size_t(id)];
  void* p = slot.load(std::memory_order_acquire);
  if (p && p != absent()) [[likely]]
    return p;
  std::atomic<uint64_t>& missed_at = miss_generations()[size_t(id)];
  const uint64_t generation = loaded_objects_generation();
  if (p == absent() && missed_at.load(std::memory_order_relaxed) == generation) return nullptr;
  CallGuard guard;  // the lookups may run library code that calls CUDA
  void* found = lookup(hook_entry(id).symbol, hook_entry(id).family, wrappers(id));
  if (!found) missed_at.store(generation, std::memory_order_relaxed);
  // The first definition found is the one every call forwards to.
  void* expected = p;
  while (!slot.compare_exchange_weak(expected, found ? found : absent(), std::memory_order_acq_rel)) {
    if (expected && expected != absent()) return expected;
    if (!found) return nullptr;
  }
  return found;
}

void* find_function(const char* symbol, wire::CudaApiFamily family) {
  CallGuard guard;
  return lookup(symbol, family, nullptr);
}

void* wrap_resolved_symbol(const char* symbol, void* found, WrapperOf wrappers) {
  HookId id{};
  if (!found || !find_hook(symbol, &id)) return found;
  void* w = wrappers(id);
  if (found == w) return found;
  // The wrapper forwards to the definition the program's own calls reach
  // (real_function). Another copy of the library (a plugin's own runtime,
  // loaded RTLD_LOCAL) keeps its function, unwrapped: its calls stay its
  // own, and the program's are not sent to it.
  return real_function(id, wrappers) == found ? w : found;
}

void* default_symbol(const char* symbol, void* found, WrapperOf wrappers) {
  HookId id{};
  if (!found || !find_hook(symbol, &id) || found != wrappers(id)) return found;
  // The agent's export, found first: what the caller finds without ptprof
  // is the real definition, or nothing when no loaded library has one.
  return real_function(id, wrappers) ? found : nullptr;
}

namespace {

bool per_thread_stream(const char* symbol) {
  return std::strstr(symbol, "_ptsz") != nullptr || std::strstr(symbol, "_ptds") != nullptr;
}

// Whether cuGetProcAddress(api, version, flags) selects the export of entry
// `i`: the per-thread-stream flag picks the _ptsz export where there is one;
// a version before CUDA 3.2 picks the 32-bit forms that _v2 replaced; CUDA 12
// turned cuGetProcAddress into cuGetProcAddress_v2.
bool selects(size_t i, int version, uint64_t flags) {
  const HookEntry& e = kHooks[i];
  bool has_per_thread_form = false;
  for (const HookEntry& other : kHooks)
    has_per_thread_form |= std::strcmp(other.api, e.api) == 0 && per_thread_stream(other.symbol);
  const bool want_per_thread = (flags & 2u) != 0;  // CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
  if (has_per_thread_form && per_thread_stream(e.symbol) != want_per_thread) return false;
  if (std::strcmp(e.api, "cuGetProcAddress") == 0)
    return (std::strcmp(e.symbol, "cuGetProcAddress_v2") == 0) == (version >= 12000);
  if (std::strstr(e.symbol, "_v2") != nullptr) return version >= 3020;
  return true;
}

}  // namespace

void* wrap_proc_address(const char* api, void* found, int version, uint64_t flags, WrapperOf wrappers) {
  if (!found || !api) return found;
  // Which versioned export `found` is (cuMemAlloc may be cuMemAlloc_v2, or
  // cuMemAlloc of CUDA 3.1 for an old cudaVersion; the per-thread flag gives
  // the _ptsz one): an exact match first.
  std::optional<size_t> by_abi;
  for (size_t i = 0; i < kHooks.size(); ++i) {
    if (std::strcmp(kHooks[i].api, api) != 0) continue;
    const HookId id = HookId(i);
    if (real_function(id, wrappers) == found) return wrappers(id);
    if (selects(i, version, flags)) by_abi = i;
  }
  // Not an export: an internal entry point of the driver. The export the
  // query selects does the same, through the driver's public door.
  if (by_abi && real_function(HookId(*by_abi), wrappers)) return wrappers(HookId(*by_abi));
  return found;
}

ApiCall::ApiCall(HookId id) : id_(id) {
  if (!g_runtime.active()) [[likely]]
    return;
  entered_ = true;
  outermost_ = tls_call_depth++ == 0;
  // PTPROF_ACTIVITIES without cuda: the calls pass through unrecorded.
  if (!outermost_ || !g_runtime.recording() || !g_runtime.config().activities.cuda) return;
  tls_correlation_id = 0;
  thread_ = thread_state();
  if (!thread_) return;
  args_ = wire::CudaApiPayload{};
  start_ = thread_->now();
}

uint32_t ApiCall::intern(const char* name) { return thread_ && name ? thread_->intern(name) : 0; }

namespace {

// The calling thread's current device, asked of the library the call went
// to (neither entry point is hooked, and a call in progress records nothing
// nested); -1 when it cannot say.
int32_t current_device(wire::CudaApiFamily family) {
  using RuntimeGet = int (*)(int*);
  using DriverGet = int (*)(int*);  // cuCtxGetDevice(CUdevice*): CUdevice is an int
  static auto runtime_get = reinterpret_cast<RuntimeGet>(find_function("cudaGetDevice", wire::CudaApiFamily::Runtime));
  static auto driver_get = reinterpret_cast<DriverGet>(find_function("cuCtxGetDevice", wire::CudaApiFamily::Driver));
  int device = -1;
  const auto get = family == wire::CudaApiFamily::Runtime ? runtime_get : driver_get;
  if (!get || get(&device) != 0) return -1;
  return device;
}

}  // namespace

void ApiCall::segment(uint64_t ptr, int64_t bytes, wire::MemorySource source, int32_t device) {
  if (!outermost_ || ptr == 0 || !g_runtime.profile_memory()) return;
  ThreadState* t = thread_ ? thread_ : thread_state();
  if (!t) return;
  wire::MemoryEventPayload p{};
  p.ptr = ptr;
  p.bytes = bytes;
  p.device_type = 1;  // c10::DeviceType::CUDA
  if (bytes > 0 && device < 0) device = current_device(hook_entry(id_).family);
  p.device_index = int8_t(device >= 0 && device <= INT8_MAX ? device : -1);
  p.source = uint8_t(source);
  // At the call's end, so that the call's own interval holds it.
  const uint64_t ts = thread_ && args_.end_ts ? args_.end_ts : t->now();
  (void)t->emit(wire::RecordType::MemoryEvent, 0, ts, p);
}

void ApiCall::finish(int32_t result) {
  if (!thread_) return;
  wire::CudaApiPayload& p = args_;
  p.end_ts = thread_->now();
  p.result = result;
  p.family = uint8_t(hook_entry(id_).family);
  p.correlation_id = tls_correlation_id;
  tls_correlation_id = 0;
  (void)thread_->emit(wire::RecordType::CudaApi, thread_->intern(hook_entry(id_).symbol), start_, p);
}

}  // namespace ptprof::agent::cuda
