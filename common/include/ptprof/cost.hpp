// Every run states its own cost: the events of a trace charged with what
// recording one cost the process that wrote it, as its agent measured at
// start-up (agent/src/record/cost_calibration.hpp): operators at the operator cost
// (torch's callback work included), other records at the record cost. The
// run summary and `ptprof report` print it in ms and as a share of the
// recorded time (docs/performance.md).
#pragma once
#include <cstdint>
#include <string>

#include "ptprof/trace.hpp"

namespace ptprof::cost {

// Records a target thread wrote for an event of kind `k` besides operators:
// a range is a push and a pop. GPU activity is written by CUPTI's threads,
// off the target's path, and steps by the launcher: not charged.
inline uint32_t records_of(trace::EventKind k) {
  switch (k) {
    case trace::EventKind::Range:
      return 2;
    case trace::EventKind::Mark:
    case trace::EventKind::CudaApi:
    case trace::EventKind::Memory:
      return 1;
    default:
      return 0;
  }
}

struct Tally {
  uint64_t ops = 0;           // operators charged
  uint64_t records = 0;       // other records charged
  uint64_t uncalibrated = 0;  // events of processes that measured no cost: not charged
  // In picoseconds, as the processes measured them: whole numbers, so the
  // launcher's sum per event drained is an integer add, not a dependent
  // floating-point chain.
  uint64_t op_ps = 0;       // ops x each one's process's operator cost
  uint64_t record_ps = 0;   // records x each one's process's record cost
  int64_t recorded_ns = 0;  // the recorded steps' time, or without steps the span of operators and records

  double op_ns() const { return double(op_ps) / 1000; }
  double record_ns() const { return double(record_ps) / 1000; }
  double added_ns() const { return op_ns() + record_ns(); }
  // The share of the recorded time that was ptprof's; 0 when none is known.
  double share() const { return recorded_ns > 0 ? added_ns() / double(recorded_ns) : 0; }
  // Charges one event of a process with these costs (picoseconds).
  // Inline: the launcher charges every event it drains.
  void charge(trace::EventKind k, uint32_t op_cost_ps, uint32_t record_cost_ps);
  Tally& operator+=(const Tally& o);
};

inline void Tally::charge(trace::EventKind k, uint32_t op_cost_ps, uint32_t record_cost_ps) {
  if (k == trace::EventKind::Op) {
    if (!op_cost_ps) {
      ++uncalibrated;
      return;
    }
    ++ops;
    op_ps += op_cost_ps;
    return;
  }
  const uint32_t n = records_of(k);
  if (!n) return;
  if (!record_cost_ps) {
    ++uncalibrated;
    return;
  }
  records += n;
  record_ps += uint64_t(n) * record_cost_ps;
}

// The events of one trace, each charged with its process's costs; the
// recorded time is its Step events', or else the span of its operators and
// records.
Tally tally(const trace::Trace& t);

// tally() one event at a time, for readers that do not hold a trace's events:
// fed the same events in the same order, it gives the same Tally.
class TallyBuilder {
 public:
  // `t`: the trace's metadata (strings, threads, processes) as far as read.
  void add(const trace::Trace& t, const trace::Event& e);
  Tally finish() const;

 private:
  Tally tally_;
  int64_t steps_ns_ = 0, first_ = INT64_MAX, last_ = INT64_MIN;
};

// One line for people: "about 12.3 ms, 4.1% of the recorded steps (30000 ops
// x 310.2 ns, 1200 records x 9.5 ns, as measured at start-up)"; a line that
// says no cost was measured when nothing was charged.
std::string describe(const Tally& t);

}  // namespace ptprof::cost
