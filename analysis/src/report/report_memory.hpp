// The memory columns of the operator table, with torch's semantics
// (autograd/profiler.py, _parse_kineto_results; profiler_util.py): an event's
// CPU Mem is the sum of the bytes (+ allocations, - frees) of the memory
// events whose time lies in [start, end], its children's included; Self CPU
// Mem subtracts its children's CPU Mem; memory events inside no event become
// "[memory]" rows. CUDA Mem is the same for device memory. ptprof takes the
// memory events of the event's own thread (torch takes every thread's, which
// is the same for the one thread torch.profiler tracks memory on).
#pragma once
#include <cstdint>
#include <vector>

#include "ptprof/trace.hpp"

namespace ptprof::report::detail {

// torch's grouping of devices: CPU Mem counts CPU, MKLDNN and IDEEP; CUDA Mem
// counts CUDA, HIP, XPU and PrivateUse1.
bool is_cpu_memory(int8_t device_type);
bool is_device_memory(int8_t device_type);

struct MemorySum {
  int64_t cpu = 0;
  int64_t device = 0;
  MemorySum& operator+=(const MemorySum& o) {
    cpu += o.cpu;
    device += o.device;
    return *this;
  }
  MemorySum& operator-=(const MemorySum& o) {
    cpu -= o.cpu;
    device -= o.device;
    return *this;
  }
};

// By memory record (t.memory's index): 1 for a free of torch's whose block
// was not allocated earlier in this trace on the same process and device (no
// allocation at its address since the last free there): a block allocated
// before the trace's window, which torch reports because the bridge has
// torch track every block under --profile-memory (docs/memory.md). A
// torch.profiler that profiles this window only never sees it, so the
// columns leave it out; it stays in torch's totals, `ptprof memory` and the
// export. CUDA segments are never 1.
std::vector<uint8_t> frees_from_before(const trace::Trace& t);

// One thread's memory events, for interval sums.
class ThreadMemory {
 public:
  // `record`: its index in Trace::memory, for each_point().
  void add(int64_t ts, const trace::MemoryInfo& m, uint32_t record = 0);
  // Call once after the last add().
  void seal();
  bool empty() const { return points_.empty(); }
  // The events with time in [start, end]; marks them as inside an event.
  MemorySum in(int64_t start, int64_t end);
  // The events inside no event, how many, and the time of the first.
  MemorySum outside(uint64_t* count, int64_t* first_ts) const;
  // Each event's record (as given to add()) and whether an event holds it,
  // after the in() calls.
  template <class F>
  void each_point(F&& f) const {
    int32_t depth = 0;
    for (size_t i = 0; i < points_.size(); ++i) {
      depth += cover_[i];
      f(points_[i].record, depth > 0);
    }
  }

 private:
  struct Point {
    int64_t ts;
    MemorySum bytes;
    uint32_t record;
  };
  std::vector<Point> points_;
  std::vector<int64_t> ts_;
  std::vector<MemorySum> prefix_;  // prefix_[i]: sum of points [0, i)
  std::vector<int32_t> cover_;     // difference array: points inside some event
};

}  // namespace ptprof::report::detail
