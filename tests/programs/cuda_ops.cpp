// Loads a CUDA runtime (so that the agent turns to CUPTI), then runs
// `steps` steps of one operator each, through the same agent entry points
// the torch bridge calls (handle 100 + step), ending each with ptprof_step().
//   cuda_ops /path/to/libcudart.so [steps]
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "ptprof.h"
#include "ptprof/bridge_api.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cuda_ops /path/to/libcudart.so [steps]\n");
    return 2;
  }
  if (!dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) {
    std::fprintf(stderr, "cuda_ops: %s\n", dlerror());
    return 1;
  }
  const int steps = argc > 2 ? std::atoi(argv[2]) : 6;
  for (int i = 0; i < steps; ++i) {
    ptprof_op_begin op{};
    op.name = "aten::fake";
    op.handle = 100 + uint64_t(i);
    op.seq_nr = -1;
    ptprof_agent_op_begin(&op);
    ptprof_agent_op_end(op.handle);
    ptprof_step();
  }
  return 0;
}
