// Two runs compared operator by operator, as Holistic Trace Analysis' trace
// diff compares two traces: per name, the calls and times of each side and
// how they changed, the biggest changes first. Built from two Reports (the
// key_averages() rows of each side), so names, folding and self times are
// the report's.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/analysis/report.hpp"

namespace ptprof::diff {

enum class SortKey : uint8_t { SelfCpuTime, CpuTimeTotal, Count };
std::optional<SortKey> parse_sort_key(std::string_view name);
const std::vector<std::string_view>& sort_key_names();

struct Row {
  std::string name;
  report::Stats a, b;  // zero on the side where the name does not occur
  bool in_a = false, in_b = false;

  int64_t delta_calls() const { return int64_t(b.count) - int64_t(a.count); }
  int64_t delta_self_cpu_ns() const { return b.self_cpu_ns - a.self_cpu_ns; }
  int64_t delta_cpu_total_ns() const { return b.cpu_total_ns - a.cpu_total_ns; }
};

struct Diff {
  std::vector<Row> rows;  // by the size of the change in the sort key, largest first
  int64_t self_cpu_total_a_ns = 0, self_cpu_total_b_ns = 0;
  uint64_t dropped_a = 0, dropped_b = 0;
};

Diff compare(const report::Report& a, const report::Report& b, SortKey sort_by);

// row_limit 0 = every row.
std::string render_table(const Diff& d, size_t row_limit);
std::string render_json(const Diff& d, size_t row_limit);

}  // namespace ptprof::diff
