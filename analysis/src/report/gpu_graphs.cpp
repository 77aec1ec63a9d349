#include "report/gpu_graphs.hpp"

#include <algorithm>

namespace ptprof::report {

std::string graph_op_label(const trace::Trace& t, const trace::CudaInfo& ci) {
  switch (ci.graph_capture) {
    case trace::GraphCapture::Outside:
      return "captured outside the window";
    case trace::GraphCapture::Recorded:
      if (ci.capture_op && ci.capture_op < t.strings.size()) return t.strings[ci.capture_op];
      return "(no op)";
    default:
      return "(capture not recorded)";
  }
}

void GraphRows::add_kernel(const trace::Trace& t, int32_t pid, const trace::Event& e, const trace::CudaInfo& ci) {
  Graph& g = graphs_[{pid, ci.graph_id}];
  Replay& r = g.replays[ci.correlation_id];
  r.start = std::min(r.start, e.start_ns);
  r.end = std::max(r.end, e.end_ns);
  ++g.kernels;
  g.kernel_ns += trace::duration_ns(e);
  ++g.ops[graph_op_label(t, ci)];
}

std::vector<GraphRow> GraphRows::finish() && {
  std::vector<GraphRow> rows;
  for (auto& [key, g] : graphs_) {
    GraphRow row;
    row.pid = key.first;
    row.graph_id = key.second;
    row.replays = g.replays.size();
    row.kernels = g.kernels;
    row.kernels_per_replay = row.replays ? double(g.kernels) / double(row.replays) : 0;
    std::vector<int64_t> spans;
    spans.reserve(g.replays.size());
    for (const auto& [corr, r] : g.replays) spans.push_back(std::max<int64_t>(0, r.end - r.start));
    row.replay_ns = distribution(std::move(spans));
    row.kernel_ns = g.kernel_ns;
    for (auto& [op, n] : g.ops) row.ops.push_back(GraphOpShare{op, n});
    std::stable_sort(row.ops.begin(), row.ops.end(),
                     [](const GraphOpShare& a, const GraphOpShare& b) { return a.kernels > b.kernels; });
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace ptprof::report
