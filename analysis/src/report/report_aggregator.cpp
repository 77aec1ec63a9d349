// Aggregates events into key_averages() rows (see report.hpp for semantics).
#include "report/report_aggregator.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>

#include "ptprof/cuda_status.hpp"
#include "ptprof/saturating.hpp"
#include "report/compiled_source.hpp"
#include "report/report_keys.hpp"
#include "stacks/stack_attribution.hpp"

namespace ptprof::report::detail {

using model::Tree;
using model::TreeNode;

namespace {

// Kernels, copies and sets: the GPU work torch's table counts as CUDA time.
bool is_device_work(trace::EventKind k) {
  return k == trace::EventKind::Kernel || k == trace::EventKind::Memcpy || k == trace::EventKind::Memset;
}

// torch's device_time_total and self_device_time_total of each node: its
// own GPU work (`own(n)`) plus that of its children after folding. A folded
// node's GPU work replaces its parent's (_remove_dup_nodes lifts the child's
// kernels up), so the self time of what remains is its own work.
template <class Own>
std::vector<CudaTimes> cuda_times(const Tree& tree, size_t n, Own&& own) {
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

}  // namespace

struct Aggregator::Local {
  // Every other field starts from its own initializer: adding one needs no change here.
  explicit Local(const trace::Trace& trace) : t(trace) {}

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
  // out of the memory columns (frees_from_before).
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

void Aggregator::add_memory(uint32_t row, const MemorySum& total, const MemorySum& self) {
  Stats& s = rows_[row].stats;
  s.cpu_memory += total.cpu;
  s.self_cpu_memory += self.cpu;
  s.cuda_memory += total.device;
  s.self_cuda_memory += self.device;
}

void Aggregator::add_streamed(const StreamedTrace& s) {
  const trace::Trace& t = s.metadata;
  for (const auto& [key, part] : s.rows) {
    uint32_t row = 0;
    if (key == kUnnamedStepRow) {
      row = row_for(kStepKey, kNoShapes);
    } else {
      const uint32_t shapes_id = uint32_t(key);
      std::string_view shapes = shapes_id ? std::string_view(t.strings[shapes_id]) : kNoShapes;
      row = row_for(key_name(t.strings[key >> 32]), shapes.empty() ? kNoShapes : shapes);
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

void Aggregator::merge(Aggregator&& later) {
  // In the other's row order, so that rows new here come in the order they
  // would have been created in.
  std::vector<const std::string*> keys(later.rows_.size());
  for (const auto& [key, id] : later.row_index_) keys[id] = &key;
  for (uint32_t id = 0; id < later.rows_.size(); ++id) {
    Row& from = later.rows_[id];
    const auto [at, added] = row_index_.try_emplace(*keys[id], uint32_t(rows_.size()));
    if (added) {
      rows_.push_back(std::move(from));
      first_.push_back(later.first_[id]);
      continue;
    }
    Row& r = rows_[at->second];
    if (later.first_[id] < first_[at->second]) {
      first_[at->second] = later.first_[id];
      r.is_async = from.is_async;
    }
    Stats& s = r.stats;
    const Stats& f = from.stats;
    s.count += f.count;
    s.cpu_total_ns = ptprof::detail::saturating_add(s.cpu_total_ns, f.cpu_total_ns);
    s.self_cpu_ns = ptprof::detail::saturating_add(s.self_cpu_ns, f.self_cpu_ns);
    s.cuda_total_ns = ptprof::detail::saturating_add(s.cuda_total_ns, f.cuda_total_ns);
    s.self_cuda_ns = ptprof::detail::saturating_add(s.self_cuda_ns, f.self_cuda_ns);
    s.cpu_memory += f.cpu_memory;
    s.self_cpu_memory += f.self_cpu_memory;
    s.cuda_memory += f.cuda_memory;
    s.self_cuda_memory += f.self_cuda_memory;
  }
  steps_.insert(steps_.end(), later.steps_.begin(), later.steps_.end());
  outside_steps_.insert(outside_steps_.end(), later.outside_steps_.begin(), later.outside_steps_.end());
  device_self_ns_ += later.device_self_ns_;
  saw_memory_ |= later.saw_memory_;
  saw_device_memory_ |= later.saw_device_memory_;
}

void Aggregator::add_trace(uint32_t input, const trace::Trace& t) {
  Local local(t);
  for (const auto& m : t.memory)
    if (!m.segment && is_device_memory(m.device_type)) local.segments_as_device_memory = false;
  local.from_before = frees_from_before(t);
  if (opts_.group_by_stack_n > 0) local.stack_of = stacks::effective_stacks(t);
  for (const auto& e : t.events) {
    if (!is_device_work(e.kind) || e.arg == 0 || e.arg > t.cuda.size()) continue;
    if (uint64_t op = t.cuda[e.arg - 1].external_id)
      local.device_ns_by_op[op] += std::max<int64_t>(0, e.end_ns - e.start_ns);
  }
  local.filtered.resize(t.strings.size());
  local.name_key.resize(t.strings.size());
  std::unordered_map<std::string_view, uint32_t> keys;
  for (size_t i = 0; i < t.strings.size(); ++i) {
    local.filtered[i] = filter_bits(t.strings[i]);
    local.name_key[i] = keys.emplace(key_name(t.strings[i]), uint32_t(keys.size())).first->second;
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
    add_thread(input, t.threads[th], events, local);
  }
}

uint32_t Aggregator::row_of(const trace::Event& e, Local& local) {
  const trace::Trace& t = local.t;
  // A Step without a name is still ProfilerStep#<arg>.
  if (e.kind == trace::EventKind::Step && e.name == 0) {
    if (local.unnamed_step_row < 0) local.unnamed_step_row = row_for(kStepKey, kNoShapes);
    return uint32_t(local.unnamed_step_row);
  }
  const uint32_t shapes_id = opts_.group_by_input_shape ? e.shapes : 0u;
  std::string_view name = key_name(t.strings[e.name]);
  std::optional<std::string> folded;  // row_for copies the name it keeps
  if (opts_.group_by_compiled_source && (folded = compiled_source_key(name))) name = *folded;
  std::string_view shapes = e.shapes ? std::string_view(t.strings[e.shapes]) : kNoShapes;
  if (shapes.empty()) shapes = kNoShapes;
  if (!local.stack_of.empty()) {
    const size_t index = size_t(&e - t.events.data());
    const uint32_t stack = index < local.stack_of.size() ? local.stack_of[index] : 0;
    const auto key = std::make_tuple(e.name, shapes_id, stack);
    if (auto it = local.stack_rows.find(key); it != local.stack_rows.end()) return it->second;
    auto [entries, added] = local.entries.try_emplace(stack);
    if (added) {
      entries->second = stacks::stack_entries(t, stack);
      if (entries->second.size() > opts_.group_by_stack_n) entries->second.resize(opts_.group_by_stack_n);
    }
    const uint32_t r = row_for(name, shapes, &entries->second);
    local.stack_rows.emplace(key, r);
    return r;
  }
  const uint64_t k = uint64_t(e.name) << 32 | shapes_id;
  if (auto it = local.rows.find(k); it != local.rows.end()) return it->second;
  const uint32_t r = row_for(name, shapes);
  local.rows.emplace(k, r);
  return r;
}

struct Aggregator::ThreadEvents {
  std::vector<TreeNode> nodes;          // of the call tree: ops, ranges, steps, CUDA API calls
  std::vector<uint32_t> node_event;     // per node: its event
  std::vector<uint32_t> async_events;   // rows of their own, outside the tree
  std::vector<uint32_t> outside_steps;  // the time before the first step or after the last: outside the tree
  ThreadMemory memory;
};

void Aggregator::add_thread(uint32_t input, const trace::Thread& thread, const std::vector<uint32_t>& events,
                            Local& local) {
  const trace::Trace& t = local.t;
  ThreadEvents te = sort_out(input, events, local);
  const Tree tree = model::build_tree(te.nodes);
  const std::vector<CudaTimes> cuda = cuda_times(tree, te.nodes.size(), [&](size_t n) -> int64_t {
    const trace::Event& e = t.events[te.node_event[n]];
    if (e.kind != trace::EventKind::Op || e.arg == 0) return 0;
    auto it = local.device_ns_by_op.find(e.arg);
    return it == local.device_ns_by_op.end() ? 0 : it->second;
  });
  std::vector<MemorySum> memory_total, memory_self;
  if (!te.memory.empty())
    add_thread_memory(input, te, tree, local, node_sink_ ? &memory_total : nullptr,
                      node_sink_ ? &memory_self : nullptr);
  add_thread_steps(thread, te, tree, local);
  if (node_sink_) tell_nodes(te, tree, cuda, memory_total, memory_self);
  for (size_t n = 0; n < te.nodes.size(); ++n) {
    if (tree.folded[n]) continue;
    const TreeNode& node = te.nodes[n];
    const FirstSeen at{node.start, -node.end, input, te.node_event[n]};
    add(row_of(t.events[te.node_event[n]], local), at, false, node.end - node.start, tree.self_ns[n], cuda[n].total_ns,
        cuda[n].self_ns);
  }
}

// Rows that need no tree (marks, GPU work, async events) are added here; the
// rest become the nodes of the thread's call tree.
Aggregator::ThreadEvents Aggregator::sort_out(uint32_t input, const std::vector<uint32_t>& events, Local& local) {
  using trace::EventKind;
  const trace::Trace& t = local.t;
  ThreadEvents te;
  te.nodes.reserve(events.size());  // most events are nodes: no regrowth
  te.node_event.reserve(events.size());
  for (uint32_t i : events) {
    const trace::Event& e = t.events[i];
    if (e.kind == EventKind::Memory) {
      if (e.arg >= 1 && e.arg <= t.memory.size()) {
        const trace::MemoryInfo& m = t.memory[e.arg - 1];
        if (m.segment && !local.segments_as_device_memory) continue;
        saw_memory_ = true;
        saw_device_memory_ |= is_device_memory(m.device_type);
        if (local.from_before[e.arg - 1]) continue;  // unseen by torch.profiler in this window
        te.memory.add(e.start_ns, m, uint32_t(e.arg - 1));
      }
      continue;
    }
    // Hand-built traces are not validated by a reader: skip what cannot be named.
    if (e.name >= t.strings.size() || e.shapes >= t.strings.size()) continue;
    if (filtered_out(local.filtered[e.name], e.kind)) continue;
    const int64_t dur = std::max<int64_t>(0, e.end_ns - e.start_ns);
    const FirstSeen at{e.start_ns, -(e.start_ns + dur), input, i};
    if (e.kind == EventKind::Step && !trace::is_step(e)) {
      te.outside_steps.push_back(i);  // no row: what runs in it counts as top-level
      continue;
    }
    switch (e.kind) {
      case EventKind::Op:
      case EventKind::Range:
      case EventKind::Step:
      case EventKind::CudaApi:   // torch's table has its runtime calls (cudaLaunchKernel...) as rows
      case EventKind::CuptiApi:  // as for calls only CUPTI saw (the launcher folds a hooked call into its record)
        if (e.flags & trace::kAsync) {
          // Async events span threads: no children, no self time.
          add(row_of(e, local), at, true, dur, 0);
          te.async_events.push_back(i);
        } else {
          const uint32_t key = e.kind == EventKind::Step && e.name == 0 ? local.step_key : local.name_key[e.name];
          te.nodes.push_back(TreeNode{e.start_ns, e.start_ns + dur, key});
          te.node_event.push_back(i);
        }
        break;
      case EventKind::Mark:
        if (wire::is_cuda_note(t, e)) break;     // the agent's note, not the program's
        add(row_of(e, local), at, false, 0, 0);  // counted, no time
        break;
      case EventKind::Kernel:
      case EventKind::Memcpy:
      case EventKind::Memset:
        // torch's device events: rows of their own, with CUDA time and no CPU time.
        add(row_of(e, local), at, false, 0, 0, dur, dur);
        device_self_ns_ += dur;
        break;
      default:
        break;  // kinds from later versions have no place in this table
    }
  }
  return te;
}

// The memory columns, as torch's MemRecordsAcc gives them: what was
// allocated while each event ran, less its children's for the self columns.
void Aggregator::add_thread_memory(uint32_t input, ThreadEvents& te, const Tree& tree, Local& local,
                                   std::vector<MemorySum>* total_out, std::vector<MemorySum>* self_out) {
  const trace::Trace& t = local.t;
  const std::vector<TreeNode>& nodes = te.nodes;
  te.memory.seal();
  std::vector<MemorySum> total(nodes.size()), self(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) self[n] = total[n] = te.memory.in(nodes[n].start, nodes[n].end);
  // Self: less the children left after folding (a folded node is gone, its
  // children are its parent's).
  for (size_t n = 0; n < nodes.size(); ++n)
    if (!tree.folded[n] && tree.live_parent[n] >= 0) self[size_t(tree.live_parent[n])] -= total[n];
  for (size_t n = 0; n < nodes.size(); ++n)
    if (!tree.folded[n]) add_memory(row_of(t.events[te.node_event[n]], local), total[n], self[n]);
  for (uint32_t i : te.async_events)
    add_memory(row_of(t.events[i], local), te.memory.in(t.events[i].start_ns, t.events[i].end_ns), {});
  if (memory_sink_) te.memory.each_point(memory_sink_);
  if (total_out) *total_out = total;
  if (self_out) *self_out = std::move(self);
  // Inside no event: torch's top-level "[memory]" events, one call each.
  uint64_t count = 0;
  int64_t first_ts = 0;
  const MemorySum top = te.memory.outside(&count, &first_ts);
  if (count) {
    const uint32_t r = row_for(kMemoryEventName, kNoShapes);
    for (uint64_t k = 0; k < count; ++k) add(r, FirstSeen{first_ts, -first_ts, input, UINT32_MAX}, false, 0, 0);
    add_memory(r, top, top);
  }
}

void Aggregator::tell_nodes(const ThreadEvents& te, const Tree& tree, const std::vector<CudaTimes>& cuda,
                            const std::vector<MemorySum>& total, const std::vector<MemorySum>& self) {
  std::vector<uint32_t> depth(te.nodes.size(), 0);
  for (uint32_t n : tree.order)  // parents first
    if (tree.live_parent[n] >= 0) depth[n] = depth[size_t(tree.live_parent[n])] + (tree.folded[n] ? 0 : 1);
  for (size_t n = 0; n < te.nodes.size(); ++n) {
    NodeValues v;
    v.event = te.node_event[n];
    v.parent_event = tree.live_parent[n] >= 0 ? int64_t(te.node_event[size_t(tree.live_parent[n])]) : -1;
    v.depth = depth[n];
    v.folded = tree.folded[n] != 0;
    v.self_ns = tree.self_ns[n];
    v.cuda_total_ns = cuda[n].total_ns;
    v.self_cuda_ns = cuda[n].self_ns;
    if (!total.empty()) {
      v.memory = total[n];
      v.self_memory = self[n];
    }
    node_sink_(v);
  }
  for (uint32_t i : te.async_events) {
    NodeValues v;
    v.event = i;
    v.async = true;
    node_sink_(v);
  }
}

// The thread's steps, each with the time of the ops and ranges directly in it;
// the time before the first step and after the last with the top-level ops
// and ranges in it.
void Aggregator::add_thread_steps(const trace::Thread& thread, const ThreadEvents& te, const Tree& tree,
                                  const Local& local) {
  using trace::EventKind;
  const trace::Trace& t = local.t;
  const int32_t pid = thread.process < t.processes.size() ? t.processes[thread.process].pid : 0;
  auto row_of_step = [&](const trace::Event& e, int64_t wall_ns) {
    StepRow row{e.arg, pid, thread.tid, wall_ns, 0};
    row.partial = (e.flags & trace::kTruncated) != 0;
    if (e.flags & trace::kBeforeSteps) row.role = StepRow::Role::BeforeSteps;
    if (e.flags & trace::kAfterSteps) row.role = StepRow::Role::AfterSteps;
    return row;
  };
  std::unordered_map<uint32_t, size_t> step_of_node;
  for (size_t n = 0; n < te.nodes.size(); ++n) {
    const trace::Event& e = t.events[te.node_event[n]];
    if (e.kind == EventKind::Step) {
      step_of_node[uint32_t(n)] = steps_.size();
      steps_.push_back(row_of_step(e, te.nodes[n].end - te.nodes[n].start));
    }
  }
  for (size_t n = 0; n < te.nodes.size(); ++n) {
    const trace::Event& e = t.events[te.node_event[n]];
    const int32_t p = tree.parent[n];
    if (p < 0 || (e.kind != EventKind::Op && e.kind != EventKind::Range)) continue;
    if (auto it = step_of_node.find(uint32_t(p)); it != step_of_node.end())
      steps_[it->second].operator_ns =
          ptprof::detail::saturating_add(steps_[it->second].operator_ns, te.nodes[n].end - te.nodes[n].start);
  }
  for (uint32_t i : te.outside_steps) {
    const trace::Event& e = t.events[i];
    StepRow row = row_of_step(e, std::max<int64_t>(0, e.end_ns - e.start_ns));
    for (size_t n = 0; n < te.nodes.size(); ++n) {
      const trace::Event& op = t.events[te.node_event[n]];
      if (tree.parent[n] >= 0 || (op.kind != EventKind::Op && op.kind != EventKind::Range)) continue;
      if (te.nodes[n].start >= e.start_ns && te.nodes[n].start < e.end_ns)
        row.operator_ns = ptprof::detail::saturating_add(row.operator_ns, te.nodes[n].end - te.nodes[n].start);
    }
    outside_steps_.push_back(row);
  }
}

}  // namespace ptprof::report::detail
