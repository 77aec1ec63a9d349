// GpuReport: the nsys-stats-style sections (see report_gpu.hpp).
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "ptprof/analysis/report_gpu.hpp"
#include "ptprof/cuda_status.hpp"
#include "report/gpu_graphs.hpp"

namespace ptprof::report {

using trace::EventKind;

Distribution distribution(std::vector<int64_t> v) {
  Distribution d;
  if (v.empty()) return d;
  std::sort(v.begin(), v.end());
  d.count = v.size();
  for (int64_t x : v) d.total += x;
  d.avg = double(d.total) / double(d.count);
  d.min = v.front();
  d.max = v.back();
  const size_t mid = v.size() / 2;
  d.med = v.size() % 2 ? double(v[mid]) : (double(v[mid - 1]) + double(v[mid])) / 2.0;
  if (v.size() > 1) {
    double ss = 0;
    for (int64_t x : v) ss += (double(x) - d.avg) * (double(x) - d.avg);
    d.stddev = std::sqrt(ss / double(v.size() - 1));
  }
  return d;
}

namespace {

bool is_gpu_work(EventKind k) { return k == EventKind::Kernel || k == EventKind::Memcpy || k == EventKind::Memset; }

const trace::CudaInfo* info_of(const trace::Trace& t, const trace::Event& e) {
  return e.arg >= 1 && e.arg <= t.cuda.size() ? &t.cuda[e.arg - 1] : nullptr;
}

// Total length of the union of intervals, clipped to [lo, hi).
int64_t union_ns(std::vector<std::pair<int64_t, int64_t>>& iv, int64_t lo, int64_t hi) {
  std::sort(iv.begin(), iv.end());
  int64_t busy = 0, cur_s = 0, cur_e = INT64_MIN;
  for (auto [s, e] : iv) {
    s = std::max(s, lo);
    e = std::min(e, hi);
    if (e <= s) continue;
    if (s > cur_e) {
      if (cur_e > cur_s) busy += cur_e - cur_s;
      cur_s = s;
      cur_e = e;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  if (cur_e > cur_s) busy += cur_e - cur_s;
  return busy;
}

int64_t percentile(const std::vector<int64_t>& sorted, double p) {
  // Nearest rank: the smallest value with at least p% of values at or below it.
  if (sorted.empty()) return 0;
  size_t rank = size_t(std::ceil(p / 100.0 * double(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

struct GpuReportBuilder::Impl {
  using KernelKey = std::tuple<std::string, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t>;
  std::map<KernelKey, std::vector<int64_t>> kernels;
  std::map<std::string, std::pair<std::vector<int64_t>, std::vector<int64_t>>> memory;  // times, bytes
  std::map<std::string, std::vector<int64_t>> overheads;
  std::map<std::tuple<int32_t, uint32_t, uint64_t>, std::pair<std::string, std::vector<int64_t>>> graph_nodes;
  GraphRows graphs;
  std::map<std::pair<int32_t, int32_t>, DeviceUtilRow> devices;
  std::map<std::tuple<int32_t, int32_t, uint64_t>, StreamUtilRow> streams;
  std::map<std::tuple<uint64_t, int32_t, int32_t>, StepUtilRow> steps;
  std::vector<int64_t> latencies;
  std::vector<std::string> notes;
  GpuReport r;
};

GpuReportBuilder::GpuReportBuilder() : impl_(std::make_unique<Impl>()) {}
GpuReportBuilder::~GpuReportBuilder() = default;

void GpuReportBuilder::add(const trace::Trace& t) {
  Impl& m = *impl_;
  auto name_of = [&](const trace::Event& e) -> std::string {
    return e.name < t.strings.size() ? t.strings[e.name] : std::string();
  };
  auto pid_of = [&](const trace::Event& e) -> int32_t {
    if (e.thread >= t.threads.size()) return 0;
    uint32_t p = t.threads[e.thread].process;
    return p < t.processes.size() ? t.processes[p].pid : 0;
  };
  auto device_of = [&](const trace::Event& e, const trace::CudaInfo* ci) -> int32_t {
    if (ci && ci->device >= 0) return ci->device;
    return e.thread < t.threads.size() ? t.threads[e.thread].device : -1;
  };

  // What the joins need: the ops of each process, and the launch calls.
  std::unordered_set<uint64_t> op_ids;  // (pid, op id) hashed together
  auto key = [](int32_t pid, uint64_t id) { return id * 0x9e3779b97f4a7c15ull ^ uint64_t(uint32_t(pid)); };
  std::unordered_map<uint64_t, int64_t> launch_api, launch_cupti;                        // (pid, correlation) -> start
  std::map<std::pair<int32_t, int32_t>, std::vector<std::pair<int64_t, int64_t>>> busy;  // (pid, device)
  std::map<std::tuple<int32_t, int32_t, uint64_t>, std::vector<std::pair<int64_t, int64_t>>> busy_streams;
  struct StepSpan {
    uint64_t n;
    int32_t pid;
    int64_t start, end;
  };
  std::vector<StepSpan> step_spans;
  for (const auto& e : t.events) {
    const trace::CudaInfo* ci = info_of(t, e);
    switch (e.kind) {
      case EventKind::Op:
        if (e.arg) op_ids.insert(key(pid_of(e), e.arg));
        break;
      case EventKind::CudaApi:
        // CUPTI's start where the call keeps the hook's times (trace.hpp): Kineto's measure.
        if (ci && ci->correlation_id)
          launch_api.emplace(key(pid_of(e), ci->correlation_id), ci->cupti_start_ns ? ci->cupti_start_ns : e.start_ns);
        break;
      case EventKind::CuptiApi:
        if (ci && ci->correlation_id) launch_cupti.emplace(key(pid_of(e), ci->correlation_id), e.start_ns);
        break;
      case EventKind::Step:
        step_spans.push_back({e.arg, pid_of(e), e.start_ns, e.end_ns});
        break;
      case EventKind::Mark:
        // A device mark is data for the exports, not a line to print.
        if (wire::is_cuda_note(t, e) && !wire::is_cuda_device_mark(t, e) &&
            std::find(m.notes.begin(), m.notes.end(), name_of(e)) == m.notes.end())
          m.notes.push_back(name_of(e));
        break;
      default:
        break;
    }
  }

  // The hooked call first; CUPTI's record of it when the hooks saw none.
  auto launch_start = [&](int32_t pid, uint64_t corr) -> std::optional<int64_t> {
    if (!corr) return std::nullopt;
    if (auto it = launch_api.find(key(pid, corr)); it != launch_api.end()) return it->second;
    if (auto it = launch_cupti.find(key(pid, corr)); it != launch_cupti.end()) return it->second;
    return std::nullopt;
  };
  for (const auto& e : t.events) {
    const trace::CudaInfo* ci = info_of(t, e);
    if (e.kind == EventKind::GpuOverhead) {
      m.overheads[name_of(e)].push_back(trace::duration_ns(e));
      continue;
    }
    if (!is_gpu_work(e.kind)) continue;
    const int32_t pid = pid_of(e);
    const int64_t dur = trace::duration_ns(e);
    busy[{pid, device_of(e, ci)}].emplace_back(e.start_ns, e.end_ns);
    busy_streams[{pid, device_of(e, ci), ci ? ci->stream : 0}].emplace_back(e.start_ns, e.end_ns);
    const bool matched = ci && ci->external_id && op_ids.count(key(pid, ci->external_id));
    if (matched) ++m.r.matched;
    // Replayed from a CUDA graph: attributed to the op that captured it
    // (maybe in an earlier window's trace), or said to be captured outside
    // the window; never unmatched.
    const bool by_capture = ci && ci->graph_node_id && ci->graph_capture != trace::GraphCapture::None;
    if (by_capture) {
      ++m.r.graph_work;
      if (ci->graph_capture == trace::GraphCapture::Outside) ++m.r.graph_work_outside;
    }
    if (e.kind == EventKind::Kernel) {
      Impl::KernelKey k{name_of(e),           ci ? ci->grid[0] : 0,  ci ? ci->grid[1] : 0,
                        ci ? ci->grid[2] : 0, ci ? ci->block[0] : 0, ci ? ci->block[1] : 0,
                        ci ? ci->block[2] : 0};
      m.kernels[k].push_back(dur);
      m.r.kernel_total_ns += dur;
      if (!matched && !by_capture) {
        ++m.r.unmatched_kernels;
        m.r.unmatched_kernel_ns += dur;
      }
      if (ci && ci->graph_node_id) {
        auto& node = m.graph_nodes[{pid, ci->graph_id, ci->graph_node_id}];
        node.first = name_of(e);
        node.second.push_back(dur);
        m.graphs.add_kernel(t, pid, e, *ci);
      }
      if (auto launched = launch_start(pid, ci ? ci->correlation_id : 0))
        m.latencies.push_back(e.start_ns - *launched);
      else
        ++m.r.launch.without_launch;
    } else {
      if (!matched && !by_capture) ++m.r.unmatched_memory_ops;
      auto& row = m.memory[name_of(e)];
      row.first.push_back(dur);
      row.second.push_back(ci ? int64_t(ci->bytes) : 0);
    }
  }

  // Utilisation: busy time over the window, and over each step of the process.
  const int64_t lo = t.header.window_start_ns;
  int64_t hi = t.header.window_end_ns;
  if (hi == 0)  // a window cut short: it ends with its last event
    for (const auto& e : t.events) hi = std::max(hi, e.end_ns);
  for (auto& [stream_key, iv] : busy_streams) {
    StreamUtilRow& row = m.streams[stream_key];
    std::tie(row.pid, row.device, row.stream) = stream_key;
    row.busy_ns += union_ns(iv, lo, hi);
    row.span_ns += hi - lo;
  }
  for (auto& [dev, iv] : busy) {
    DeviceUtilRow& d = m.devices[dev];
    d.pid = dev.first;
    d.device = dev.second;
    d.busy_ns += union_ns(iv, lo, hi);
    d.span_ns += hi - lo;
    for (const StepSpan& s : step_spans) {
      if (s.pid != dev.first) continue;
      StepUtilRow& row = m.steps[{s.n, s.pid, dev.second}];
      row.step = s.n;
      row.pid = s.pid;
      row.device = dev.second;
      row.busy_ns += union_ns(iv, s.start, s.end);
      row.step_ns += s.end - s.start;
    }
  }
}

GpuReport GpuReportBuilder::finish() && {
  Impl& m = *impl_;
  GpuReport r = std::move(m.r);
  for (auto& [k, v] : m.kernels) {
    KernelRow row;
    row.name = std::get<0>(k);
    row.grid[0] = std::get<1>(k);
    row.grid[1] = std::get<2>(k);
    row.grid[2] = std::get<3>(k);
    row.block[0] = std::get<4>(k);
    row.block[1] = std::get<5>(k);
    row.block[2] = std::get<6>(k);
    row.time_ns = distribution(std::move(v));
    r.kernels.push_back(std::move(row));
  }
  for (auto& [name, tb] : m.memory)
    r.memory_ops.push_back(MemoryOpRow{name, distribution(std::move(tb.first)), distribution(std::move(tb.second))});
  for (auto& [name, v] : m.overheads) r.overheads.push_back(OverheadRow{name, distribution(std::move(v))});
  for (auto& [k, v] : m.graph_nodes)
    r.graph_nodes.push_back(
        GraphNodeRow{std::get<0>(k), std::get<1>(k), std::get<2>(k), v.first, distribution(std::move(v.second))});
  r.graphs = std::move(m.graphs).finish();
  for (auto& [k, d] : m.devices) r.devices.push_back(d);
  for (auto& [k, st] : m.streams) r.streams.push_back(st);
  for (auto& [k, s] : m.steps) r.steps.push_back(s);
  // Largest total first; ties by name, so the order is the same every run.
  auto by_total = [](const auto& a, const auto& b) {
    return a.time_ns.total != b.time_ns.total ? a.time_ns.total > b.time_ns.total : a.name < b.name;
  };
  std::stable_sort(r.kernels.begin(), r.kernels.end(), by_total);
  std::stable_sort(r.memory_ops.begin(), r.memory_ops.end(), by_total);
  std::stable_sort(r.overheads.begin(), r.overheads.end(), by_total);
  std::sort(m.latencies.begin(), m.latencies.end());
  LaunchLatency& l = r.launch;
  l.count = m.latencies.size();
  if (l.count) {
    const Distribution d = distribution(m.latencies);
    l.min_ns = d.min;
    l.max_ns = d.max;
    l.avg_ns = d.avg;
    l.p50_ns = percentile(m.latencies, 50);
    l.p90_ns = percentile(m.latencies, 90);
    l.p99_ns = percentile(m.latencies, 99);
  }
  r.notes = std::move(m.notes);
  return r;
}

}  // namespace ptprof::report
