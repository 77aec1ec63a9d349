// Loads a CUDA runtime with dlopen, as a program that finds CUDA at run time
// does, asks it for the device count and prints the result code; then
// records one mark so that a window file is written.
//   cuda_dlopen /path/to/libcudart.so
#include <dlfcn.h>

#include <cstdio>

#include "ptprof.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: cuda_dlopen /path/to/libcudart.so\n");
    return 2;
  }
  void* rt = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!rt) {
    std::fprintf(stderr, "cuda_dlopen: %s\n", dlerror());
    return 1;
  }
  using GetDeviceCount = int (*)(int*);
  auto get_count = reinterpret_cast<GetDeviceCount>(dlsym(rt, "cudaGetDeviceCount"));
  int count = -1;
  int rc = get_count ? get_count(&count) : -1;
  std::printf("cudaGetDeviceCount: %d (count %d)\n", rc, count);
  ptprof_mark("after cuda");
  return 0;
}
