// Drains one process region into its window files. The orchestrator of a
// pipeline whose stages each live in a file of their own:
//
//   ring record --decode_record--> typed event      (record_decoder.hpp)
//     spans paired per thread                        (span_stack.hpp, thread_table.hpp)
//     sorted into windows by time; steps             (window_book.hpp)
//     CUDA joined to its ops by correlation          (cuda_join.hpp)
//     memory booked, frees matched to allocations    (memory_ledger.hpp)
//   --> the window's trace, ids mapped to the file's (window_trace.hpp)
//   --> opened and closed through the WindowSink     (window_output.hpp)
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "collect/collector_options.hpp"
#include "collect/cuda_join.hpp"
#include "collect/memory_ledger.hpp"
#include "collect/process_names.hpp"
#include "collect/record_decoder.hpp"
#include "collect/session.hpp"
#include "collect/setup_split.hpp"
#include "collect/thread_table.hpp"
#include "collect/window_book.hpp"
#include "collect/window_output.hpp"
#include "collect/window_sink.hpp"
#include "ptprof/clock.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::launcher {

// What one process's step rule met (its region's counters).
struct StepFacts {
  int32_t pid = 0;
  uint64_t steps_ended = 0;
  uint64_t optimizer_steps = 0;     // Optimizer.step ends
  uint64_t dataloader_batches = 0;  // enumerate(DataLoader)#...__next__ ends
  uint64_t named = 0;               // ends of what PTPROF_STEP names
  uint64_t forwards = 0;            // the model's outermost forward ends (counted under forward and auto only)
  uint32_t auto_rule = 0;           // StepRule::Kind + 1 that `auto` chose; 0: none yet
  // The cost measured on the process's own steps (ProcessHeader::step_cost_*):
  // the median of (steady recorded step - the steady unrecorded step before
  // it) in the stepping thread's CPU time, the median unrecorded step, the
  // median operators per recorded step; 0 pairs: none.
  uint32_t cost_pairs = 0;
  uint32_t cost_unrecorded_steps = 0;
  uint32_t cost_ops = 0;
  int64_t cost_added_ns = 0;
  uint64_t cost_unrecorded_ns = 0;
};

// A CUDA allocation that failed for want of memory (ptprof/out_of_memory.hpp).
struct OutOfMemoryNote {
  int32_t pid = 0;
  std::string api;
  uint64_t bytes = 0;
  std::string op;  // the outermost operator open on the thread, else the innermost span; "" = none
};

class ProcessCollector {
 public:
  ProcessCollector(std::unique_ptr<RegionMapping> region, FileStem file_stem, const CollectorOptions& opts,
                   const clock::Converter& conv, WindowSink& sink);
  ~ProcessCollector();

  // Drains everything committed with a timestamp <= horizon (raw ticks).
  // Returns the number of records consumed.
  uint64_t drain(uint64_t horizon);
  // Writes out windows whose end has been drained past; flushes the others
  // every opts.flush_interval.
  void finish_ready_windows();
  // The process is gone: drain all, close open spans, write every window.
  void finish();

  int32_t pid() const { return header_.pid; }
  // The process's role (process_role.hpp), given whether its parent is one
  // of the session's processes.
  std::string role(bool parent_profiled) const;
  int32_t ppid() const { return header_.ppid; }
  StepFacts step_facts() const;
  bool closed_flag() const { return header_.closed.load(std::memory_order_acquire) != 0; }
  bool finished() const { return finished_; }
  uint64_t events() const;
  // Whether window `index` began in this process, and is not yet written.
  bool window_begun(uint32_t index) const { return book_.begun(index); }
  bool window_open(uint32_t index) const { return book_.open(index); }
  uint64_t dropped() const { return threads_.dropped(); }
  // Threads seen, each reuse of a slot by a new thread counting as one.
  uint32_t threads() const { return threads_.instances(); }
  // Everything this process lost so far besides ring drops (the ledger).
  trace::Losses losses() const;
  // The agent's lines on CUDA (cuda_status.hpp): none when the process has
  // no CUDA in it; its status; that it yielded CUPTI in some window.
  std::vector<std::string> cuda_notes();
  // The CUDA allocations that failed for want of memory (the first few) and how many did.
  const std::vector<OutOfMemoryNote>& out_of_memory() const { return out_of_memory_; }
  uint64_t out_of_memory_count() const { return out_of_memory_count_; }

 private:
  bool visit(ThreadDecode& t, const wire::RecordHeader& h, uint64_t horizon);
  // One handler per decoded record type.
  void route(ThreadDecode&, const decoded::Record&, const decoded::Skipped&) {}
  void route(ThreadDecode& t, const decoded::Record& r, const decoded::Malformed& m);
  void route(ThreadDecode& t, const decoded::Record& r, const decoded::RangePush&);
  void route(ThreadDecode& t, const decoded::Record& r, const decoded::RangePop&);
  void route(ThreadDecode& t, const decoded::Record& r, const decoded::Mark&);
  void route(ThreadDecode& t, const decoded::Record& r, const decoded::Step& s);
  void route(ThreadDecode& t, const decoded::Record& r, const decoded::OpBegin& op);
  void route(ThreadDecode& t, const decoded::Record& r, const decoded::OpEnd& op);
  void route(ThreadDecode& t, const decoded::Record& r, const decoded::CudaApiCall& call);
  void route(ThreadDecode& t, const decoded::Record& r, const decoded::GpuActivity& a);
  void route(ThreadDecode& t, const decoded::Record& r, const decoded::Correlation& c);
  void route(ThreadDecode& t, const decoded::Record& r, const decoded::Memory& m);
  void route(ThreadDecode& t, const decoded::Record& r, decoded::StackDef& s);
  void route(ThreadDecode& t, const decoded::Record& r, const decoded::Collective& c);
  void route(ThreadDecode& t, const decoded::Record& r, decoded::TensorGroup& g);
  void route(ThreadDecode& t, const decoded::Record& r, const decoded::GraphNode& g);

  // The slot of the window that holds an event at `ticks`, its trace open;
  // -1 when none does or its file cannot be opened.
  int32_t writable_window(uint64_t ticks) { return writable(book_.window_for(ticks)); }
  // `slot`, its trace opened for writing; -1 when it cannot be.
  int32_t writable(int32_t slot);
  void open_span(ThreadDecode& t, const OpenSpan& s);
  // What closing a span of thread `t` does: the window it began in gets it.
  auto span_closer(ThreadDecode& t);
  // What the agent wrote of an op beside its begin: a collective's facts
  // (names arena ids), the inputs' tensor identity. Rare: most ops have none,
  // and the drain passes none without building one.
  struct OpFacts {
    std::optional<trace::CollectiveInfo> collective;
    std::optional<trace::TensorGroup> tensors;
  };
  using OpFactsNode = std::unordered_map<uint64_t, OpFacts>::node_type;
  // Writes a span (or a mark: end == start) into `w`'s trace, with the op's
  // facts (nullptr: none).
  void write_event(Window& w, uint32_t instance, const OpenSpan& s, uint64_t end, uint16_t flags, const OpFacts* facts);
  // The facts of op `s`, taken out of op_facts_: an empty node when it has none.
  OpFactsNode take_facts(const OpenSpan& s);
  static const OpFacts* facts_of(const OpFactsNode& n) { return n ? &n.mapped() : nullptr; }
  void retire_thread(ThreadDecode& t);
  void note_out_of_memory(ThreadDecode& t, const decoded::Record& r, const decoded::CudaApiCall& call);
  void write_window(int32_t slot);

  std::unique_ptr<RegionMapping> region_;
  wire::ProcessHeader& header_;
  const CollectorOptions& opts_;
  ProcessNames names_;
  ShapeTexts shapes_;
  ThreadTable threads_;
  ProcessContext context_;
  WindowBook book_;
  SetupSplit setup_;
  CudaJoin cuda_;
  MemoryLedger memory_;
  WindowOutput output_;
  // What the agent wrote of ops still open beside their begin, by the op's
  // handle (OpFacts): written with the op when it closes, dropped then if it
  // is not written.
  std::unordered_map<uint64_t, OpFacts> op_facts_;
  trace::Losses seen_;     // counted here (unnamed events, malformed records); losses() adds the rest
  trace::Losses charged_;  // already written into window files
  uint64_t drained_horizon_ = 0;
  std::vector<OutOfMemoryNote> out_of_memory_;
  uint64_t out_of_memory_count_ = 0;
  bool finished_ = false;
  std::chrono::steady_clock::time_point last_flush_ = std::chrono::steady_clock::now();
};

}  // namespace ptprof::launcher
