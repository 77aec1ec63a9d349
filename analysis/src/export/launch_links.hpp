// Kineto's links between a CUDA call and the GPU work it launched, and
// between both and the op they ran in, found in a pass before the write pass
// (export ids are the same in every pass, fwdbwd_flows.hpp):
//   - the work and its launch name the launching op's "External id", as
//     torch.profiler's do (a kernel's op is the op whose Event::arg its
//     CudaInfo::external_id names, in the same process);
//   - an "ac2g" flow runs from the launch (its correlation id) to the first
//     kernel, copy, set or synchronisation of that correlation (a graph
//     launch runs many: a flow has one end), drawn only when both ends are
//     in the export.
// Nothing is held for a trace without CUDA: ops carry a join key only once
// CUDA is in play in their process.
#pragma once
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "ptprof/trace.hpp"

namespace ptprof::exporting::detail {

// A kernel, copy, set or synchronisation (what runs on a GPU lane).
bool is_gpu_work(trace::EventKind kind);
// A CUDA call, hooked or as CUPTI saw it.
bool is_cuda_call(trace::EventKind kind);
// The event's CudaInfo, nullptr when it has none.
const trace::CudaInfo* cuda_info(const trace::Trace& t, const trace::Event& e);

class LaunchLinks {
 public:
  // Every event of the first pass, with its export id.
  void see(const trace::Trace& t, const trace::Event& e, uint64_t export_id);

  // The export id of the op that launched CUDA event `e`, if it is in the export.
  std::optional<uint64_t> launching_op(const trace::Trace& t, const trace::Event& e) const;
  // The id of the ac2g flow that event `e` (export id `export_id`) begins (a
  // launch) or ends (its first work); nullopt when it has no other end in the export.
  std::optional<uint64_t> flow(const trace::Trace& t, const trace::Event& e, uint64_t export_id) const;

 private:
  // A process's key: pid and a per-process id (an op's join key, a
  // correlation id), never equal across processes.
  struct Key {
    int32_t pid = 0;
    uint64_t id = 0;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(k.id * 0x9e3779b97f4a7c15ull ^ uint32_t(k.pid));
    }
  };
  static Key key(const trace::Trace& t, const trace::Event& e, uint64_t id);

  std::unordered_map<Key, uint64_t, KeyHash> ops_;  // join key -> export id
  // correlation id -> export id of its first call (the agent's hook and
  // CUPTI may both have recorded it: one flow all the same)
  std::unordered_map<Key, uint64_t, KeyHash> launches_;
  std::unordered_map<Key, uint64_t, KeyHash> work_;  // correlation id -> export id of its first GPU work
  std::optional<int32_t> only_pid_;                  // set while every CUDA event is of one process
  bool many_pids_ = false;
};

}  // namespace ptprof::exporting::detail
