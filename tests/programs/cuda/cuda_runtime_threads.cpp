// Allocates, copies, launches and synchronises through the CUDA runtime from
// two threads (mode "threads"), or calls cudaMalloc/cudaFree in four
// iterations of which the middle two are cudaProfilerStart..Stop capture
// ranges (mode "profiler"). Linked against the stand-in runtime: "kernels"
// are host functions. Prints what it computed, so a run under ptprof can be
// compared with a plain one.
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>

// Device pointers and stream handles are integers made pointers (and back).
// NOLINTBEGIN(performance-no-int-to-ptr)

// The kernel: adds one to each of n ints. Exported, so its name resolves.
extern "C" __attribute__((visibility("default"))) void add_one(void** args) {
  int* p = *static_cast<int**>(args[0]);
  int n = *static_cast<int*>(args[1]);
  for (int i = 0; i < n; ++i) p[i] += 1;
}

namespace {

constexpr int kN = 64;

long work(int t) {
  auto stream = reinterpret_cast<cudaStream_t>(uintptr_t(0x100 + t));
  int host[kN];
  for (int i = 0; i < kN; ++i) host[i] = i;
  void* dev = nullptr;
  if (cudaMalloc(&dev, sizeof host) != cudaSuccess) return -1;
  cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice);
  int n = kN;
  void* args[] = {&dev, &n};
  cudaLaunchKernel(reinterpret_cast<const void*>(&add_one), dim3(2, 1, 1), dim3(32, 1, 1), args, 0, stream);
  cudaMemcpyAsync(host, dev, sizeof host, cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  cudaMemset(dev, 0, sizeof host);
  cudaFree(dev);
  // A pointer the device never handed out: the stand-in says cudaErrorInvalidValue.
  if (cudaFree(reinterpret_cast<void*>(1)) != cudaErrorInvalidValue) return -2;
  long sum = 0;
  for (int v : host) sum += v;
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "threads";
  if (std::strcmp(mode, "profiler") == 0) {
    for (int i = 0; i < 4; ++i) {
      const bool capture = i == 1 || i == 2;
      if (capture) cudaProfilerStart();
      void* p = nullptr;
      cudaMalloc(&p, 1000 + i);
      cudaFree(p);
      if (capture) cudaProfilerStop();
    }
    std::printf("profiler done\n");
    return 0;
  }
  long sums[2] = {0, 0};
  std::thread a([&] { sums[0] = work(0); });
  std::thread b([&] { sums[1] = work(1); });
  a.join();
  b.join();
  cudaDeviceSynchronize();
  std::printf("sums %ld %ld\n", sums[0], sums[1]);
  return sums[0] == 2080 && sums[1] == 2080 ? 0 : 1;
}
// NOLINTEND(performance-no-int-to-ptr)
