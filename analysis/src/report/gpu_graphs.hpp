// The per-graph rows of the GPU report: each CUDA graph's replays, kernels
// per replay, time per replay and the ops its kernels were captured under.
// A replay is one cudaGraphLaunch: the kernels it ran share its correlation
// id, and may straddle window files (the key is per process, not per trace).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "ptprof/analysis/report_gpu.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::report {

// What a graph kernel is attributed to, as the report names it.
std::string graph_op_label(const trace::Trace& t, const trace::CudaInfo& ci);

class GraphRows {
 public:
  // A kernel of trace `t` (process `pid`) run from a CUDA graph.
  void add_kernel(const trace::Trace& t, int32_t pid, const trace::Event& e, const trace::CudaInfo& ci);
  std::vector<GraphRow> finish() &&;  // by pid, graph

 private:
  struct Replay {
    int64_t start = INT64_MAX, end = INT64_MIN;
  };
  struct Graph {
    std::map<uint64_t, Replay> replays;  // by correlation id
    uint64_t kernels = 0;
    int64_t kernel_ns = 0;
    std::map<std::string, uint64_t> ops;
  };
  std::map<std::pair<int32_t, uint32_t>, Graph> graphs_;
};

}  // namespace ptprof::report
