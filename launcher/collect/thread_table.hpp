// The threads of one process region: its thread slots, each with the ring
// the collector drains and the spans open on it, and the threads as the
// trace files know them. Slots are reused: a thread that exited is retired
// (its ring drained, its open spans closed) and its slot released to the
// agent; the next thread in it is another instance. A thread thus has a slot
// (where it writes), an instance (which thread it is, here), a tid (the
// kernel's) and, per window, a file thread (WindowTrace::thread).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "collect/span_stack.hpp"
#include "ptprof/ring.hpp"
#include "ptprof/shm_abi.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::launcher {

struct ThreadDecode {
  wire::RingReader reader;
  uint32_t slot = 0;
  uint32_t instance = 0;  // ThreadTable::instance of the thread now in the slot
  bool live = false;      // a thread occupies the slot (attached, not yet retired)
  SpanStack spans;
  uint64_t dropped_accounted = 0;  // ring drops already charged to a window
  uint64_t last_ticks = 0;         // the latest record drained
};

struct ThreadInstance {
  uint32_t slot = 0;
  bool live = true;
  int32_t tid = 0;
  std::string name;  // read from the slot while live, kept when retired
  // The thread's call stacks (StackDef records) by id - 1; frames name arena ids.
  std::vector<std::vector<trace::Frame>> stacks;
};

// Ring drops not yet charged to a window, by thread instance.
struct ThreadDrops {
  uint32_t instance = 0;
  uint64_t dropped = 0;
};

class ThreadTable {
 public:
  ThreadTable(wire::ProcessHeader& header, void* region_base) : header_(header), base_(region_base) {}

  // Slots the agent filled since the last call become live threads.
  void attach_new();
  // `t` exited, its ring is drained and its spans are closed: keep its
  // identity for the files still to be written, and give the slot back.
  void retire(ThreadDecode& t);
  std::vector<ThreadDecode>& slots() { return slots_; }

  uint32_t instances() const { return uint32_t(instances_.size()); }
  // The thread with kernel id `tid`: the latest instance that had it; else `fallback`.
  uint32_t instance_of_tid(int32_t tid, uint32_t fallback) const;
  // An instance as a trace file lists it.
  trace::Thread describe(uint32_t instance) const;
  void define_stack(uint32_t instance, uint32_t id, std::vector<trace::Frame> frames);
  // A stack of the instance's, null when it was never defined (or is empty).
  const std::vector<trace::Frame>* stack(uint32_t instance, uint32_t id) const;

  // Ring drops of every slot, past and present.
  uint64_t dropped() const;
  // Ring bytes the readers skipped as malformed, past and present.
  uint64_t corrupt_bytes() const;
  uint64_t last_ticks() const;
  // Whether some drops are not charged to a window yet; take_drops charges them.
  bool drops_to_charge() const;
  std::vector<ThreadDrops> take_drops();

 private:
  wire::ProcessHeader& header_;
  void* base_;
  std::vector<ThreadDecode> slots_;  // by slot
  std::vector<ThreadInstance> instances_;
  std::unordered_map<int32_t, uint32_t> tid_instances_;  // tid -> its latest instance
  std::vector<ThreadDrops> retired_drops_;               // drops of retired threads, not yet charged
  uint64_t replaced_corrupt_bytes_ = 0;                  // of readers replaced by a slot's next thread
};

}  // namespace ptprof::launcher
