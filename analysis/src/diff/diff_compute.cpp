#include <algorithm>
#include <cstdlib>
#include <map>

#include "ptprof/analysis/diff.hpp"

namespace ptprof::diff {

const std::vector<std::string_view>& sort_key_names() {
  static const std::vector<std::string_view> kNames{"self_cpu_time_total", "cpu_time_total", "count"};
  return kNames;
}

std::optional<SortKey> parse_sort_key(std::string_view name) {
  const auto& names = sort_key_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return SortKey(i);
  return std::nullopt;
}

namespace {

uint64_t change(const Row& r, SortKey key) {
  switch (key) {
    case SortKey::SelfCpuTime:
      return uint64_t(std::llabs(r.delta_self_cpu_ns()));
    case SortKey::CpuTimeTotal:
      return uint64_t(std::llabs(r.delta_cpu_total_ns()));
    case SortKey::Count:
      return uint64_t(std::llabs(r.delta_calls()));
  }
  return 0;
}

}  // namespace

Diff compare(const report::Report& a, const report::Report& b, SortKey sort_by) {
  Diff d;
  std::map<std::string, size_t> index;
  auto row_for = [&](const std::string& name) -> Row& {
    auto [it, added] = index.try_emplace(name, d.rows.size());
    if (added) d.rows.push_back(Row{name, {}, {}});
    return d.rows[it->second];
  };
  for (const report::Row& r : a.rows) {
    Row& row = row_for(r.name);
    row.a = r.stats;
    row.in_a = true;
  }
  for (const report::Row& r : b.rows) {
    Row& row = row_for(r.name);
    row.b = r.stats;
    row.in_b = true;
  }
  // Stable: equal changes keep the order of first appearance (A's order).
  std::stable_sort(d.rows.begin(), d.rows.end(),
                   [&](const Row& x, const Row& y) { return change(x, sort_by) > change(y, sort_by); });
  d.self_cpu_total_a_ns = a.self_cpu_total_ns;
  d.self_cpu_total_b_ns = b.self_cpu_total_ns;
  d.dropped_a = a.dropped;
  d.dropped_b = b.dropped;
  return d;
}

}  // namespace ptprof::diff
