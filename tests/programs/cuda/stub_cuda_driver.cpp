// A test-only stand-in for the CUDA driver (libcuda.so.1), built from the
// toolkit's headers: the entry points ptprof wraps, under their exported
// (versioned) names, and a cuGetProcAddress that maps API names to them as
// the real driver does (cuMemAlloc -> cuMemAlloc_v2; the per-thread default
// stream flag -> the _ptsz exports). A CUfunction is a StubFunction.
#include <cuda.h>
#include <cudaProfiler.h>

#include <cstdlib>
#include <cstring>

#include "stub_function.hpp"

// Device pointers and stream handles are integers made pointers (and back);
// the entry points' names are the driver's.
// NOLINTBEGIN(performance-no-int-to-ptr,readability-identifier-naming)

#undef cuGetProcAddress
#define STUB_EXPORT extern "C" __attribute__((visibility("default")))

extern "C" {
CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                             unsigned int by, unsigned int bz, unsigned int shared, CUstream stream, void** params,
                             void** extra);
}

namespace {

CUresult mem_alloc(CUdeviceptr* p, size_t n) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  *p = reinterpret_cast<CUdeviceptr>(std::malloc(n));
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult launch(CUfunction f, void** params) {
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  reinterpret_cast<const StubFunction*>(f)->run(params);
  return CUDA_SUCCESS;
}

// With STUB_CUDA_INTERNAL_POINTERS=1, cuGetProcAddress hands out these
// instead of the exports, as a driver may hand out internal entry points.
CUresult internal_mem_alloc(CUdeviceptr* p, size_t n) { return mem_alloc(p, n); }
CUresult internal_launch(CUfunction f, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                         unsigned int, unsigned int, CUstream, void** params, void**) {
  return launch(f, params);
}
CUresult internal_launch_ptsz(CUfunction f, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                              unsigned int, unsigned int, CUstream, void** params, void**) {
  return launch(f, params);
}

// The current context's device, per thread as the driver's is; a context
// is its device + 1 made a pointer.
thread_local CUdevice current_device = 0;

bool internal_pointers() {
  const char* v = std::getenv("STUB_CUDA_INTERNAL_POINTERS");
  return v && v[0] == '1';
}

}  // namespace

STUB_EXPORT CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }
STUB_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) { return mem_alloc(p, n); }
STUB_EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  std::free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* p, size_t n, CUstream) { return mem_alloc(p, n); }
STUB_EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream) {
  std::free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}
// A physical allocation's handle is host memory of its size.
STUB_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* h, size_t n, const CUmemAllocationProp* prop,
                                 unsigned long long) {
  if (!h || !prop) return CUDA_ERROR_INVALID_VALUE;
  *h = reinterpret_cast<CUmemGenericAllocationHandle>(std::malloc(n));
  return *h ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
STUB_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h) {
  std::free(reinterpret_cast<void*>(h));
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  current_device = CUdevice(reinterpret_cast<uintptr_t>(ctx) - 1);
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  *device = current_device;
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void* s, size_t n, CUstream) {
  std::memcpy(reinterpret_cast<void*>(d), s, n);
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuMemcpyDtoHAsync_v2(void* d, CUdeviceptr s, size_t n, CUstream) {
  std::memcpy(d, reinterpret_cast<const void*>(s), n);
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                                    unsigned int, unsigned int, CUstream, void** params, void**) {
  return launch(f, params);
}
STUB_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int, unsigned int, unsigned int, unsigned int,
                                         unsigned int, unsigned int, unsigned int, CUstream, void** params, void**) {
  return launch(f, params);
}
STUB_EXPORT CUresult cuFuncGetName(const char** name, CUfunction f) {
  if (!name || !f) return CUDA_ERROR_INVALID_VALUE;
  *name = reinterpret_cast<const StubFunction*>(f)->name;
  return CUDA_SUCCESS;
}
STUB_EXPORT CUresult cuProfilerStart(void) { return CUDA_SUCCESS; }
STUB_EXPORT CUresult cuProfilerStop(void) { return CUDA_SUCCESS; }

namespace {
struct Entry {
  const char* api;
  void* plain;
  void* per_thread;
};
}  // namespace

STUB_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult* status) {
  const bool internal = internal_pointers();
  const Entry entries[] = {
      {"cuInit", reinterpret_cast<void*>(&cuInit), nullptr},
      {"cuGetProcAddress", reinterpret_cast<void*>(&cuGetProcAddress_v2), nullptr},
      {"cuMemAlloc", internal ? reinterpret_cast<void*>(&internal_mem_alloc) : reinterpret_cast<void*>(&cuMemAlloc_v2),
       nullptr},
      {"cuMemFree", reinterpret_cast<void*>(&cuMemFree_v2), nullptr},
      {"cuMemcpyHtoDAsync", reinterpret_cast<void*>(&cuMemcpyHtoDAsync_v2), nullptr},
      {"cuMemcpyDtoHAsync", reinterpret_cast<void*>(&cuMemcpyDtoHAsync_v2), nullptr},
      {"cuLaunchKernel",
       internal ? reinterpret_cast<void*>(&internal_launch) : reinterpret_cast<void*>(&cuLaunchKernel),
       internal ? reinterpret_cast<void*>(&internal_launch_ptsz) : reinterpret_cast<void*>(&cuLaunchKernel_ptsz)},
      {"cuFuncGetName", reinterpret_cast<void*>(&cuFuncGetName), nullptr},
  };
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  for (const Entry& e : entries) {
    if (std::strcmp(e.api, symbol) != 0) continue;
    *pfn = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && e.per_thread ? e.per_thread : e.plain;
    if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
  }
  *pfn = nullptr;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}
STUB_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, version, flags, nullptr);
}
// NOLINTEND(performance-no-int-to-ptr,readability-identifier-naming)
