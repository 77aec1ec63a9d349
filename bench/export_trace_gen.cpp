// Writes a synthetic trace of N events shaped like a training loop (steps of
// nested ops with shapes and sequence numbers, on two threads) for timing
// `ptprof export`; bench/export_bench.sh runs it and measures the exports.
//
//   export_trace_gen OUT.bin N
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ptprof/analysis/trace_file.hpp"

using namespace ptprof;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: export_trace_gen OUT.bin N\n");
    return 2;
  }
  const uint64_t n = std::strtoull(argv[2], nullptr, 10);
  trace::Header h;
  h.host = "bench";
  h.realtime_offset_ns = 1'700'000'000'000'000'000;
  h.window_start_ns = 1'000'000'000;
  h.ptprof_version = "bench";
  auto created = format::TraceWriter::create(argv[1], h);
  if (!created) {
    std::fprintf(stderr, "%s\n", created.error().c_str());
    return 1;
  }
  auto& w = *created;
  std::vector<uint32_t> names, shapes;
  for (int i = 0; i < 60; ++i) names.push_back(w->intern("aten::op_" + std::to_string(i)));
  for (int i = 0; i < 16; ++i)
    shapes.push_back(w->intern("[[" + std::to_string(8 << (i % 8)) + ", 3, 16, 16], [8, 3, 3, 3], [8], [], []]"));
  uint32_t proc = w->add_process({4242, 1, "python train.py", 0});
  const uint32_t threads[2] = {w->add_thread({proc, 4242, "python", 0, 0}),
                               w->add_thread({proc, 4243, "pt_autograd_0", 0, 0})};
  int64_t clock = 2'000'000'000;
  uint64_t written = 0, step = 0, seq = 0;
  const uint64_t ops_per_step = 2000;
  while (written < n) {
    trace::Event s;
    s.kind = trace::EventKind::Step;
    s.thread = threads[0];
    s.arg = ++step;
    s.name = w->intern("ProfilerStep#" + std::to_string(step));
    s.start_ns = clock;
    ++written;
    for (uint64_t i = 0; i < ops_per_step && written + 2 <= n; i += 2, written += 2) {
      trace::Event top, child;
      top.thread = child.thread = threads[(i / 2) % 5 == 4];
      top.name = names[i % 10];
      top.seq_nr = int64_t(seq++);
      top.shapes = shapes[i % shapes.size()];
      top.start_ns = clock + 300;
      child.name = names[10 + i % 50];
      child.start_ns = top.start_ns + 200;
      child.end_ns = child.start_ns + 1500 + int64_t(i % 700);
      top.end_ns = child.end_ns + 150;
      clock = top.end_ns;
      w->add_event(child);
      w->add_event(top);
    }
    s.end_ns = clock + 200;
    clock = s.end_ns;
    w->add_event(s);
  }
  if (auto done = w->finish(); !done) {
    std::fprintf(stderr, "%s\n", done.message().c_str());
    return 1;
  }
  std::printf("%s: %llu events, %llu steps\n", argv[1], (unsigned long long)w->events_written(),
              (unsigned long long)step);
  return 0;
}
