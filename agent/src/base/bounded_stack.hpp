// A per-thread stack of nesting levels with a fixed capacity, as the hot
// path keeps them (operators, ranges, scopes open on a thread): no
// allocation, ever.
//
// The one overflow rule: a level pushed beyond the capacity is counted but
// not kept, so that pushes and pops stay paired however deep a program nests;
// popping such a level gives nothing back. The caller decides what an
// unkept level means for its events (a drop, an end never written).
#pragma once
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>

#include "ptprof/check.hpp"

namespace ptprof::agent {

template <class T, uint32_t Capacity>
class BoundedStack {
  static_assert(std::is_trivially_copyable_v<T>, "levels are moved with memmove");

 public:
  // Open levels, the unkept ones included.
  uint32_t depth() const { return depth_; }
  bool empty() const { return depth_ == 0; }
  // A push now would not be kept.
  bool full() const { return depth_ >= Capacity; }

  // Opens a level holding `value`; false when it is beyond the capacity
  // (counted, not kept).
  bool push(const T& value) {
    PTPROF_DCHECK(depth_ < UINT32_MAX);
    if (depth_ < Capacity) items_[depth_] = value;
    return depth_++ < Capacity;
  }

  // Closes the innermost level: its value, none when it was not kept.
  // The stack must not be empty.
  std::optional<T> pop() {
    PTPROF_DCHECK(depth_ > 0);
    const uint32_t level = --depth_;
    if (level < Capacity) return items_[level];
    return std::nullopt;
  }

  // The innermost level's value, none when it is not kept (or none is open).
  const T* innermost() const { return depth_ > 0 && depth_ <= Capacity ? &items_[depth_ - 1] : nullptr; }

  // Closes the level that `matches` among the innermost `reach` kept levels
  // (ends that come a little out of order) and returns its value. Else, when
  // unkept levels are open, closes one of them; returns none either way.
  template <class Matches>
  std::optional<T> pop_matching(Matches&& matches, uint32_t reach) {
    const uint32_t kept = depth_ < Capacity ? depth_ : Capacity;
    for (uint32_t i = kept; i > 0 && kept - i < reach; --i) {
      if (!matches(items_[i - 1])) continue;
      const T found = items_[i - 1];
      if (i != kept) std::memmove(&items_[i - 1], &items_[i], (kept - i) * sizeof(T));
      --depth_;
      return found;
    }
    if (depth_ > Capacity) --depth_;
    return std::nullopt;
  }

 private:
  T items_[Capacity];
  uint32_t depth_ = 0;
};

}  // namespace ptprof::agent
