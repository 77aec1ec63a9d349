// CUDA graph captures of one process: the op each graph node was made
// under, so that the kernels a replay runs (which name their node, and the
// cudaGraphLaunch's correlation id, not the op's) are attributed to the op
// that captured them. Kept for the process's life, across windows: a graph
// is captured once (torch.cuda.graphs: often in the first steps) and
// replayed for the rest of the run.
#pragma once
#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace ptprof::launcher {

class GraphCaptures {
 public:
  struct Capture {
    uint64_t op = 0;       // the capturing op's handle; 0 = no op was open
    uint32_t op_name = 0;  // its name (arena id); 0 = none or unknown
  };

  // `node` was made while `op` (named op_name) was open on its thread. A
  // node already known keeps what it has: CUPTI may report a copy made by
  // cudaGraphInstantiate as cloned before it reports it as created (then
  // on the instantiating thread, under whatever op runs there).
  void created(uint64_t node, Capture c) {
    if (node) nodes_.emplace(node, c);
  }
  // `node` is a copy of `original` (cudaGraphInstantiate, cudaGraphClone):
  // it inherits the original's capture. Nothing when the original is unknown.
  void cloned(uint64_t node, uint64_t original) {
    if (!node || !original) return;
    if (auto it = nodes_.find(original); it != nodes_.end()) nodes_[node] = it->second;
  }
  // The capture of `node`, null when ptprof did not see it made.
  const Capture* find(uint64_t node) const {
    auto it = nodes_.find(node);
    return it == nodes_.end() ? nullptr : &it->second;
  }
  size_t size() const { return nodes_.size(); }

 private:
  std::unordered_map<uint64_t, Capture> nodes_;  // CUPTI's node ids are unique within a process
};

}  // namespace ptprof::launcher
