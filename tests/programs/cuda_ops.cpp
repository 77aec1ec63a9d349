// Loads a CUDA runtime (so that the agent turns to CUPTI), then runs
// `steps` steps of one operator each, through the same agent entry points
// the torch bridge calls (handle 100 + step), ending each with ptprof_step().
// Each operator reports a 4096-byte CUDA allocation inside it and its free
// after it, as torch's allocator reports them to a profiler.
//   cuda_ops /path/to/libcudart.so [steps] [capture]
// With "capture" every step but the first runs inside a cudaProfilerStart..
// cudaProfilerStop range (PTPROF_STEP=cudaProfilerApi), the runtime's own
// functions, looked up in the library that was loaded.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ptprof.h"
#include "ptprof/bridge_api.h"

namespace {

using ProfilerFn = int (*)();

void report_memory(uint64_t ptr, int64_t bytes) {
  ptprof_memory_event m{};
  m.ptr = ptr;
  m.bytes = bytes;
  m.total_allocated = bytes > 0 ? bytes : 0;
  m.total_reserved = 1 << 20;
  m.device_type = 1;  // c10::DeviceType::CUDA
  m.device_index = 0;
  ptprof_agent_memory(&m);
}

void run_op(uint64_t handle) {
  ptprof_op_begin op{};
  op.name = "aten::fake";
  op.handle = handle;
  op.seq_nr = -1;
  ptprof_agent_op_begin(&op);
  report_memory(0x7000'0000 + handle * 0x1000, 4096);
  ptprof_agent_op_end(op.handle);
  report_memory(0x7000'0000 + handle * 0x1000, -4096);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cuda_ops /path/to/libcudart.so [steps] [capture]\n");
    return 2;
  }
  void* cudart = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!cudart) {
    std::fprintf(stderr, "cuda_ops: %s\n", dlerror());
    return 1;
  }
  const int steps = argc > 2 ? std::atoi(argv[2]) : 6;
  const bool capture = argc > 3 && std::strcmp(argv[3], "capture") == 0;
  auto start = reinterpret_cast<ProfilerFn>(dlsym(cudart, "cudaProfilerStart"));
  auto stop = reinterpret_cast<ProfilerFn>(dlsym(cudart, "cudaProfilerStop"));
  if (capture && (!start || !stop)) {
    std::fprintf(stderr, "cuda_ops: %s has no cudaProfilerStart/Stop\n", argv[1]);
    return 1;
  }
  for (int i = 0; i < steps; ++i) {
    const bool in_range = capture && i > 0;
    if (in_range) (void)start();  // no device here: the runtime refuses, the range still opens
    run_op(100 + uint64_t(i));
    if (in_range) (void)stop();
    ptprof_step();
  }
  return 0;
}
