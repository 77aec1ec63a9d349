// A test-only stand-in for the CUDA runtime (libcudart.so.13), built from the
// toolkit's headers: same soname, same symbols, host memory for device
// memory, and "kernels" that are host functions taking the argument array.
// Like the real runtime it reaches the driver through dlopen("libcuda.so.1"),
// dlsym(cuGetProcAddress_v2) and the pointers that returns, when a driver is
// there (the stand-in driver of stub_cuda_driver.cpp); without one it
// allocates with malloc.
#include <cuda.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

// Device pointers and stream handles are integers made pointers (and back).
// NOLINTBEGIN(performance-no-int-to-ptr)

// Built a second time into a library with hidden visibility, it stands for a
// runtime linked statically into that library (libcudart_static).
#ifndef STUB_EXPORT
#define STUB_EXPORT extern "C" __attribute__((visibility("default")))
#endif

namespace {

using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
using MemAlloc = CUresult (*)(CUdeviceptr*, size_t);
using MemFree = CUresult (*)(CUdeviceptr);

struct Driver {
  MemAlloc alloc = nullptr;
  MemFree free = nullptr;
};

// What the real runtime does once: find the driver and ask it for entry points.
const Driver& driver() {
  static Driver d = [] {
    Driver out;
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return out;
    auto get = reinterpret_cast<GetProc>(dlsym(h, "cuGetProcAddress_v2"));
    if (!get) return out;
    void* p = nullptr;
    if (get("cuMemAlloc", &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, nullptr) == CUDA_SUCCESS)
      out.alloc = reinterpret_cast<MemAlloc>(p);
    if (get("cuMemFree", &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, nullptr) == CUDA_SUCCESS)
      out.free = reinterpret_cast<MemFree>(p);
    return out;
  }();
  return d;
}

using Kernel = void (*)(void**);

// The current device, per thread as the runtime's is.
thread_local int current_device = 0;

}  // namespace

STUB_EXPORT cudaError_t cudaSetDevice(int device) {
  if (device < 0) return cudaErrorInvalidDevice;
  current_device = device;
  return cudaSuccess;
}
STUB_EXPORT cudaError_t cudaGetDevice(int* device) {
  if (!device) return cudaErrorInvalidValue;
  *device = current_device;
  return cudaSuccess;
}

// cudaMalloc calls this copy of the library served (cuda_two_copies.cpp
// tells two copies apart by it).
static int mallocs = 0;  // internal: each copy counts its own
STUB_EXPORT int stub_cudart_mallocs() { return mallocs; }

STUB_EXPORT cudaError_t cudaMalloc(void** p, size_t n) {
  if (!p) return cudaErrorInvalidValue;
  ++mallocs;
  if (driver().alloc) {
    CUdeviceptr d = 0;
    if (driver().alloc(&d, n) != CUDA_SUCCESS) return cudaErrorMemoryAllocation;
    *p = reinterpret_cast<void*>(d);
    return cudaSuccess;
  }
  *p = std::malloc(n);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
STUB_EXPORT cudaError_t cudaFree(void* p) {
  // A pointer this "device" never handed out: what the tests use for an error.
  if (reinterpret_cast<uintptr_t>(p) == 1) return cudaErrorInvalidValue;
  if (driver().free)
    return driver().free(reinterpret_cast<CUdeviceptr>(p)) == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
  std::free(p);
  return cudaSuccess;
}
STUB_EXPORT cudaError_t cudaMallocHost(void** p, size_t n) { return cudaMalloc(p, n); }
STUB_EXPORT cudaError_t cudaHostAlloc(void** p, size_t n, unsigned int) { return cudaMalloc(p, n); }
STUB_EXPORT cudaError_t cudaFreeHost(void* p) { return cudaFree(p); }
STUB_EXPORT cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t) { return cudaMalloc(p, n); }
STUB_EXPORT cudaError_t cudaFreeAsync(void* p, cudaStream_t) { return cudaFree(p); }
STUB_EXPORT cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) {
  std::memcpy(d, s, n);
  return cudaSuccess;
}
STUB_EXPORT cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind k, cudaStream_t) {
  return cudaMemcpy(d, s, n, k);
}
STUB_EXPORT cudaError_t cudaMemcpy2D(void* d, size_t dp, const void* s, size_t sp, size_t w, size_t h, cudaMemcpyKind) {
  for (size_t r = 0; r < h; ++r) std::memcpy(static_cast<char*>(d) + r * dp, static_cast<const char*>(s) + r * sp, w);
  return cudaSuccess;
}
STUB_EXPORT cudaError_t cudaMemcpy2DAsync(void* d, size_t dp, const void* s, size_t sp, size_t w, size_t h,
                                          cudaMemcpyKind k, cudaStream_t) {
  return cudaMemcpy2D(d, dp, s, sp, w, h, k);
}
STUB_EXPORT cudaError_t cudaMemset(void* p, int v, size_t n) {
  std::memset(p, v, n);
  return cudaSuccess;
}
STUB_EXPORT cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t) { return cudaMemset(p, v, n); }
STUB_EXPORT cudaError_t cudaLaunchKernel(const void* f, dim3, dim3, void** args, size_t, cudaStream_t) {
  if (!f) return cudaErrorInvalidDeviceFunction;
  reinterpret_cast<Kernel>(const_cast<void*>(f))(args);
  return cudaSuccess;
}
STUB_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* c, const void* f, void** args) {
  return cudaLaunchKernel(f, c->gridDim, c->blockDim, args, c->dynamicSmemBytes, c->stream);
}
STUB_EXPORT cudaError_t cudaFuncGetName(const char** name, const void* f) {
  Dl_info info{};
  if (!name || !dladdr(f, &info) || !info.dli_sname) return cudaErrorInvalidDeviceFunction;
  *name = info.dli_sname;
  return cudaSuccess;
}
STUB_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
STUB_EXPORT cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
STUB_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
STUB_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) { return cudaSuccess; }
STUB_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t, cudaStream_t) { return cudaSuccess; }
STUB_EXPORT cudaError_t cudaProfilerStart(void) { return cudaSuccess; }
STUB_EXPORT cudaError_t cudaProfilerStop(void) { return cudaSuccess; }
// NOLINTEND(performance-no-int-to-ptr)
