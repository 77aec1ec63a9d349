#include "report/report_columns.hpp"

#include <cmath>

#include "ptprof/analysis/report_format.hpp"
#include "text/text_util.hpp"

namespace ptprof::report::detail {

using text::fixed;

namespace {

Value text(std::string_view s) { return {Value::Text, 0, 0, s}; }
Value time_ns(double ns) { return {Value::TimeNs, ns, 0, {}}; }
Value integer(int64_t v) { return {Value::Int, 0, v, {}}; }
Value bytes(int64_t v) { return {Value::Bytes, 0, v, {}}; }
Value share(int64_t part, int64_t total) {
  return {Value::Percent, total == 0 ? NAN : double(part) * 100.0 / double(total), 0, {}};
}

const Column kName{"Name", "name", [](const Row& r, const Report&) { return text(r.name); }};
const Column kSelfCpuPct{"Self CPU %", "self_cpu_pct", [](const Row& r, const Report& rep) {
                           return share(r.stats.self_cpu_ns, rep.self_cpu_total_ns);
                         }};
const Column kSelfCpu{"Self CPU", "self_cpu_us",
                      [](const Row& r, const Report&) { return time_ns(double(r.stats.self_cpu_ns)); }};
// torch prints a literal 0 for async rows (their total is not part of the base).
const Column kCpuTotalPct{"CPU total %", "cpu_total_pct", [](const Row& r, const Report& rep) {
                            return r.is_async ? integer(0) : share(r.stats.cpu_total_ns, rep.self_cpu_total_ns);
                          }};
const Column kCpuTotal{"CPU total", "cpu_total_us",
                       [](const Row& r, const Report&) { return time_ns(double(r.stats.cpu_total_ns)); }};
const Column kCpuAvg{"CPU time avg", "cpu_time_avg_us",
                     [](const Row& r, const Report&) { return time_ns(r.stats.cpu_time_avg_ns()); }};
const Column kSelfCuda{"Self CUDA", "self_cuda_us",
                       [](const Row& r, const Report&) { return time_ns(double(r.stats.self_cuda_ns)); }};
const Column kSelfCudaPct{"Self CUDA %", "self_cuda_pct", [](const Row& r, const Report& rep) {
                            return share(r.stats.self_cuda_ns, rep.self_cuda_total_ns);
                          }};
const Column kCudaTotal{"CUDA total", "cuda_total_us",
                        [](const Row& r, const Report&) { return time_ns(double(r.stats.cuda_total_ns)); }};
const Column kCudaAvg{"CUDA time avg", "cuda_time_avg_us",
                      [](const Row& r, const Report&) { return time_ns(r.stats.cuda_time_avg_ns()); }};
const Column kCpuMem{"CPU Mem", "cpu_memory_bytes",
                     [](const Row& r, const Report&) { return bytes(r.stats.cpu_memory); }};
const Column kSelfCpuMem{"Self CPU Mem", "self_cpu_memory_bytes",
                         [](const Row& r, const Report&) { return bytes(r.stats.self_cpu_memory); }};
const Column kCudaMem{"CUDA Mem", "cuda_memory_bytes",
                      [](const Row& r, const Report&) { return bytes(r.stats.cuda_memory); }};
const Column kSelfCudaMem{"Self CUDA Mem", "self_cuda_memory_bytes",
                          [](const Row& r, const Report&) { return bytes(r.stats.self_cuda_memory); }};
const Column kCalls{"# of Calls", "calls", [](const Row& r, const Report&) { return integer(int64_t(r.stats.count)); }};
const Column kShapes{"Input Shapes", "input_shapes", [](const Row& r, const Report&) { return text(r.input_shapes); }};
// The innermost entry; the table prints the others on lines of their own.
const Column kSource{"Source Location", "source_location", [](const Row& r, const Report&) {
                       return text(r.stack.empty() ? std::string_view() : std::string_view(r.stack.front()));
                     }};

}  // namespace

std::vector<Column> columns(const Report& r) {
  std::vector<Column> c{kName, kSelfCpuPct, kSelfCpu, kCpuTotalPct, kCpuTotal, kCpuAvg};
  if (r.has_cuda_time) c.insert(c.end(), {kSelfCuda, kSelfCudaPct, kCudaTotal, kCudaAvg});
  if (r.has_memory) {
    c.insert(c.end(), {kCpuMem, kSelfCpuMem});
    if (r.has_cuda_memory) c.insert(c.end(), {kCudaMem, kSelfCudaMem});
  }
  c.push_back(kCalls);
  if (r.has_input_shapes) c.push_back(kShapes);
  if (r.has_stack) c.push_back(kSource);
  return c;
}

std::string format_value(const Value& v) {
  switch (v.kind) {
    case Value::Text:
      return std::string(v.text);
    case Value::TimeNs:
      return format_time_us(v.num / 1000.0);
    case Value::Percent:
      return std::isnan(v.num) ? "NaN" : fixed(v.num, 2) + "%";
    case Value::Int:
      return std::to_string(v.i);
    case Value::Bytes:
      return format_memory(v.i);
  }
  return {};
}

}  // namespace ptprof::report::detail
