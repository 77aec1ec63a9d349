// The dataset's ops and memory tables of one trace file (docs/dataset.md).
// Their values are the report's own (report_aggregator.hpp's NodeValues):
// what `ptprof report` sums into its rows, per call, and which memory
// records it counts.
#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "dataset/table_context.hpp"
#include "model/outermost.hpp"
#include "ptprof/analysis/memory_categories.hpp"
#include "ptprof/analysis/report.hpp"
#include "ptprof/cuda_status.hpp"
#include "ptprof/record.hpp"
#include "report/report_aggregator.hpp"
#include "report/report_keys.hpp"

namespace ptprof::dataset::detail {

using trace::EventKind;
using enum ColumnType;  // the tables below read as their schema

// The kind column of the ops and gpu tables.
const char* kind_name(EventKind k) {
  switch (k) {
    case EventKind::Op:
      return "op";
    case EventKind::Range:
      return "range";
    case EventKind::Mark:
      return "mark";
    case EventKind::Step:
      return "step";
    case EventKind::CudaApi:
      return "cuda_api";
    case EventKind::Kernel:
      return "kernel";
    case EventKind::Memcpy:
      return "memcpy";
    case EventKind::Memset:
      return "memset";
    case EventKind::GpuSync:
      return "sync";
    case EventKind::GpuOverhead:
      return "overhead";
    case EventKind::CuptiApi:
      return "cupti_api";
    case EventKind::Memory:
      return "memory";
  }
  return "other";
}

namespace {

// Each op (not async) that no other op of its thread encloses: what the
// report's ranks add up as a rank's op time (report_ranks.cpp).
std::vector<bool> outermost_ops(const trace::Trace& t) {
  std::vector<uint32_t> ops;
  for (uint32_t i = 0; i < t.events.size(); ++i)
    if (t.events[i].kind == EventKind::Op && !(t.events[i].flags & trace::kAsync)) ops.push_back(i);
  std::sort(ops.begin(), ops.end(), [&](uint32_t a, uint32_t b) {
    const trace::Event &x = t.events[a], &y = t.events[b];
    return std::make_tuple(x.thread, x.start_ns, -x.end_ns) < std::make_tuple(y.thread, y.start_ns, -y.end_ns);
  });
  std::vector<bool> outer(t.events.size());
  uint32_t thread = UINT32_MAX;
  model::Outermost spans;
  for (uint32_t i : ops) {
    const trace::Event& e = t.events[i];
    if (e.thread != thread) {
      thread = e.thread;
      spans = {};
    }
    outer[i] = spans.take(e.start_ns, e.end_ns);
  }
  return outer;
}

}  // namespace

// The report's call tree, one row per event it counts (ops, ranges, steps,
// CUDA API calls, async events), and the marks it counts without time.
Table ops_table(Context& c, std::vector<uint8_t>* memory_state, OpRollup* rollup) {
  const trace::Trace& t = c.trace();
  Table table("ops", key_columns(Key::ThreadStep, {{"id", I64},
                                                   {"parent_id", I64, true},
                                                   {"depth", I32},
                                                   {"kind", Str},
                                                   {"name", Str},
                                                   {"key", Str},
                                                   {"scope", I8},
                                                   {"shapes", Str, true},
                                                   {"start_ns", I64},
                                                   {"dur_ns", I64},
                                                   {"self_ns", I64},
                                                   {"cuda_total_ns", I64},
                                                   {"self_cuda_ns", I64},
                                                   {"cpu_memory_bytes", I64},
                                                   {"self_cpu_memory_bytes", I64},
                                                   {"cuda_memory_bytes", I64},
                                                   {"self_cuda_memory_bytes", I64},
                                                   {"seq_nr", I64, true},
                                                   {"fwd_thread_id", I64},
                                                   {"correlation", I64, true},
                                                   {"stack_id", I64, true},
                                                   {"folded", Bool},
                                                   {"async", Bool},
                                                   {"truncated", Bool},
                                                   {"outermost_op", Bool}}));
  const std::vector<bool> outermost = outermost_ops(t);
  std::unordered_map<uint32_t, int64_t> keys;  // name id -> key string id
  auto key_of = [&](const trace::Event& e) {
    if (e.kind == EventKind::Step && e.name == 0) return c.strings.add(report::detail::kStepKey);
    auto [it, added] = keys.try_emplace(e.name, 0);
    if (added) {
      const std::string_view key = report::detail::key_name(t.strings[e.name]);
      it->second = key == t.strings[e.name] ? int64_t(e.name) : c.strings.add(key);
    }
    return it->second;
  };
  auto add_to_rollup = [&](const trace::Event& e, int64_t kind, int64_t key, const report::detail::NodeValues* v,
                           bool outermost_op) {
    const uint32_t process = e.thread < t.threads.size() ? t.threads[e.thread].process : UINT32_MAX;
    OpRollup::Sums& s = rollup->totals[{process, kind, key, v && v->folded}];
    ++s.calls;
    s.dur_ns += dur(e);
    if (outermost_op) {
      ++s.outermost_calls;
      s.outermost_ns += dur(e);
    }
    if (!v) return;
    s.self_ns += v->self_ns;
    s.cuda_total_ns += v->cuda_total_ns;
    s.self_cuda_ns += v->self_cuda_ns;
    s.cpu_memory_bytes += v->memory.cpu;
    s.self_cpu_memory_bytes += v->self_memory.cpu;
    s.cuda_memory_bytes += v->memory.device;
    s.self_cuda_memory_bytes += v->self_memory.device;
    if ((e.kind == EventKind::Op || e.kind == EventKind::Range) && v->parent_event >= 0 &&
        size_t(v->parent_event) < t.events.size() && t.events[size_t(v->parent_event)].kind == EventKind::Step)
      rollup->step_children_ns[uint32_t(v->parent_event)] += dur(e);
  };
  auto add = [&](const trace::Event& e, uint32_t index, const report::detail::NodeValues* v) {
    const int64_t kind = c.strings.add(kind_name(e.kind)), key = key_of(e);
    add_to_rollup(e, kind, key, v, outermost[index]);
    const int64_t step =
        e.kind == EventKind::Step ? (trace::is_step(e) ? int64_t(e.arg) : kNull) : c.step_at(e.thread, e.start_ns);
    table.row({c.rank(e.thread),
               c.pid(e.thread),
               c.tid(e.thread),
               step,
               c.id(index),
               v && v->parent_event >= 0 ? c.id(uint32_t(v->parent_event)) : kNull,
               v ? v->depth : 0,
               kind,
               e.name,
               key,
               e.scope,
               e.shapes ? int64_t(e.shapes) : kNull,
               c.wall(e.start_ns),
               dur(e),
               v ? v->self_ns : 0,
               v ? v->cuda_total_ns : 0,
               v ? v->self_cuda_ns : 0,
               v ? v->memory.cpu : 0,
               v ? v->self_memory.cpu : 0,
               v ? v->memory.device : 0,
               v ? v->self_memory.device : 0,
               e.seq_nr >= 0 ? e.seq_nr : kNull,
               int64_t(e.fwd_thread_id),
               e.kind == EventKind::Op && e.arg ? int64_t(e.arg) : kNull,
               e.stack ? c.id(e.stack) : kNull,
               v && v->folded,
               v && v->async,
               (e.flags & trace::kTruncated) != 0,
               bool(outermost[index])});
  };
  report::Options options;
  report::detail::Aggregator agg(options);
  agg.set_node_sink([&](const report::detail::NodeValues& v) { add(t.events[v.event], v.event, &v); });
  memory_state->assign(t.memory.size(), kNotCounted);
  agg.set_memory_sink([&](uint32_t record, bool inside) {
    if (record < memory_state->size()) (*memory_state)[record] = inside ? kInsideOp : kOutsideOps;
  });
  agg.add_trace(0, t);
  const std::vector<uint8_t> filtered = [&] {
    std::vector<uint8_t> f(t.strings.size());
    for (size_t i = 0; i < t.strings.size(); ++i) f[i] = report::detail::filter_bits(t.strings[i]);
    return f;
  }();
  for (uint32_t i = 0; i < t.events.size(); ++i) {
    const trace::Event& e = t.events[i];
    if (e.kind != EventKind::Mark || e.name >= t.strings.size() || wire::is_cuda_note(t, e)) continue;
    if (report::detail::filtered_out(filtered[e.name], e.kind)) continue;
    add(e, i, nullptr);
  }
  return table;
}

// One row per process, kind, report key and folded: the ops table summed.
Table op_totals_table(Context& c, const OpRollup& rollup) {
  const trace::Trace& t = c.trace();
  Table table("op_totals", key_columns(Key::Process, {{"kind", Str},
                                                      {"key", Str},
                                                      {"folded", Bool},
                                                      {"calls", I64},
                                                      {"dur_ns", I64},
                                                      {"self_ns", I64},
                                                      {"cuda_total_ns", I64},
                                                      {"self_cuda_ns", I64},
                                                      {"cpu_memory_bytes", I64},
                                                      {"self_cpu_memory_bytes", I64},
                                                      {"cuda_memory_bytes", I64},
                                                      {"self_cuda_memory_bytes", I64},
                                                      {"outermost_calls", I64},
                                                      {"outermost_ns", I64}}));
  for (const auto& [k, s] : rollup.totals) {
    const auto& [process, kind, key, folded] = k;
    const trace::Process* p = process < t.processes.size() ? &t.processes[process] : nullptr;
    table.row({p && p->rank >= 0 ? p->rank : kNull, p ? p->pid : kNull, kind, key, folded, s.calls, s.dur_ns, s.self_ns,
               s.cuda_total_ns, s.self_cuda_ns, s.cpu_memory_bytes, s.self_cpu_memory_bytes, s.cuda_memory_bytes,
               s.self_cuda_memory_bytes, s.outermost_calls, s.outermost_ns});
  }
  return table;
}

Table memory_table(Context& c, const std::vector<uint8_t>& state) {
  const trace::Trace& t = c.trace();
  Table table("memory", key_columns(Key::ThreadStep, {{"ts_ns", I64},
                                                      {"ptr", I64},
                                                      {"bytes", I64},
                                                      {"total_allocated", I64},
                                                      {"total_reserved", I64},
                                                      {"device_type", I8},
                                                      {"device_index", I8},
                                                      {"segment", Bool},
                                                      {"op", Str, true},
                                                      {"op_shapes", Str, true},
                                                      {"top_op", Str, true},
                                                      {"top_shapes", Str, true},
                                                      {"alloc_ns", I64, true},
                                                      {"alloc_op", Str, true},
                                                      {"in_report", Bool},
                                                      {"in_op", Bool}}));
  auto str = [](uint32_t id) { return id ? int64_t(id) : kNull; };
  for (const trace::Event& e : t.events) {
    if (e.kind != EventKind::Memory || e.arg == 0 || e.arg > t.memory.size()) continue;
    const trace::MemoryInfo& m = t.memory[e.arg - 1];
    table.row({c.rank(e.thread),
               c.pid(e.thread),
               c.tid(e.thread),
               c.step_at(e.thread, e.start_ns),
               c.wall(e.start_ns),
               int64_t(m.ptr),
               m.bytes,
               m.total_allocated,
               m.total_reserved,
               m.device_type,
               m.device_index,
               m.segment,
               str(m.op),
               str(m.op_shapes),
               str(m.top_op),
               str(m.top_shapes),
               m.alloc_ns ? c.wall(m.alloc_ns) : kNull,
               str(m.alloc_op),
               state[e.arg - 1] != kNotCounted,
               state[e.arg - 1] == kInsideOp});
  }
  return table;
}

Table memory_categories_table(Context& c) {
  const trace::Trace& t = c.trace();
  Table table("memory_categories", key_columns(Key::Process, {{"device_type", I8},
                                                              {"device_index", I8},
                                                              {"step", I64, true},
                                                              {"ts_ns", I64},
                                                              {"parameter", I64},
                                                              {"optimizer_state", I64},
                                                              {"input", I64},
                                                              {"temporary", I64},
                                                              {"activation", I64},
                                                              {"gradient", I64},
                                                              {"autograd_detail", I64},
                                                              {"unknown", I64}}));
  const memory::CategoryResult r = memory::memory_categories(t);
  for (const memory::CategoryTimeline& tl : r.timelines) {
    static_assert(memory::kCategories == 8, "one column per category");
    // A thread of the process: its rank and steps.
    uint32_t thread = 0;
    for (uint32_t i = 0; i < t.threads.size(); ++i)
      if (c.pid(i) == tl.pid) {
        thread = i;
        break;
      }
    for (size_t k = 0; k < tl.times_us.size(); ++k) {
      const int64_t ns = tl.times_us[k] * 1000;
      const auto& b = tl.bytes[k];
      table.row({c.rank(thread), c.pid(thread), tl.device_type, tl.device_index, c.step_at(thread, ns), c.wall(ns),
                 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]});
    }
  }
  return table;
}

}  // namespace ptprof::dataset::detail
