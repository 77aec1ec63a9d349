// torch's sort_by keys and how each orders rows.
#include <algorithm>
#include <array>

#include "ptprof/analysis/report.hpp"
#include "report/report_sort.hpp"

namespace ptprof::report {
namespace {

constexpr std::array<std::string_view, 11> kNames = {"cpu_time",
                                                     "cuda_time",
                                                     "cpu_time_total",
                                                     "cuda_time_total",
                                                     "self_cpu_time_total",
                                                     "self_cuda_time_total",
                                                     "cpu_memory_usage",
                                                     "self_cpu_memory_usage",
                                                     "cuda_memory_usage",
                                                     "self_cuda_memory_usage",
                                                     "count"};

double sort_value(const Stats& s, SortKey key) {
  switch (key) {
    case SortKey::CpuTime:
      return s.cpu_time_avg_ns();
    case SortKey::CudaTime:
      return s.cuda_time_avg_ns();
    case SortKey::CpuTimeTotal:
      return double(s.cpu_total_ns);
    case SortKey::CudaTimeTotal:
      return double(s.cuda_total_ns);
    case SortKey::SelfCpuTimeTotal:
      return double(s.self_cpu_ns);
    case SortKey::SelfCudaTimeTotal:
      return double(s.self_cuda_ns);
    case SortKey::CpuMemoryUsage:
      return double(s.cpu_memory);
    case SortKey::SelfCpuMemoryUsage:
      return double(s.self_cpu_memory);
    case SortKey::CudaMemoryUsage:
      return double(s.cuda_memory);
    case SortKey::SelfCudaMemoryUsage:
      return double(s.self_cuda_memory);
    case SortKey::Count:
      return double(s.count);
  }
  return 0;
}

}  // namespace

std::optional<SortKey> parse_sort_key(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return SortKey(i);
  return std::nullopt;
}

std::string_view sort_key_name(SortKey key) { return kNames[size_t(key)]; }

const std::vector<std::string_view>& sort_key_names() {
  static const std::vector<std::string_view> kAllNames(kNames.begin(), kNames.end());
  return kAllNames;
}

// Python's sorted(..., reverse=True) keeps equal rows in their first-seen
// order; a stable sort on "greater" does the same.
void sort_rows(std::vector<Row>& rows, SortKey key) {
  std::stable_sort(rows.begin(), rows.end(),
                   [key](const Row& a, const Row& b) { return sort_value(a.stats, key) > sort_value(b.stats, key); });
}

}  // namespace ptprof::report
