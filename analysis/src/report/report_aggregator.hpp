// The full computation of the report's rows and steps: every event of a
// trace at once, thread by thread, through torch's call tree (event_tree.hpp);
// streamed traces (report_stream.hpp) are merged into the same rows.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "model/event_tree.hpp"
#include "ptprof/analysis/report.hpp"
#include "ptprof/string_hash.hpp"
#include "ptprof/trace.hpp"
#include "report/report_memory.hpp"
#include "report/report_stream.hpp"

namespace ptprof::report::detail {

// What the report computed for one event it put in its call tree (ops,
// ranges, steps, CUDA API calls) or counted as async: the values behind the
// rows, per event, for the dataset export (dataset_tables.cpp), so that its
// ops table sums to the report's rows by construction.
struct NodeValues {
  uint32_t event = 0;         // index into the trace's events
  int64_t parent_event = -1;  // the innermost enclosing node after folding; -1 for a root
  uint32_t depth = 0;         // 0 for a root
  bool folded = false;        // merged into its same-named parent: no call of a row of its own
  bool async = false;         // spans threads: no parent, no children, no self time
  int64_t self_ns = 0;
  int64_t cuda_total_ns = 0;
  int64_t self_cuda_ns = 0;
  MemorySum memory, self_memory;  // memory columns (0 without memory records)
};
using NodeSink = std::function<void(const NodeValues&)>;

// torch's device_time_total and self_device_time_total of a node.
struct CudaTimes {
  int64_t total_ns = 0;
  int64_t self_ns = 0;
};

class Aggregator {
 public:
  explicit Aggregator(const Options& o) : opts_(o) {}

  void add_trace(uint32_t input, const trace::Trace& t);
  // Every node of every thread add_trace() builds, after its values are known.
  void set_node_sink(NodeSink sink) { node_sink_ = std::move(sink); }
  // Every memory record the report counts (its index in Trace::memory), and
  // whether an event on its thread holds it: one that none holds is a call
  // of the `[memory]` row.
  void set_memory_sink(std::function<void(uint32_t record, bool inside)> sink) { memory_sink_ = std::move(sink); }
  void add_streamed(const StreamedTrace& s);
  // Adds what another aggregator of the same options computed from later
  // inputs, as if its traces had been added here: rows by key, steps after
  // these. One per input lets inputs be computed on several threads.
  void merge(Aggregator&& later);
  // Rows in torch's insertion order: that of each key's first event, which is
  // what the stable sort by the sort key leaves ties in.
  std::vector<Row> take_rows() {
    std::vector<uint32_t> order(rows_.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return first_[a] < first_[b]; });
    std::vector<Row> out;
    out.reserve(rows_.size());
    for (uint32_t i : order) out.push_back(std::move(rows_[i]));
    return out;
  }
  std::vector<StepRow> take_steps() { return std::move(steps_); }
  std::vector<StepRow> take_outside_steps() { return std::move(outside_steps_); }
  // torch's base of Self CUDA %: the GPU events' own time (never the ops',
  // which would count each kernel twice).
  int64_t device_self_ns() const { return device_self_ns_; }
  bool saw_memory() const { return saw_memory_; }
  bool saw_device_memory() const { return saw_device_memory_; }

 private:
  struct Local;         // per-trace caches from string ids to rows
  struct ThreadEvents;  // one thread's events, sorted out
  uint32_t row_for(std::string_view name, std::string_view shapes, const std::vector<std::string>* stack = nullptr);
  void add(uint32_t row, const FirstSeen& at, bool async, int64_t total_ns, int64_t self_ns, int64_t cuda_total_ns = 0,
           int64_t self_cuda_ns = 0);
  void add_memory(uint32_t row, const MemorySum& total, const MemorySum& self);
  uint32_t row_of(const trace::Event& e, Local& local);
  void add_thread(uint32_t input, const trace::Thread& thread, const std::vector<uint32_t>& events, Local& local);
  ThreadEvents sort_out(uint32_t input, const std::vector<uint32_t>& events, Local& local);
  void add_thread_memory(uint32_t input, ThreadEvents& te, const model::Tree& tree, Local& local,
                         std::vector<MemorySum>* total_out, std::vector<MemorySum>* self_out);
  void tell_nodes(const ThreadEvents& te, const model::Tree& tree, const std::vector<CudaTimes>& cuda,
                  const std::vector<MemorySum>& total, const std::vector<MemorySum>& self);
  void add_thread_steps(const trace::Thread& thread, const ThreadEvents& te, const model::Tree& tree,
                        const Local& local);

  Options opts_;
  StringMap<uint32_t> row_index_;
  std::vector<Row> rows_;
  std::vector<FirstSeen> first_;
  std::vector<StepRow> steps_;
  std::vector<StepRow> outside_steps_;
  int64_t device_self_ns_ = 0;
  bool saw_memory_ = false;
  bool saw_device_memory_ = false;
  NodeSink node_sink_;
  std::function<void(uint32_t, bool)> memory_sink_;
};

}  // namespace ptprof::report::detail
