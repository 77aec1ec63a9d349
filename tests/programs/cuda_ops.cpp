// Loads a CUDA runtime (so that the agent turns to CUPTI), then runs
// `steps` steps of one operator each, through the same agent entry points
// the torch bridge calls (handle 100 + step), ending each with ptprof_step().
// Each operator reports a 4096-byte CUDA allocation inside it and its free
// after it, as torch's allocator reports them to a profiler.
//   cuda_ops /path/to/libcudart.so [steps] [capture|graph]
// With "capture" every step but the first runs inside a cudaProfilerStart..
// cudaProfilerStop range (PTPROF_STEP=cudaProfilerApi), the runtime's own
// functions, looked up in the library that was loaded.
// With "graph" the steps stand in for a program using CUDA graphs, through
// the stand-in CUPTI's functions (tests/programs/fake_cupti.cpp, the library
// PTPROF_CUPTI_PATH names): step 0 captures graph 8 (node 800) inside op
// aten::fake (handle 100), step 1 graph 7 (node 700) inside aten::mm (101),
// each instantiated after its op (copies 1800 and 1700); every step from 1
// on replays both, inside an op graph_replay (200 + step).
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

void begin_op(const char* name, uint64_t handle) {
  ptprof_op_begin op{};
  op.name = name;
  op.handle = handle;
  op.seq_nr = -1;
  ptprof_agent_op_begin(&op);
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

// The stand-in CUPTI's graph functions (fake_cupti.cpp).
struct FakeGraphs {
  void (*capture)(uint64_t node, uint32_t graph) = nullptr;
  void (*instantiate)(uint64_t node, uint64_t copy, uint32_t graph) = nullptr;
  void (*launch)(uint64_t copy, uint32_t graph) = nullptr;
};

bool find_fake_graphs(FakeGraphs& g) {
  const char* path = std::getenv("PTPROF_CUPTI_PATH");
  void* cupti = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;  // the copy the agent loaded
  if (!cupti) return false;
  g.capture = reinterpret_cast<decltype(g.capture)>(dlsym(cupti, "fake_cupti_graph_capture"));
  g.instantiate = reinterpret_cast<decltype(g.instantiate)>(dlsym(cupti, "fake_cupti_graph_instantiate"));
  g.launch = reinterpret_cast<decltype(g.launch)>(dlsym(cupti, "fake_cupti_graph_launch"));
  return g.capture && g.instantiate && g.launch;
}

void graph_step(const FakeGraphs& g, int step) {
  if (step <= 1) {
    const uint32_t graph = step == 0 ? 8 : 7;
    const uint64_t handle = 100 + uint64_t(step);
    begin_op(step == 0 ? "aten::fake" : "aten::mm", handle);
    g.capture(graph * 100, graph);  // the op's launch, on a capturing stream
    ptprof_agent_op_end(handle);
    g.instantiate(graph * 100, graph * 100 + 1000, graph);
  }
  if (step >= 1) {
    const uint64_t handle = 200 + uint64_t(step);
    begin_op("graph_replay", handle);
    g.launch(1700, 7);
    g.launch(1800, 8);
    ptprof_agent_op_end(handle);
  }
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
  const bool graphs = argc > 3 && std::strcmp(argv[3], "graph") == 0;
  FakeGraphs fake;
  if (graphs && !find_fake_graphs(fake)) {
    std::fprintf(stderr, "cuda_ops: PTPROF_CUPTI_PATH names no stand-in CUPTI with graph functions\n");
    return 1;
  }
  auto start = reinterpret_cast<ProfilerFn>(dlsym(cudart, "cudaProfilerStart"));
  auto stop = reinterpret_cast<ProfilerFn>(dlsym(cudart, "cudaProfilerStop"));
  if (capture && (!start || !stop)) {
    std::fprintf(stderr, "cuda_ops: %s has no cudaProfilerStart/Stop\n", argv[1]);
    return 1;
  }
  for (int i = 0; i < steps; ++i) {
    const bool in_range = capture && i > 0;
    if (in_range) (void)start();  // no device here: the runtime refuses, the range still opens
    if (graphs)
      graph_step(fake, i);
    else
      run_op(100 + uint64_t(i));
    if (in_range) (void)stop();
    ptprof_step();
  }
  return 0;
}
