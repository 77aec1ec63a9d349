// A library with the runtime inside it, as libraries linked with
// libcudart_static are: its runtime calls bind within the library, so no
// preloaded definition sees them; the runtime still reaches the driver
// through dlopen + dlsym(cuGetProcAddress_v2), where ptprof's wrappers are
// handed out.
#include <cuda_runtime_api.h>

extern "C" __attribute__((visibility("default"))) int static_runtime_step(int bytes) {
  void* p = nullptr;
  if (cudaMalloc(&p, size_t(bytes)) != cudaSuccess) return 1;
  return cudaFree(p) == cudaSuccess ? 0 : 2;
}
