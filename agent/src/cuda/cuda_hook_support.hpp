// What every CUDA runtime and driver wrapper shares: the table of hooked
// entry points (each with its real function, found on first use), the
// per-thread depth guard that makes a call record once however many wrapped
// layers it passes through, and the recording of one call.
//
// How the real functions are found: a wrapper exported from the preloaded
// agent is what the target's references bind to, so the real function is
// the next definition (RTLD_NEXT) or, when the library was loaded
// RTLD_LOCAL (pip's torch loads its CUDA libraries so), the definition in a
// loaded library found by soname or by walking the loaded objects. A static
// runtime (libcudart_static inside another library) never calls an exported
// runtime symbol, but it reaches the driver through dlopen + dlsym of
// cuGetProcAddress and then through the pointers cuGetProcAddress returns:
// the dlsym hook (api/libc_hooks.cpp) and the cuGetProcAddress wrappers hand out the
// driver wrappers there, so its driver calls are seen.
#pragma once
#include <atomic>
#include <cstdint>

#include "ptprof/record.hpp"

namespace ptprof::agent {
struct ThreadState;
}

namespace ptprof::agent::cuda {

// Every hooked entry point: X(id, api). `id` is the exported symbol (and the
// wrapper's name); `api` the name cuGetProcAddress is asked for, which maps
// to it in some driver version or with some flag (per-thread default stream).
#define PTPROF_CUDA_RUNTIME_HOOKS(X)                     \
  X(cudaMalloc, "cudaMalloc")                            \
  X(cudaFree, "cudaFree")                                \
  X(cudaMallocAsync, "cudaMallocAsync")                  \
  X(cudaMallocAsync_ptsz, "cudaMallocAsync")             \
  X(cudaFreeAsync, "cudaFreeAsync")                      \
  X(cudaFreeAsync_ptsz, "cudaFreeAsync")                 \
  X(cudaMallocHost, "cudaMallocHost")                    \
  X(cudaHostAlloc, "cudaHostAlloc")                      \
  X(cudaFreeHost, "cudaFreeHost")                        \
  X(cudaLaunchKernel, "cudaLaunchKernel")                \
  X(cudaLaunchKernel_ptsz, "cudaLaunchKernel")           \
  X(cudaLaunchKernelExC, "cudaLaunchKernelExC")          \
  X(cudaLaunchKernelExC_ptsz, "cudaLaunchKernelExC")     \
  X(cudaMemcpy, "cudaMemcpy")                            \
  X(cudaMemcpy_ptds, "cudaMemcpy")                       \
  X(cudaMemcpyAsync, "cudaMemcpyAsync")                  \
  X(cudaMemcpyAsync_ptsz, "cudaMemcpyAsync")             \
  X(cudaMemcpy2D, "cudaMemcpy2D")                        \
  X(cudaMemcpy2D_ptds, "cudaMemcpy2D")                   \
  X(cudaMemcpy2DAsync, "cudaMemcpy2DAsync")              \
  X(cudaMemcpy2DAsync_ptsz, "cudaMemcpy2DAsync")         \
  X(cudaMemset, "cudaMemset")                            \
  X(cudaMemset_ptds, "cudaMemset")                       \
  X(cudaMemsetAsync, "cudaMemsetAsync")                  \
  X(cudaMemsetAsync_ptsz, "cudaMemsetAsync")             \
  X(cudaStreamSynchronize, "cudaStreamSynchronize")      \
  X(cudaStreamSynchronize_ptsz, "cudaStreamSynchronize") \
  X(cudaDeviceSynchronize, "cudaDeviceSynchronize")      \
  X(cudaEventSynchronize, "cudaEventSynchronize")        \
  X(cudaStreamWaitEvent, "cudaStreamWaitEvent")          \
  X(cudaStreamWaitEvent_ptsz, "cudaStreamWaitEvent")     \
  X(cudaGraphLaunch, "cudaGraphLaunch")                  \
  X(cudaGraphLaunch_ptsz, "cudaGraphLaunch")             \
  X(cudaProfilerStart, "cudaProfilerStart")              \
  X(cudaProfilerStop, "cudaProfilerStop")

#define PTPROF_CUDA_DRIVER_HOOKS(X)                          \
  X(cuGetProcAddress, "cuGetProcAddress")                    \
  X(cuGetProcAddress_v2, "cuGetProcAddress")                 \
  X(cuLaunchKernel, "cuLaunchKernel")                        \
  X(cuLaunchKernel_ptsz, "cuLaunchKernel")                   \
  X(cuLaunchKernelEx, "cuLaunchKernelEx")                    \
  X(cuLaunchKernelEx_ptsz, "cuLaunchKernelEx")               \
  X(cuMemAlloc_v2, "cuMemAlloc")                             \
  X(cuMemAllocPitch_v2, "cuMemAllocPitch")                   \
  X(cuMemAllocHost_v2, "cuMemAllocHost")                     \
  X(cuMemAllocManaged, "cuMemAllocManaged")                  \
  X(cuMemHostAlloc, "cuMemHostAlloc")                        \
  X(cuMemAllocAsync, "cuMemAllocAsync")                      \
  X(cuMemAllocAsync_ptsz, "cuMemAllocAsync")                 \
  X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync")      \
  X(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync") \
  X(cuMemFree_v2, "cuMemFree")                               \
  X(cuMemFreeHost, "cuMemFreeHost")                          \
  X(cuMemFreeAsync, "cuMemFreeAsync")                        \
  X(cuMemFreeAsync_ptsz, "cuMemFreeAsync")                   \
  X(cuMemCreate, "cuMemCreate")                              \
  X(cuMemRelease, "cuMemRelease")                            \
  X(cuMemMap, "cuMemMap")                                    \
  X(cuMemUnmap, "cuMemUnmap")                                \
  X(cuMemcpyAsync, "cuMemcpyAsync")                          \
  X(cuMemcpyAsync_ptsz, "cuMemcpyAsync")                     \
  X(cuMemcpyPeerAsync, "cuMemcpyPeerAsync")                  \
  X(cuMemcpyPeerAsync_ptsz, "cuMemcpyPeerAsync")             \
  X(cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync")               \
  X(cuMemcpyHtoDAsync_v2_ptsz, "cuMemcpyHtoDAsync")          \
  X(cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync")               \
  X(cuMemcpyDtoHAsync_v2_ptsz, "cuMemcpyDtoHAsync")          \
  X(cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync")               \
  X(cuMemcpyDtoDAsync_v2_ptsz, "cuMemcpyDtoDAsync")          \
  X(cuMemcpy2DAsync_v2, "cuMemcpy2DAsync")                   \
  X(cuMemcpy2DAsync_v2_ptsz, "cuMemcpy2DAsync")              \
  X(cuMemcpy3DAsync_v2, "cuMemcpy3DAsync")                   \
  X(cuMemcpy3DAsync_v2_ptsz, "cuMemcpy3DAsync")              \
  X(cuProfilerStart, "cuProfilerStart")                      \
  X(cuProfilerStop, "cuProfilerStop")

enum class HookId : uint16_t {
#define PTPROF_HOOK_ID(id, api) id,
  PTPROF_CUDA_RUNTIME_HOOKS(PTPROF_HOOK_ID) PTPROF_CUDA_DRIVER_HOOKS(PTPROF_HOOK_ID)
#undef PTPROF_HOOK_ID
      Count
};
constexpr size_t kHookCount = size_t(HookId::Count);

struct HookEntry {
  const char* symbol;  // exported name, also the recorded name of the call
  const char* api;     // name asked of cuGetProcAddress
  wire::CudaApiFamily family;
};

const HookEntry& hook_entry(HookId id);
// The entry whose exported symbol is `symbol`; null when not hooked.
const HookEntry* find_hook(const char* symbol, HookId* id);

// The wrapper of an entry: the table the hooks files build from the lists
// above (cuda/wrappers.hpp), handed to what here must tell the agent's own
// exports from the real functions.
using WrapperOf = void* (*)(HookId id);

// The real function behind a wrapper, found on first use (the next
// definition after the agent, else a loaded library's by soname or by path);
// null when no loaded library defines it, looked up again once another
// object is loaded.
void* real_function(HookId id, WrapperOf wrappers);
// A function of the runtime or driver that is not hooked (cudaFuncGetName,
// cuFuncGetName), looked up where real_function looks; null when absent.
void* find_function(const char* symbol, wire::CudaApiFamily family);

// What the dlsym hook and the cuGetProcAddress wrappers return in place of
// `found`, a real entry point that `symbol` (an exported name) or `api` (a
// cuGetProcAddress query) resolved to: its wrapper when `found` is exactly
// the function that wrapper forwards to, `found` otherwise.
void* wrap_resolved_symbol(const char* symbol, void* found, WrapperOf wrappers);
// What dlsym(RTLD_DEFAULT, symbol) returns in place of `found`: null when
// `found` is the agent's export and no loaded library defines `symbol` (a
// program without CUDA that looks for it finds nothing, as without ptprof).
void* default_symbol(const char* symbol, void* found, WrapperOf wrappers);
// `version` and `flags`: the query's cudaVersion and flags. When `found` is
// none of the exports (a driver may hand out internal entry points), the
// export the query selects by ABI (its version, the per-thread-stream flag)
// is wrapped: the wrapper forwards to that export, which behaves the same.
void* wrap_proc_address(const char* api, void* found, int version, uint64_t flags, WrapperOf wrappers);

// Calls in progress on this thread that went through a wrapper. Only the
// outermost records; the CUPTI consumer raises it around its own CUDA calls
// (CallGuard) so that they are not recorded.
extern constinit thread_local uint32_t tls_call_depth;
// The CUPTI correlation id of the outermost call in progress, for the
// wrapper to put in its record and clear. Nothing sets it today: the agent
// subscribes to no API callbacks, and the launcher folds a hooked call with
// CUPTI's record of it instead (launcher/collect/call_fold.hpp), so hooked
// records carry 0.
extern constinit thread_local uint64_t tls_correlation_id;

struct CallGuard {
  CallGuard() { ++tls_call_depth; }
  ~CallGuard() { --tls_call_depth; }
  CallGuard(const CallGuard&) = delete;
  CallGuard& operator=(const CallGuard&) = delete;
};

// One call through a wrapper. Constructed before the real function runs:
// decides whether this call records (session active, recording, outermost)
// and takes the start time; finish() writes the record.
class ApiCall {
 public:
  explicit ApiCall(HookId id);
  ~ApiCall() {
    if (entered_) --tls_call_depth;
  }
  ApiCall(const ApiCall&) = delete;
  ApiCall& operator=(const ApiCall&) = delete;

  bool records() const { return thread_ != nullptr; }
  bool outermost() const { return outermost_; }
  // The record's arguments, zeroed, for the wrapper to fill; only when
  // records(). Kept here so the record is built once, in place.
  wire::CudaApiPayload& args() { return args_; }
  // The call returned `result`: writes the record (family, end_ts and result
  // are filled in here).
  void finish(int32_t result);
  // Name id of a launched kernel's name (interned on this thread); 0 when
  // not recording or `name` is null.
  uint32_t intern(const char* name);
  // PTPROF_PROFILE_MEMORY: the call allocated (bytes > 0) or freed (bytes 0:
  // the launcher knows the size) the segment `ptr` of `device` (-1: the
  // calling thread's current device). Written whether a window records or
  // not, so that the launcher's count of reserved memory is whole; after
  // finish() when the call records, at its end time.
  void segment(uint64_t ptr, int64_t bytes, wire::MemorySource source, int32_t device = -1);

 private:
  HookId id_;
  ThreadState* thread_ = nullptr;
  wire::CudaApiPayload args_;  // set only when recording: not zeroed per call otherwise
  uint64_t start_ = 0;
  bool entered_ = false;
  bool outermost_ = false;
};

}  // namespace ptprof::agent::cuda
