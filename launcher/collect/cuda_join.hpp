// The CUDA stage of the collector: hooked calls and CUPTI records become
// events, on the calling thread or on their GPU's stream lane, and each is
// joined to the op that launched it by correlation id (CudaInfo::external_id
// = the op's Event::arg). CUPTI may hand over the correlation after the
// activity: then the event is held and written with its window, joined with
// whatever arrived by then. Work replayed from a CUDA graph is joined to
// the op that captured its graph node instead (graph_captures.hpp), or
// marked as captured outside the window. While CUPTI records (the flush
// protocol), a window's calls are held too, until it is written: then a
// hooked call and CUPTI's record of it fold into one event (call_fold.hpp).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collect/call_fold.hpp"
#include "collect/graph_captures.hpp"
#include "collect/record_decoder.hpp"
#include "collect/window_trace.hpp"

namespace ptprof::launcher {

class CudaJoin {
 public:
  explicit CudaJoin(const ProcessContext& process) : process_(process) {}

  // A record of CUDA activity was seen (whether or not in a window).
  void saw_cuda() { seen_ = true; }
  // What an op's event carries in Event::arg: its handle, the key its
  // kernels name, once CUDA is in play in this process; else 0.
  uint64_t op_join_key(uint64_t handle) const { return seen_ || flushes_gpu() ? handle : 0; }
  void correlate(const decoded::Correlation& c) { external_[c.correlation_id] = c.external_id; }
  // A CUDA graph node was made (or copied) under the op named `op_name`
  // (arena id; 0 = none or unknown), whether or not in a window.
  void graph_node(const decoded::GraphNode& g, uint32_t op_name);

  // A hooked call, made on thread `instance`, into window `slot`'s trace.
  void api_call(const decoded::Record& r, const decoded::CudaApiCall& call, uint32_t instance, int32_t slot,
                WindowTrace& trace);
  // A CUPTI record that thread `instance` wrote, into window `slot`'s trace.
  void gpu_activity(const decoded::Record& r, const decoded::GpuActivity& a, uint32_t instance, int32_t slot,
                    WindowTrace& trace);
  // Window `slot` is being written: its held events go in now, its calls
  // folded first.
  void release(int32_t slot, WindowTrace& trace);
  // The end of a drain pass: graph work whose capture had not been read
  // when it was is attributed now. Every ring has then been drained up to
  // the same time, and a capture precedes its replays: one not read by now
  // was never recorded ("captured outside the window"). Waiting for the
  // window's end instead would hold every replay of such a graph in memory.
  // `trace_of(slot)`: the window's trace, null when it is no longer open.
  template <class TraceOf>
  void settle(TraceOf&& trace_of) {
    for (auto& [slot, h] : unsettled_) {
      (void)attribute(h.info);
      if (WindowTrace* t = trace_of(slot)) write(*t, h.event, h.info);
    }
    unsettled_.clear();
  }

 private:
  struct Held {
    trace::Event event;  // name and thread already file ids
    trace::CudaInfo info;
  };
  bool flushes_gpu() const { return process_.header.gpu_flush.load(std::memory_order_relaxed) != 0; }
  // Writes now when the launching op is known or cannot be, else holds.
  void join(int32_t slot, WindowTrace& trace, const trace::Event& e, trace::CudaInfo info);
  // Fills in the op `info` belongs to, as far as is known now; false when
  // what it needs (a correlation, a capture) has not arrived (yet).
  bool attribute(trace::CudaInfo& info) const;
  static void write(WindowTrace& trace, trace::Event e, trace::CudaInfo info);

  const ProcessContext& process_;
  std::unordered_map<uint64_t, uint64_t> external_;      // correlation id -> the launching op's handle
  std::unordered_map<int32_t, std::vector<Held>> held_;  // by window slot
  // Hooked calls and CUPTI's records of calls, by window slot, to fold.
  std::unordered_map<int32_t, std::vector<CallRecord>> calls_;
  std::vector<std::pair<int32_t, Held>> unsettled_;  // graph work of this drain pass, by window slot
  GraphCaptures graphs_;
  bool seen_ = false;
};

// The agent's lines on CUDA (cuda_status.hpp): none when the process has no
// CUDA in it; its status; that it yielded CUPTI in some window.
std::vector<std::string> cuda_notes(const wire::ProcessHeader& header, ProcessNames& names);

}  // namespace ptprof::launcher
