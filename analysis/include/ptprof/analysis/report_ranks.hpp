// The processes and ranks behind a report: which processes the inputs hold
// (DataLoader workers, spawned children, torchrun's ranks, from one or many
// hosts), and for a distributed job the per-rank view: step times, op and
// collective totals, and the slowest rank of each step.
//
// Computed one trace at a time, keeping per-process summaries only, so that a
// report over hundreds of rank files holds no more than their totals.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/trace.hpp"

namespace ptprof::report {

// Whether an op is a collective or point-to-point communication: c10d's ops
// (c10d::allreduce_), the process groups' work (gloo:all_reduce,
// nccl:all_reduce, mpi:..., ucc:...) and torch's record_param_comms.
bool is_collective(std::string_view op_name);

struct ProcessRow {
  std::string host;  // the process's own, else the file's
  int32_t pid = 0;
  int32_t ppid = 0;
  int32_t rank = -1;  // RANK, -1 = none
  int32_t local_rank = -1;
  int32_t world_size = -1;
  std::string cmdline;
  uint32_t agent_role = 0;  // trace::Process::role
  int32_t role_index = -1;
  std::string role;                     // main, DataLoader worker N, compile worker, rank N, child (process_role.hpp)
  uint64_t events = 0;                  // every event of the process in the inputs
  uint64_t ops = 0;                     // Op events
  int64_t op_ns = 0;                    // time in top-level ops (= the ops' self time summed)
  uint64_t collective_calls = 0;        // collective ops not nested in another on their thread
  int64_t collective_ns = 0;            // while any collective op of the process was in flight
  std::map<uint64_t, int64_t> step_ns;  // ProfilerStep#N: N -> wall time
};

struct CollectiveRow {
  std::string name;
  uint64_t calls = 0;
  int64_t total_ns = 0;  // every call's duration (nested ones too)
};

struct RankRow {
  int32_t rank = 0;
  int32_t world_size = -1;
  std::string host;
  int32_t pid = 0;         // the rank's main process (its parent is not of the rank)
  uint32_t processes = 0;  // the rank's processes, its DataLoader workers included
  uint64_t ops = 0;        // of all its processes
  int64_t op_ns = 0;
  uint64_t collective_calls = 0;
  int64_t collective_ns = 0;               // while any collective op was in flight (its processes summed)
  std::vector<CollectiveRow> collectives;  // by name
  std::map<uint64_t, int64_t> step_ns;     // the main process's steps
  int64_t step_total_ns() const;
  int64_t step_max_ns() const;
};

// One step as the ranks that recorded it saw it.
struct StragglerRow {
  uint64_t step = 0;
  uint32_t ranks = 0;  // ranks that recorded the step
  int32_t slowest_rank = 0;
  int64_t slowest_ns = 0;
  int64_t median_ns = 0;
  int64_t lag_ns = 0;  // slowest - median
};

// One collective matched across ranks: the index-th collective call each
// rank started in a step (torch gives a gloo collective no sequence number
// or process group to join on, so calls are matched by their order in the
// step), and when each rank arrived: the others wait for the last one,
// which is that collective's straggler. A rank's calls are its c10d ops (c10d::allreduce_, the call the
// program makes) not nested in another collective on their thread; a rank
// with none (a torch without them) counts its process groups' work
// (gloo:all_reduce, nccl:...). Arrivals are on the wall clock (each file's
// realtime offset), so ranks on several hosts compare as their clocks do.
struct ArrivalRow {
  uint64_t step = 0;
  uint32_t index = 0;                                 // 0: the step's first collective
  std::string name;                                   // as the lowest rank recorded it
  std::vector<std::pair<int32_t, int64_t>> arrivals;  // (rank, ns after the first to arrive), by rank
  int32_t last_rank = 0;                              // the last to arrive; ties: the lowest rank
  int64_t spread_ns = 0;                              // the last arrival less the first
  // False when the ranks' Nth calls have different names: matching by order
  // went wrong there (ranks in different process groups, or a rank that
  // skipped a call), and the row says so.
  bool names_agree = true;
  // Matched by torch's numbers (record_param_comms on NCCL): the process
  // group and its sequence number of the call; seq -1: matched by order.
  std::string process_group;
  int64_t seq = -1;
};

struct RankSummary {
  std::vector<ProcessRow> processes;     // by host, rank (none last), pid
  std::vector<RankRow> ranks;            // by rank; empty when no process had a rank
  std::vector<StragglerRow> stragglers;  // steps recorded by two ranks or more, by step
  std::vector<ArrivalRow> arrivals;      // collectives of steps two ranks or more recorded, by step and index
};

// What add() takes from one process's events, counted by a caller that
// streams them: the trace then needs no events.
struct ProcessEventCounts {
  uint64_t events = 0;
  uint64_t ops = 0;
  int64_t op_ns = 0;                    // top-level ops (none nested in another op of their thread)
  std::map<uint64_t, int64_t> step_ns;  // ProfilerStep#N: N -> longest span
};

class RankSummaryBuilder {
 public:
  RankSummaryBuilder();
  ~RankSummaryBuilder();
  RankSummaryBuilder(RankSummaryBuilder&&) noexcept;
  RankSummaryBuilder& operator=(RankSummaryBuilder&&) noexcept;

  void add(const trace::Trace& t);
  // The same for a trace whose events were counted as they were read, one
  // entry per process of `t` (which may hold no events); it must have no
  // collective op (their intervals need the events).
  void add_counted(const trace::Trace& t, const std::vector<ProcessEventCounts>& counts);
  // Adds what another builder took from later traces, as if they had been
  // added here (a builder per trace lets traces be read on several threads).
  void merge(RankSummaryBuilder&& later);
  RankSummary finish() &&;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The report's sections: processes (when there are several) and ranks
// (when any process had one), as text tables; "" when neither applies.
std::string render_ranks_table(const RankSummary& s);
// `"processes": [...],\n  "ranks": {...},\n`: members of the report's JSON
// object, indented as its other members.
std::string render_ranks_json(const RankSummary& s);

}  // namespace ptprof::report
