// Sums of times that saturate instead of wrapping: a crafted trace's huge
// (but individually valid) durations must not print negative totals.
#pragma once
#include <cstdint>
#include <limits>

namespace ptprof::detail {

inline int64_t saturating_add(int64_t a, int64_t b) {
  int64_t sum;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

inline int64_t saturating_sub(int64_t a, int64_t b) {
  int64_t diff;
  if (!__builtin_sub_overflow(a, b, &diff)) return diff;
  return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

}  // namespace ptprof::detail
