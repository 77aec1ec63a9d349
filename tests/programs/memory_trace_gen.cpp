// Writes a synthetic trace of CUDA memory for `ptprof memory --snapshot`
// tests (tests/integration/test_memory_snapshot.py), in sizes the test adds
// up. One process, one thread, one step; Python stacks on the ops:
//   device 0: segment A (2 MiB) in aten::empty; blocks of 512 KiB (A+0, in
//     aten::empty), 256 KiB (A+512 KiB, aten::zeros, freed later in
//     aten::add) and 1 MiB (A+1 MiB, aten::mm): live at the end 1.5 MiB of
//     the 2 MiB reserved;
//   device 1: segment B (20 MiB) with a 4 MiB block at B+0 (aten::conv2d),
//     segment C (2 MiB) reserved and released;
//   then a cudaMalloc of 8 GiB that fails with cudaErrorMemoryAllocation in
//     aten::huge on device 1.
//
//   memory_trace_gen OUT.bin
#include <cstdio>
#include <string>
#include <vector>

#include "ptprof/analysis/trace_file.hpp"

using namespace ptprof;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: memory_trace_gen OUT.bin\n");
    return 2;
  }
  trace::Header h;
  h.host = "synthetic";
  h.window_start_ns = 1'000'000;
  h.ptprof_version = "test";
  auto created = format::TraceWriter::create(argv[1], h);
  if (!created) {
    std::fprintf(stderr, "%s\n", created.error().c_str());
    return 1;
  }
  auto& w = *created;
  const uint32_t proc = w->add_process({777, 1, "python train.py", 0});
  const uint32_t thread = w->add_thread({proc, 777, "python", 0, 0});
  const uint32_t train = w->intern("train.py"), model = w->intern("model.py");
  const uint32_t main_fn = w->intern("main"), forward = w->intern("forward");

  constexpr int64_t kKiB = 1024, kMiB = 1024 * kKiB;
  constexpr uint64_t kSegmentA = 0x7f0000000000, kSegmentB = 0x7f1000000000, kSegmentC = 0x7f2000000000;
  int64_t clock = 2'000'000;
  int64_t allocated[2] = {0, 0}, reserved[2] = {0, 0};

  trace::Event step;
  step.kind = trace::EventKind::Step;
  step.thread = thread;
  step.arg = 1;
  step.name = w->intern("ProfilerStep#1");
  step.start_ns = clock;

  // One op with its own stack (model.py(line): forward under train.py(10): main), and the memory events in it.
  struct Mem {
    int device;
    uint64_t ptr;
    int64_t bytes;
    bool segment;
  };
  auto op = [&](const char* name, uint32_t line, const std::vector<Mem>& mems) {
    trace::Event e;
    e.kind = trace::EventKind::Op;
    e.thread = thread;
    e.name = w->intern(name);
    e.start_ns = clock += 1000;
    e.stack = w->add_stack({trace::Frame{trace::FrameKind::Python, model, forward, line, 0},
                            trace::Frame{trace::FrameKind::Python, train, main_fn, 10, 0}});
    for (const Mem& m : mems) {
      trace::MemoryInfo info;
      info.ptr = m.ptr;
      info.bytes = m.bytes;
      info.device_type = trace::kDeviceCuda;
      info.device_index = int8_t(m.device);
      info.segment = m.segment;
      (m.segment ? reserved : allocated)[m.device] += m.bytes;
      info.total_allocated = allocated[m.device];
      info.total_reserved = reserved[m.device];
      info.op = info.top_op = e.name;
      trace::Event me;
      me.kind = trace::EventKind::Memory;
      me.thread = thread;
      me.name = w->intern("[memory]");
      me.start_ns = me.end_ns = clock += 100;
      me.arg = uint64_t(w->add_memory(info)) + 1;
      w->add_event(me);
    }
    e.end_ns = clock += 1000;
    w->add_event(e);
    return e;
  };
  op("aten::empty", 20, {{0, kSegmentA, 2 * kMiB, true}, {0, kSegmentA, 512 * kKiB, false}});
  op("aten::zeros", 21, {{0, kSegmentA + 512 * kKiB, 256 * kKiB, false}});
  op("aten::mm", 22, {{0, kSegmentA + 1 * kMiB, 1 * kMiB, false}});
  op("aten::add", 23, {{0, kSegmentA + 512 * kKiB, -256 * kKiB, false}});
  op("aten::conv2d", 24, {{1, kSegmentB, 20 * kMiB, true}, {1, kSegmentB, 4 * kMiB, false}});
  op("aten::cat", 25, {{1, kSegmentC, 2 * kMiB, true}, {1, kSegmentC, -2 * kMiB, true}});

  // The failed cudaMalloc, inside aten::huge.
  trace::Event huge;
  huge.kind = trace::EventKind::Op;
  huge.thread = thread;
  huge.name = w->intern("aten::huge");
  huge.start_ns = clock += 1000;
  huge.stack = w->add_stack({trace::Frame{trace::FrameKind::Python, model, forward, 26, 0},
                             trace::Frame{trace::FrameKind::Python, train, main_fn, 10, 0}});
  trace::CudaInfo c;
  c.bytes = 8ull << 30;
  c.result = 2;  // cudaErrorMemoryAllocation
  trace::Event api;
  api.kind = trace::EventKind::CudaApi;
  api.thread = thread;
  api.name = w->intern("cudaMalloc");
  api.start_ns = clock += 100;
  api.end_ns = clock += 100;
  api.arg = uint64_t(w->add_cuda(c)) + 1;
  w->add_event(api);
  huge.end_ns = clock += 1000;
  w->add_event(huge);

  step.end_ns = clock += 1000;
  w->add_event(step);
  w->set_window_end(clock + 1000);
  const Status done = w->finish();
  if (!done) {
    std::fprintf(stderr, "%s\n", done.message().c_str());
    return 1;
  }
  return 0;
}
