// Aggregates events into key_averages() rows (see report.hpp for semantics).
#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_map>

#include "ptprof/analysis/report.hpp"
#include "ptprof/analysis/trace_file.hpp"
#include "ptprof/cuda_status.hpp"
#include "report/event_tree.hpp"
#include "report/report_keys.hpp"
#include "report/report_memory.hpp"
#include "report/report_sort.hpp"
#include "report/report_stream.hpp"
#include "report/saturating.hpp"
#include "stacks/stack_attribution.hpp"

namespace ptprof::report {

using detail::TreeNode;

namespace {

using detail::is_filtered;
using detail::kMemoryEventName;
using detail::kNoShapes;
using detail::kStepKey;
using detail::kStepPrefix;

// Kernels, copies and sets: the GPU work torch's table counts as CUDA time.
bool is_device_work(trace::EventKind k) {
  return k == trace::EventKind::Kernel || k == trace::EventKind::Memcpy || k == trace::EventKind::Memset;
}

using detail::FirstSeen;

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct CudaTimes {
  int64_t total_ns = 0;
  int64_t self_ns = 0;
};

// torch's device_time_total and self_device_time_total of each node: its
// own GPU work (`own(n)`) plus that of its children after folding. A folded
// node's GPU work replaces its parent's (_remove_dup_nodes lifts the child's
// kernels up), so the self time of what remains is its own work.
template <class Own>
std::vector<CudaTimes> cuda_times(const detail::Tree& tree, size_t n, Own&& own) {
  std::vector<CudaTimes> c(n);
  bool any = false;
  for (size_t i = 0; i < n; ++i) any |= (c[i].self_ns = own(i)) != 0;
  if (!any) return c;
  for (uint32_t i : tree.order)  // parents first: a chain of folds ends with the deepest
    if (tree.folded[i] && tree.live_parent[i] >= 0) c[size_t(tree.live_parent[i])].self_ns = c[i].self_ns;
  for (size_t i = 0; i < n; ++i) c[i].total_ns = c[i].self_ns;
  for (auto it = tree.order.rbegin(); it != tree.order.rend(); ++it) {  // children first
    const uint32_t i = *it;
    if (!tree.folded[i] && tree.live_parent[i] >= 0) c[size_t(tree.live_parent[i])].total_ns += c[i].total_ns;
  }
  return c;
}

class Aggregator {
 public:
  explicit Aggregator(const Options& o) : opts_(o) {}

  void add_trace(uint32_t input, const trace::Trace& t);
  void add_streamed(const detail::StreamedTrace& s);
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
  // torch's base of Self CUDA %: the GPU events' own time (never the ops',
  // which would count each kernel twice).
  int64_t device_self_ns() const { return device_self_ns_; }
  bool saw_memory() const { return saw_memory_; }
  bool saw_device_memory() const { return saw_device_memory_; }

 private:
  struct Local;  // per-trace caches from string ids to rows
  uint32_t row_for(std::string_view name, std::string_view shapes, const std::vector<std::string>* stack = nullptr);
  void add(uint32_t row, const FirstSeen& at, bool async, int64_t total_ns, int64_t self_ns, int64_t cuda_total_ns = 0,
           int64_t self_cuda_ns = 0);
  void add_memory(uint32_t row, const detail::MemorySum& total, const detail::MemorySum& self);
  void add_thread(uint32_t input, const trace::Trace& t, const trace::Thread& thread,
                  const std::vector<uint32_t>& events, Local& local);

  Options opts_;
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> row_index_;
  std::vector<Row> rows_;
  std::vector<FirstSeen> first_;
  std::vector<StepRow> steps_;
  int64_t device_self_ns_ = 0;
  bool saw_memory_ = false;
  bool saw_device_memory_ = false;
};

struct Aggregator::Local {
  const trace::Trace& t;
  std::vector<uint8_t> filtered;                // per string id
  std::vector<uint32_t> name_key;               // per string id: rewritten-name id, for folding
  uint32_t step_key = 0;                        // name_key of ProfilerStep*
  std::unordered_map<uint64_t, uint32_t> rows;  // (name id, shapes id) -> row
  int64_t unnamed_step_row = -1;
  // GPU time of the kernels, copies and sets each op launched, by op id
  // (CudaInfo::external_id == the op's Event::arg; a trace is one process).
  std::unordered_map<uint64_t, int64_t> device_ns_by_op;
  // CUDA Mem counts torch's device allocations; CUDA segments (reserved
  // memory) only in a trace that has none of those (a program without torch).
  bool segments_as_device_memory = true;
  // group_by_stack_n: each event's stack, each stack's first N entries, and
  // rows by (name, shapes, stack).
  std::vector<uint32_t> stack_of;
  std::unordered_map<uint32_t, std::vector<std::string>> entries;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t> stack_rows;
  // Per memory record: a free of a block allocated before the window, left
  // out of the memory columns (detail::frees_from_before).
  std::vector<uint8_t> from_before;
};

uint32_t Aggregator::row_for(std::string_view name, std::string_view shapes, const std::vector<std::string>* stack) {
  // One map key for (name, shapes, stack); '\0' and '\1' cannot appear in
  // any from the agent.
  std::string key(name);
  if (opts_.group_by_input_shape) {
    key += '\0';
    key += shapes;
  }
  if (stack) {
    for (const std::string& e : *stack) {
      key += '\1';
      key += e;
    }
  }
  if (auto it = row_index_.find(key); it != row_index_.end()) return it->second;
  uint32_t id = uint32_t(rows_.size());
  row_index_.emplace(std::move(key), id);
  Row r;
  r.name = std::string(name);
  if (opts_.group_by_input_shape) r.input_shapes = std::string(shapes);
  if (stack) r.stack = *stack;
  rows_.push_back(std::move(r));
  first_.emplace_back(INT64_MAX, INT64_MAX, UINT32_MAX, UINT32_MAX);
  return id;
}

void Aggregator::add(uint32_t row, const FirstSeen& at, bool async, int64_t total_ns, int64_t self_ns,
                     int64_t cuda_total_ns, int64_t self_cuda_ns) {
  Row& r = rows_[row];
  // FunctionEventAvg takes is_async from the first event it sees.
  if (at < first_[row]) {
    first_[row] = at;
    r.is_async = async;
  }
  ++r.stats.count;
  r.stats.cpu_total_ns = ptprof::detail::saturating_add(r.stats.cpu_total_ns, total_ns);
  r.stats.self_cpu_ns = ptprof::detail::saturating_add(r.stats.self_cpu_ns, self_ns);
  r.stats.cuda_total_ns = ptprof::detail::saturating_add(r.stats.cuda_total_ns, cuda_total_ns);
  r.stats.self_cuda_ns = ptprof::detail::saturating_add(r.stats.self_cuda_ns, self_cuda_ns);
}

void Aggregator::add_memory(uint32_t row, const detail::MemorySum& total, const detail::MemorySum& self) {
  Stats& s = rows_[row].stats;
  s.cpu_memory += total.cpu;
  s.self_cpu_memory += self.cpu;
  s.cuda_memory += total.device;
  s.self_cuda_memory += self.device;
}

void Aggregator::add_streamed(const detail::StreamedTrace& s) {
  const trace::Trace& t = s.metadata;
  for (const auto& [key, part] : s.rows) {
    uint32_t row = 0;
    if (key == detail::kUnnamedStepRow) {
      row = row_for(kStepKey, kNoShapes);
    } else {
      const uint32_t shapes_id = uint32_t(key);
      std::string_view shapes = shapes_id ? std::string_view(t.strings[shapes_id]) : kNoShapes;
      row = row_for(detail::key_name(t.strings[key >> 32]), shapes.empty() ? kNoShapes : shapes);
    }
    Row& r = rows_[row];
    if (part.first < first_[row]) {
      first_[row] = part.first;
      r.is_async = part.is_async;
    }
    r.stats.count += part.stats.count;
    r.stats.cpu_total_ns = ptprof::detail::saturating_add(r.stats.cpu_total_ns, part.stats.cpu_total_ns);
    r.stats.self_cpu_ns = ptprof::detail::saturating_add(r.stats.self_cpu_ns, part.stats.self_cpu_ns);
  }
  steps_.insert(steps_.end(), s.steps.begin(), s.steps.end());
}

void Aggregator::add_trace(uint32_t input, const trace::Trace& t) {
  Local local{t, {}, {}, 0, {}, -1, {}, true, {}, {}, {}, {}};
  for (const auto& m : t.memory)
    if (!m.segment && detail::is_device_memory(m.device_type)) local.segments_as_device_memory = false;
  local.from_before = detail::frees_from_before(t);
  if (opts_.group_by_stack_n > 0) local.stack_of = detail::effective_stacks(t);
  for (const auto& e : t.events) {
    if (!is_device_work(e.kind) || e.arg == 0 || e.arg > t.cuda.size()) continue;
    if (uint64_t op = t.cuda[e.arg - 1].external_id)
      local.device_ns_by_op[op] += std::max<int64_t>(0, e.end_ns - e.start_ns);
  }
  local.filtered.resize(t.strings.size());
  local.name_key.resize(t.strings.size());
  std::unordered_map<std::string_view, uint32_t> keys;
  for (size_t i = 0; i < t.strings.size(); ++i) {
    std::string_view s = t.strings[i];
    local.filtered[i] = is_filtered(s);
    if (s.substr(0, kStepPrefix.size()) == kStepPrefix) s = kStepKey;
    local.name_key[i] = keys.emplace(s, uint32_t(keys.size())).first->second;
  }
  local.step_key = keys.emplace(kStepKey, uint32_t(keys.size())).first->second;

  // Bucket event indices by thread (counting sort keeps file order within one).
  std::vector<uint32_t> offset(t.threads.size() + 1, 0);
  for (const auto& e : t.events)
    if (e.thread < t.threads.size()) ++offset[e.thread + 1];
  for (size_t i = 1; i < offset.size(); ++i) offset[i] += offset[i - 1];
  std::vector<uint32_t> by_thread(offset.back());
  {
    std::vector<uint32_t> fill(offset.begin(), offset.end() - 1);
    for (uint32_t i = 0; i < t.events.size(); ++i)
      if (t.events[i].thread < t.threads.size()) by_thread[fill[t.events[i].thread]++] = i;
  }
  std::vector<uint32_t> events;
  for (size_t th = 0; th < t.threads.size(); ++th) {
    events.assign(by_thread.begin() + offset[th], by_thread.begin() + offset[th + 1]);
    add_thread(input, t, t.threads[th], events, local);
  }
}

void Aggregator::add_thread(uint32_t input, const trace::Trace& t, const trace::Thread& thread,
                            const std::vector<uint32_t>& events, Local& local) {
  using trace::EventKind;
  auto row_of = [&](const trace::Event& e) -> uint32_t {
    // A Step without a name is still ProfilerStep#<arg>.
    if (e.kind == EventKind::Step && e.name == 0) {
      if (local.unnamed_step_row < 0) local.unnamed_step_row = row_for(kStepKey, kNoShapes);
      return uint32_t(local.unnamed_step_row);
    }
    const uint32_t shapes_id = opts_.group_by_input_shape ? e.shapes : 0u;
    std::string_view name = t.strings[e.name];
    if (name.substr(0, kStepPrefix.size()) == kStepPrefix) name = kStepKey;
    std::string_view shapes = e.shapes ? std::string_view(t.strings[e.shapes]) : kNoShapes;
    if (shapes.empty()) shapes = kNoShapes;
    if (!local.stack_of.empty()) {
      const size_t index = size_t(&e - t.events.data());
      const uint32_t stack = index < local.stack_of.size() ? local.stack_of[index] : 0;
      const auto key = std::make_tuple(e.name, shapes_id, stack);
      if (auto it = local.stack_rows.find(key); it != local.stack_rows.end()) return it->second;
      auto [entries, added] = local.entries.try_emplace(stack);
      if (added) {
        entries->second = detail::stack_entries(t, stack);
        if (entries->second.size() > opts_.group_by_stack_n) entries->second.resize(opts_.group_by_stack_n);
      }
      const uint32_t r = row_for(name, shapes, &entries->second);
      local.stack_rows.emplace(key, r);
      return r;
    }
    uint64_t k = uint64_t(e.name) << 32 | shapes_id;
    if (auto it = local.rows.find(k); it != local.rows.end()) return it->second;
    uint32_t r = row_for(name, shapes);
    local.rows.emplace(k, r);
    return r;
  };

  std::vector<TreeNode> nodes;
  std::vector<uint32_t> node_event;
  std::vector<uint32_t> async_events;
  detail::ThreadMemory memory;
  for (uint32_t i : events) {
    const trace::Event& e = t.events[i];
    if (e.kind == EventKind::Memory) {
      if (e.arg >= 1 && e.arg <= t.memory.size()) {
        const trace::MemoryInfo& m = t.memory[e.arg - 1];
        if (m.segment && !local.segments_as_device_memory) continue;
        saw_memory_ = true;
        saw_device_memory_ |= detail::is_device_memory(m.device_type);
        if (local.from_before[e.arg - 1]) continue;  // unseen by torch.profiler in this window
        memory.add(e.start_ns, m);
      }
      continue;
    }
    // Hand-built traces are not validated by a reader: skip what cannot be named.
    if (e.name >= t.strings.size() || e.shapes >= t.strings.size()) continue;
    if (local.filtered[e.name]) continue;
    int64_t dur = std::max<int64_t>(0, e.end_ns - e.start_ns);
    FirstSeen at{e.start_ns, -(e.start_ns + dur), input, i};
    switch (e.kind) {
      case EventKind::Op:
      case EventKind::Range:
      case EventKind::Step:
      case EventKind::CudaApi:  // torch's table has its runtime calls (cudaLaunchKernel...) as rows
        if (e.flags & trace::kAsync) {
          // Async events span threads: no children, no self time.
          add(row_of(e), at, true, dur, 0);
          async_events.push_back(i);
        } else {
          uint32_t key = e.kind == EventKind::Step && e.name == 0 ? local.step_key : local.name_key[e.name];
          nodes.push_back(TreeNode{e.start_ns, e.start_ns + dur, key});
          node_event.push_back(i);
        }
        break;
      case EventKind::Mark:
        if (wire::is_cuda_note(t, e)) break;  // the agent's note, not the program's
        add(row_of(e), at, false, 0, 0);      // counted, no time
        break;
      case EventKind::Kernel:
      case EventKind::Memcpy:
      case EventKind::Memset:
        // torch's device events: rows of their own, with CUDA time and no CPU time.
        add(row_of(e), at, false, 0, 0, dur, dur);
        device_self_ns_ += dur;
        break;
      default:
        break;  // kinds from later versions have no place in this table
    }
  }

  detail::Tree tree = detail::build_tree(nodes);
  const std::vector<CudaTimes> cuda = cuda_times(tree, nodes.size(), [&](size_t n) -> int64_t {
    const trace::Event& e = t.events[node_event[n]];
    if (e.kind != EventKind::Op || e.arg == 0) return 0;
    auto it = local.device_ns_by_op.find(e.arg);
    return it == local.device_ns_by_op.end() ? 0 : it->second;
  });
  if (!memory.empty()) {
    memory.seal();
    std::vector<detail::MemorySum> total(nodes.size()), self(nodes.size());
    for (size_t n = 0; n < nodes.size(); ++n) self[n] = total[n] = memory.in(nodes[n].start, nodes[n].end);
    // Self: less the children left after folding (a folded node is gone, its
    // children are its parent's).
    for (size_t n = 0; n < nodes.size(); ++n)
      if (!tree.folded[n] && tree.live_parent[n] >= 0) self[size_t(tree.live_parent[n])] -= total[n];
    for (size_t n = 0; n < nodes.size(); ++n)
      if (!tree.folded[n]) add_memory(row_of(t.events[node_event[n]]), total[n], self[n]);
    for (uint32_t i : async_events)
      add_memory(row_of(t.events[i]), memory.in(t.events[i].start_ns, t.events[i].end_ns), {});
    // Inside no event: torch's top-level "[memory]" events, one call each.
    uint64_t count = 0;
    int64_t first_ts = 0;
    const detail::MemorySum top = memory.outside(&count, &first_ts);
    if (count) {
      const uint32_t r = row_for(kMemoryEventName, kNoShapes);
      for (uint64_t k = 0; k < count; ++k) add(r, FirstSeen{first_ts, -first_ts, input, UINT32_MAX}, false, 0, 0);
      add_memory(r, top, top);
    }
  }
  const int32_t pid = thread.process < t.processes.size() ? t.processes[thread.process].pid : 0;
  std::unordered_map<uint32_t, size_t> step_of_node;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const trace::Event& e = t.events[node_event[n]];
    if (e.kind == EventKind::Step) {
      step_of_node[uint32_t(n)] = steps_.size();
      steps_.push_back(StepRow{e.arg, pid, thread.tid, nodes[n].end - nodes[n].start, 0});
    }
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    const trace::Event& e = t.events[node_event[n]];
    int32_t p = tree.parent[n];
    if (p >= 0 && (e.kind == EventKind::Op || e.kind == EventKind::Range)) {
      if (auto it = step_of_node.find(uint32_t(p)); it != step_of_node.end())
        steps_[it->second].operator_ns =
            ptprof::detail::saturating_add(steps_[it->second].operator_ns, nodes[n].end - nodes[n].start);
    }
    if (tree.folded[n]) continue;
    FirstSeen at{nodes[n].start, -nodes[n].end, input, node_event[n]};
    add(row_of(e), at, false, nodes[n].end - nodes[n].start, tree.self_ns[n], cuda[n].total_ns, cuda[n].self_ns);
  }
}

}  // namespace

struct ReportBuilder::Impl {
  explicit Impl(const Options& o) : options(o), agg(o) { r.options = o; }
  Options options;
  Aggregator agg;
  GpuReportBuilder gpu;
  Report r;
  RankSummaryBuilder ranks;
  uint32_t inputs = 0;
  CudaApiSummary cuda_api;
};

ReportBuilder::ReportBuilder(const Options& options) : impl_(std::make_unique<Impl>(options)) {}
ReportBuilder::~ReportBuilder() = default;

void ReportBuilder::add(const std::string& path, const trace::Trace& t) {
  Impl& m = *impl_;
  uint32_t input = m.inputs++;
  if (m.options.window && t.header.window != *m.options.window) return;
  Report& r = m.r;
  // The agent's CUDA notes are lines of the report, not events of the program.
  r.events += t.events.size() - uint64_t(std::count_if(t.events.begin(), t.events.end(), [&](const trace::Event& e) {
                return wire::is_cuda_note(t, e);
              }));
  r.cost += cost::tally(t);
  m.agg.add_trace(input, t);
  m.ranks.add(t);
  add_common(path, t);
}

Result<uint32_t> ReportBuilder::add_file(const std::string& path, std::vector<std::string>* warnings, bool phases) {
  Impl& m = *impl_;
  auto streamed = detail::stream_trace(path, m.inputs, m.options, phases, warnings);
  if (!streamed) return streamed.status();
  if (!*streamed) {  // this trace needs all its events at once
    auto t = format::read_trace(path, warnings);
    if (!t) return t.status();
    add(path, *t);
    return t->header.window;
  }
  const detail::StreamedTrace& s = **streamed;
  const trace::Trace& t = s.metadata;
  ++m.inputs;
  if (m.options.window && t.header.window != *m.options.window) return t.header.window;
  m.r.events += s.events;
  m.r.cost += s.cost;
  m.agg.add_streamed(s);
  m.ranks.add_counted(t, s.processes);
  add_common(path, t);  // its only events: the agent's notes on CUDA, lines of the GPU section
  m.r.phases.insert(m.r.phases.end(), s.phases.begin(), s.phases.end());
  return t.header.window;
}

void ReportBuilder::add_common(const std::string& path, const trace::Trace& t) {
  Impl& m = *impl_;
  Report& r = m.r;
  r.files.push_back(path);
  if (std::find(r.windows.begin(), r.windows.end(), t.header.window) == r.windows.end())
    r.windows.insert(std::upper_bound(r.windows.begin(), r.windows.end(), t.header.window), t.header.window);
  r.losses += t.losses;
  m.cuda_api.add(t);
  m.gpu.add(t);
  std::vector<StepPhases> phases = step_phases(t);
  r.phases.insert(r.phases.end(), phases.begin(), phases.end());
  for (const auto& th : t.threads) {
    if (th.dropped == 0) continue;
    r.dropped += th.dropped;
    int32_t pid = th.process < t.processes.size() ? t.processes[th.process].pid : 0;
    r.drops.push_back(ThreadDrops{path, pid, th.tid, th.name, th.dropped});
  }
}

Report ReportBuilder::finish() && {
  Report r = std::move(impl_->r);
  r.rows = impl_->agg.take_rows();
  sort_rows(r.rows, r.options.sort_by);
  r.self_cuda_total_ns = impl_->agg.device_self_ns();
  r.gpu = std::move(impl_->gpu).finish();
  for (const Row& row : r.rows) {
    r.self_cpu_total_ns = ptprof::detail::saturating_add(r.self_cpu_total_ns, row.stats.self_cpu_ns);
    r.has_cuda_time |= row.stats.self_cuda_ns > 0 || row.stats.cuda_total_ns > 0;
    r.has_cuda_memory |= impl_->agg.saw_device_memory() || row.stats.self_cuda_memory > 0;
    r.has_memory |= impl_->agg.saw_memory() || row.stats.cpu_memory != 0 || row.stats.self_cpu_memory != 0 ||
                    row.stats.cuda_memory != 0 || row.stats.self_cuda_memory != 0;
    r.has_input_shapes |= !row.input_shapes.empty() && row.input_shapes != kNoShapes;
    r.has_stack |= !row.stack.empty();
  }
  r.cuda_api = impl_->cuda_api.rows();
  r.ranks = std::move(impl_->ranks).finish();
  r.steps = impl_->agg.take_steps();
  std::stable_sort(r.steps.begin(), r.steps.end(), [](const StepRow& a, const StepRow& b) {
    return std::tie(a.step, a.pid, a.tid) < std::tie(b.step, b.pid, b.tid);
  });
  std::stable_sort(r.phases.begin(), r.phases.end(), [](const StepPhases& a, const StepPhases& b) {
    return std::tie(a.step, a.pid, a.tid) < std::tie(b.step, b.pid, b.tid);
  });
  return r;
}

Report compute_report(const std::vector<Input>& inputs, const Options& options) {
  ReportBuilder b(options);
  for (const Input& in : inputs) b.add(in.path, *in.trace);
  return std::move(b).finish();
}

}  // namespace ptprof::report
