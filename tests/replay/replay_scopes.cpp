// The GPU replay's (issue 54) compiled helper: what replay_driver.py cannot
// do from Python. Built per torch by build_scopes.py, against the headers and
// libraries of the torch under test, so the scopes it opens are that torch's
// own at::RecordFunction -- the torch bridge of ptprof records them exactly as
// it records a real op (RecordScope::FUNCTION for a trace's cpu_op,
// USER_SCOPE for a user_annotation).
//
// ptprof_replay_issue is one of the trace's CUDA runtime/driver calls: first
// the stand-in CUPTI's ptprof_replay_call(correlation) (where real CUPTI's
// API-enter callback would be: it takes the thread's external correlations
// and assigns the call its correlation id), then, for the entry points the
// agent hooks, the entry point itself, looked up with dlsym(RTLD_DEFAULT) so
// that the agent's LD_PRELOADed wrapper sees the call as in a real program.
// Arguments are dummies (the default stream, a 4 KiB per-thread scratch
// buffer, a no-op host function as the kernel, which the test's stand-in
// runtime calls as a host function): the truth -- streams, bytes, times --
// comes from the stand-in's CUPTI records, and results are ignored.
//
// No CUDA header is needed: the few ABI types used are declared here.
#include <ATen/record_function.h>
#include <dlfcn.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "../programs/cuda/stub_function.hpp"

#define REPLAY_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// The CUDA ABI as far as these calls need it (cuda_runtime_api.h, cuda.h).
struct Dim3 {
  unsigned int x, y, z;
};
struct LaunchConfig {  // cudaLaunchConfig_t
  Dim3 grid;
  Dim3 block;
  size_t dynamic_smem;
  void* stream;
  void* attrs;
  unsigned int num_attrs;
};
constexpr int kMemcpyDefault = 4;  // cudaMemcpyDefault
constexpr size_t kScratch = 4096;

using LaunchKernel = int (*)(const void*, Dim3, Dim3, void**, size_t, void*);
using LaunchKernelExC = int (*)(const LaunchConfig*, const void*, void**);
using Memcpy = int (*)(void*, const void*, size_t, int);
using MemcpyAsync = int (*)(void*, const void*, size_t, int, void*);
using Memset = int (*)(void*, int, size_t);
using MemsetAsync = int (*)(void*, int, size_t, void*);
using StreamSync = int (*)(void*);
using DeviceSync = int (*)();
using EventSync = int (*)(void*);
using StreamWaitEvent = int (*)(void*, void*, unsigned int);
using CuLaunchKernel = int (*)(void*, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                               unsigned int, unsigned int, void*, void**, void**);

enum class Shape {
  LaunchKernel,
  LaunchKernelExC,
  Memcpy,
  MemcpyAsync,
  Memset,
  MemsetAsync,
  StreamSync,
  DeviceSync,
  EventSync,
  StreamWaitEvent,
  CuLaunchKernel
};

struct EntryPoint {
  const char* name;
  Shape shape;
  void* fn;  // resolved once, by resolve()
};

// The hooked entry points the replay issues, and their per-thread-stream
// exports (a trace names those as such).
EntryPoint g_entry_points[] = {
    {"cudaLaunchKernel", Shape::LaunchKernel, nullptr},
    {"cudaLaunchKernel_ptsz", Shape::LaunchKernel, nullptr},
    {"cudaLaunchKernelExC", Shape::LaunchKernelExC, nullptr},
    {"cudaLaunchKernelExC_ptsz", Shape::LaunchKernelExC, nullptr},
    {"cudaMemcpy", Shape::Memcpy, nullptr},
    {"cudaMemcpy_ptds", Shape::Memcpy, nullptr},
    {"cudaMemcpyAsync", Shape::MemcpyAsync, nullptr},
    {"cudaMemcpyAsync_ptsz", Shape::MemcpyAsync, nullptr},
    {"cudaMemset", Shape::Memset, nullptr},
    {"cudaMemset_ptds", Shape::Memset, nullptr},
    {"cudaMemsetAsync", Shape::MemsetAsync, nullptr},
    {"cudaMemsetAsync_ptsz", Shape::MemsetAsync, nullptr},
    {"cudaStreamSynchronize", Shape::StreamSync, nullptr},
    {"cudaStreamSynchronize_ptsz", Shape::StreamSync, nullptr},
    {"cudaDeviceSynchronize", Shape::DeviceSync, nullptr},
    {"cudaEventSynchronize", Shape::EventSync, nullptr},
    {"cudaStreamWaitEvent", Shape::StreamWaitEvent, nullptr},
    {"cudaStreamWaitEvent_ptsz", Shape::StreamWaitEvent, nullptr},
    {"cuLaunchKernel", Shape::CuLaunchKernel, nullptr},
    {"cuLaunchKernel_ptsz", Shape::CuLaunchKernel, nullptr},
};

using ReplayCall = int (*)(uint32_t);

std::once_flag g_resolved;
ReplayCall g_replay_call = nullptr;
std::atomic<uint64_t> g_entry_calls{0};

// Once, at the first call: the driver has loaded the runtime and the stand-in
// CUPTI by then. NOLOAD: the stand-in is the copy the agent loaded (or the
// driver did), never a second one.
void resolve() {
  const char* path = std::getenv("PTPROF_CUPTI_PATH");
  if (path && *path) {
    if (void* h = dlopen(path, RTLD_NOW | RTLD_NOLOAD))
      g_replay_call = reinterpret_cast<ReplayCall>(dlsym(h, "ptprof_replay_call"));
  }
  for (EntryPoint& e : g_entry_points) e.fn = dlsym(RTLD_DEFAULT, e.name);
}

const EntryPoint* find_entry_point(const char* name) {
  for (const EntryPoint& e : g_entry_points)
    if (std::strcmp(e.name, name) == 0) return &e;
  return nullptr;
}

}  // namespace

// The "kernel" every launch runs: the stand-in runtime and driver call it as a
// host function with the argument array. Exported, so cudaFuncGetName's
// stand-in (dladdr) can name it.
REPLAY_EXPORT void ptprof_replay_noop_kernel(void**) {}

namespace {

// What the stand-in driver takes a CUfunction to point to.
const StubFunction kNoopFunction{"ptprof_replay_noop_kernel", &ptprof_replay_noop_kernel};

void call_entry_point(const EntryPoint& e) {
  alignas(256) static thread_local unsigned char src[kScratch];
  alignas(256) static thread_local unsigned char dst[kScratch];
  void* stream = nullptr;  // the default stream
  void* event = nullptr;
  void* args[1] = {nullptr};
  const Dim3 one{1, 1, 1};
  switch (e.shape) {
    case Shape::LaunchKernel:
      reinterpret_cast<LaunchKernel>(e.fn)(reinterpret_cast<const void*>(&ptprof_replay_noop_kernel), one, one, args, 0,
                                           stream);
      break;
    case Shape::LaunchKernelExC: {
      const LaunchConfig config{one, one, 0, stream, nullptr, 0};
      reinterpret_cast<LaunchKernelExC>(e.fn)(&config, reinterpret_cast<const void*>(&ptprof_replay_noop_kernel), args);
      break;
    }
    case Shape::Memcpy:
      reinterpret_cast<Memcpy>(e.fn)(dst, src, kScratch, kMemcpyDefault);
      break;
    case Shape::MemcpyAsync:
      reinterpret_cast<MemcpyAsync>(e.fn)(dst, src, kScratch, kMemcpyDefault, stream);
      break;
    case Shape::Memset:
      reinterpret_cast<Memset>(e.fn)(dst, 0, kScratch);
      break;
    case Shape::MemsetAsync:
      reinterpret_cast<MemsetAsync>(e.fn)(dst, 0, kScratch, stream);
      break;
    case Shape::StreamSync:
      reinterpret_cast<StreamSync>(e.fn)(stream);
      break;
    case Shape::DeviceSync:
      reinterpret_cast<DeviceSync>(e.fn)();
      break;
    case Shape::EventSync:
      reinterpret_cast<EventSync>(e.fn)(event);
      break;
    case Shape::StreamWaitEvent:
      reinterpret_cast<StreamWaitEvent>(e.fn)(stream, event, 0);
      break;
    case Shape::CuLaunchKernel:
      reinterpret_cast<CuLaunchKernel>(e.fn)(const_cast<StubFunction*>(&kNoopFunction), 1, 1, 1, 1, 1, 1, 0, stream,
                                             args, nullptr);
      break;
  }
  g_entry_calls.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

// A RecordFunction scope named `name`, open until ptprof_replay_close on the
// same thread. On the heap: it outlives this call, as a Python `with` block's.
REPLAY_EXPORT void* ptprof_replay_open(const char* name, int user_annotation) {
  auto* rf = new at::RecordFunction(user_annotation ? at::RecordScope::USER_SCOPE : at::RecordScope::FUNCTION);
  if (rf->isActive()) rf->before(std::string(name ? name : ""));
  return rf;
}

// Ends the scope (its end callbacks run here) and frees it.
REPLAY_EXPORT void ptprof_replay_close(void* scope) { delete static_cast<at::RecordFunction*>(scope); }

// Looks up the stand-in CUPTI and the entry points now rather than at the
// first call: the first dlopen/dlsym can be slow (the agent watches dlopen),
// and the driver calls this before time 0 of the plan.
REPLAY_EXPORT void ptprof_replay_prepare(void) { std::call_once(g_resolved, resolve); }

// One of the trace's runtime/driver calls, on the calling thread, now.
// Returns the stand-in CUPTI's answer (0 known correlation, -1 unknown), or -2
// when no stand-in CUPTI with ptprof_replay_call is loaded (the hooked entry
// point is called all the same).
REPLAY_EXPORT int ptprof_replay_issue(uint32_t correlation, const char* api_name) {
  std::call_once(g_resolved, resolve);
  const int rc = g_replay_call ? g_replay_call(correlation) : -2;
  if (api_name) {
    const EntryPoint* e = find_entry_point(api_name);
    if (e && e->fn) call_entry_point(*e);
  }
  return rc;
}

// How many hooked entry points ptprof_replay_issue has called (the driver's
// summary; 0 where no runtime defines them).
REPLAY_EXPORT uint64_t ptprof_replay_entry_calls(void) { return g_entry_calls.load(std::memory_order_relaxed); }
