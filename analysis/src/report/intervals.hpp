// Unions of time intervals: the steps' phases (report_phases.cpp) and the
// compile phase (report_compile.cpp) claim a step's time with them.
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "ptprof/analysis/report_compile.hpp"
#include "ptprof/saturating.hpp"

namespace ptprof::report::detail {

// Sorted and disjoint, empty intervals dropped.
inline Intervals merged(Intervals v) {
  std::sort(v.begin(), v.end());
  Intervals out;
  for (const Interval& i : v) {
    if (i.second <= i.first) continue;
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  }
  return out;
}

inline int64_t length(const Intervals& v) {
  int64_t n = 0;
  for (const Interval& i : v) n = ptprof::detail::saturating_add(n, i.second - i.first);
  return n;
}

// Length of the intersection of two merged lists.
inline int64_t overlap(const Intervals& a, const Intervals& b) {
  int64_t n = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    n = ptprof::detail::saturating_add(
        n, std::max<int64_t>(0, std::min(a[i].second, b[j].second) - std::max(a[i].first, b[j].first)));
    if (a[i].second < b[j].second)
      ++i;
    else
      ++j;
  }
  return n;
}

// The parts of `v` (merged) within [lo, hi).
inline Intervals clipped(const Intervals& v, int64_t lo, int64_t hi) {
  Intervals out;
  auto it = std::lower_bound(v.begin(), v.end(), Interval{lo, lo},
                             [](const Interval& a, const Interval& b) { return a.second <= b.first; });
  for (; it != v.end() && it->first < hi; ++it) out.emplace_back(std::max(it->first, lo), std::min(it->second, hi));
  return merged(std::move(out));
}

// Claims `parts` (merged each) in their order: what each adds to those
// before it, and (in `claimed`) their union.
template <size_t N>
std::array<int64_t, N> claim(const std::array<const Intervals*, N>& parts, Intervals& claimed) {
  std::array<int64_t, N> out{};
  for (size_t p = 0; p < N; ++p) {
    const Intervals& part = *parts[p];
    out[p] = length(part) - overlap(part, claimed);
    claimed.insert(claimed.end(), part.begin(), part.end());
    claimed = merged(std::move(claimed));
  }
  return out;
}

}  // namespace ptprof::report::detail
