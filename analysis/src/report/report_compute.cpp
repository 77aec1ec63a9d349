// The report builder: each input's events into the rows (report_aggregator.hpp),
// its other sections into theirs (see report.hpp for semantics).
#include <algorithm>
#include <functional>
#include <tuple>

#include "ptprof/analysis/report.hpp"
#include "ptprof/saturating.hpp"
#include "report/ordered_pipeline.hpp"
#include "report/report_aggregator.hpp"
#include "report/report_keys.hpp"
#include "report/report_part.hpp"
#include "report/report_sort.hpp"

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
  const uint32_t input = impl_->inputs;
  add_part(path, t, detail::trace_part(t, input, impl_->options));
}

Result<uint32_t> ReportBuilder::add_file(const std::string& path, std::vector<std::string>* warnings, bool phases) {
  auto part = detail::file_part(path, impl_->inputs, impl_->options, phases, warnings);
  if (!part) return part.status();
  add_part(path, part->trace, std::move(*part));
  return part->trace.header.window;
}

Status ReportBuilder::add_files(const std::vector<std::string>& paths, bool phases, unsigned threads,
                                const std::function<void(std::vector<std::string>&)>& warned,
                                std::vector<uint32_t>* windows) {
  struct Read {
    Result<detail::FilePart> part;
    std::vector<std::string> warnings;
  };
  // Each file's input number is the one a loop of add_file would give it.
  const uint32_t first = impl_->inputs;
  const Options& options = impl_->options;
  Status failed = Status::ok_status();
  detail::ordered_pipeline<Read>(
      paths.size(), threads,
      [&](size_t i) {
        std::vector<std::string> warnings;
        auto part = detail::file_part(paths[i], first + uint32_t(i), options, phases, &warnings);
        return Read{std::move(part), std::move(warnings)};
      },
      [&](size_t i, Read&& r) {
        if (warned) warned(r.warnings);
        if (!r.part) {
          failed = r.part.status();
          return false;
        }
        add_part(paths[i], r.part->trace, std::move(*r.part));
        if (windows) windows->push_back(r.part->trace.header.window);
        return true;
      });
  return failed;
}

// Adds up the parts in input order: each of these sums and lists is what
// adding the traces' events one by one gives.
void ReportBuilder::add_part(const std::string& path, const trace::Trace& t, detail::FilePart&& part) {
  Impl& m = *impl_;
  ++m.inputs;
  if (!part.in_window) return;
  Report& r = m.r;
  r.events += part.events;
  r.cost += part.cost;
  m.agg.merge(std::move(part.rows));
  m.ranks.merge(std::move(part.ranks));
  r.files.push_back(path);
  if (std::find(r.windows.begin(), r.windows.end(), t.header.window) == r.windows.end())
    r.windows.insert(std::upper_bound(r.windows.begin(), r.windows.end(), t.header.window), t.header.window);
  r.losses += t.losses;
  m.cuda_api.add(t);
  m.gpu.add(t);
  r.phases.insert(r.phases.end(), part.phases.begin(), part.phases.end());
  merge(r.compile, std::move(part.compile));
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
