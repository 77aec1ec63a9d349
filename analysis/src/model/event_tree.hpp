// How events nest in time, and the call tree of one thread built the way
// torch's EventList builds it (_populate_cpu_children, then _remove_dup_nodes),
// so self times match. Every walk that nests events by time (the report, the
// stack attribution, the flame graph, the Perfetto export) goes through
// NestingStack, so the rule is written once, here.
#pragma once
#include <cstdint>
#include <vector>

#include "ptprof/check.hpp"

namespace ptprof::model {

// torch's rule (_populate_cpu_children): a span nests in an enclosing one when
// it starts no earlier, starts before the other ends and ends no later. A
// span that only overlaps the other's end does not nest; neither does an
// empty span at the other's end.
constexpr bool nests_in(int64_t outer_start, int64_t outer_end, int64_t start, int64_t end) {
  return outer_start <= start && start < outer_end && end <= outer_end;
}

// What becomes of a span that starts inside the innermost open span and ends
// after it.
enum class PartialOverlap : uint8_t {
  Unnested,  // torch's: the open span closes, the overlapping one goes up a level
  Clipped,   // it nests, cut at the open span's end: Perfetto's slices on a track must nest
};

// The spans open at the current point of a walk over one thread's spans in
// nesting order (by start, then longer first). Each step closes what the next
// span cannot nest in and names its parent, the innermost span left open.
class NestingStack {
 public:
  static constexpr int64_t kNone = -1;

  explicit NestingStack(PartialOverlap partial = PartialOverlap::Unnested) : partial_(partial) {}

  // Closes, innermost first, the open spans that [start, end) cannot nest in,
  // telling on_close(id, end) of each; returns the id of the innermost span
  // left open, kNone when there is none.
  template <class OnClose>
  int64_t settle(int64_t start, int64_t end, OnClose&& on_close) {
    PTPROF_DCHECK(open_.empty() || start >= last_start_);  // nesting order
    last_start_ = start;
    while (!open_.empty() && !holds(open_.back(), start, end)) {
      const Open closed = open_.back();
      open_.pop_back();
      on_close(closed.id, closed.end);
    }
    return open_.empty() ? kNone : int64_t(open_.back().id);
  }
  int64_t settle(int64_t start, int64_t end) {
    return settle(start, end, [](uint32_t, int64_t) {});
  }

  // Opens span `id`, which settle() was just given, as the innermost: returns
  // its end, cut at its parent's under PartialOverlap::Clipped.
  int64_t open(uint32_t id, int64_t start, int64_t end) {
    if (partial_ == PartialOverlap::Clipped && !open_.empty() && end > open_.back().end) end = open_.back().end;
    PTPROF_DCHECK(open_.empty() || holds(open_.back(), start, end));  // settle() came first
    open_.push_back({id, start, end});
    return end;
  }

  // The innermost open span that holds the instant `t`, after closing those
  // that ended before it. An instant is held through its span's last moment:
  // torch counts a memory record at time t in the ops with start <= t <= end
  // (MemRecordsAcc.in_interval), so an op ending at t still holds it.
  int64_t instant(int64_t t) {
    PTPROF_DCHECK(open_.empty() || t >= last_start_);
    last_start_ = t;
    while (!open_.empty() && open_.back().end < t) open_.pop_back();
    return open_.empty() ? kNone : int64_t(open_.back().id);
  }

  // Closes every open span, innermost first: the walk moves to another thread.
  template <class OnClose>
  void close_all(OnClose&& on_close) {
    while (!open_.empty()) {
      const Open closed = open_.back();
      open_.pop_back();
      on_close(closed.id, closed.end);
    }
    last_start_ = INT64_MIN;
  }
  void clear() {
    open_.clear();
    last_start_ = INT64_MIN;
  }

 private:
  struct Open {
    uint32_t id;
    int64_t start;
    int64_t end;
  };
  bool holds(const Open& o, int64_t start, int64_t end) const {
    if (partial_ == PartialOverlap::Clipped) return o.start <= start && start < o.end;
    return nests_in(o.start, o.end, start, end);
  }

  std::vector<Open> open_;
  PartialOverlap partial_;
  int64_t last_start_ = INT64_MIN;
};

struct TreeNode {
  int64_t start = 0;
  int64_t end = 0;   // >= start
  uint32_t key = 0;  // nodes with equal keys have the same (rewritten) name
};

struct Tree {
  std::vector<int32_t> parent;       // direct parent before folding, -1 for roots
  std::vector<uint8_t> folded;       // 1: merged into its same-named parent; not reported
  std::vector<int64_t> self_ns;      // duration minus the children left after folding
  std::vector<uint32_t> order;       // node indices, every parent before its children
  std::vector<int32_t> live_parent;  // parent after folding (a folded node's: the one it merged into)
};

// Nodes nest by time (nests_in): sorted by start, then longer first, each
// node's parent is the innermost earlier node that contains it entirely;
// partial overlaps do not nest.
Tree build_tree(const std::vector<TreeNode>& nodes);

}  // namespace ptprof::model
