#include "report/report_stream.hpp"

#include <algorithm>
#include <array>

#include "model/event_tree.hpp"
#include "ptprof/analysis/report_compile.hpp"
#include "ptprof/analysis/trace_file.hpp"
#include "ptprof/cuda_status.hpp"
#include "ptprof/saturating.hpp"
#include "report/report_keys.hpp"

namespace ptprof::report::detail {

namespace {

using ptprof::detail::saturating_add;
using ptprof::detail::saturating_sub;
using trace::EventKind;

bool is_collective(std::string_view n) {
  for (std::string_view prefix : {"c10d::", "gloo:", "nccl:", "mpi:", "ucc:", "record_param_comms"})
    if (n.substr(0, prefix.size()) == prefix) return true;
  return false;
}

// A node's contribution to its row, held by its parent until the parent is
// known to have another child: an only child with its parent's key is folded
// into it (torch's _remove_dup_nodes) and reported nowhere.
struct Contribution {
  uint64_t row = 0;
  uint32_t key = 0;
  FirstSeen at;
  int64_t dur = 0;
  int64_t self = 0;
  int64_t child_ns = 0;  // what the parent's children time becomes if this folds into it
};

// An event on its thread's stack: its children (earlier in the file) are
// still being read.
struct Open {
  int64_t start = 0, end = 0;
  uint32_t event = 0;  // index in the file's event order
  uint32_t name = 0;   // string id (0 for a Step without a name)
  EventKind kind = EventKind::Op;
  bool node = false;         // in torch's tree (not a filtered name)
  bool op_inside = false;    // an Op among this event and its ancestors
  int32_t tree_parent = -1;  // stack position of the nearest node below, -1: none
  uint64_t row = 0;
  uint32_t key = 0;
  uint64_t step_arg = 0;
  size_t step = SIZE_MAX;  // its StepRow
  // Phases: the innermost step at or below (stack position, -1: none); the
  // phase marks of the events from just above it to this one, and of this
  // one and all below.
  int32_t step_pos = -1;
  uint8_t between = 0;
  uint8_t marks_below = 0;
  size_t span = SIZE_MAX;  // a step's StepSpan
  uint32_t children = 0;   // direct children in the tree
  int64_t child_ns = 0;
  Contribution only;  // the first child's, while it is the only one
};

// A step's phases as unions of its events' spans: Σ over the outermost events
// inside it that carry a mark of each set; a set that an event around the
// step carries covers all of it. The phases are differences of these unions
// (the full computation claims time in the order data loading, optimizer,
// backward, forward).
constexpr std::array<uint8_t, 4> kUnions = {kMarkDataLoading, kMarkDataLoading | kMarkOptimizer,
                                            kMarkDataLoading | kMarkOptimizer | kMarkBackward,
                                            kMarkDataLoading | kMarkOptimizer | kMarkBackward | kMarkForward};

struct StepSpan {
  uint32_t thread = 0, event = 0;
  StepPhases row;
  uint8_t around = 0;  // marks of the events around the step
  std::array<int64_t, kUnions.size()> inside{};
};

class Streamer {
 public:
  Streamer(const trace::Trace& meta, uint32_t input, const Options& o, bool phases, uint64_t total, StreamedTrace& out)
      : t_(meta),
        input_(input),
        opts_(o),
        phases_(phases),
        total_(total),
        out_(out),
        stacks_(meta.threads.size()),
        backward_threads_(meta.processes.size()) {
    filtered_.resize(t_.strings.size());
    key_.resize(t_.strings.size());
    std::unordered_map<std::string_view, uint32_t> keys;
    for (size_t i = 0; i < t_.strings.size(); ++i) {
      filtered_[i] = filter_bits(t_.strings[i]);
      key_[i] = keys.emplace(key_name(t_.strings[i]), uint32_t(keys.size())).first->second;
    }
    step_key_ = keys.emplace(kStepKey, uint32_t(keys.size())).first->second;
    out_.processes.resize(t_.processes.size());
    step_at_.resize(t_.threads.size());
  }

  // One event chunk, latest event first. False: the trace needs the full computation.
  bool chunk(const std::vector<trace::Event>& events) {
    for (auto e = events.rbegin(); e != events.rend(); ++e)
      if (!event(*e, uint32_t(total_ - 1 - seen_++))) return false;
    return true;
  }

  bool finish() {
    for (size_t th = 0; th < stacks_.size(); ++th)
      while (!stacks_[th].empty()) pop(uint32_t(th));
    if (phases_ && !finish_phases()) return false;
    // The full computation makes steps thread by thread, in file order.
    std::vector<std::tuple<uint32_t, uint32_t, size_t>> order;
    for (uint32_t th = 0; th < step_at_.size(); ++th)
      for (const auto& [event, step] : step_at_[th]) order.emplace_back(th, event, step);
    std::sort(order.begin(), order.end());
    std::vector<StepRow> steps;
    steps.reserve(order.size());
    for (const auto& o : order) steps.push_back(steps_[std::get<2>(o)]);
    out_.steps = std::move(steps);
    return true;
  }

 private:
  uint64_t row_of(const trace::Event& e) const {
    if (e.kind == EventKind::Step && e.name == 0) return kUnnamedStepRow;
    return uint64_t(e.name) << 32 | (opts_.group_by_input_shape ? e.shapes : 0u);
  }

  void add(uint64_t row, const FirstSeen& at, bool async, int64_t total, int64_t self) {
    PartialRow& r = out_.rows[row];
    if (at < r.first) {
      r.first = at;
      r.is_async = async;
    }
    ++r.stats.count;
    r.stats.cpu_total_ns = saturating_add(r.stats.cpu_total_ns, total);
    r.stats.self_cpu_ns = saturating_add(r.stats.self_cpu_ns, self);
  }
  void add(const Contribution& c) { add(c.row, c.at, false, c.dur, c.self); }

  // A step's backward time is that of its whole process: only a process whose
  // backward events are all on the step's own thread is computed here.
  bool finish_phases() {
    for (const StepSpan& s : spans_) {
      const uint32_t pi = t_.threads[s.thread].process;
      if (pi >= backward_threads_.size()) continue;
      for (uint32_t th : backward_threads_[pi])
        if (th != s.thread) return false;
    }
    std::sort(spans_.begin(), spans_.end(), [](const StepSpan& a, const StepSpan& b) {
      return std::tie(a.thread, a.event) < std::tie(b.thread, b.event);
    });
    for (StepSpan& s : spans_) {
      std::array<int64_t, kUnions.size()> u{};
      for (size_t i = 0; i < u.size(); ++i) u[i] = s.around & kUnions[i] ? s.row.wall_ns : s.inside[i];
      PhaseTimes& ns = s.row.ns;
      ns[size_t(Phase::DataLoading)] = u[0];
      ns[size_t(Phase::Optimizer)] = u[1] - u[0];
      ns[size_t(Phase::Backward)] = u[2] - u[1];
      ns[size_t(Phase::Forward)] = u[3] - u[2];
      ns[size_t(Phase::Other)] = s.row.wall_ns - u[3];
      out_.phases.push_back(s.row);
    }
    return true;
  }

  // Phases: the step `o` opens, or what the Op or Range `o` adds to the step it is in.
  bool track_phases(const trace::Event& e, Open& o, const std::vector<Open>& stack) {
    const Open* parent = stack.empty() ? nullptr : &stack.back();
    const uint32_t pi = t_.threads[e.thread].process;
    o.step_pos = parent ? parent->step_pos : -1;
    if (e.kind == EventKind::Step) {
      if (o.step_pos >= 0) return false;  // a step in a step
      o.step_pos = int32_t(stack.size());
      StepSpan s;
      s.thread = e.thread;
      s.event = o.event;
      s.row = StepPhases{
          e.arg, pi < t_.processes.size() ? t_.processes[pi].pid : 0, t_.threads[e.thread].tid, o.end - o.start, {}};
      s.around = parent ? parent->marks_below & ~kMarkForward : 0;
      o.marks_below = parent ? parent->marks_below : 0;
      o.span = spans_.size();
      spans_.push_back(s);
      return true;
    }
    uint8_t marks = phase_marks(e, t_.strings[e.name]);
    if (pi >= backward_threads_.size()) marks &= uint8_t(~kMarkBackward);  // no process: no backward time
    if (marks & kMarkBackward) {
      auto& threads = backward_threads_[pi];
      if (std::find(threads.begin(), threads.end(), e.thread) == threads.end()) threads.push_back(e.thread);
    }
    o.marks_below = uint8_t((parent ? parent->marks_below : 0) | marks);
    const uint8_t above = parent ? parent->between : 0;  // a step's is 0
    o.between = above | marks;
    if (o.step_pos >= 0) {
      StepSpan& s = spans_[stack[size_t(o.step_pos)].span];
      for (size_t i = 0; i < kUnions.size(); ++i)
        if ((marks & kUnions[i]) && !(above & kUnions[i])) s.inside[i] = saturating_add(s.inside[i], o.end - o.start);
    }
    return true;
  }

  bool event(const trace::Event& e, uint32_t index) {
    const uint32_t pi = t_.threads[e.thread].process;
    ProcessEventCounts* process = pi < out_.processes.size() ? &out_.processes[pi] : nullptr;
    const int64_t dur = std::max<int64_t>(0, e.end_ns - e.start_ns);
    const bool async = e.flags & trace::kAsync;
    if (process) {
      ++process->events;
      if (e.kind == EventKind::Step) process->step_ns[e.arg] = std::max(process->step_ns[e.arg], dur);
      if (e.kind == EventKind::Op) {
        ++process->ops;
        if (is_collective(t_.strings[e.name])) return false;  // their time needs every event of the process
      }
    }
    const FirstSeen at{e.start_ns, -(e.start_ns + dur), input_, index};
    if (e.kind == EventKind::Mark) {
      if (!wire::is_cuda_note(t_, e) && !filtered_out(filtered_[e.name], e.kind)) add(row_of(e), at, false, 0, 0);
      return true;
    }
    if (async) {
      if (!filtered_out(filtered_[e.name], e.kind)) add(row_of(e), at, true, dur, 0);
      return true;
    }
    return push(e, index, dur, process);
  }

  // The events come latest first, unsorted, so this walk is not
  // event_tree.hpp's NestingStack; it nests by the same rule (nests_in) and
  // gives up (false) wherever the file's order is not that of strict nesting,
  // so that what it computes is what the sorted walk would.
  bool push(const trace::Event& e, uint32_t index, int64_t dur, ProcessEventCounts* process) {
    std::vector<Open>& stack = stacks_[e.thread];
    const int64_t start = e.start_ns, end = e.start_ns + dur;
    while (!stack.empty()) {
      const Open& top = stack.back();
      if (model::nests_in(top.start, top.end, start, end)) {
        if (top.start == start && top.end == end) return false;  // torch orders these by file position
        break;
      }
      if (end > top.start) return false;  // overlaps what ends after it: no nesting in file order
      pop(e.thread);
    }
    Open o;
    o.start = start;
    o.end = end;
    o.event = index;
    o.name = e.name;
    o.kind = e.kind;
    o.node = !filtered_out(filtered_[e.name], e.kind);
    o.row = row_of(e);
    o.key = e.kind == EventKind::Step && e.name == 0 ? step_key_ : key_[e.name];
    o.step_arg = e.arg;
    const bool op_above = !stack.empty() && stack.back().op_inside;
    o.op_inside = op_above || e.kind == EventKind::Op;
    if (!stack.empty()) o.tree_parent = stack.back().node ? int32_t(stack.size() - 1) : stack.back().tree_parent;
    if (e.kind == EventKind::Op && process && !op_above) process->op_ns = saturating_add(process->op_ns, dur);
    if (o.node && e.kind == EventKind::Step) {
      const uint32_t pi = t_.threads[e.thread].process;
      const int32_t pid = pi < t_.processes.size() ? t_.processes[pi].pid : 0;
      o.step = steps_.size();
      steps_.push_back(StepRow{e.arg, pid, t_.threads[e.thread].tid, dur, 0});
      step_at_[e.thread].emplace_back(index, o.step);
    }
    if (phases_ && !track_phases(e, o, stack)) return false;
    if (o.node && o.tree_parent >= 0 && (e.kind == EventKind::Op || e.kind == EventKind::Range)) {
      const Open& parent = stack[size_t(o.tree_parent)];
      if (parent.step != SIZE_MAX)
        steps_[parent.step].operator_ns = saturating_add(steps_[parent.step].operator_ns, dur);
    }
    stack.push_back(o);
    return true;
  }

  // Every child of the top of the stack has been read: its row, or its parent, gets it.
  void pop(uint32_t thread) {
    std::vector<Open>& stack = stacks_[thread];
    PTPROF_DCHECK(!stack.empty());
    const Open o = stack.back();
    stack.pop_back();
    if (!o.node) return;
    int64_t child_ns = o.child_ns;
    if (o.children == 1) {
      if (o.only.key == o.key)
        child_ns = o.only.child_ns;  // folded into this one
      else
        add(o.only);
    }
    const int64_t dur = o.end - o.start;
    Contribution c{o.row,   o.key, FirstSeen{o.start, -o.end, input_, o.event}, dur, saturating_sub(dur, child_ns),
                   child_ns};
    if (o.tree_parent < 0) {
      add(c);
      return;
    }
    PTPROF_DCHECK(size_t(o.tree_parent) < stack.size());
    Open& parent = stack[size_t(o.tree_parent)];
    parent.child_ns = saturating_add(parent.child_ns, dur);
    if (++parent.children == 1) {
      parent.only = c;
      return;
    }
    if (parent.children == 2) add(parent.only);
    add(c);
  }

  const trace::Trace& t_;
  const uint32_t input_;
  const Options& opts_;
  const bool phases_;
  const uint64_t total_;
  uint64_t seen_ = 0;
  StreamedTrace& out_;
  std::vector<std::vector<Open>> stacks_;  // per thread
  std::vector<uint8_t> filtered_;          // per string id
  std::vector<uint32_t> key_;              // per string id: the id of its key, for folding
  uint32_t step_key_ = 0;
  std::vector<StepRow> steps_;
  std::vector<std::vector<std::pair<uint32_t, size_t>>> step_at_;  // per thread: (event, step)
  std::vector<StepSpan> spans_;                                    // phases: every Step
  std::vector<std::vector<uint32_t>> backward_threads_;            // per process: threads with backward events
};

bool streamable(trace::EventKind k) {
  return k == EventKind::Op || k == EventKind::Range || k == EventKind::Step || k == EventKind::Mark;
}

}  // namespace

Result<std::optional<StreamedTrace>> stream_trace(const std::string& path, uint32_t input, const Options& options,
                                                  bool phases, std::vector<std::string>* warnings) {
  // The processes' costs may follow the events in the file.
  std::vector<std::string> notes;
  auto summary = format::read_trace_summary(path, &notes);
  if (!summary) return summary.status();
  notes.clear();
  // First pass, in file order: what the file holds and what is counted in
  // that order (the cost sums doubles).
  bool ok = options.group_by_stack_n == 0 && !options.group_by_compiled_source;
  uint64_t total = 0, events = 0;
  cost::TallyBuilder cost;
  std::vector<trace::Event> cuda_notes;  // a line of the report's GPU section
  // torch.compile's scopes and notes: the compile section and phase need
  // every event at once (threads' scopes united per process); a rare trace.
  // A collective op of a process needs them too (Streamer::event): found
  // here, the events are not read twice more for nothing.
  constexpr int8_t kCompile = 1, kCollective = 2;
  std::vector<int8_t> name_bits;  // per string id: -1 not known yet, else kCompile | kCollective
  auto bits = [&](const trace::Trace& meta, uint32_t name) -> int8_t {
    if (name >= meta.strings.size()) return 0;
    if (name_bits.size() < meta.strings.size()) name_bits.resize(meta.strings.size(), -1);
    if (name_bits[name] < 0) {
      const std::string& n = meta.strings[name];
      name_bits[name] =
          int8_t((is_compile_scope(n) || parse_compile_mark(n) ? kCompile : 0) | (is_collective(n) ? kCollective : 0));
    }
    return name_bits[name];
  };
  auto collective_op = [&](const trace::Trace& meta, const trace::Event& e) {
    return e.kind == EventKind::Op && (bits(meta, e.name) & kCollective) && e.thread < meta.threads.size() &&
           meta.threads[e.thread].process < meta.processes.size();
  };
  format::EventChunkFilter first = [&](const trace::Trace& meta, const std::vector<trace::Event>& chunk) {
    total += chunk.size();
    if (!ok) return false;
    for (const trace::Event& e : chunk) {
      // An async step has no place on its thread's stack, where phases are found.
      // The time before the first step and after the last: the full computation's.
      ok &= streamable(e.kind) && e.end_ns >= e.start_ns && (e.kind != EventKind::Step || trace::is_step(e)) &&
            !(phases && e.kind == EventKind::Step && (e.flags & trace::kAsync)) && !(bits(meta, e.name) & kCompile) &&
            !collective_op(meta, e);
      cost.add(*summary, e);
      if (wire::is_cuda_note(meta, e))
        cuda_notes.push_back(e);
      else
        ++events;
    }
    return ok;  // else the trace is read again whole: the rest is not needed
  };
  auto meta = format::read_trace_streaming_while(path, first, &notes);
  if (!meta) return meta.status();
  if (!ok || !meta->cuda.empty() || !meta->memory.empty() || total > UINT32_MAX || cuda_notes.size() > 1000)
    return std::optional<StreamedTrace>();

  std::optional<StreamedTrace> out(std::in_place);
  out->metadata = std::move(*meta);
  out->events = events;
  out->cost = cost.finish();
  Streamer s(out->metadata, input, options, phases, total, *out);
  Status read = format::read_events_backwards(
      path, out->metadata,
      [&](const trace::Trace&, const std::vector<trace::Event>& chunk) { ok = ok && s.chunk(chunk); });
  if (!read.ok()) return read;
  if (!ok || !s.finish()) return std::optional<StreamedTrace>();
  out->metadata.events = std::move(cuda_notes);
  if (warnings) warnings->insert(warnings->end(), notes.begin(), notes.end());
  return out;
}

}  // namespace ptprof::report::detail
