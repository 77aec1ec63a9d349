// Calls a library that carries its own (static) CUDA runtime.
#include <cstdio>

extern "C" int static_runtime_step(int bytes);

int main() {
  int rc = static_runtime_step(4096);
  std::printf("static runtime step %d\n", rc);
  return rc;
}
