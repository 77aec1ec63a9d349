#include "collect/process_collector.hpp"

#include "ptprof/out_of_memory.hpp"

#include <algorithm>
#include "ptprof/process_role.hpp"

namespace ptprof::launcher {

std::string ProcessCollector::role(bool parent_profiled) const {
  const uint32_t r = known_process_role(header_.role.load(std::memory_order_acquire));
  return process_role_text(r, r != 0 ? header_.role_index.load(std::memory_order_relaxed) : -1,
                           header_.dist_known ? header_.rank.load(std::memory_order_acquire) : -1, parent_profiled);
}

ProcessCollector::ProcessCollector(std::unique_ptr<RegionMapping> region, FileStem file_stem,
                                   const CollectorOptions& opts, const clock::Converter& conv, WindowSink& sink)
    : region_(std::move(region)),
      header_(*region_->header()),
      opts_(opts),
      names_(header_, wire::string_arena(region_->base, header_)),
      threads_(header_, region_->base),
      context_{names_, shapes_, threads_, header_, conv},
      cuda_(context_),
      output_(opts, context_, std::move(file_stem), sink) {}

ProcessCollector::~ProcessCollector() = default;

uint64_t ProcessCollector::events() const {
  uint64_t n = 0;
  for (const Window& w : book_.windows()) n += w.trace.events();
  return n;
}

trace::Losses ProcessCollector::losses() const {
  trace::Losses l = seen_;
  l.late_events = book_.late_events();
  l.malformed_bytes += threads_.corrupt_bytes();
#define PTPROF_READ_HEADER_LOSS(counter, field) l.field = header_.counter.load(std::memory_order_relaxed);
  PTPROF_HEADER_LOSSES(PTPROF_READ_HEADER_LOSS)
#undef PTPROF_READ_HEADER_LOSS
  return l;
}

StepFacts ProcessCollector::step_facts() const {
  StepFacts f;
  f.pid = header_.pid;
  f.steps_ended = header_.steps_ended.load(std::memory_order_relaxed);
  f.optimizer_steps = header_.step_candidates[wire::kStepCandidateOptimizer].load(std::memory_order_relaxed);
  f.dataloader_batches = header_.step_candidates[wire::kStepCandidateDataLoader].load(std::memory_order_relaxed);
  f.named = header_.step_candidates[wire::kStepCandidateNamed].load(std::memory_order_relaxed);
  f.forwards = header_.step_candidates[wire::kStepCandidateForward].load(std::memory_order_relaxed);
  f.auto_rule = header_.auto_rule.load(std::memory_order_relaxed);
  f.cost_pairs = header_.step_cost_pairs.load(std::memory_order_acquire);
  if (f.cost_pairs) {
    f.cost_unrecorded_steps = header_.step_cost_unrecorded_steps.load(std::memory_order_relaxed);
    f.cost_ops = header_.step_cost_ops.load(std::memory_order_relaxed);
    f.cost_added_ns = header_.step_cost_added_ns.load(std::memory_order_relaxed);
    f.cost_unrecorded_ns = header_.step_cost_unrecorded_ns.load(std::memory_order_relaxed);
  }
  return f;
}

std::vector<std::string> ProcessCollector::cuda_notes() { return launcher::cuda_notes(header_, names_); }

uint64_t ProcessCollector::drain(uint64_t horizon) {
  if (finished_) return 0;
  // The agent raises in_transition while it publishes a boundary; wait for
  // the next round rather than classify against a half-written list.
  if (horizon != UINT64_MAX && header_.in_transition.load(std::memory_order_acquire)) horizon = drained_horizon_;
  book_.read_boundaries(header_);
  context_.read_costs();
  names_.read_new();
  threads_.attach_new();
  uint64_t n = 0;
  for (auto& t : threads_.slots()) {
    if (!t.live) continue;
    // Read before draining: a thread marks its slot retired after its last record.
    const bool exited =
        header_.threads[t.slot].state.load(std::memory_order_acquire) == uint32_t(wire::SlotState::Retired);
    n += t.reader.drain([&](const wire::RecordHeader& h) { return visit(t, h, horizon); });
    if (exited && t.reader.empty()) retire_thread(t);
  }
  cuda_.settle([this](int32_t slot) -> WindowTrace* {
    Window& w = book_.at(slot);
    return w.done || !w.trace.is_open() ? nullptr : &w.trace;
  });
  drained_horizon_ = std::max(drained_horizon_, horizon);
  return n;
}

bool ProcessCollector::visit(ThreadDecode& t, const wire::RecordHeader& h, uint64_t horizon) {
  if (h.ts > horizon) return false;  // not yet classifiable: leave it in the ring
  t.last_ticks = std::max(t.last_ticks, h.ts);
  decode_record(h, [&](const decoded::Record& r, auto&& event) {
    names_.learn(r.name);
    route(t, r, event);
  });
  return true;
}

int32_t ProcessCollector::writable(int32_t slot) {
  if (slot < 0) return -1;
  Window& w = book_.at(slot);
  return w.trace.is_open() || output_.open(w) ? slot : -1;
}

inline void ProcessCollector::open_span(ThreadDecode& t, const OpenSpan& s) {
  if (t.spans.empty()) setup_.top_level_span(t.instance, s.name, s.start);
  if (auto at = setup_.take_first_step_start()) book_.split_first_step(*at);
  const int32_t slot = book_.window_for(s.start);
  if (slot >= 0) book_.span_opened(slot);
  t.spans.push(s, slot);
}

auto ProcessCollector::span_closer(ThreadDecode& t) {
  return [this, &t](const OpenSpan& s, uint64_t end, uint16_t flags) {
    // An op's facts leave the map when it closes, written or not.
    const OpFactsNode facts = take_facts(s);
    if (s.window < 0) return;
    Window& w = book_.span_closed(s.window);
    if (!w.done) write_event(w, t.instance, s, end, flags, facts_of(facts));
  };
}

ProcessCollector::OpFactsNode ProcessCollector::take_facts(const OpenSpan& s) {
  if (op_facts_.empty() || s.kind != trace::EventKind::Op) [[likely]]
    return {};
  return op_facts_.extract(s.handle);
}

inline void ProcessCollector::write_event(Window& w, uint32_t instance, const OpenSpan& s, uint64_t end, uint16_t flags,
                                          const OpFacts* facts) {
  if (!w.trace.is_open() && !output_.open(w)) return;
  w.trace.add_span(s, instance, end, flags, s.kind == trace::EventKind::Op ? cuda_.op_join_key(s.handle) : 0);
  if (s.name == 0) ++seen_.unnamed_events;  // every named record type: its name was lost
  if (!facts) [[likely]]
    return;
  if (facts->collective) w.trace.add_collective(*facts->collective, instance, s.start);
  if (facts->tensors) w.trace.add_tensor_group(*facts->tensors, instance, s.start);
}

void ProcessCollector::route(ThreadDecode&, const decoded::Record&, const decoded::Malformed& m) {
  seen_.malformed_bytes += m.bytes;
}

inline void ProcessCollector::route(ThreadDecode& t, const decoded::Record& r, const decoded::RangePush& push) {
  open_span(t, span_of(r, push));
}

inline void ProcessCollector::route(ThreadDecode& t, const decoded::Record& r, const decoded::RangePop&) {
  t.spans.close_range(r.ts, span_closer(t));
}

inline void ProcessCollector::route(ThreadDecode& t, const decoded::Record& r, const decoded::Mark& mark) {
  const int32_t slot = book_.window_for(r.ts);
  if (slot >= 0) write_event(book_.at(slot), t.instance, span_of(r, mark), r.ts, 0, nullptr);
}

void ProcessCollector::route(ThreadDecode& t, const decoded::Record& r, const decoded::Step& s) {
  book_.step_began(r.ts, s.number, t.instance);
  setup_.step_began(s.number, t.instance, r.ts);
}

inline void ProcessCollector::route(ThreadDecode& t, const decoded::Record& r, const decoded::OpBegin& op) {
  open_span(t, span_of(r, op, t.spans, shapes_));
}

inline void ProcessCollector::route(ThreadDecode& t, const decoded::Record& r, const decoded::OpEnd& op) {
  t.spans.close_op(op.handle, r.ts, span_closer(t));
}

void ProcessCollector::note_out_of_memory(ThreadDecode& t, const decoded::Record& r, const decoded::CudaApiCall& call) {
  names_.learn(r.name);
  if (!names_.known(r.name) || !cuda::out_of_memory(names_.text(r.name), call.info.result)) return;
  constexpr size_t kKept = 5;  // the summary names the first few
  if (out_of_memory_count_++ >= kKept) return;
  const MemoryContext where = memory_context(t.spans, r.ts);
  const uint32_t op = where.here.op ? where.here.op : where.inner_op;
  names_.learn(op);
  out_of_memory_.push_back(
      OutOfMemoryNote{header_.pid, names_.text(r.name), call.info.bytes, names_.known(op) ? names_.text(op) : ""});
}

void ProcessCollector::route(ThreadDecode& t, const decoded::Record& r, const decoded::CudaApiCall& call) {
  cuda_.saw_cuda();
  note_out_of_memory(t, r, call);
  const int32_t slot = writable_window(r.ts);
  if (slot < 0) return;
  cuda_.api_call(r, call, t.instance, slot, book_.at(slot).trace);
  if (r.name == 0) ++seen_.unnamed_events;
}

void ProcessCollector::route(ThreadDecode& t, const decoded::Record& r, const decoded::GpuActivity& a) {
  cuda_.saw_cuda();
  const int32_t slot = a.on_lane ? writable(book_.device_window_for(r.ts)) : writable_window(r.ts);
  if (slot < 0) return;
  cuda_.gpu_activity(r, a, t.instance, slot, book_.at(slot).trace);
}

void ProcessCollector::route(ThreadDecode&, const decoded::Record&, const decoded::Correlation& c) {
  cuda_.correlate(c);
  cuda_.saw_cuda();
}

void ProcessCollector::route(ThreadDecode& t, const decoded::Record& r, const decoded::Memory& m) {
  const MemoryContext where = memory_context(t.spans, r.ts);
  trace::MemoryInfo info = m.info;
  const LedgerEntry entry = memory_.book(m.source, info, where.here);
  if (!entry.write) return;
  const int32_t slot = writable_window(r.ts);
  if (slot >= 0) write_memory_event(book_.at(slot).trace, context_.conv, t.instance, r.ts, info, where, entry);
}

void ProcessCollector::route(ThreadDecode& t, const decoded::Record&, decoded::StackDef& s) {
  threads_.define_stack(t.instance, s.id, std::move(s.frames));
}

// Kept only for the op it describes, open on the thread (the agent writes it
// right after that op's begin).
void ProcessCollector::route(ThreadDecode& t, const decoded::Record&, const decoded::Collective& c) {
  const OpenSpan* op = t.spans.innermost();
  if (!op || op->kind != trace::EventKind::Op || op->handle != c.handle) return;
  for (uint32_t id : {c.info.name, c.info.process_group, c.info.process_group_desc, c.info.dtype}) names_.learn(id);
  op_facts_[c.handle].collective = c.info;
}

// An op's inputs: kept for the op open on the thread, like a collective's
// facts. A module's or optimizer's: written at once into the window of its time.
void ProcessCollector::route(ThreadDecode& t, const decoded::Record& r, decoded::TensorGroup& g) {
  if (g.group.kind == uint8_t(wire::TensorGroupKind::OpInputs)) {
    const OpenSpan* op = t.spans.innermost();
    if (!op || op->kind != trace::EventKind::Op || op->handle != g.handle) return;
    op_facts_[g.handle].tensors = std::move(g.group);
    return;
  }
  const int32_t slot = writable_window(r.ts);
  if (slot >= 0) book_.at(slot).trace.add_tensor_group(g.group, t.instance, r.ts);
}

// Kept whether or not a window records: a graph captured in one window is
// replayed in the later ones. The op is found by its handle among those open
// on the capturing thread (the agent writes the record inside it).
void ProcessCollector::route(ThreadDecode& t, const decoded::Record&, const decoded::GraphNode& g) {
  const OpenSpan* op = g.op ? t.spans.find_op(g.op) : nullptr;
  cuda_.graph_node(g, op ? op->name : 0);
  cuda_.saw_cuda();
}

// The thread in `t` exited and its ring is drained: close what it left open.
void ProcessCollector::retire_thread(ThreadDecode& t) {
  t.spans.close_all(t.last_ticks, span_closer(t));
  threads_.retire(t);
}

void ProcessCollector::write_window(int32_t slot) {
  Window& w = book_.at(slot);
  if (w.done) return;
  const uint64_t end = w.end == UINT64_MAX ? std::max(threads_.last_ticks(), w.begin) : w.end;
  // Spans of this window still open: cut at the window's end.
  for (auto& t : threads_.slots()) {
    t.spans.leave_window(slot, [&](const OpenSpan& s) {
      write_event(w, t.instance, s, std::max(end, s.start), trace::kTruncated, facts_of(take_facts(s)));
      book_.span_closed(slot);
    });
  }
  if (w.end == UINT64_MAX)
    WindowBook::end_last_step(w, end, closed_flag() && !(opts_.interrupted && opts_.interrupted()));
  WindowBook::close_step(w, end);
  // CUDA events held for their correlation: joined with what arrived since.
  cuda_.release(slot, w.trace);
  const trace::Losses now = losses();
  if (w.trace.events() == 0 && !threads_.drops_to_charge() && now == charged_) {
    w.done = true;  // nothing to say: no file
    return;
  }
  if (!output_.open(w)) return;
  trace::Losses delta = now;
  delta -= charged_;
  charged_ = now;
  output_.close(w, end, threads_.take_drops(), delta);
}

void ProcessCollector::finish_ready_windows() {
  const auto now = std::chrono::steady_clock::now();
  const bool gpu_flush = header_.gpu_flush.load(std::memory_order_acquire) != 0;
  for (size_t i = 0; i < book_.windows().size(); ++i)
    if (WindowBook::ready(book_.windows()[i], drained_horizon_, gpu_flush, opts_.grace, now)) write_window(int32_t(i));
  if (now - last_flush_ < opts_.flush_interval) return;
  last_flush_ = now;
  for (auto& w : book_.windows())
    if (w.trace.is_open() && !w.done) w.trace.writer().flush();
}

void ProcessCollector::finish() {
  if (finished_) return;
  drain(UINT64_MAX);
  for (size_t i = 0; i < book_.windows().size(); ++i) write_window(int32_t(i));
  finished_ = true;
}

}  // namespace ptprof::launcher
