// One window's trace while it is written: the writer the sink opened, the
// maps from the process's ids (arena names, shapes texts, thread instances,
// stacks, GPU lanes) to the file's own, each entry added to the file on its
// first use, and what the window's events cost the target (cost.hpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "collect/process_names.hpp"
#include "collect/span_stack.hpp"
#include "collect/thread_table.hpp"
#include "ptprof/analysis/trace_file.hpp"
#include "ptprof/clock.hpp"
#include "ptprof/cost.hpp"
#include "ptprof/losses.hpp"
#include "ptprof/shm_abi.hpp"

namespace ptprof::launcher {

// What a window's file looks the process's ids up in, and the process's
// per-event costs and clock.
struct ProcessContext {
  ProcessNames& names;
  const ShapeTexts& shapes;
  const ThreadTable& threads;
  const wire::ProcessHeader& header;
  const clock::Converter& conv;
  // The header's costs (op_cost_ps, record_cost_ps) as read_costs() last
  // copied them, which the process's collector does before each drain: read
  // per event from the shared header, the loads cost the drain more than the
  // charge itself.
  uint32_t op_cost_ps = 0;
  uint32_t record_cost_ps = 0;
  void read_costs() {
    op_cost_ps = header.op_cost_ps.load(std::memory_order_relaxed);
    record_cost_ps = header.record_cost_ps.load(std::memory_order_relaxed);
  }
};

class WindowTrace {
 public:
  bool is_open() const { return writer_ != nullptr; }
  void open(std::unique_ptr<format::TraceSink> writer, const ProcessContext& process);
  format::TraceSink& writer() { return *writer_; }
  // Closes the file's side: the writer goes, the counts stay.
  std::unique_ptr<format::TraceSink> take_writer() { return std::move(writer_); }

  // The file's ids, for the process's: 0 for "none" where the process has 0.
  uint32_t name(uint32_t arena_id) {
    // Already in the file, without a call: this runs for every event drained.
    if (arena_id < name_map_.size() && name_map_[arena_id]) return name_map_[arena_id];
    return add_name(arena_id);
  }
  // An event's name: one the full arena refused (id 0) says so, never "".
  uint32_t event_name(uint32_t arena_id) { return arena_id ? name(arena_id) : text(trace::kLostName); }
  uint32_t text(std::string_view s) { return writer_->intern(s); }
  uint32_t shapes(uint32_t id) {
    // Most events have none, and every event drained asks: no call for those.
    return id ? add_shapes(id) : 0;
  }
  uint32_t thread(uint32_t instance) {
    if (instance < thread_map_.size() && thread_map_[instance]) return thread_map_[instance] - 1;
    return add_thread(instance);
  }
  uint32_t stack(uint32_t instance, uint32_t id);
  // The lane thread of a GPU's stream.
  uint32_t lane(uint32_t device, uint32_t stream);

  // Writes `e`; a charged event counts in the window's cost (the agent's
  // notes and the steps are not the program's events). Inline: every event
  // drained comes here.
  void add(const trace::Event& e, bool charged = true) {
    writer_->add_event(e);
    ++events_;
    if (e.name < compile_names_.size() && compile_names_[e.name]) note_compile(e);
    if (!charged) return;
    cost_.charge(e.kind, process_->op_cost_ps, process_->record_cost_ps);
    if (e.kind == trace::EventKind::Op || cost::records_of(e.kind)) {
      first_ns_ = std::min(first_ns_, e.start_ns);
      last_ns_ = std::max(last_ns_, e.end_ns);
    }
  }
  // Writes a span of thread `instance` that ended at `end` (a mark: end ==
  // start) with `flags` added, and `join_key` as its Event::arg (CudaJoin: an
  // op's, else 0).
  void add_span(const OpenSpan& s, uint32_t instance, uint64_t end, uint16_t flags, uint64_t join_key);
  // The facts of the op of thread `instance` that began at `start` (ticks),
  // their names arena ids; after that op's add_span.
  void add_collective(const trace::CollectiveInfo& arena_facts, uint32_t instance, uint64_t start);
  // Tensor identity of thread `instance` at `ticks` (an op's start, or when a
  // module's or optimizer's tensors were taken).
  void add_tensor_group(const trace::TensorGroup& g, uint32_t instance, uint64_t ticks);
  uint64_t events() const { return events_; }
  const cost::Tally& cost() const { return cost_; }
  // The span of the window's operators and records: the recorded time of a
  // window without steps. 0 when it has none.
  int64_t events_span_ns() const;
  // torch.compile in this window, for the run's summary line: the time of
  // its compile scopes (their union: the report's compile phase), and the
  // bootstrap's recompile and graph break notes (report_compile.hpp).
  struct CompileTotals {
    int64_t ns = 0;
    uint32_t recompiles = 0;
    uint32_t graph_breaks = 0;
  };
  CompileTotals compile() const;

 private:
  uint32_t add_name(uint32_t arena_id);
  uint32_t add_shapes(uint32_t id);
  void note_compile(const trace::Event& e);
  uint32_t add_thread(uint32_t instance);

  std::unique_ptr<format::TraceSink> writer_;
  const ProcessContext* process_ = nullptr;
  std::vector<uint32_t> name_map_;                    // arena id -> file string id, 0: not yet
  std::vector<uint32_t> shape_map_;                   // ShapeTexts id - 1 -> file string id
  std::vector<uint32_t> thread_map_;                  // instance -> file thread + 1
  std::unordered_map<uint64_t, uint32_t> stack_map_;  // instance << 32 | stack id -> Event::stack
  std::unordered_map<uint64_t, uint32_t> lane_map_;   // device << 32 | stream -> file thread + 1
  uint64_t events_ = 0;
  cost::Tally cost_;
  int64_t first_ns_ = INT64_MAX, last_ns_ = INT64_MIN;
  // File string id -> what it names for torch.compile (window_trace.cpp's
  // CompileName), classified once, when the name enters the file: the drain
  // path pays one lookup per event.
  std::vector<uint8_t> compile_names_;
  std::vector<std::pair<int64_t, int64_t>> compile_spans_;  // a few per compile
  uint32_t recompiles_ = 0, graph_breaks_ = 0;
};

}  // namespace ptprof::launcher
