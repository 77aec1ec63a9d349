// The call tree of one thread, built the way torch's EventList builds it
// (_populate_cpu_children, then _remove_dup_nodes), so self times match.
#pragma once
#include <cstdint>
#include <vector>

namespace ptprof::report::detail {

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

// Nodes nest by time: sorted by start, then longer first, each node's parent is
// the innermost earlier node that contains it entirely ([start, end) within
// [parent.start, parent.end)); partial overlaps do not nest.
Tree build_tree(const std::vector<TreeNode>& nodes);

}  // namespace ptprof::report::detail
