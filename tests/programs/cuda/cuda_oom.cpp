// Out of device memory on the stand-in runtime and driver: a 1 MiB segment
// is reserved in the range "model", then a cudaMalloc of 2^60 bytes in the
// range "huge_alloc" fails (the stand-in driver's malloc cannot give it:
// CUDA_ERROR_OUT_OF_MEMORY, which the runtime returns as
// cudaErrorMemoryAllocation), then the 1 MiB is freed. Prints what the
// failing call returned.
#include <cuda_runtime_api.h>

#include <cstdio>

#include "ptprof.h"

int main() {
  void* model = nullptr;
  void* huge = nullptr;
  ptprof_range_push("model");
  const cudaError_t small = cudaMalloc(&model, 1 << 20);
  ptprof_range_pop();
  ptprof_range_push("huge_alloc");
  const cudaError_t r = cudaMalloc(&huge, size_t(1) << 60);
  ptprof_range_pop();
  cudaFree(model);
  std::printf("cuda_oom: the huge cudaMalloc returned %d\n", int(r));
  return small == cudaSuccess && r == cudaErrorMemoryAllocation ? 0 : 1;
}
