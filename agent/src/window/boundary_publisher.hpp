// Publishing window boundaries in the process region (shm_abi.hpp:
// ProcessHeader::boundaries). While a publisher lives, `in_transition` is
// raised, so the launcher never classifies an event against a list that is
// half written (it drains no further than it had until the flag falls); the
// flag falls when the publisher goes out of scope, whatever path leaves it.
// One publisher at a time: the window controller makes them under its step
// lock.
#pragma once
#include <atomic>
#include <cstdint>

#include "ptprof/check.hpp"
#include "ptprof/shm_abi.hpp"

namespace ptprof::agent {

class BoundaryPublisher {
 public:
  explicit BoundaryPublisher(wire::ProcessHeader& header) : header_(header) {
    PTPROF_DCHECK(header_.in_transition.load(std::memory_order_relaxed) == 0);
    header_.in_transition.store(1, std::memory_order_seq_cst);
  }
  ~BoundaryPublisher() { header_.in_transition.store(0, std::memory_order_release); }
  BoundaryPublisher(const BoundaryPublisher&) = delete;
  BoundaryPublisher& operator=(const BoundaryPublisher&) = delete;

  // `step`: the step number at which it happens.
  void publish(wire::BoundaryKind kind, uint64_t ticks, uint32_t window, uint64_t step) {
    const uint32_t n = header_.boundary_count.load(std::memory_order_relaxed);
    wire::Boundary& b = header_.boundaries[n % wire::kMaxBoundaries];
    b.ticks = ticks;
    b.kind = uint32_t(kind);
    b.window = window;
    b.step = step;
    header_.boundary_count.store(n + 1, std::memory_order_release);
  }

 private:
  wire::ProcessHeader& header_;
};

}  // namespace ptprof::agent
