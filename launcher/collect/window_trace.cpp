#include "collect/window_trace.hpp"

#include <algorithm>
#include <string>

#include "ptprof/analysis/report_compile.hpp"
#include "ptprof/saturating.hpp"

namespace ptprof::launcher {

namespace {

enum CompileName : uint8_t { kNotCompile = 0, kCompileScope, kRecompileNote, kGraphBreakNote };

CompileName compile_name(std::string_view text) {
  if (report::is_compile_scope(text)) return kCompileScope;
  if (auto note = report::parse_compile_mark(text)) {
    if (note->kind == report::CompileNote::Kind::Recompile) return kRecompileNote;
    if (note->kind == report::CompileNote::Kind::GraphBreak) return kGraphBreakNote;
  }
  return kNotCompile;
}

}  // namespace

void WindowTrace::open(std::unique_ptr<format::TraceSink> writer, const ProcessContext& process) {
  PTPROF_DCHECK(!writer_ && writer);
  writer_ = std::move(writer);
  process_ = &process;
}

uint32_t WindowTrace::add_name(uint32_t arena_id) {
  ProcessNames& names = process_->names;
  names.learn(arena_id);
  if (!names.known(arena_id)) return writer_->intern("<unknown>");
  if (name_map_.size() <= arena_id) name_map_.resize(names.size(), 0);
  if (!name_map_[arena_id]) {
    const std::string& text = names.text(arena_id);
    const uint32_t id = name_map_[arena_id] = writer_->intern(text);
    if (const CompileName kind = compile_name(text); kind != kNotCompile) {
      if (compile_names_.size() <= id) compile_names_.resize(id + 1, kNotCompile);
      compile_names_[id] = kind;
    }
  }
  return name_map_[arena_id];
}

uint32_t WindowTrace::add_shapes(uint32_t id) {
  if (shape_map_.size() < id) shape_map_.resize(process_->shapes.size(), 0);
  if (!shape_map_[id - 1]) shape_map_[id - 1] = writer_->intern(process_->shapes.text(id));
  return shape_map_[id - 1];
}

uint32_t WindowTrace::add_thread(uint32_t instance) {
  if (thread_map_.size() <= instance) thread_map_.resize(instance + 1, 0);
  if (!thread_map_[instance]) thread_map_[instance] = writer_->add_thread(process_->threads.describe(instance)) + 1;
  return thread_map_[instance] - 1;
}

uint32_t WindowTrace::stack(uint32_t instance, uint32_t id) {
  const std::vector<trace::Frame>* frames = process_->threads.stack(instance, id);
  if (!frames) return 0;
  uint32_t& index = stack_map_[uint64_t(instance) << 32 | id];
  if (!index) {
    std::vector<trace::Frame> in_file = *frames;
    for (trace::Frame& f : in_file) {
      f.file = f.file ? name(f.file) : 0;
      f.function = f.function ? name(f.function) : 0;
    }
    index = writer_->add_stack(in_file);
  }
  return index;
}

uint32_t WindowTrace::lane(uint32_t device, uint32_t stream) {
  uint32_t& index = lane_map_[uint64_t(device) << 32 | stream];
  if (!index) {
    trace::Thread th;
    th.process = 0;
    th.tid = int32_t(stream);
    th.device = int32_t(device & 0x7fffffff);
    th.name = "GPU " + std::to_string(device) + " stream " + std::to_string(stream);
    index = writer_->add_thread(th) + 1;
  }
  return index - 1;
}

void WindowTrace::add_span(const OpenSpan& s, uint32_t instance, uint64_t end, uint16_t flags, uint64_t join_key) {
  trace::Event e;
  e.kind = s.kind;
  e.start_ns = process_->conv.to_ns(s.start);
  e.end_ns = end == s.start ? e.start_ns : process_->conv.to_ns(end);  // a mark: once
  e.name = event_name(s.name);
  e.thread = thread(instance);
  e.scope = s.scope;
  e.flags = uint16_t(s.flags | flags);
  e.shapes = shapes(s.shapes);
  e.stack = s.stack ? stack(instance, s.stack) : 0;
  e.seq_nr = s.seq_nr;
  e.fwd_thread_id = s.fwd_thread_id;
  e.arg = join_key;
  // The agent's note on CUDA is a mark of its own, not the program's.
  add(e, !(s.kind == trace::EventKind::Mark && process_->names.is_cuda_note(s.name)));
}

void WindowTrace::add_collective(const trace::CollectiveInfo& arena_facts, uint32_t instance, uint64_t start) {
  trace::CollectiveInfo c = arena_facts;
  auto file_name = [&](uint32_t id) { return id ? name(id) : 0; };
  c.name = file_name(c.name);
  c.process_group = file_name(c.process_group);
  c.process_group_desc = file_name(c.process_group_desc);
  c.dtype = file_name(c.dtype);
  c.thread = thread(instance);
  c.start_ns = process_->conv.to_ns(start);
  writer_->add_collective(c);
}

void WindowTrace::add_tensor_group(const trace::TensorGroup& g, uint32_t instance, uint64_t ticks) {
  trace::TensorGroup out = g;
  out.thread = thread(instance);
  out.ts_ns = process_->conv.to_ns(ticks);
  writer_->add_tensor_group(out);
}

void WindowTrace::note_compile(const trace::Event& e) {
  switch (compile_names_[e.name]) {
    case kCompileScope:
      if (e.kind == trace::EventKind::Op && e.end_ns > e.start_ns) compile_spans_.emplace_back(e.start_ns, e.end_ns);
      break;
    case kRecompileNote:
      if (e.kind == trace::EventKind::Mark) ++recompiles_;
      break;
    case kGraphBreakNote:
      if (e.kind == trace::EventKind::Mark) ++graph_breaks_;
      break;
    default:
      break;
  }
}

WindowTrace::CompileTotals WindowTrace::compile() const {
  CompileTotals out{0, recompiles_, graph_breaks_};
  // Nested scopes lie in their outermost one, and threads may compile at
  // once: the union, as the report's compile phase counts it.
  std::vector<std::pair<int64_t, int64_t>> spans = compile_spans_;
  std::sort(spans.begin(), spans.end());
  int64_t end = INT64_MIN;
  for (const auto& [s, e] : spans) {
    const int64_t from = std::max(s, end);
    // Times come from shared memory a target can scribble on: saturate.
    if (e > from) out.ns = ptprof::detail::saturating_add(out.ns, ptprof::detail::saturating_sub(e, from));
    end = std::max(end, e);
  }
  return out;
}

int64_t WindowTrace::events_span_ns() const {
  if (last_ns_ <= first_ns_) return 0;
  int64_t span = 0;
  // Times come from shared memory a target can scribble on: saturate.
  if (__builtin_sub_overflow(last_ns_, first_ns_, &span)) return INT64_MAX;
  return span;
}

}  // namespace ptprof::launcher
