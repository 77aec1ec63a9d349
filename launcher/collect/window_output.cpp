#include "collect/window_output.hpp"

#include <cstdio>
#include <cstring>

#include <spdlog/spdlog.h>

#include "ptprof/process_role.hpp"

namespace ptprof::launcher {
namespace {

std::string bounded(const char* text, size_t capacity) { return std::string(text, strnlen(text, capacity)); }

int32_t rank_of(const wire::ProcessHeader& h) { return h.dist_known ? h.rank.load(std::memory_order_acquire) : -1; }

trace::Process process_record(const wire::ProcessHeader& h) {
  trace::Process p;
  p.pid = h.pid;
  p.ppid = h.ppid;
  p.cmdline = bounded(h.cmdline, sizeof h.cmdline);
  p.start_ns = int64_t(h.start_monotonic_ns);
  p.role = known_process_role(h.role.load(std::memory_order_acquire));
  p.role_index = p.role != 0 ? h.role_index.load(std::memory_order_relaxed) : -1;
  if (h.dist_known) {
    p.rank = rank_of(h);
    p.local_rank = h.local_rank.load(std::memory_order_relaxed);
    p.world_size = h.world_size.load(std::memory_order_relaxed);
    p.host = bounded(h.host, sizeof h.host);
  }
  return p;
}

// What the window's steps add up to. Step ticks come from shared memory a
// target can scribble on: the sums saturate instead of overflowing.
int64_t steps_ns(const std::vector<StepLog::Step>& steps, const clock::Converter& conv) {
  int64_t total = 0;
  for (const auto& st : steps) {
    const int64_t begin_ns = conv.to_ns(st.start), end_ns = conv.to_ns(st.end);
    int64_t span = 0;
    if (__builtin_sub_overflow(end_ns, begin_ns, &span)) span = end_ns > begin_ns ? INT64_MAX : 0;
    if (span > 0 && __builtin_add_overflow(total, span, &total)) total = INT64_MAX;
  }
  return total;
}

}  // namespace

std::string FileStem::with_rank(int32_t rank) const {
  std::string stem = host;
  if (rank >= 0) stem += ".r" + std::to_string(rank);
  stem += "." + std::to_string(pid);
  if (uses) stem += "-" + std::to_string(uses);
  return stem;
}

std::string WindowOutput::path(const Window& w) const {
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".w%03u.bin", w.index);
  return opts_.output_dir + "/" + stem_.with_rank(rank_of(process_.header)) +
         (opts_.run_id.empty() ? "" : "." + opts_.run_id) + suffix;
}

bool WindowOutput::open(Window& w) {
  if (w.trace.is_open()) return true;
  if (w.done) return false;  // written, or lost: never opened twice
  const wire::ProcessHeader& ph = process_.header;
  trace::Header h;
  h.host = opts_.host;
  h.realtime_offset_ns = opts_.realtime_offset_ns;
  h.window = w.index;
  // A window that takes its region from the start (tick 0) starts with the process.
  h.window_start_ns = w.begin ? process_.conv.to_ns(w.begin) : int64_t(ph.start_monotonic_ns);
  h.window_end_ns = w.end == UINT64_MAX ? 0 : process_.conv.to_ns(w.end);
  h.schedule = opts_.schedule;
  h.ptprof_version = PTPROF_VERSION;
  const std::string file = path(w);
  auto writer = sink_.open(file, h);
  if (!writer) {
    spdlog::warn("cannot write {}: {}; this window is lost", file, writer.error());
    w.done = true;
    WindowFile f;
    f.path = file;
    f.pid = ph.pid;
    f.window = w.index;
    sink_.window_failed(f, writer.error());
    return false;
  }
  w.trace.open(std::move(*writer), process_);
  w.trace.writer().add_process(process_record(ph));
  return true;
}

// Steps are kept aside and written with the window: a window holding
// nothing but steps (a shell, a helper process) gets no file.
void WindowOutput::write_steps(Window& w) {
  for (const auto& st : w.steps.closed) {
    trace::Event e;
    e.kind = trace::EventKind::Step;
    e.start_ns = process_.conv.to_ns(st.start);
    e.end_ns = process_.conv.to_ns(st.end);
    e.flags = st.flags;
    if (st.flags & trace::kBeforeSteps)
      e.name = w.trace.text(trace::kBeforeStepsName);
    else if (st.flags & trace::kAfterSteps)
      e.name = w.trace.text(trace::kAfterStepsName);
    else
      e.name = w.trace.text("ProfilerStep#" + std::to_string(st.number));
    e.thread = w.trace.thread(st.instance);
    e.arg = st.number;
    w.trace.add(e, /*charged=*/false);
  }
}

// Drops are charged to the window in which they are seen.
void WindowOutput::write_drops(Window& w, const std::vector<ThreadDrops>& drops, WindowFile& f) {
  std::vector<uint64_t> by_file_thread;
  for (const ThreadDrops& d : drops) {
    const uint32_t ft = w.trace.thread(d.instance);
    if (by_file_thread.size() <= ft) by_file_thread.resize(ft + 1, 0);
    by_file_thread[ft] += d.dropped;
    f.dropped += d.dropped;
  }
  for (uint32_t ft = 0; ft < by_file_thread.size(); ++ft)
    if (by_file_thread[ft]) w.trace.writer().set_thread_dropped(ft, by_file_thread[ft]);
}

void WindowOutput::close(Window& w, uint64_t end, const std::vector<ThreadDrops>& drops, const trace::Losses& losses) {
  PTPROF_DCHECK(w.trace.is_open() && !w.done);
  const wire::ProcessHeader& ph = process_.header;
  WindowFile f;
  write_steps(w);
  write_drops(w, drops, f);
  format::TraceSink& writer = w.trace.writer();
  writer.set_window_end(process_.conv.to_ns(end));
  // Losses, like drops, are charged to the window written when they are seen.
  writer.set_losses(losses);
  writer.set_process_cost(0, ph.op_cost_ps.load(std::memory_order_relaxed),
                          ph.record_cost_ps.load(std::memory_order_relaxed));
  // A 'spawn' DataLoader worker learns its role from Python, after its window
  // opened; an mp.spawn rank its rank, when it initialises its process group:
  // the record and the file's name follow.
  const trace::Process now = process_record(ph);
  writer.set_process_role(0, now.role, now.role_index);
  writer.set_process_distributed(0, now.rank, now.local_rank, now.world_size);
  writer.rename_to(path(w));
  f.cost = w.trace.cost();
  const WindowTrace::CompileTotals compile = w.trace.compile();
  f.compile_ns = compile.ns;
  f.recompiles = compile.recompiles;
  f.graph_breaks = compile.graph_breaks;
  // The share is of the recorded steps' time, or of the span of the
  // operators and records when the window has no steps.
  f.cost.recorded_ns = w.steps.closed.empty() ? w.trace.events_span_ns() : steps_ns(w.steps.closed, process_.conv);
  f.path = path(w);
  f.losses = losses;
  f.events = w.trace.events();
  f.pid = ph.pid;
  f.window = w.index;
  const Status finished = writer.finish();
  f.bytes = writer.bytes_written();
  // The writer may have had to take another name (trace_file.hpp).
  if (std::string written = writer.path(); !written.empty()) f.path = written;
  w.trace.take_writer().reset();
  w.done = true;
  if (!finished.ok()) {
    spdlog::warn("cannot write {}: {}", f.path, finished.message());
    sink_.window_failed(f, finished.message());
    return;
  }
  sink_.window_written(f);
}

}  // namespace ptprof::launcher
