// Wrappers of the CUDA runtime entry points (cuda_hook_support.hpp has the
// list and how the real functions are found). Each records the call with
// what matters of its arguments, forwards, and returns the result unchanged.
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>

#include "base/visibility.hpp"
#include "cuda/cuda_hook_support.hpp"
#include "cuda/wrappers.hpp"
#include "runtime/runtime.hpp"

using ptprof::agent::cuda::ApiCall;
using ptprof::agent::cuda::HookId;

// The per-thread-default-stream exports have the signatures of their plain
// names; the headers declare them only under a macro that renames the plain
// names, so they are declared here.
// NOLINTBEGIN(readability-identifier-naming): the ABI's names
extern "C" {
cudaError_t cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t stream);
cudaError_t cudaFreeAsync_ptsz(void* devPtr, cudaStream_t stream);
cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 grid, dim3 block, void** args, size_t shared,
                                  cudaStream_t stream);
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func, void** args);
cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                   size_t height, cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemset_ptds(void* devPtr, int value, size_t count);
cudaError_t cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count, cudaStream_t stream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream);
}
// NOLINTEND(readability-identifier-naming)

namespace ptprof::agent::cuda {
namespace {

// What a wrapper returns when no loaded library defines the real function
// (the target references a runtime that is not there).
constexpr cudaError_t kNoRuntime = cudaErrorInitializationError;

template <HookId Id, class Fn>
Fn real() {
  return reinterpret_cast<Fn>(real_function(Id, wrapper));
}

uint64_t as_u64(const void* p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); }
uint64_t as_u64(cudaStream_t s) { return uint64_t(reinterpret_cast<uintptr_t>(s)); }

void set_dims(wire::CudaApiPayload& a, dim3 grid, dim3 block) {
  a.grid[0] = grid.x;
  a.grid[1] = grid.y;
  a.grid[2] = grid.z;
  a.block[0] = block.x;
  a.block[1] = block.y;
  a.block[2] = block.z;
}

// A launched kernel's name: cudaFuncGetName (CUDA 12.3 and later) knows it
// from the fat binary; otherwise the host stub's symbol, when it is exported.
// The text stays valid for the process, so a small per-thread cache keyed by
// the function pointer spares the lookup on every launch.
const char* kernel_name(const void* func) {
  struct Entry {
    const void* func = nullptr;
    const char* name = nullptr;
  };
  constexpr size_t kWays = 64;
  static thread_local Entry cache[kWays];
  Entry& e = cache[(reinterpret_cast<uintptr_t>(func) >> 4) % kWays];
  if (e.func == func && func) return e.name;
  using GetName = cudaError_t (*)(const char**, const void*);
  static auto get_name = reinterpret_cast<GetName>(find_function("cudaFuncGetName", wire::CudaApiFamily::Runtime));
  const char* name = nullptr;
  if (get_name && get_name(&name, func) != cudaSuccess) name = nullptr;
  if (!name) {
    Dl_info info{};
    if (dladdr(func, &info) && info.dli_sname && info.dli_saddr == func) name = info.dli_sname;
  }
  e = Entry{func, name};
  return name;
}

template <HookId Id>
cudaError_t do_malloc(void** ptr, size_t size) {
  ApiCall call(Id);
  auto fn = real<Id, cudaError_t (*)(void**, size_t)>();
  cudaError_t r = fn ? fn(ptr, size) : kNoRuntime;
  if (call.records()) {
    auto& a = call.args();
    a.ptr = r == cudaSuccess && ptr ? as_u64(*ptr) : 0;
    a.bytes = size;
    call.finish(r);
  }
  // cudaMallocHost shares this wrapper: pinned host memory is no device's.
  if constexpr (Id == HookId::cudaMalloc)
    if (r == cudaSuccess && ptr && size > 0) call.segment(as_u64(*ptr), int64_t(size), wire::MemorySource::CudaSegment);
  return r;
}

template <HookId Id>
cudaError_t do_free(void* ptr) {
  ApiCall call(Id);
  auto fn = real<Id, cudaError_t (*)(void*)>();
  cudaError_t r = fn ? fn(ptr) : kNoRuntime;
  if (call.records()) {
    auto& a = call.args();
    a.ptr = as_u64(ptr);
    call.finish(r);
  }
  if constexpr (Id == HookId::cudaFree)
    if (r == cudaSuccess) call.segment(as_u64(ptr), 0, wire::MemorySource::CudaSegment);
  return r;
}

template <HookId Id>
cudaError_t do_malloc_async(void** ptr, size_t size, cudaStream_t stream) {
  ApiCall call(Id);
  auto fn = real<Id, cudaError_t (*)(void**, size_t, cudaStream_t)>();
  cudaError_t r = fn ? fn(ptr, size, stream) : kNoRuntime;
  if (call.records()) {
    auto& a = call.args();
    a.ptr = r == cudaSuccess && ptr ? as_u64(*ptr) : 0;
    a.bytes = size;
    a.stream = as_u64(stream);
    call.finish(r);
  }
  if (r == cudaSuccess && ptr && size > 0) call.segment(as_u64(*ptr), int64_t(size), wire::MemorySource::CudaSegment);
  return r;
}

template <HookId Id>
cudaError_t do_free_async(void* ptr, cudaStream_t stream) {
  ApiCall call(Id);
  auto fn = real<Id, cudaError_t (*)(void*, cudaStream_t)>();
  cudaError_t r = fn ? fn(ptr, stream) : kNoRuntime;
  if (call.records()) {
    auto& a = call.args();
    a.ptr = as_u64(ptr);
    a.stream = as_u64(stream);
    call.finish(r);
  }
  if (r == cudaSuccess) call.segment(as_u64(ptr), 0, wire::MemorySource::CudaSegment);
  return r;
}

template <HookId Id>
cudaError_t do_launch(const void* func, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream) {
  ApiCall call(Id);
  auto fn = real<Id, cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t)>();
  cudaError_t r = fn ? fn(func, grid, block, args, shared, stream) : kNoRuntime;
  if (call.records()) {
    auto& a = call.args();
    a.stream = as_u64(stream);
    set_dims(a, grid, block);
    a.kernel_name = call.intern(kernel_name(func));
    call.finish(r);
  }
  return r;
}

template <HookId Id>
cudaError_t do_launch_ex(const cudaLaunchConfig_t* config, const void* func, void** args) {
  ApiCall call(Id);
  auto fn = real<Id, cudaError_t (*)(const cudaLaunchConfig_t*, const void*, void**)>();
  cudaError_t r = fn ? fn(config, func, args) : kNoRuntime;
  if (call.records()) {
    auto& a = call.args();
    if (config) {
      a.stream = as_u64(config->stream);
      set_dims(a, config->gridDim, config->blockDim);
    }
    a.kernel_name = call.intern(kernel_name(func));
    call.finish(r);
  }
  return r;
}

template <HookId Id>
cudaError_t do_memcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  ApiCall call(Id);
  auto fn = real<Id, cudaError_t (*)(void*, const void*, size_t, cudaMemcpyKind)>();
  cudaError_t r = fn ? fn(dst, src, count, kind) : kNoRuntime;
  if (call.records()) {
    auto& a = call.args();
    a.ptr = as_u64(dst);
    a.bytes = count;
    a.copy_kind = uint8_t(kind);
    call.finish(r);
  }
  return r;
}

template <HookId Id>
cudaError_t do_memcpy_async(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  ApiCall call(Id);
  auto fn = real<Id, cudaError_t (*)(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t)>();
  cudaError_t r = fn ? fn(dst, src, count, kind, stream) : kNoRuntime;
  if (call.records()) {
    auto& a = call.args();
    a.ptr = as_u64(dst);
    a.bytes = count;
    a.copy_kind = uint8_t(kind);
    a.stream = as_u64(stream);
    call.finish(r);
  }
  return r;
}

template <HookId Id>
cudaError_t do_memcpy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                         cudaMemcpyKind kind) {
  ApiCall call(Id);
  auto fn = real<Id, cudaError_t (*)(void*, size_t, const void*, size_t, size_t, size_t, cudaMemcpyKind)>();
  cudaError_t r = fn ? fn(dst, dpitch, src, spitch, width, height, kind) : kNoRuntime;
  if (call.records()) {
    auto& a = call.args();
    a.ptr = as_u64(dst);
    a.bytes = uint64_t(width) * height;
    a.copy_kind = uint8_t(kind);
    call.finish(r);
  }
  return r;
}

template <HookId Id>
cudaError_t do_memcpy_2d_async(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                               cudaMemcpyKind kind, cudaStream_t stream) {
  ApiCall call(Id);
  auto fn =
      real<Id, cudaError_t (*)(void*, size_t, const void*, size_t, size_t, size_t, cudaMemcpyKind, cudaStream_t)>();
  cudaError_t r = fn ? fn(dst, dpitch, src, spitch, width, height, kind, stream) : kNoRuntime;
  if (call.records()) {
    auto& a = call.args();
    a.ptr = as_u64(dst);
    a.bytes = uint64_t(width) * height;
    a.copy_kind = uint8_t(kind);
    a.stream = as_u64(stream);
    call.finish(r);
  }
  return r;
}

template <HookId Id>
cudaError_t do_memset(void* ptr, int value, size_t count) {
  ApiCall call(Id);
  auto fn = real<Id, cudaError_t (*)(void*, int, size_t)>();
  cudaError_t r = fn ? fn(ptr, value, count) : kNoRuntime;
  if (call.records()) {
    auto& a = call.args();
    a.ptr = as_u64(ptr);
    a.bytes = count;
    call.finish(r);
  }
  return r;
}

template <HookId Id>
cudaError_t do_memset_async(void* ptr, int value, size_t count, cudaStream_t stream) {
  ApiCall call(Id);
  auto fn = real<Id, cudaError_t (*)(void*, int, size_t, cudaStream_t)>();
  cudaError_t r = fn ? fn(ptr, value, count, stream) : kNoRuntime;
  if (call.records()) {
    auto& a = call.args();
    a.ptr = as_u64(ptr);
    a.bytes = count;
    a.stream = as_u64(stream);
    call.finish(r);
  }
  return r;
}

// Calls whose one argument worth keeping is a handle: a stream (kept as the
// stream), an event or a graph (kept as ptr).
template <HookId Id, class Handle>
cudaError_t do_on_handle(Handle h, bool is_stream) {
  ApiCall call(Id);
  auto fn = real<Id, cudaError_t (*)(Handle)>();
  cudaError_t r = fn ? fn(h) : kNoRuntime;
  if (call.records()) {
    auto& a = call.args();
    (is_stream ? a.stream : a.ptr) = as_u64(reinterpret_cast<const void*>(h));
    call.finish(r);
  }
  return r;
}

template <HookId Id>
cudaError_t do_wait_event(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  ApiCall call(Id);
  auto fn = real<Id, cudaError_t (*)(cudaStream_t, cudaEvent_t, unsigned int)>();
  cudaError_t r = fn ? fn(stream, event, flags) : kNoRuntime;
  if (call.records()) {
    auto& a = call.args();
    a.stream = as_u64(stream);
    a.ptr = as_u64(static_cast<const void*>(event));
    call.finish(r);
  }
  return r;
}

template <HookId Id>
cudaError_t do_graph_launch(cudaGraphExec_t exec, cudaStream_t stream) {
  ApiCall call(Id);
  auto fn = real<Id, cudaError_t (*)(cudaGraphExec_t, cudaStream_t)>();
  cudaError_t r = fn ? fn(exec, stream) : kNoRuntime;
  if (call.records()) {
    auto& a = call.args();
    a.stream = as_u64(stream);
    a.ptr = as_u64(static_cast<const void*>(exec));
    call.finish(r);
  }
  return r;
}

template <HookId Id>
cudaError_t do_no_args() {
  ApiCall call(Id);
  auto fn = real<Id, cudaError_t (*)()>();
  cudaError_t r = fn ? fn() : kNoRuntime;
  if (call.records()) call.finish(r);
  return r;
}

// cudaProfilerStart/Stop: the capture range of PTPROF_STEP=cudaProfilerApi.
// The outermost call moves it whatever the runtime answers (with no device
// the runtime refuses, yet the program meant a capture range).
template <HookId Id>
cudaError_t do_profiler(bool start) {
  ApiCall call(Id);
  // A Start opens the range before the call, a Stop closes it after the
  // call is recorded: the Stop's record belongs to the range it ends.
  if (start && call.outermost()) g_runtime.cuda_profiler_api(true);
  auto fn = real<Id, cudaError_t (*)()>();
  cudaError_t r = fn ? fn() : kNoRuntime;
  if (call.records()) call.finish(r);
  if (!start && call.outermost()) g_runtime.cuda_profiler_api(false);
  return r;
}

}  // namespace

void* runtime_wrapper(HookId id) {
  switch (id) {
#define PTPROF_RUNTIME_CASE(name, api) \
  case HookId::name:                   \
    return reinterpret_cast<void*>(&::name);
    PTPROF_CUDA_RUNTIME_HOOKS(PTPROF_RUNTIME_CASE)
#undef PTPROF_RUNTIME_CASE
    default:
      return nullptr;
  }
}

}  // namespace ptprof::agent::cuda

// NOLINTBEGIN(readability-identifier-naming): the ABI's names
using namespace ptprof::agent::cuda;

PTPROF_EXPORT cudaError_t cudaMalloc(void** devPtr, size_t size) { return do_malloc<HookId::cudaMalloc>(devPtr, size); }
PTPROF_EXPORT cudaError_t cudaMallocHost(void** ptr, size_t size) {
  return do_malloc<HookId::cudaMallocHost>(ptr, size);
}
PTPROF_EXPORT cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  ApiCall call(HookId::cudaHostAlloc);
  auto fn = real<HookId::cudaHostAlloc, cudaError_t (*)(void**, size_t, unsigned int)>();
  cudaError_t r = fn ? fn(pHost, size, flags) : kNoRuntime;
  if (call.records()) {
    auto& a = call.args();
    a.ptr = r == cudaSuccess && pHost ? as_u64(*pHost) : 0;
    a.bytes = size;
    call.finish(r);
  }
  return r;
}
PTPROF_EXPORT cudaError_t cudaFree(void* devPtr) { return do_free<HookId::cudaFree>(devPtr); }
PTPROF_EXPORT cudaError_t cudaFreeHost(void* ptr) { return do_free<HookId::cudaFreeHost>(ptr); }

PTPROF_EXPORT cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t stream) {
  return do_malloc_async<HookId::cudaMallocAsync>(devPtr, size, stream);
}
PTPROF_EXPORT cudaError_t cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t stream) {
  return do_malloc_async<HookId::cudaMallocAsync_ptsz>(devPtr, size, stream);
}
PTPROF_EXPORT cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t stream) {
  return do_free_async<HookId::cudaFreeAsync>(devPtr, stream);
}
PTPROF_EXPORT cudaError_t cudaFreeAsync_ptsz(void* devPtr, cudaStream_t stream) {
  return do_free_async<HookId::cudaFreeAsync_ptsz>(devPtr, stream);
}

PTPROF_EXPORT cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared,
                                           cudaStream_t stream) {
  return do_launch<HookId::cudaLaunchKernel>(func, grid, block, args, shared, stream);
}
PTPROF_EXPORT cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 grid, dim3 block, void** args, size_t shared,
                                                cudaStream_t stream) {
  return do_launch<HookId::cudaLaunchKernel_ptsz>(func, grid, block, args, shared, stream);
}
PTPROF_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  return do_launch_ex<HookId::cudaLaunchKernelExC>(config, func, args);
}
PTPROF_EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func, void** args) {
  return do_launch_ex<HookId::cudaLaunchKernelExC_ptsz>(config, func, args);
}

PTPROF_EXPORT cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return do_memcpy<HookId::cudaMemcpy>(dst, src, count, kind);
}
PTPROF_EXPORT cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return do_memcpy<HookId::cudaMemcpy_ptds>(dst, src, count, kind);
}
PTPROF_EXPORT cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                                          cudaStream_t stream) {
  return do_memcpy_async<HookId::cudaMemcpyAsync>(dst, src, count, kind, stream);
}
PTPROF_EXPORT cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                                               cudaStream_t stream) {
  return do_memcpy_async<HookId::cudaMemcpyAsync_ptsz>(dst, src, count, kind, stream);
}
PTPROF_EXPORT cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                       size_t height, cudaMemcpyKind kind) {
  return do_memcpy_2d<HookId::cudaMemcpy2D>(dst, dpitch, src, spitch, width, height, kind);
}
PTPROF_EXPORT cudaError_t cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                            size_t height, cudaMemcpyKind kind) {
  return do_memcpy_2d<HookId::cudaMemcpy2D_ptds>(dst, dpitch, src, spitch, width, height, kind);
}
PTPROF_EXPORT cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                            size_t height, cudaMemcpyKind kind, cudaStream_t stream) {
  return do_memcpy_2d_async<HookId::cudaMemcpy2DAsync>(dst, dpitch, src, spitch, width, height, kind, stream);
}
PTPROF_EXPORT cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                                 size_t height, cudaMemcpyKind kind, cudaStream_t stream) {
  return do_memcpy_2d_async<HookId::cudaMemcpy2DAsync_ptsz>(dst, dpitch, src, spitch, width, height, kind, stream);
}

PTPROF_EXPORT cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  return do_memset<HookId::cudaMemset>(devPtr, value, count);
}
PTPROF_EXPORT cudaError_t cudaMemset_ptds(void* devPtr, int value, size_t count) {
  return do_memset<HookId::cudaMemset_ptds>(devPtr, value, count);
}
PTPROF_EXPORT cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return do_memset_async<HookId::cudaMemsetAsync>(devPtr, value, count, stream);
}
PTPROF_EXPORT cudaError_t cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return do_memset_async<HookId::cudaMemsetAsync_ptsz>(devPtr, value, count, stream);
}

PTPROF_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return do_on_handle<HookId::cudaStreamSynchronize>(stream, true);
}
PTPROF_EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  return do_on_handle<HookId::cudaStreamSynchronize_ptsz>(stream, true);
}
PTPROF_EXPORT cudaError_t cudaDeviceSynchronize(void) { return do_no_args<HookId::cudaDeviceSynchronize>(); }
PTPROF_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  return do_on_handle<HookId::cudaEventSynchronize>(event, false);
}
PTPROF_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return do_wait_event<HookId::cudaStreamWaitEvent>(stream, event, flags);
}
PTPROF_EXPORT cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return do_wait_event<HookId::cudaStreamWaitEvent_ptsz>(stream, event, flags);
}
PTPROF_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  return do_graph_launch<HookId::cudaGraphLaunch>(exec, stream);
}
PTPROF_EXPORT cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream) {
  return do_graph_launch<HookId::cudaGraphLaunch_ptsz>(exec, stream);
}
PTPROF_EXPORT cudaError_t cudaProfilerStart(void) { return do_profiler<HookId::cudaProfilerStart>(true); }
PTPROF_EXPORT cudaError_t cudaProfilerStop(void) { return do_profiler<HookId::cudaProfilerStop>(false); }
// NOLINTEND(readability-identifier-naming)
