// Calls the stand-in driver by name, through pointers from cuGetProcAddress,
// and through cuGetProcAddress itself taken with dlopen + dlsym as a runtime
// does; then calls the stand-in runtime, which reaches the driver that way.
// Prints, for each pointer it got, whether it points into ptprof's agent
// (1: the call goes through ptprof's wrapper).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include "stub_function.hpp"

// Device pointers and stream handles are integers made pointers (and back).
// NOLINTBEGIN(performance-no-int-to-ptr)

namespace {

int hits = 0;
void count_hit(void**) { ++hits; }

int in_agent(void* fn) {
  Dl_info info{};
  return dladdr(fn, &info) && info.dli_fname && std::strstr(info.dli_fname, "libptprof_agent") ? 1 : 0;
}

using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
using MemAlloc = CUresult (*)(CUdeviceptr*, size_t);
using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                            void**, void**);

}  // namespace

int main() {
  if (cuInit(0) != CUDA_SUCCESS) return 1;
  StubFunction kernel{"stub_kernel", &count_hit};
  auto f = reinterpret_cast<CUfunction>(&kernel);
  auto stream = reinterpret_cast<CUstream>(uintptr_t(7));

  // By name.
  CUdeviceptr a = 0, b = 0, c = 0;
  cuMemAlloc(&a, 128);
  cuLaunchKernel(f, 4, 1, 1, 64, 1, 1, 0, stream, nullptr, nullptr);

  // Through cuGetProcAddress.
  void* alloc = nullptr;
  void* launch = nullptr;
  cuGetProcAddress("cuMemAlloc", &alloc, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, nullptr);
  cuGetProcAddress("cuLaunchKernel", &launch, CUDA_VERSION, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, nullptr);
  reinterpret_cast<MemAlloc>(alloc)(&b, 256);
  reinterpret_cast<Launch>(launch)(f, 1, 2, 3, 4, 5, 6, 0, stream, nullptr, nullptr);

  // Through cuGetProcAddress found with dlsym on the driver's handle.
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  auto get = reinterpret_cast<GetProc>(h ? dlsym(h, "cuGetProcAddress_v2") : nullptr);
  void* alloc2 = nullptr;
  if (get) get("cuMemAlloc", &alloc2, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, nullptr);
  if (alloc2) reinterpret_cast<MemAlloc>(alloc2)(&c, 512);

  // The runtime, which calls the driver itself.
  void* r = nullptr;
  cudaMalloc(&r, 64);
  cudaFree(r);

  cuMemFree(a);
  cuMemFree(b);
  cuMemFree(c);
  std::printf("wrapped %d %d %d %d hits %d\n", in_agent(alloc), in_agent(launch),
              get ? in_agent(reinterpret_cast<void*>(get)) : -1, alloc2 ? in_agent(alloc2) : -1, hits);
  return hits == 2 && a && b && c ? 0 : 1;
}
// NOLINTEND(performance-no-int-to-ptr)
