// The data-flow graph torch's memory profiler categorises
// (torch/profiler/_memory_profiler.py: OpTree, calculateUniqueTensorIDs in
// torch/csrc/profiler/data_flow.cpp, SizeMap, DataFlowNode, DataFlowGraph),
// built for one process of a trace from ptprof's records.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "ptprof/trace.hpp"

namespace ptprof::memory::detail {

// TensorKey: one storage allocation of one logical tensor.
struct Key {
  int64_t id = 0;        // the tensor (TensorImpls and storages that shared one)
  int64_t alloc_id = 0;  // the storage allocation (solves ABA on addresses)
  int8_t device_type = 0;
  int8_t device_index = -1;
  // torch sorts keys by (id, allocation id, device type, device index).
  auto tie() const { return std::tie(id, alloc_id, device_type, device_index); }
  bool operator<(const Key& o) const { return tie() < o.tie(); }
  bool operator==(const Key& o) const { return tie() == o.tie(); }
};
struct KeyVersion {
  Key key;
  int64_t version = 0;
  bool operator<(const KeyVersion& o) const { return std::tie(key, version) < std::tie(o.key, o.version); }
  bool operator==(const KeyVersion& o) const { return key == o.key && version == o.version; }
};

// One event of torch's op tree: an op (any RecordFunction scope) or an
// allocation/free, the child of the op open on its thread.
struct Node {
  enum class Kind : uint8_t { Op, Alloc };
  Kind kind = Kind::Op;
  int64_t start = 0;
  int64_t end = 0;
  int32_t parent = -1;
  std::vector<uint32_t> children;  // in time order
  uint32_t name = 0;
  uint8_t scope = 0;
  const trace::TensorGroup* inputs = nullptr;  // Op: its tensor inputs, when recorded
  std::vector<std::optional<Key>> input_keys;  // per inputs->tensors entry
  const trace::MemoryInfo* mem = nullptr;      // Alloc
  std::optional<Key> alloc_key;                // Alloc: set when the storage is a tensor's
};

// A module's or optimizer's tensors (torch's PyCall event).
struct PyCall {
  int64_t ts = 0;
  const trace::TensorGroup* group = nullptr;
  std::vector<std::optional<Key>> keys;  // per group->tensors entry
};

// DataFlowEdge.mutated: torch's True / False / None (a deletion).
enum class Mutated : uint8_t { No, Yes, Deleted };
struct Edge {
  std::optional<int64_t> input_version;  // none: the node allocated it
  Mutated mutated = Mutated::No;
  bool is_allocation() const { return !input_version; }
  bool is_deletion() const { return mutated == Mutated::Deleted; }
};

struct FlowNode {
  uint32_t event = 0;  // Node index
  int64_t start_ns = 0;
  std::map<Key, Edge> edges;
  int64_t start() const { return start_ns; }
  // key -> (mutated, version read)
  std::map<Key, std::pair<bool, int64_t>> inputs() const;
  std::map<Key, int64_t> outputs() const;  // key -> version written
  std::vector<Key> intermediates() const;
};

class Graph {
 public:
  Graph(const trace::Trace& t, uint32_t process);
  bool empty() const { return nodes_.empty(); }

  std::vector<FlowNode> flow;  // by start time

  // Whether the event or an op above it is a backward function (get_scopes).
  bool in_backward(uint32_t node) const;
  int64_t size_of(const Key& k) const;
  // extract_gradients over every event: (parameter or none, gradient).
  void each_gradient(const std::function<void(const std::optional<Key>&, const Key&)>& f) const;
  void each_parameter(const std::function<void(const Key&)>& f) const;        // modules' and optimizers'
  void each_optimizer_state(const std::function<void(const Key&)>& f) const;  // optimizers' state tensors
  void each_allocation_dfs(const std::function<void(const Node&)>& f) const;  // the op tree's order

 private:
  void build_tree(const trace::Trace& t, const std::vector<uint32_t>& threads);
  void assign_ids();
  void size_tensors();
  void build_flow();
  FlowNode flow_node(uint32_t event);
  template <class F>
  void dfs(F&& f) const;

  const trace::Trace& trace_;
  std::vector<Node> nodes_;
  std::vector<uint32_t> roots_;
  std::vector<PyCall> pycalls_;
  std::map<Key, int64_t> sizes_;
  std::map<Key, int64_t> versions_;  // DataFlowGraph._active_version
};

}  // namespace ptprof::memory::detail
