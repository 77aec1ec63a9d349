// Every run states its own cost: what recording costs this process, measured
// on this machine at start-up, so that the launcher can charge each window's
// events with it (docs/performance.md, "What a run says it cost").
//
// Two figures, in picoseconds:
//   record cost: one record through the hot path (an intern-cache hit, a
//     clock read, a store into a ring), for marks, range pushes and pops,
//     memory events; timed here on a private ThreadState;
//   op cost: one operator, begin and end, with everything ptprof makes torch
//     do for it (its RecordFunction callbacks, ids, inputs when shapes are
//     recorded); timed by the torch bridge on tiny aten ops with ptprof's
//     callback on and off (agent/torch/calibrate_ops.hpp), the events going
//     to the calling thread's ScratchRing, never to the trace.
#pragma once
#include <cstdint>
#include <memory>

#include "ptprof/clock.hpp"
#include "ptprof/ring.hpp"

namespace ptprof::agent {

// A ring in private memory whose consumer is the writer itself: rewind()
// consumes everything written so far and says how many operators that was
// (the torch bridge divides its timings by it).
class ScratchRing {
 public:
  static constexpr uint64_t kBytes = 1u << 20;
  ScratchRing() : data_(std::make_unique<uint8_t[]>(kBytes)) {}
  wire::RingWriter writer() { return wire::RingWriter(&ctl_, data_.get(), kBytes); }
  uint32_t rewind() {
    uint32_t ops = 0;
    wire::RingReader(&ctl_, data_.get(), kBytes).drain([&](const wire::RecordHeader& h) {
      ops += h.type == static_cast<uint16_t>(wire::RecordType::OpBegin) ? 1 : 0;
      return true;
    });
    return ops;
  }

 private:
  wire::RingControl ctl_;
  std::unique_ptr<uint8_t[]> data_;
};

// The record cost of this process, in picoseconds (best of a few batches),
// its events timed on `clock` (the session's). Leaves nothing in the
// process's region: no name, no record.
uint32_t calibrate_record_cost_ps(clock::Kind clock);

}  // namespace ptprof::agent
