// Calls the toolkit's real libcudart (no driver on this machine, so every
// call fails) and prints each call's name and the code it returned:
// "cudaMalloc 35", one line per call.
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <cstdio>

extern "C" __attribute__((visibility("default"))) void real_kernel(void**) {}

namespace {
void show(const char* name, cudaError_t e) { std::printf("%s %d\n", name, int(e)); }
}  // namespace

int main() {
  void* p = nullptr;
  char host[64] = {};
  show("cudaMalloc", cudaMalloc(&p, 64));
  show("cudaMemcpy", cudaMemcpy(p, host, sizeof host, cudaMemcpyHostToDevice));
  show("cudaMemcpyAsync", cudaMemcpyAsync(host, p, sizeof host, cudaMemcpyDeviceToHost, nullptr));
  show("cudaMemset", cudaMemset(p, 0, sizeof host));
  show("cudaMemsetAsync", cudaMemsetAsync(p, 0, sizeof host, nullptr));
  void* args[] = {&p};
  show("cudaLaunchKernel",
       cudaLaunchKernel(reinterpret_cast<const void*>(&real_kernel), dim3(1, 1, 1), dim3(1, 1, 1), args, 0, nullptr));
  show("cudaStreamSynchronize", cudaStreamSynchronize(nullptr));
  show("cudaDeviceSynchronize", cudaDeviceSynchronize());
  show("cudaMallocHost", cudaMallocHost(&p, 64));
  show("cudaFreeHost", cudaFreeHost(p));
  show("cudaFree", cudaFree(p));
  show("cudaProfilerStart", cudaProfilerStart());
  show("cudaProfilerStop", cudaProfilerStop());
  show("cudaMalloc", cudaMalloc(&p, 128));
  return 0;
}
