// Writes the trace files of a synthetic distributed job for timing the
// multi-rank merge of `ptprof report` (docs/scale.md): one file per rank,
// named as the launcher names them (<host>.r<rank>.<pid>.w000.bin), each a
// training loop of steps of nested ops with one allreduce per step (c10d's op
// with gloo's work inside); the last rank's steps are 5% slower.
//
//   rank_trace_gen DIR RANKS EVENTS_PER_RANK [--numbered]
//
// --numbered: every even step makes two allreduces as NCCL records them
// (c10d's op with a record_param_comms inside, numbered by torch: process
// group "0", sequence numbers 2N and 2N+1), the odd ranks in the opposite
// order, so that matching by order and by number differ.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ptprof/analysis/trace_file.hpp"

using namespace ptprof;

namespace {

int write_rank(const std::string& dir, uint32_t rank, uint32_t ranks, uint64_t n, bool numbered) {
  trace::Header h;
  h.host = "node" + std::to_string(rank / 8);
  h.realtime_offset_ns = 1'700'000'000'000'000'000;
  h.window_start_ns = 1'000'000'000;
  h.ptprof_version = "bench";
  const int32_t pid = int32_t(10000 + rank);
  const std::string path = dir + "/" + h.host + ".r" + std::to_string(rank) + "." + std::to_string(pid) + ".w000.bin";
  auto created = format::TraceWriter::create(path, h);
  if (!created) {
    std::fprintf(stderr, "%s\n", created.error().c_str());
    return 1;
  }
  auto& w = *created;
  std::vector<uint32_t> names;
  names.reserve(60);
  for (int i = 0; i < 60; ++i) names.push_back(w->intern("aten::op_" + std::to_string(i)));
  const uint32_t c10d = w->intern("c10d::allreduce_"), gloo = w->intern("gloo:all_reduce");
  const uint32_t param_comms = w->intern("record_param_comms"), allreduce = w->intern("allreduce");
  const uint32_t group = w->intern("0"), group_desc = w->intern("default_pg"), dtype = w->intern("Float");
  trace::Process p;
  p.pid = pid;
  p.ppid = 1;
  p.cmdline = "python train.py";
  p.rank = int32_t(rank);
  p.local_rank = int32_t(rank % 8);
  p.world_size = int32_t(ranks);
  p.host = h.host;
  const uint32_t proc = w->add_process(p);
  const uint32_t thread = w->add_thread({proc, pid, "python", 0, 0});
  const int64_t slow = rank + 1 == ranks ? 105 : 100;  // percent
  int64_t clock = 2'000'000'000;
  uint64_t written = 0, step = 0;
  const uint64_t ops_per_step = 2000;
  while (written < n) {
    trace::Event s;
    s.kind = trace::EventKind::Step;
    s.thread = thread;
    s.arg = ++step;
    s.name = w->intern("ProfilerStep#" + std::to_string(step));
    s.start_ns = clock;
    ++written;
    for (uint64_t i = 0; i < ops_per_step && written + 2 <= n; i += 2, written += 2) {
      trace::Event top, child;
      top.thread = child.thread = thread;
      const bool comm = i == ops_per_step / 2;
      // The second allreduce of a numbered step, and which of the two this is.
      const bool second = numbered && step % 2 == 0 && i == ops_per_step / 2 + 2;
      const bool by_number = numbered && step % 2 == 0 && (comm || second);
      top.name = comm || second ? c10d : names[i % 10];
      child.name = by_number ? param_comms : comm ? gloo : names[10 + i % 50];
      top.start_ns = clock + 300;
      child.start_ns = top.start_ns + 200;
      child.end_ns = child.start_ns + (1500 + int64_t(i % 700)) * slow / 100;
      top.end_ns = child.end_ns + 150;
      clock = top.end_ns;
      w->add_event(child);
      w->add_event(top);
      if (by_number) {
        trace::CollectiveInfo c;
        c.thread = thread;
        c.start_ns = child.start_ns;
        c.name = allreduce;
        c.process_group = group;
        c.process_group_desc = group_desc;
        c.dtype = dtype;
        c.seq = int64_t(2 * step) + ((rank % 2 == 1) != second ? 1 : 0);
        c.in_elements = c.out_elements = 1 << 20;
        c.group_size = int32_t(ranks);
        c.rank = int32_t(rank);
        w->add_collective(c);
      }
    }
    s.end_ns = clock + 200;
    clock = s.end_ns;
    w->add_event(s);
  }
  if (auto done = w->finish(); !done.ok()) {
    std::fprintf(stderr, "%s\n", done.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool numbered = argc == 5 && std::string(argv[4]) == "--numbered";
  if (argc != 4 && !numbered) {
    std::fprintf(stderr, "usage: rank_trace_gen DIR RANKS EVENTS_PER_RANK [--numbered]\n");
    return 2;
  }
  const uint32_t ranks = uint32_t(std::strtoul(argv[2], nullptr, 10));
  const uint64_t n = std::strtoull(argv[3], nullptr, 10);
  for (uint32_t r = 0; r < ranks; ++r)
    if (int rc = write_rank(argv[1], r, ranks, n, numbered); rc != 0) return rc;
  std::printf("%s: %u ranks, %llu events each\n", argv[1], ranks, (unsigned long long)n);
  return 0;
}
