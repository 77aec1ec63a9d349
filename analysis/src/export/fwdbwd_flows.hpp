// torch's "fwdbwd" flows: an arrow from a forward op to the backward
// function autograd ran for it, as Kineto draws them. Kineto links each op
// run by a backward function (RecordScope BACKWARD_FUNCTION, e.g.
// "AddmmBackward0": an op with a forward thread id) to the forward op of the
// same sequence number that started last (the one that made the autograd
// node; its enclosing ops share the number). Found in a pass over the events
// before the write pass (export ids are the same in every pass), so that the
// write pass can put each flow's ends right after the ops they bind to.
//
// Kineto matches the backward op's forward thread id with the forward op's
// RecordFunction thread id; the trace holds the forward op's OS thread, not
// that id, so ops are matched by process and sequence number, and a sequence
// number that forward ops of two threads of one process share (autograd
// numbers nodes per thread) is left unlinked rather than guessed.
//
// The same pass finds what torch gives each "autograd::engine::evaluate_
// function: X" op: the sequence number and forward thread id of the backward
// function X it runs (RecordFunction records none for it; torch copies them
// from that child when it builds its events).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ptprof/trace.hpp"

namespace ptprof::exporting::detail {

struct FlowEnd {
  bool start = false;  // 's' on the forward op; else 'f' (binding to the enclosing slice) on the backward op
  uint64_t id = 0;     // the flow's id, from 1 in order of the backward ops
};

class FwdBwdFlows {
 public:
  // Every event of the first pass, with its export id and its wall-clock start.
  void see(const trace::Trace& t, const trace::Event& e, uint64_t export_id, int64_t wall_ns);
  // After the pass: pairs the backward ops with their forward ops.
  void link();
  // The flow ends of the event with export id `export_id` (none: empty).
  const std::vector<FlowEnd>& ends(uint64_t export_id) const;
  // An evaluate_function op's sequence number and forward thread id, from
  // the backward function it runs; nullptr for any other event.
  const std::pair<int64_t, uint64_t>* inherited(uint64_t export_id) const;
  uint64_t links() const { return links_; }

 private:
  struct Forward {
    int64_t wall_ns = 0;
    uint64_t export_id = 0;
    int32_t tid = 0;
    bool ambiguous = false;  // forward ops of two threads have this number
  };
  using Key = std::pair<int32_t, int64_t>;  // pid, sequence number
  std::map<Key, Forward> forward_;
  std::vector<std::pair<uint64_t, Key>> backward_;  // export id, key; in export order
  std::unordered_map<uint64_t, std::vector<FlowEnd>> ends_;
  // evaluate_function ops and the backward functions they may run, matched
  // in link() by thread, name and time.
  struct Evaluate {
    uint64_t export_id = 0;
    int64_t start_ns = 0, end_ns = 0;  // wall clock
  };
  struct BackwardRun {
    int64_t start_ns = 0;  // wall clock
    int64_t seq_nr = -1;
    uint64_t fwd_thread_id = 0;
  };
  using ThreadName = std::tuple<int32_t, int32_t, std::string>;  // pid, tid, backward function's name
  std::map<ThreadName, std::vector<Evaluate>> evaluates_;
  std::map<ThreadName, std::vector<BackwardRun>> backward_runs_;
  std::unordered_map<uint64_t, std::pair<int64_t, uint64_t>> inherited_;
  uint64_t links_ = 0;
};

}  // namespace ptprof::exporting::detail
