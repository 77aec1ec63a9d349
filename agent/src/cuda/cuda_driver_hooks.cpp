// Wrappers of the CUDA driver entry points, and of cuGetProcAddress, which
// hands them out to whoever asks the driver for a pointer (the runtime, dynamic
// or static, gets all its driver entry points that way).
#include <cuda.h>
#include <cudaProfiler.h>

#include <cstdint>
#include <tuple>
#include <type_traits>

// cuda.h renames cuGetProcAddress to its CUDA 12 form; both are exported
// and both are hooked, under their own names.
#undef cuGetProcAddress

#include "base/visibility.hpp"
#include "cuda/cuda_hook_support.hpp"
#include "cuda/wrappers.hpp"
#include "runtime/runtime.hpp"

using ptprof::agent::cuda::ApiCall;
using ptprof::agent::cuda::HookId;

// Exports the header declares only under macros that rename the plain names
// (cuda.h: __CUDA_API_PER_THREAD_DEFAULT_STREAM, and the CUDA 11 form of
// cuGetProcAddress).
// NOLINTBEGIN(readability-identifier-naming): the ABI's names
extern "C" {
CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                             unsigned int by, unsigned int bz, unsigned int shared, CUstream stream, void** params,
                             void** extra);
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params, void** extra);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUstream stream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, CUstream stream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream);
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t bytes,
                                CUstream stream);
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream);
CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dst, CUdeviceptr src, size_t bytes, CUstream stream);
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* copy, CUstream stream);
CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D* copy, CUstream stream);
}
// NOLINTEND(readability-identifier-naming)

namespace ptprof::agent::cuda {
namespace {

// What a wrapper returns when no loaded library defines the real function.
constexpr CUresult kNoDriver = CUDA_ERROR_NOT_INITIALIZED;

// cudaMemcpyKind values, which CudaApiPayload::copy_kind holds for driver
// copies too.
enum CopyKind : uint8_t { kHostToHost = 0, kHostToDevice = 1, kDeviceToHost = 2, kDeviceToDevice = 3, kDefault = 4 };

template <HookId Id, class Fn>
Fn real() {
  return reinterpret_cast<Fn>(real_function(Id, wrapper));
}

uint64_t as_u64(const void* p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); }

// A launched function's name (cuFuncGetName, CUDA 12.3 and later), cached
// per thread by handle; the text belongs to the module, valid while it is
// loaded.
const char* function_name(CUfunction f) {
  struct Entry {
    CUfunction f = nullptr;
    const char* name = nullptr;
  };
  constexpr size_t kWays = 64;
  static thread_local Entry cache[kWays];
  Entry& e = cache[(reinterpret_cast<uintptr_t>(f) >> 4) % kWays];
  if (e.f == f && f) return e.name;
  using GetName = CUresult (*)(const char**, CUfunction);
  static auto get_name = reinterpret_cast<GetName>(find_function("cuFuncGetName", wire::CudaApiFamily::Driver));
  const char* name = nullptr;
  if (!get_name || get_name(&name, f) != CUDA_SUCCESS) name = nullptr;
  e = Entry{f, name};
  return name;
}

uint8_t copy_kind(CUmemorytype src, CUmemorytype dst) {
  const bool from_host = src == CU_MEMORYTYPE_HOST, to_host = dst == CU_MEMORYTYPE_HOST;
  if (src == CU_MEMORYTYPE_UNIFIED || dst == CU_MEMORYTYPE_UNIFIED) return kDefault;
  if (from_host) return to_host ? kHostToHost : kHostToDevice;
  return to_host ? kDeviceToHost : kDeviceToDevice;
}

template <HookId Id>
CUresult do_launch(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by,
                   unsigned int bz, unsigned int shared, CUstream stream, void** params, void** extra) {
  ApiCall call(Id);
  auto fn = real<Id, decltype(&::cuLaunchKernel)>();
  CUresult r = fn ? fn(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra) : kNoDriver;
  if (call.records()) {
    auto& a = call.args();
    a.stream = as_u64(stream);
    a.grid[0] = gx;
    a.grid[1] = gy;
    a.grid[2] = gz;
    a.block[0] = bx;
    a.block[1] = by;
    a.block[2] = bz;
    a.kernel_name = call.intern(function_name(f));
    call.finish(r);
  }
  return r;
}

template <HookId Id>
CUresult do_launch_ex(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  ApiCall call(Id);
  auto fn = real<Id, decltype(&::cuLaunchKernelEx)>();
  CUresult r = fn ? fn(config, f, params, extra) : kNoDriver;
  if (call.records()) {
    auto& a = call.args();
    if (config) {
      a.stream = as_u64(config->hStream);
      a.grid[0] = config->gridDimX;
      a.grid[1] = config->gridDimY;
      a.grid[2] = config->gridDimZ;
      a.block[0] = config->blockDimX;
      a.block[1] = config->blockDimY;
      a.block[2] = config->blockDimZ;
    }
    a.kernel_name = call.intern(function_name(f));
    call.finish(r);
  }
  return r;
}

// Allocations: the pointer (device or host) written through `out` on success.
template <HookId Id, class Ptr, class... Rest>
CUresult do_alloc(Ptr* out, size_t bytes, Rest... rest) {
  ApiCall call(Id);
  auto fn = real<Id, CUresult (*)(Ptr*, size_t, Rest...)>();
  CUresult r = fn ? fn(out, bytes, rest...) : kNoDriver;
  if (call.records()) {
    auto& a = call.args();
    if (r == CUDA_SUCCESS && out) {
      if constexpr (std::is_pointer_v<Ptr>)
        a.ptr = as_u64(*out);
      else
        a.ptr = uint64_t(*out);
    }
    a.bytes = bytes;
    if constexpr (sizeof...(Rest) > 0) {
      // The stream is the last argument of the stream-ordered allocators.
      const auto last = std::get<sizeof...(Rest) - 1>(std::tuple<Rest...>(rest...));
      if constexpr (std::is_same_v<std::remove_cv_t<decltype(last)>, CUstream>) a.stream = as_u64(last);
    }
    call.finish(r);
  }
  // Device memory (pinned host memory, of the host allocators, is no device's).
  if constexpr (std::is_same_v<Ptr, CUdeviceptr>)
    if (r == CUDA_SUCCESS && out && *out && bytes > 0)
      call.segment(uint64_t(*out), int64_t(bytes), wire::MemorySource::CudaSegment);
  return r;
}

template <HookId Id, class... Rest>
CUresult do_free(CUdeviceptr ptr, Rest... rest) {
  ApiCall call(Id);
  auto fn = real<Id, CUresult (*)(CUdeviceptr, Rest...)>();
  CUresult r = fn ? fn(ptr, rest...) : kNoDriver;
  if (call.records()) {
    auto& a = call.args();
    a.ptr = uint64_t(ptr);
    if constexpr (sizeof...(Rest) == 1) a.stream = as_u64(rest...);
    call.finish(r);
  }
  if (r == CUDA_SUCCESS) call.segment(uint64_t(ptr), 0, wire::MemorySource::CudaSegment);
  return r;
}

template <HookId Id>
CUresult do_copy(uint64_t dst, uint64_t bytes, uint8_t kind, CUstream stream, CUresult r, ApiCall& call) {
  if (call.records()) {
    auto& a = call.args();
    a.ptr = dst;
    a.bytes = bytes;
    a.copy_kind = kind;
    a.stream = as_u64(stream);
    call.finish(r);
  }
  return r;
}

template <HookId Id>
CUresult do_memcpy_async(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  ApiCall call(Id);
  auto fn = real<Id, decltype(&::cuMemcpyAsync)>();
  CUresult r = fn ? fn(dst, src, bytes, stream) : kNoDriver;
  return do_copy<Id>(dst, bytes, kDefault, stream, r, call);
}

template <HookId Id>
CUresult do_memcpy_peer_async(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t bytes,
                              CUstream stream) {
  ApiCall call(Id);
  auto fn = real<Id, decltype(&::cuMemcpyPeerAsync)>();
  CUresult r = fn ? fn(dst, dst_ctx, src, src_ctx, bytes, stream) : kNoDriver;
  return do_copy<Id>(dst, bytes, kDeviceToDevice, stream, r, call);
}

template <HookId Id>
CUresult do_htod_async(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream) {
  ApiCall call(Id);
  auto fn = real<Id, CUresult (*)(CUdeviceptr, const void*, size_t, CUstream)>();
  CUresult r = fn ? fn(dst, src, bytes, stream) : kNoDriver;
  return do_copy<Id>(dst, bytes, kHostToDevice, stream, r, call);
}

template <HookId Id>
CUresult do_dtoh_async(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  ApiCall call(Id);
  auto fn = real<Id, CUresult (*)(void*, CUdeviceptr, size_t, CUstream)>();
  CUresult r = fn ? fn(dst, src, bytes, stream) : kNoDriver;
  return do_copy<Id>(as_u64(dst), bytes, kDeviceToHost, stream, r, call);
}

template <HookId Id>
CUresult do_dtod_async(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  ApiCall call(Id);
  auto fn = real<Id, CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream)>();
  CUresult r = fn ? fn(dst, src, bytes, stream) : kNoDriver;
  return do_copy<Id>(dst, bytes, kDeviceToDevice, stream, r, call);
}

template <HookId Id>
CUresult do_memcpy_2d_async(const CUDA_MEMCPY2D* copy, CUstream stream) {
  ApiCall call(Id);
  auto fn = real<Id, CUresult (*)(const CUDA_MEMCPY2D*, CUstream)>();
  CUresult r = fn ? fn(copy, stream) : kNoDriver;
  if (!copy) return do_copy<Id>(0, 0, kDefault, stream, r, call);
  const uint64_t dst = copy->dstMemoryType == CU_MEMORYTYPE_HOST ? as_u64(copy->dstHost) : copy->dstDevice;
  return do_copy<Id>(dst, uint64_t(copy->WidthInBytes) * copy->Height,
                     copy_kind(copy->srcMemoryType, copy->dstMemoryType), stream, r, call);
}

template <HookId Id>
CUresult do_memcpy_3d_async(const CUDA_MEMCPY3D* copy, CUstream stream) {
  ApiCall call(Id);
  auto fn = real<Id, CUresult (*)(const CUDA_MEMCPY3D*, CUstream)>();
  CUresult r = fn ? fn(copy, stream) : kNoDriver;
  if (!copy) return do_copy<Id>(0, 0, kDefault, stream, r, call);
  const uint64_t dst = copy->dstMemoryType == CU_MEMORYTYPE_HOST ? as_u64(copy->dstHost) : copy->dstDevice;
  return do_copy<Id>(dst, uint64_t(copy->WidthInBytes) * copy->Height * copy->Depth,
                     copy_kind(copy->srcMemoryType, copy->dstMemoryType), stream, r, call);
}

template <HookId Id>
CUresult do_profiler(bool start) {
  ApiCall call(Id);
  // A Start opens the range before the call, a Stop closes it after the
  // call is recorded: the Stop's record belongs to the range it ends.
  if (start && call.outermost()) g_runtime.cuda_profiler_api(true);
  auto fn = real<Id, CUresult (*)()>();
  CUresult r = fn ? fn() : kNoDriver;
  if (call.records()) call.finish(r);
  if (!start && call.outermost()) g_runtime.cuda_profiler_api(false);
  return r;
}

}  // namespace

void* driver_wrapper(HookId id) {
  switch (id) {
#define PTPROF_DRIVER_CASE(name, api) \
  case HookId::name:                  \
    return reinterpret_cast<void*>(&::name);
    PTPROF_CUDA_DRIVER_HOOKS(PTPROF_DRIVER_CASE)
#undef PTPROF_DRIVER_CASE
    default:
      return nullptr;
  }
}

}  // namespace ptprof::agent::cuda

// NOLINTBEGIN(readability-identifier-naming): the ABI's names
using namespace ptprof::agent::cuda;

// Not recorded: the runtime asks for some 440 entry points when it starts,
// which says nothing about the program. What they return is wrapped.
PTPROF_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  auto fn = real<HookId::cuGetProcAddress, CUresult (*)(const char*, void**, int, cuuint64_t)>();
  if (!fn) return kNoDriver;
  CUresult r = fn(symbol, pfn, cudaVersion, flags);
  if (r == CUDA_SUCCESS && pfn) *pfn = wrap_proc_address(symbol, *pfn, cudaVersion, flags, wrapper);
  return r;
}
PTPROF_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                                           CUdriverProcAddressQueryResult* status) {
  auto fn = real<HookId::cuGetProcAddress_v2, decltype(&::cuGetProcAddress_v2)>();
  if (!fn) return kNoDriver;
  CUresult r = fn(symbol, pfn, cudaVersion, flags, status);
  if (r == CUDA_SUCCESS && pfn) *pfn = wrap_proc_address(symbol, *pfn, cudaVersion, flags, wrapper);
  return r;
}

PTPROF_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                      unsigned int by, unsigned int bz, unsigned int shared, CUstream stream,
                                      void** params, void** extra) {
  return do_launch<HookId::cuLaunchKernel>(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}
PTPROF_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                           unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                                           CUstream stream, void** params, void** extra) {
  return do_launch<HookId::cuLaunchKernel_ptsz>(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}
PTPROF_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  return do_launch_ex<HookId::cuLaunchKernelEx>(config, f, params, extra);
}
PTPROF_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  return do_launch_ex<HookId::cuLaunchKernelEx_ptsz>(config, f, params, extra);
}

PTPROF_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
  return do_alloc<HookId::cuMemAlloc_v2>(dptr, bytes);
}
PTPROF_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                                          unsigned int element) {
  ApiCall call(HookId::cuMemAllocPitch_v2);
  auto fn = real<HookId::cuMemAllocPitch_v2, decltype(&::cuMemAllocPitch_v2)>();
  CUresult r = fn ? fn(dptr, pitch, width, height, element) : kNoDriver;
  if (call.records()) {
    auto& a = call.args();
    if (r == CUDA_SUCCESS && dptr) a.ptr = uint64_t(*dptr);
    a.bytes = r == CUDA_SUCCESS && pitch ? uint64_t(*pitch) * height : uint64_t(width) * height;
    call.finish(r);
  }
  if (r == CUDA_SUCCESS && dptr && pitch && *pitch * height > 0)
    call.segment(uint64_t(*dptr), int64_t(*pitch * height), ptprof::wire::MemorySource::CudaSegment);
  return r;
}
PTPROF_EXPORT CUresult cuMemAllocHost_v2(void** pp, size_t bytes) {
  return do_alloc<HookId::cuMemAllocHost_v2>(pp, bytes);
}
PTPROF_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned int flags) {
  return do_alloc<HookId::cuMemAllocManaged>(dptr, bytes, flags);
}
PTPROF_EXPORT CUresult cuMemHostAlloc(void** pp, size_t bytes, unsigned int flags) {
  return do_alloc<HookId::cuMemHostAlloc>(pp, bytes, flags);
}
PTPROF_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  return do_alloc<HookId::cuMemAllocAsync>(dptr, bytes, stream);
}
PTPROF_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  return do_alloc<HookId::cuMemAllocAsync_ptsz>(dptr, bytes, stream);
}
PTPROF_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, CUstream stream) {
  return do_alloc<HookId::cuMemAllocFromPoolAsync>(dptr, bytes, pool, stream);
}
PTPROF_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool,
                                                    CUstream stream) {
  return do_alloc<HookId::cuMemAllocFromPoolAsync_ptsz>(dptr, bytes, pool, stream);
}
PTPROF_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) { return do_free<HookId::cuMemFree_v2>(dptr); }
PTPROF_EXPORT CUresult cuMemFreeHost(void* p) {
  ApiCall call(HookId::cuMemFreeHost);
  auto fn = real<HookId::cuMemFreeHost, decltype(&::cuMemFreeHost)>();
  CUresult r = fn ? fn(p) : kNoDriver;
  if (call.records()) {
    auto& a = call.args();
    a.ptr = as_u64(p);
    call.finish(r);
  }
  return r;
}
PTPROF_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  return do_free<HookId::cuMemFreeAsync>(dptr, stream);
}
PTPROF_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) {
  return do_free<HookId::cuMemFreeAsync_ptsz>(dptr, stream);
}

// Virtual memory management: the handle of cuMemCreate/cuMemRelease is kept
// as ptr; cuMemMap/cuMemUnmap keep the address and size.
PTPROF_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                                   unsigned long long flags) {
  ApiCall call(HookId::cuMemCreate);
  auto fn = real<HookId::cuMemCreate, decltype(&::cuMemCreate)>();
  CUresult r = fn ? fn(handle, size, prop, flags) : kNoDriver;
  if (call.records()) {
    auto& a = call.args();
    if (r == CUDA_SUCCESS && handle) a.ptr = uint64_t(*handle);
    a.bytes = size;
    call.finish(r);
  }
  if (r == CUDA_SUCCESS && handle && size > 0) {
    // Memory on a device is that device's; other kinds (a host NUMA node) are no device's.
    if (prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
      call.segment(uint64_t(*handle), int64_t(size), ptprof::wire::MemorySource::CudaPhysical, prop->location.id);
  }
  return r;
}
PTPROF_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  ApiCall call(HookId::cuMemRelease);
  auto fn = real<HookId::cuMemRelease, decltype(&::cuMemRelease)>();
  CUresult r = fn ? fn(handle) : kNoDriver;
  if (call.records()) {
    auto& a = call.args();
    a.ptr = uint64_t(handle);
    call.finish(r);
  }
  if (r == CUDA_SUCCESS) call.segment(uint64_t(handle), 0, ptprof::wire::MemorySource::CudaPhysical);
  return r;
}
PTPROF_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                                unsigned long long flags) {
  ApiCall call(HookId::cuMemMap);
  auto fn = real<HookId::cuMemMap, decltype(&::cuMemMap)>();
  CUresult r = fn ? fn(ptr, size, offset, handle, flags) : kNoDriver;
  if (call.records()) {
    auto& a = call.args();
    a.ptr = uint64_t(ptr);
    a.bytes = size;
    call.finish(r);
  }
  return r;
}
PTPROF_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  ApiCall call(HookId::cuMemUnmap);
  auto fn = real<HookId::cuMemUnmap, decltype(&::cuMemUnmap)>();
  CUresult r = fn ? fn(ptr, size) : kNoDriver;
  if (call.records()) {
    auto& a = call.args();
    a.ptr = uint64_t(ptr);
    a.bytes = size;
    call.finish(r);
  }
  return r;
}

PTPROF_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  return do_memcpy_async<HookId::cuMemcpyAsync>(dst, src, bytes, stream);
}
PTPROF_EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  return do_memcpy_async<HookId::cuMemcpyAsync_ptsz>(dst, src, bytes, stream);
}
PTPROF_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                                         size_t bytes, CUstream stream) {
  return do_memcpy_peer_async<HookId::cuMemcpyPeerAsync>(dst, dst_ctx, src, src_ctx, bytes, stream);
}
PTPROF_EXPORT CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                                              size_t bytes, CUstream stream) {
  return do_memcpy_peer_async<HookId::cuMemcpyPeerAsync_ptsz>(dst, dst_ctx, src, src_ctx, bytes, stream);
}
PTPROF_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream) {
  return do_htod_async<HookId::cuMemcpyHtoDAsync_v2>(dst, src, bytes, stream);
}
PTPROF_EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream) {
  return do_htod_async<HookId::cuMemcpyHtoDAsync_v2_ptsz>(dst, src, bytes, stream);
}
PTPROF_EXPORT CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  return do_dtoh_async<HookId::cuMemcpyDtoHAsync_v2>(dst, src, bytes, stream);
}
PTPROF_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  return do_dtoh_async<HookId::cuMemcpyDtoHAsync_v2_ptsz>(dst, src, bytes, stream);
}
PTPROF_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  return do_dtod_async<HookId::cuMemcpyDtoDAsync_v2>(dst, src, bytes, stream);
}
PTPROF_EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  return do_dtod_async<HookId::cuMemcpyDtoDAsync_v2_ptsz>(dst, src, bytes, stream);
}
PTPROF_EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* copy, CUstream stream) {
  return do_memcpy_2d_async<HookId::cuMemcpy2DAsync_v2>(copy, stream);
}
PTPROF_EXPORT CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* copy, CUstream stream) {
  return do_memcpy_2d_async<HookId::cuMemcpy2DAsync_v2_ptsz>(copy, stream);
}
PTPROF_EXPORT CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* copy, CUstream stream) {
  return do_memcpy_3d_async<HookId::cuMemcpy3DAsync_v2>(copy, stream);
}
PTPROF_EXPORT CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D* copy, CUstream stream) {
  return do_memcpy_3d_async<HookId::cuMemcpy3DAsync_v2_ptsz>(copy, stream);
}

PTPROF_EXPORT CUresult cuProfilerStart(void) { return do_profiler<HookId::cuProfilerStart>(true); }
PTPROF_EXPORT CUresult cuProfilerStop(void) { return do_profiler<HookId::cuProfilerStop>(false); }
// NOLINTEND(readability-identifier-naming)
