#include "memory/memory_dataflow.hpp"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "model/event_tree.hpp"
#include "ptprof/record.hpp"

namespace ptprof::memory::detail {

std::map<Key, std::pair<bool, int64_t>> FlowNode::inputs() const {
  std::map<Key, std::pair<bool, int64_t>> out;
  for (const auto& [k, e] : edges)
    if (!e.is_allocation()) out.emplace(k, std::make_pair(e.mutated == Mutated::Yes, *e.input_version));
  return out;
}

std::map<Key, int64_t> FlowNode::outputs() const {
  std::map<Key, int64_t> out;
  for (const auto& [k, e] : edges)
    if ((e.is_allocation() && !e.is_deletion()) || e.mutated == Mutated::Yes)
      out.emplace(k, e.input_version ? *e.input_version + 1 : 0);
  return out;
}

std::vector<Key> FlowNode::intermediates() const {
  std::vector<Key> out;
  for (const auto& [k, e] : edges)
    if (e.is_allocation() && e.is_deletion()) out.push_back(k);
  return out;
}

Graph::Graph(const trace::Trace& t, uint32_t process) : trace_(t) {
  std::vector<uint32_t> threads;
  for (uint32_t i = 0; i < t.threads.size(); ++i)
    if (t.threads[i].process == process && t.threads[i].device < 0) threads.push_back(i);
  build_tree(t, threads);
  if (nodes_.empty()) return;
  assign_ids();
  size_tensors();
  build_flow();
}

// OpTree: each thread's ops nested by time; an allocation or free is a
// child of the op open on its thread. The modules' and optimizers' tensors
// are kept beside the tree (only their tensors matter).
void Graph::build_tree(const trace::Trace& t, const std::vector<uint32_t>& threads) {
  std::map<std::pair<uint32_t, int64_t>, const trace::TensorGroup*> op_inputs;
  for (const trace::TensorGroup& g : t.tensor_groups) {
    if (std::find(threads.begin(), threads.end(), g.thread) == threads.end()) continue;
    if (g.kind == uint8_t(wire::TensorGroupKind::OpInputs))
      op_inputs.emplace(std::make_pair(g.thread, g.ts_ns), &g);
    else
      pycalls_.push_back({g.ts_ns, &g, {}});
  }
  std::stable_sort(pycalls_.begin(), pycalls_.end(), [](const PyCall& a, const PyCall& b) { return a.ts < b.ts; });

  std::unordered_map<uint32_t, std::vector<uint32_t>> by_thread;
  for (uint32_t i = 0; i < t.events.size(); ++i) {
    const trace::Event& e = t.events[i];
    if (e.kind != trace::EventKind::Op && e.kind != trace::EventKind::Memory) continue;
    if (e.kind == trace::EventKind::Memory && (e.arg == 0 || e.arg > t.memory.size() || t.memory[e.arg - 1].segment))
      continue;  // CUDA segments are not torch's allocator reports
    by_thread[e.thread].push_back(i);
  }
  std::vector<std::pair<int64_t, uint32_t>> roots;
  for (uint32_t thread : threads) {
    auto it = by_thread.find(thread);
    if (it == by_thread.end()) continue;
    auto& ev = it->second;
    // Spans by start, longer first; an instant after the spans that start
    // with it (an op's first allocation is its own).
    std::stable_sort(ev.begin(), ev.end(), [&](uint32_t a, uint32_t b) {
      const trace::Event &x = t.events[a], &y = t.events[b];
      if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
      const bool xi = x.kind == trace::EventKind::Memory, yi = y.kind == trace::EventKind::Memory;
      if (xi != yi) return !xi;
      return x.end_ns > y.end_ns;
    });
    model::NestingStack open;
    for (uint32_t i : ev) {
      const trace::Event& e = t.events[i];
      Node n;
      n.start = e.start_ns;
      n.end = std::max(e.end_ns, e.start_ns);
      int64_t parent;
      if (e.kind == trace::EventKind::Memory) {
        n.kind = Node::Kind::Alloc;
        n.mem = &t.memory[e.arg - 1];
        parent = open.instant(e.start_ns);
      } else {
        n.kind = Node::Kind::Op;
        n.name = e.name;
        n.scope = e.scope;
        if (auto g = op_inputs.find({e.thread, e.start_ns}); g != op_inputs.end()) n.inputs = g->second;
        parent = open.settle(n.start, n.end);
      }
      const auto index = uint32_t(nodes_.size());
      n.parent = int32_t(parent);
      if (parent >= 0)
        nodes_[size_t(parent)].children.push_back(index);
      else
        roots.emplace_back(n.start, index);
      const bool is_op = n.kind == Node::Kind::Op;
      const int64_t start = n.start, end = n.end;
      nodes_.push_back(std::move(n));
      if (is_op) open.open(index, start, end);
    }
  }
  std::stable_sort(roots.begin(), roots.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& r : roots) roots_.push_back(r.second);
}

// calculateUniqueTensorIDs (torch/csrc/profiler/data_flow.cpp).
void Graph::assign_ids() {
  struct Raw {
    uint64_t impl;
    uint64_t storage;
    int8_t device_type;
    int8_t device_index;
    bool is_free;
    int64_t alloc_id = 0;
    std::optional<Key>* out;
  };
  // Every tensor and allocation, in time order.
  std::vector<std::pair<int64_t, uint32_t>> order;  // (time, node); pycalls after, by their own time
  for (uint32_t i = 0; i < nodes_.size(); ++i) order.emplace_back(nodes_[i].start, i);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Raw> raw;
  size_t next_pycall = 0;
  auto add_pycalls_until = [&](int64_t ts) {
    for (; next_pycall < pycalls_.size() && pycalls_[next_pycall].ts <= ts; ++next_pycall) {
      PyCall& p = pycalls_[next_pycall];
      p.keys.assign(p.group->tensors.size(), std::nullopt);
      for (size_t k = 0; k < p.group->tensors.size(); ++k) {
        const trace::TensorRef& r = p.group->tensors[k];
        if (r.storage != 0) raw.push_back({r.impl, r.storage, r.device_type, r.device_index, false, 0, &p.keys[k]});
      }
    }
  };
  for (const auto& [ts, i] : order) {
    add_pycalls_until(ts - 1);
    Node& n = nodes_[i];
    if (n.kind == Node::Kind::Alloc) {
      raw.push_back({0, n.mem->ptr, n.mem->device_type, n.mem->device_index, n.mem->bytes < 0, 0, &n.alloc_key});
    } else if (n.inputs) {
      n.input_keys.assign(n.inputs->tensors.size(), std::nullopt);
      for (size_t k = 0; k < n.inputs->tensors.size(); ++k) {
        const trace::TensorRef& r = n.inputs->tensors[k];
        if (r.storage != 0)
          raw.push_back({r.impl, r.storage, r.device_type, r.device_index, false, 0, &n.input_keys[k]});
      }
    }
  }
  add_pycalls_until(INT64_MAX);

  // Allocation ids: a storage address gets a new id after each free.
  {
    int64_t counter = 1;
    std::map<std::tuple<uint64_t, int8_t, int8_t>, int64_t> versions;
    for (Raw& r : raw) {
      const auto where = std::make_tuple(r.storage, r.device_type, r.device_index);
      auto [it, inserted] = versions.emplace(where, counter);
      counter += inserted ? 1 : 0;
      r.alloc_id = it->second;
      if (r.is_free) versions.erase(it);
    }
  }
  // Allocations no tensor is known to have used are not tensors.
  std::unordered_set<int64_t> tensor_allocs;
  for (const Raw& r : raw)
    if (r.impl != 0) tensor_allocs.insert(r.alloc_id);
  std::erase_if(raw, [&](const Raw& r) { return !tensor_allocs.contains(r.alloc_id); });
  // A TensorImpl whose storage changed joins its allocations in one id.
  std::set<std::pair<int64_t, int64_t>> same_group;
  {
    std::unordered_map<uint64_t, int64_t> impl_first;
    for (const Raw& r : raw) {
      if (r.impl == 0) continue;
      const int64_t first = impl_first.emplace(r.impl, r.alloc_id).first->second;
      same_group.insert(first < r.alloc_id ? std::make_pair(first, r.alloc_id) : std::make_pair(r.alloc_id, first));
    }
  }
  std::unordered_map<int64_t, int64_t> id_of;
  {
    int64_t current = 0;
    for (const auto& [a, b] : same_group) {  // sorted, as torch sorts the pairs
      auto [it, inserted] = id_of.emplace(a, current);
      current += inserted ? 1 : 0;
      id_of.emplace(b, it->second);
    }
  }
  for (const Raw& r : raw) {
    auto it = id_of.find(r.alloc_id);
    if (it != id_of.end()) *r.out = Key{it->second, r.alloc_id, r.device_type, r.device_index};
  }
}

// SizeMap: a tensor's size from its strides, or its allocation's when seen.
void Graph::size_tensors() {
  auto update = [&](const trace::TensorRef& r, const std::optional<Key>& k) {
    if (!k || !(r.flags & wire::kTensorStrided)) return;
    int64_t& v = sizes_[*k];
    v = std::max(v, int64_t(r.nbytes));
  };
  std::vector<std::pair<int64_t, uint32_t>> order;
  for (uint32_t i = 0; i < nodes_.size(); ++i) order.emplace_back(nodes_[i].start, i);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [ts, i] : order) {
    const Node& n = nodes_[i];
    if (n.kind == Node::Kind::Op && n.inputs)
      for (size_t k = 0; k < n.inputs->tensors.size(); ++k) update(n.inputs->tensors[k], n.input_keys[k]);
  }
  for (const PyCall& p : pycalls_)
    for (size_t k = 0; k < p.group->tensors.size(); ++k) update(p.group->tensors[k], p.keys[k]);
  std::map<Key, int64_t> allocations;
  for (const auto& [ts, i] : order) {
    const Node& n = nodes_[i];
    if (n.kind == Node::Kind::Alloc && n.alloc_key) allocations.emplace(*n.alloc_key, std::abs(n.mem->bytes));
  }
  for (const auto& [k, v] : allocations) sizes_[k] = v;
}

template <class F>
void Graph::dfs(F&& f) const {
  std::vector<uint32_t> stack(roots_.rbegin(), roots_.rend());
  while (!stack.empty()) {
    const uint32_t i = stack.back();
    stack.pop_back();
    if (!f(i)) continue;  // f says whether to enter the children
    const auto& c = nodes_[i].children;
    stack.insert(stack.end(), c.rbegin(), c.rend());
  }
}

// DataFlowGraph._extract_leaf_events then a DataFlowNode per leaf.
void Graph::build_flow() {
  std::vector<uint32_t> leaves;
  dfs([&](uint32_t i) {
    const Node& n = nodes_[i];
    const bool leaf_op = n.kind == Node::Kind::Op && (n.scope == uint8_t(wire::OpScope::BackwardFunction) ||
                                                      (n.inputs && (n.inputs->flags & wire::kTensorGroupSchema)));
    if (leaf_op || n.kind == Node::Kind::Alloc) {
      leaves.push_back(i);
      return false;
    }
    return true;
  });
  std::stable_sort(leaves.begin(), leaves.end(),
                   [&](uint32_t a, uint32_t b) { return nodes_[a].start < nodes_[b].start; });
  for (uint32_t leaf : leaves) flow.push_back(flow_node(leaf));
}

// DataFlowNode._determine_edges, then the version bumps of its constructor.
FlowNode Graph::flow_node(uint32_t event) {
  FlowNode fn;
  fn.event = event;
  fn.start_ns = nodes_[event].start;
  std::vector<uint32_t> subtree;
  {
    std::vector<uint32_t> stack{event};
    while (!stack.empty()) {
      const uint32_t i = stack.back();
      stack.pop_back();
      subtree.push_back(i);
      const auto& c = nodes_[i].children;
      stack.insert(stack.end(), c.rbegin(), c.rend());
    }
  }
  auto lookup = [&](const Key& k) { return versions_.emplace(k, 0).first->second; };
  // Per key, the mutabilities seen: 1 false, 2 true, 4 unknown (no schema).
  std::map<Key, uint8_t> mutable_by_key;
  for (uint32_t i : subtree) {
    const Node& n = nodes_[i];
    if (n.kind != Node::Kind::Op || !n.inputs) continue;
    for (size_t k = 0; k < n.inputs->tensors.size(); ++k) {
      if (!n.input_keys[k]) continue;
      const uint8_t f = n.inputs->tensors[k].flags;
      mutable_by_key[*n.input_keys[k]] |= (f & wire::kTensorNoMutability) ? 4 : (f & wire::kTensorMutable) ? 2 : 1;
    }
  }
  for (const auto& [k, seen] : mutable_by_key) {
    Edge& e = fn.edges[k];
    e.input_version = lookup(k);
    // Mutated when a schema writes it, or when only unknowns were seen.
    e.mutated = (seen & 2) || seen == 4 ? Mutated::Yes : Mutated::No;
  }
  for (uint32_t i : subtree) {
    const Node& n = nodes_[i];
    if (n.kind != Node::Kind::Alloc || n.mem->bytes >= 0 || !n.alloc_key) continue;
    Edge& e = fn.edges[*n.alloc_key];
    e.mutated = Mutated::Deleted;
    e.input_version = lookup(*n.alloc_key);
  }
  for (uint32_t i : subtree) {
    const Node& n = nodes_[i];
    if (n.kind == Node::Kind::Alloc && n.mem->bytes > 0 && n.alloc_key) fn.edges[*n.alloc_key].input_version.reset();
  }
  for (const auto& [k, e] : fn.edges)
    if (e.mutated == Mutated::Yes && !e.is_allocation()) ++versions_[k];
  return fn;
}

bool Graph::in_backward(uint32_t node) const {
  for (int32_t i = int32_t(node); i >= 0; i = nodes_[size_t(i)].parent) {
    const Node& n = nodes_[size_t(i)];
    if (n.kind == Node::Kind::Op && n.scope == uint8_t(wire::OpScope::BackwardFunction)) return true;
  }
  return false;
}

int64_t Graph::size_of(const Key& k) const {
  auto it = sizes_.find(k);
  return it == sizes_.end() ? 0 : it->second;
}

void Graph::each_gradient(const std::function<void(const std::optional<Key>&, const Key&)>& f) const {
  // AccumulateGrad: a new gradient is detached (aten::detach), an existing
  // one accumulated into (aten::add_); either way its first input.
  dfs([&](uint32_t i) {
    const Node& n = nodes_[i];
    if (n.kind != Node::Kind::Op || n.scope != uint8_t(wire::OpScope::BackwardFunction) || n.children.empty() ||
        trace_.strings[n.name] != "torch::autograd::AccumulateGrad")
      return true;
    const Node& c = nodes_[n.children.front()];
    if (c.kind != Node::Kind::Op || !c.inputs) return true;
    const std::string& name = trace_.strings[c.name];
    if (name != "aten::detach" && name != "aten::add_") return true;
    for (size_t k = 0; k < c.inputs->tensors.size(); ++k) {
      const trace::TensorRef& r = c.inputs->tensors[k];
      if (r.index == 0 && !(r.flags & wire::kTensorInList)) {
        if (c.input_keys[k]) f(std::nullopt, *c.input_keys[k]);
        break;
      }
    }
    return true;
  });
  for (const PyCall& p : pycalls_) {
    std::map<uint16_t, std::optional<Key>> params;
    for (size_t k = 0; k < p.group->tensors.size(); ++k)
      if (p.group->tensors[k].role == uint8_t(wire::TensorRole::Parameter))
        params[p.group->tensors[k].index] = p.keys[k];
    for (size_t k = 0; k < p.group->tensors.size(); ++k)
      if (p.group->tensors[k].role == uint8_t(wire::TensorRole::Gradient) && p.keys[k])
        f(params[p.group->tensors[k].index], *p.keys[k]);
  }
}

void Graph::each_parameter(const std::function<void(const Key&)>& f) const {
  for (const PyCall& p : pycalls_)
    for (size_t k = 0; k < p.group->tensors.size(); ++k)
      if (p.group->tensors[k].role == uint8_t(wire::TensorRole::Parameter) && p.keys[k]) f(*p.keys[k]);
}

void Graph::each_optimizer_state(const std::function<void(const Key&)>& f) const {
  for (const PyCall& p : pycalls_) {
    if (p.group->kind != uint8_t(wire::TensorGroupKind::Optimizer)) continue;
    for (size_t k = 0; k < p.group->tensors.size(); ++k)
      if (p.group->tensors[k].role == uint8_t(wire::TensorRole::State) && p.keys[k]) f(*p.keys[k]);
  }
}

void Graph::each_allocation_dfs(const std::function<void(const Node&)>& f) const {
  dfs([&](uint32_t i) {
    if (nodes_[i].kind == Node::Kind::Alloc) f(nodes_[i]);
    return true;
  });
}

}  // namespace ptprof::memory::detail
