// A program without a CUDA runtime that looks for one as programs that
// support GPUs optionally do: dlsym(RTLD_DEFAULT, "cudaMalloc"), and calls it
// if it is there; it also has a weak reference to cudaMalloc (null without a
// runtime, unless something preloaded defines it). Then it loads the runtime
// (argv[1], RTLD_GLOBAL), looks again and calls what it finds. Prints
//   before: absent | before: found (result R)
//   after: result R | after: absent -1
//   weak: absent | weak: before R after R
//   cuda_absent /path/to/libcudart.so
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>

extern "C" __attribute__((weak)) cudaError_t cudaMalloc(void** p, size_t n);

namespace {

using Malloc = cudaError_t (*)(void**, size_t);

int call(Malloc f) {
  void* p = nullptr;
  return int(f(&p, 16));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  if (void* f = dlsym(RTLD_DEFAULT, "cudaMalloc"))
    std::printf("before: found (result %d)\n", call(reinterpret_cast<Malloc>(f)));
  else
    std::printf("before: absent\n");
  const Malloc weak = &cudaMalloc;
  const int weak_before = weak ? call(weak) : -1;
  if (!dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {
    std::printf("dlopen: %s\n", dlerror());
    return 2;
  }
  void* f = dlsym(RTLD_DEFAULT, "cudaMalloc");
  std::printf("after: %s %d\n", f ? "result" : "absent", f ? call(reinterpret_cast<Malloc>(f)) : -1);
  if (weak)
    std::printf("weak: before %d after %d\n", weak_before, call(weak));
  else
    std::printf("weak: absent\n");
  return 0;
}
