// Device memory through the stand-in runtime and driver, in sizes a test can
// add up: one segment before the recorded step (freed in it), then in the
// step, under ranges, segments on devices 0 and 1 from cudaMalloc,
// cudaMallocAsync, cuMemAlloc, cuMemAllocAsync and cuMemCreate, each freed.
// Run with PTPROF_STEP=manual PTPROF_SCHEDULE=wait=1,active=1.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdio>

#include "ptprof.h"

// Device pointers, streams and contexts are integers made pointers.
// NOLINTBEGIN(performance-no-int-to-ptr)

namespace {

CUcontext context_of(int device) { return reinterpret_cast<CUcontext>(uintptr_t(device) + 1); }

}  // namespace

int main() {
  auto stream = reinterpret_cast<cudaStream_t>(uintptr_t(9));
  int failures = 0;
  auto ok = [&](bool good) { failures += good ? 0 : 1; };

  // Step 0, not recorded: a segment that lives into the recorded step.
  void* early = nullptr;
  ok(cudaMalloc(&early, 65536) == cudaSuccess);
  ptprof_step();

  // Step 1, recorded.
  void *a = nullptr, *b = nullptr, *c = nullptr;
  ptprof_range_push("runtime_segments");
  ok(cudaMalloc(&a, 1 << 20) == cudaSuccess);  // device 0
  ok(cudaSetDevice(1) == cudaSuccess);
  ok(cudaMalloc(&b, 4096) == cudaSuccess);
  ok(cudaMallocAsync(&c, 8192, stream) == cudaSuccess);
  ok(cudaFreeAsync(c, stream) == cudaSuccess);
  ptprof_range_pop();

  CUdeviceptr d = 0, e = 0;
  CUmemGenericAllocationHandle h = 0;
  ptprof_range_push("driver_segments");
  ok(cuCtxSetCurrent(context_of(1)) == CUDA_SUCCESS);
  ok(cuMemAlloc(&d, 3000) == CUDA_SUCCESS);  // device 1
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  ok(cuMemCreate(&h, 2 << 20, &prop, 0) == CUDA_SUCCESS);  // device 0, whatever is current
  ok(cuMemAllocAsync(&e, 512, reinterpret_cast<CUstream>(stream)) == CUDA_SUCCESS);
  ok(cuMemFreeAsync(e, reinterpret_cast<CUstream>(stream)) == CUDA_SUCCESS);
  ok(cuMemRelease(h) == CUDA_SUCCESS);
  ptprof_range_pop();

  ptprof_range_push("frees");
  ok(cudaFree(a) == cudaSuccess);
  ok(cudaFree(b) == cudaSuccess);
  ok(cuMemFree(d) == CUDA_SUCCESS);
  ok(cudaFree(early) == cudaSuccess);
  ok(cudaFree(reinterpret_cast<void*>(1)) != cudaSuccess);  // refused: frees nothing
  ptprof_range_pop();
  ptprof_step();

  std::printf("segments done, %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
// NOLINTEND(performance-no-int-to-ptr)
