// Two copies of the CUDA runtime in one process: the program's own (the
// stand-in libcudart.so.13 it is linked to) and a plugin's, loaded RTLD_LOCAL
// (argv[1], the stand-in built as libcudart.so.12). The plugin's code looks up
// cudaMalloc on its own copy with dlsym and calls it; then the program calls
// its own cudaMalloc. Each call must reach the copy its caller would reach
// without ptprof: prints "own 1 plugin 1" and exits 0, else exits 1.
//   cuda_two_copies /path/to/plugin/libcudart.so.12
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>

extern "C" int stub_cudart_mallocs();

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!plugin) {
    std::printf("dlopen: %s\n", dlerror());
    return 2;
  }
  using Malloc = cudaError_t (*)(void**, size_t);
  using Count = int (*)();
  auto plugin_malloc = reinterpret_cast<Malloc>(dlsym(plugin, "cudaMalloc"));
  auto plugin_count = reinterpret_cast<Count>(dlsym(plugin, "stub_cudart_mallocs"));
  if (!plugin_malloc || !plugin_count) return 2;
  void* p = nullptr;
  if (plugin_malloc(&p, 16) != cudaSuccess) return 2;
  if (cudaMalloc(&p, 16) != cudaSuccess) return 2;
  const int own = stub_cudart_mallocs();
  const int theirs = plugin_count();
  std::printf("own %d plugin %d\n", own, theirs);
  return own == 1 && theirs == 1 ? 0 : 1;
}
