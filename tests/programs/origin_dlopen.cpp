// Loads liborigin_probe.so from its own directory through "$ORIGIN", as
// programs that ship their plugins next to them do, and calls it: prints
// "origin_probe 42" and exits 0, or prints dlerror() and exits 1. Not linked
// to the agent: the tests preload it.
//   origin_dlopen
#include <dlfcn.h>

#include <cstdio>

int main() {
  void* h = dlopen("$ORIGIN/liborigin_probe.so", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::printf("dlopen(\"$ORIGIN/liborigin_probe.so\"): %s\n", dlerror());
    return 1;
  }
  auto probe = reinterpret_cast<int (*)()>(dlsym(h, "origin_probe"));
  if (!probe) return 1;
  std::printf("origin_probe %d\n", probe());
  return 0;
}
