// What every dataset table of one trace file is built from (dataset_tables.cpp,
// op_tables.cpp), and the tables each file builds.
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "dataset/column_handoff.hpp"
#include "ptprof/analysis/trace_file.hpp"

namespace ptprof::dataset::detail {

inline int64_t dur(const trace::Event& e) { return std::max<int64_t>(0, e.end_ns - e.start_ns); }

// The columns a table's rows are keyed by, first in every table that has
// them, so that tables join on the same names and types: the process (rank,
// pid), then for a thread's rows its tid, then for rows in time their step.
enum class Key : uint8_t { Process, ProcessStep, Thread, ThreadStep };

// `key`'s columns, then the table's own.
inline std::vector<ColumnSpec> key_columns(Key key, std::initializer_list<ColumnSpec> own) {
  using enum ColumnType;
  std::vector<ColumnSpec> specs{{"rank", I32, true}, {"pid", I32, true}};
  if (key == Key::Thread || key == Key::ThreadStep) specs.push_back({"tid", I64});
  if (key == Key::ProcessStep || key == Key::ThreadStep) specs.push_back({"step", I64, true});
  specs.insert(specs.end(), own);
  return specs;
}

// What every table needs of a trace: ids unique across the export, wall
// clock times, each thread's process, and each process's steps.
class Context {
 public:
  Context(uint32_t ordinal, const trace::Trace& t) : t_(t), ordinal_(ordinal), strings(t.strings) {
    for (uint32_t i = 0; i < t.events.size(); ++i) {
      const trace::Event& e = t.events[i];
      if (trace::is_step(e) && e.thread < t.threads.size())
        steps_[t.threads[e.thread].process].emplace_back(e.start_ns, e.end_ns, int64_t(e.arg));
      if (e.kind == trace::EventKind::Op && e.arg != 0) op_by_correlation_.emplace(e.arg, i);
    }
    for (auto& [process, spans] : steps_) std::sort(spans.begin(), spans.end());
  }

  int64_t id(uint32_t index) const { return int64_t(uint64_t(ordinal_) << 32 | index); }
  int64_t wall(int64_t monotonic_ns) const { return monotonic_ns + t_.header.realtime_offset_ns; }
  const trace::Process* process_of(uint32_t thread) const {
    if (thread >= t_.threads.size() || t_.threads[thread].process >= t_.processes.size()) return nullptr;
    return &t_.processes[t_.threads[thread].process];
  }
  int64_t pid(uint32_t thread) const {
    const trace::Process* p = process_of(thread);
    return p ? p->pid : kNull;
  }
  int64_t rank(uint32_t thread) const {
    const trace::Process* p = process_of(thread);
    return p && p->rank >= 0 ? p->rank : kNull;
  }
  int64_t tid(uint32_t thread) const { return thread < t_.threads.size() ? t_.threads[thread].tid : kNull; }
  // The step of the thread's process whose span holds `ns`; null when none does.
  int64_t step_at(uint32_t thread, int64_t ns) const {
    if (thread >= t_.threads.size()) return kNull;
    auto it = steps_.find(t_.threads[thread].process);
    if (it == steps_.end()) return kNull;
    const auto& spans = it->second;
    auto s = std::upper_bound(spans.begin(), spans.end(), ns,
                              [](int64_t v, const auto& span) { return v < std::get<0>(span); });
    if (s == spans.begin()) return kNull;
    --s;
    return ns < std::get<1>(*s) ? std::get<2>(*s) : kNull;
  }
  // The event of the op that launched GPU work with this correlation to it.
  int64_t launching_op(uint64_t external_id) const {
    auto it = op_by_correlation_.find(external_id);
    return it == op_by_correlation_.end() ? -1 : int64_t(it->second);
  }
  const trace::Trace& trace() const { return t_; }

 private:
  const trace::Trace& t_;
  uint32_t ordinal_;
  std::map<uint32_t, std::vector<std::tuple<int64_t, int64_t, int64_t>>> steps_;
  std::unordered_map<uint64_t, uint32_t> op_by_correlation_;

 public:
  detail::Strings strings;
};

// op_tables.cpp. Per memory record, what the report made of it (ops_table
// fills it, memory_table writes it).
enum MemoryState : uint8_t { kNotCounted = 0, kOutsideOps = 1, kInsideOp = 2 };

// What the ops table's rows add up to, per process: the sums the report's
// sections start from (docs/dataset.md, op_totals and steps.operators_ns),
// so that a query of them reads thousands of rows, not the ops' millions.
struct OpRollup {
  // (process, kind string id, key string id, folded)
  using Key = std::tuple<uint32_t, int64_t, int64_t, bool>;
  struct Sums {
    int64_t calls = 0, dur_ns = 0, self_ns = 0, cuda_total_ns = 0, self_cuda_ns = 0;
    int64_t cpu_memory_bytes = 0, self_cpu_memory_bytes = 0, cuda_memory_bytes = 0, self_cuda_memory_bytes = 0;
    int64_t outermost_calls = 0, outermost_ns = 0;
  };
  std::map<Key, Sums> totals;
  // Step event -> the time of the ops and ranges directly in it.
  std::unordered_map<uint32_t, int64_t> step_children_ns;
};

Table ops_table(Context& c, std::vector<uint8_t>* memory_state, OpRollup* rollup);
Table op_totals_table(Context& c, const OpRollup& rollup);
const char* kind_name(trace::EventKind k);  // the ops and gpu tables' kind
Table memory_table(Context& c, const std::vector<uint8_t>& state);
// Memory by category (memory_categories.hpp): a row per change of a
// process's device, the bytes of every category after it.
Table memory_categories_table(Context& c);

}  // namespace ptprof::dataset::detail
