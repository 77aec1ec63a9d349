// The report builder: each input's events into the rows (report_aggregator.hpp),
// its other sections into theirs (see report.hpp for semantics).
#include <algorithm>
#include <tuple>

#include "ptprof/analysis/report.hpp"
#include "ptprof/analysis/trace_file.hpp"
#include "ptprof/cuda_status.hpp"
#include "ptprof/saturating.hpp"
#include "report/report_aggregator.hpp"
#include "report/report_keys.hpp"
#include "report/report_sort.hpp"
#include "report/report_stream.hpp"

namespace ptprof::report {

using detail::Aggregator;

struct ReportBuilder::Impl {
  explicit Impl(const Options& o) : options(o), agg(o) { r.options = o; }
  Options options;
  Aggregator agg;
  GpuReportBuilder gpu;
  Report r;
  RankSummaryBuilder ranks;
  uint32_t inputs = 0;
  CudaApiSummary cuda_api;
};

ReportBuilder::ReportBuilder(const Options& options) : impl_(std::make_unique<Impl>(options)) {}
ReportBuilder::~ReportBuilder() = default;

void ReportBuilder::add(const std::string& path, const trace::Trace& t) {
  Impl& m = *impl_;
  uint32_t input = m.inputs++;
  if (m.options.window && t.header.window != *m.options.window) return;
  Report& r = m.r;
  // The agent's CUDA notes are lines of the report, not events of the program.
  r.events += t.events.size() - uint64_t(std::count_if(t.events.begin(), t.events.end(), [&](const trace::Event& e) {
                return wire::is_cuda_note(t, e);
              }));
  r.cost += cost::tally(t);
  m.agg.add_trace(input, t);
  m.ranks.add(t);
  add_common(path, t);
}

Result<uint32_t> ReportBuilder::add_file(const std::string& path, std::vector<std::string>* warnings, bool phases) {
  Impl& m = *impl_;
  auto streamed = detail::stream_trace(path, m.inputs, m.options, phases, warnings);
  if (!streamed) return streamed.status();
  if (!*streamed) {  // this trace needs all its events at once
    auto t = format::read_trace(path, warnings);
    if (!t) return t.status();
    add(path, *t);
    return t->header.window;
  }
  const detail::StreamedTrace& s = **streamed;
  const trace::Trace& t = s.metadata;
  ++m.inputs;
  if (m.options.window && t.header.window != *m.options.window) return t.header.window;
  m.r.events += s.events;
  m.r.cost += s.cost;
  m.agg.add_streamed(s);
  m.ranks.add_counted(t, s.processes);
  add_common(path, t);  // its only events: the agent's notes on CUDA, lines of the GPU section
  m.r.phases.insert(m.r.phases.end(), s.phases.begin(), s.phases.end());
  return t.header.window;
}

void ReportBuilder::add_common(const std::string& path, const trace::Trace& t) {
  Impl& m = *impl_;
  Report& r = m.r;
  r.files.push_back(path);
  if (std::find(r.windows.begin(), r.windows.end(), t.header.window) == r.windows.end())
    r.windows.insert(std::upper_bound(r.windows.begin(), r.windows.end(), t.header.window), t.header.window);
  r.losses += t.losses;
  m.cuda_api.add(t);
  m.gpu.add(t);
  std::vector<StepPhases> phases = step_phases(t);
  r.phases.insert(r.phases.end(), phases.begin(), phases.end());
  merge(r.compile, compile_report(t));
  for (const auto& th : t.threads) {
    if (th.dropped == 0) continue;
    r.dropped += th.dropped;
    int32_t pid = th.process < t.processes.size() ? t.processes[th.process].pid : 0;
    r.drops.push_back(ThreadDrops{path, pid, th.tid, th.name, th.dropped});
  }
}

Report ReportBuilder::finish() && {
  Report r = std::move(impl_->r);
  r.rows = impl_->agg.take_rows();
  sort_rows(r.rows, r.options.sort_by);
  r.self_cuda_total_ns = impl_->agg.device_self_ns();
  r.gpu = std::move(impl_->gpu).finish();
  for (const Row& row : r.rows) {
    r.self_cpu_total_ns = ptprof::detail::saturating_add(r.self_cpu_total_ns, row.stats.self_cpu_ns);
    r.has_cuda_time |= row.stats.self_cuda_ns > 0 || row.stats.cuda_total_ns > 0;
    r.has_cuda_memory |= impl_->agg.saw_device_memory() || row.stats.self_cuda_memory > 0;
    r.has_memory |= impl_->agg.saw_memory() || row.stats.cpu_memory != 0 || row.stats.self_cpu_memory != 0 ||
                    row.stats.cuda_memory != 0 || row.stats.self_cuda_memory != 0;
    r.has_input_shapes |= !row.input_shapes.empty() && row.input_shapes != detail::kNoShapes;
    r.has_stack |= !row.stack.empty();
  }
  r.cuda_api = impl_->cuda_api.rows();
  r.ranks = std::move(impl_->ranks).finish();
  r.steps = impl_->agg.take_steps();
  r.outside_steps = impl_->agg.take_outside_steps();
  std::stable_sort(r.outside_steps.begin(), r.outside_steps.end(), [](const StepRow& a, const StepRow& b) {
    return std::tie(a.role, a.pid, a.tid) < std::tie(b.role, b.pid, b.tid);
  });
  std::stable_sort(r.steps.begin(), r.steps.end(), [](const StepRow& a, const StepRow& b) {
    return std::tie(a.step, a.pid, a.tid) < std::tie(b.step, b.pid, b.tid);
  });
  std::stable_sort(r.phases.begin(), r.phases.end(), [](const StepPhases& a, const StepPhases& b) {
    return std::tie(a.step, a.pid, a.tid) < std::tie(b.step, b.pid, b.tid);
  });
  std::stable_sort(r.compile.steps.begin(), r.compile.steps.end(), [](const StepCompile& a, const StepCompile& b) {
    return std::tie(a.step, a.pid, a.tid) < std::tie(b.step, b.pid, b.tid);
  });
  return r;
}

Report compute_report(const std::vector<Input>& inputs, const Options& options) {
  ReportBuilder b(options);
  for (const Input& in : inputs) b.add(in.path, *in.trace);
  return std::move(b).finish();
}

}  // namespace ptprof::report
