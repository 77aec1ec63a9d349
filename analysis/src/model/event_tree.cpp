#include "model/event_tree.hpp"

#include <algorithm>
#include <numeric>

#include "ptprof/saturating.hpp"

namespace ptprof::model {

Tree build_tree(const std::vector<TreeNode>& nodes) {
  const size_t n = nodes.size();
  Tree t;
  t.parent.assign(n, -1);
  t.folded.assign(n, 0);
  t.self_ns.resize(n);

  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  // Ties keep input order, as Python's stable sort does.
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (nodes[a].start != nodes[b].start) return nodes[a].start < nodes[b].start;
    return nodes[a].end > nodes[b].end;
  });

  NestingStack open;
  for (uint32_t i : order) {
    t.parent[i] = int32_t(open.settle(nodes[i].start, nodes[i].end));
    open.open(i, nodes[i].start, nodes[i].end);
  }

  std::vector<uint32_t> children(n, 0);
  std::vector<int64_t> child_ns(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (t.parent[i] < 0) continue;
    ++children[size_t(t.parent[i])];
    child_ns[size_t(t.parent[i])] =
        ptprof::detail::saturating_add(child_ns[size_t(t.parent[i])], nodes[i].end - nodes[i].start);
  }

  // _remove_dup_nodes: a node that is the only child of a same-named parent
  // disappears and its children become the parent's. Parents come before
  // children in `order`, so one pass reaches torch's fixed point.
  std::vector<int32_t> live_parent = t.parent;
  for (uint32_t i : order) {
    int32_t p = live_parent[i];
    if (p >= 0 && t.folded[size_t(p)]) p = live_parent[size_t(p)];
    live_parent[i] = p;
    if (p >= 0 && nodes[size_t(p)].key == nodes[i].key && children[size_t(p)] == 1) {
      t.folded[i] = 1;
      children[size_t(p)] = children[i];
      child_ns[size_t(p)] = child_ns[i];
    }
  }
  for (size_t i = 0; i < n; ++i)
    t.self_ns[i] = ptprof::detail::saturating_sub(nodes[i].end - nodes[i].start, child_ns[i]);
  t.order = std::move(order);
  t.live_parent = std::move(live_parent);
  return t;
}

}  // namespace ptprof::model
