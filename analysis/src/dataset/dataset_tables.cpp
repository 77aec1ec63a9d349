// One trace file's dataset tables (docs/dataset.md, one line per column),
// handed over as columns (column_handoff.hpp); the ops and memory tables are
// op_tables.cpp's.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <tuple>
#include <unordered_map>

#include "dataset/table_context.hpp"
#include "ptprof/analysis/dataset.hpp"
#include "ptprof/analysis/report.hpp"
#include "ptprof/analysis/report_phases.hpp"
#include "ptprof/analysis/report_ranks.hpp"
#include "ptprof/cuda_status.hpp"
#include "ptprof/process_role.hpp"
#include "ptprof/record.hpp"

namespace ptprof::dataset {

using detail::ColumnType;
using detail::Context;
using detail::dur;
using detail::Key;
using detail::key_columns;
using detail::kind_name;
using detail::kNull;
using detail::OpRollup;
using detail::Table;
using trace::EventKind;

namespace {

using enum detail::ColumnType;  // the tables below read as their schema

const char* role_name(const trace::Process& p) {
  if (p.role == uint32_t(wire::ProcessRole::DataLoaderWorker)) return "dataloader_worker";
  if (p.role == uint32_t(wire::ProcessRole::CompileWorker)) return "compile_worker";
  return "trainer";
}

Table processes_table_dataset(Context& c) {
  const trace::Trace& t = c.trace();
  Table table("processes", {{"rank", I32, true},
                            {"pid", I32},
                            {"ppid", I32},
                            {"host", Str},
                            {"role", Str},
                            {"role_index", I32, true},
                            {"local_rank", I32, true},
                            {"world_size", I32, true},
                            {"cmdline", Str},
                            {"start_ns", I64},
                            {"op_cost_ps", I64},
                            {"record_cost_ps", I64}});
  for (const trace::Process& p : t.processes)
    table.row({p.rank >= 0 ? p.rank : kNull, p.pid, p.ppid, c.strings.add(p.host.empty() ? t.header.host : p.host),
               c.strings.add(role_name(p)), p.role_index >= 0 ? p.role_index : kNull,
               p.local_rank >= 0 ? p.local_rank : kNull, p.world_size >= 0 ? p.world_size : kNull,
               c.strings.add(p.cmdline), c.wall(p.start_ns), p.op_cost_ps, p.record_cost_ps});
  return table;
}

Table threads_table(Context& c) {
  const trace::Trace& t = c.trace();
  Table table("threads",
              key_columns(Key::Thread, {{"name", Str}, {"device", I32, true}, {"events", I64}, {"dropped", I64}}));
  for (uint32_t i = 0; i < t.threads.size(); ++i) {
    const trace::Thread& th = t.threads[i];
    table.row({c.rank(i), c.pid(i), th.tid, c.strings.add(th.name), th.device >= 0 ? th.device : kNull,
               int64_t(th.events), int64_t(th.dropped)});
  }
  return table;
}

Table steps_table(Context& c, const OpRollup& rollup) {
  const trace::Trace& t = c.trace();
  std::map<std::tuple<int32_t, int32_t, uint64_t>, report::PhaseTimes> phases;
  for (const report::StepPhases& p : report::step_phases(t)) phases[{p.pid, p.tid, p.step}] = p.ns;
  Table table("steps", key_columns(Key::ThreadStep, {{"id", I64},
                                                     {"role", Str},
                                                     {"start_ns", I64},
                                                     {"dur_ns", I64},
                                                     {"operators_ns", I64},
                                                     {"truncated", Bool},
                                                     {"forward_ns", I64, true},
                                                     {"backward_ns", I64, true},
                                                     {"optimizer_ns", I64, true},
                                                     {"data_loading_ns", I64, true},
                                                     {"compile_ns", I64, true},
                                                     {"other_ns", I64, true}}));
  for (uint32_t i = 0; i < t.events.size(); ++i) {
    const trace::Event& e = t.events[i];
    if (e.kind != EventKind::Step) continue;
    const bool step = trace::is_step(e);
    const char* role = step ? "step" : (e.flags & trace::kBeforeSteps) ? "before_steps" : "after_steps";
    const int64_t pid = c.pid(e.thread), tid = c.tid(e.thread);
    const report::PhaseTimes* ph = nullptr;
    if (step) {
      auto it = phases.find({int32_t(pid), int32_t(tid), e.arg});
      if (it != phases.end()) ph = &it->second;
    }
    auto phase = [&](report::Phase p) { return ph ? (*ph)[size_t(p)] : kNull; };
    auto children = rollup.step_children_ns.find(i);
    table.row({c.rank(e.thread), pid, tid, step ? int64_t(e.arg) : kNull, c.id(i), c.strings.add(role),
               c.wall(e.start_ns), dur(e), children == rollup.step_children_ns.end() ? 0 : children->second,
               (e.flags & trace::kTruncated) != 0, phase(report::Phase::Forward), phase(report::Phase::Backward),
               phase(report::Phase::Optimizer), phase(report::Phase::DataLoading), phase(report::Phase::Compile),
               phase(report::Phase::Other)});
  }
  return table;
}

bool is_gpu_activity(EventKind k) {
  return k == EventKind::Kernel || k == EventKind::Memcpy || k == EventKind::Memset || k == EventKind::GpuSync ||
         k == EventKind::GpuOverhead;
}

Table gpu_table(Context& c) {
  const trace::Trace& t = c.trace();
  Table table("gpu", key_columns(Key::ProcessStep, {{"kind", Str},
                                                    {"name", Str},
                                                    {"device", I32, true},
                                                    {"stream", I64},
                                                    {"start_ns", I64},
                                                    {"dur_ns", I64},
                                                    {"correlation", I64},
                                                    {"op_id", I64, true},
                                                    {"graph_id", I64, true},
                                                    {"graph_node_id", I64, true},
                                                    {"grid_x", I32},
                                                    {"grid_y", I32},
                                                    {"grid_z", I32},
                                                    {"block_x", I32},
                                                    {"block_y", I32},
                                                    {"block_z", I32},
                                                    {"bytes", I64},
                                                    {"copy_kind", I8}}));
  // Work replayed from a CUDA graph belongs to the op that captured it, but
  // to the step of the cudaGraphLaunch that replayed it: its launch call by
  // correlation (the hooked call, else CUPTI's record of it).
  std::unordered_map<uint64_t, const trace::Event*> graph_launches;
  for (const trace::CudaInfo& ci : t.cuda)
    if (ci.graph_capture != trace::GraphCapture::None) graph_launches.emplace(ci.correlation_id, nullptr);
  if (!graph_launches.empty()) {
    for (const trace::Event& e : t.events) {
      if ((e.kind != EventKind::CudaApi && e.kind != EventKind::CuptiApi) || e.arg == 0 || e.arg > t.cuda.size())
        continue;
      auto it = graph_launches.find(t.cuda[e.arg - 1].correlation_id);
      if (it != graph_launches.end() && (!it->second || e.kind == EventKind::CudaApi)) it->second = &e;
    }
  }
  for (const trace::Event& e : t.events) {
    if (!is_gpu_activity(e.kind) || e.arg == 0 || e.arg > t.cuda.size()) continue;
    const trace::CudaInfo& ci = t.cuda[e.arg - 1];
    const int64_t op = ci.external_id ? c.launching_op(ci.external_id) : -1;
    // GPU lanes are the process's threads too: rank and pid from the lane.
    int64_t step = op >= 0 ? c.step_at(t.events[size_t(op)].thread, t.events[size_t(op)].start_ns) : kNull;
    if (ci.graph_capture != trace::GraphCapture::None) {
      const auto it = graph_launches.find(ci.correlation_id);
      const trace::Event* launch = it == graph_launches.end() ? nullptr : it->second;
      step = launch ? c.step_at(launch->thread, launch->start_ns) : kNull;
    }
    table.row({c.rank(e.thread),
               c.pid(e.thread),
               step,
               c.strings.add(kind_name(e.kind)),
               e.name,
               ci.device >= 0 ? ci.device : kNull,
               int64_t(ci.stream),
               c.wall(e.start_ns),
               dur(e),
               int64_t(ci.correlation_id),
               op >= 0 ? c.id(uint32_t(op)) : kNull,
               ci.graph_id ? ci.graph_id : kNull,
               ci.graph_node_id ? int64_t(ci.graph_node_id) : kNull,
               ci.grid[0],
               ci.grid[1],
               ci.grid[2],
               ci.block[0],
               ci.block[1],
               ci.block[2],
               int64_t(ci.bytes),
               ci.copy_kind});
  }
  return table;
}

Table cuda_api_table(Context& c) {
  const trace::Trace& t = c.trace();
  Table table("cuda_api", key_columns(Key::ThreadStep, {{"id", I64},
                                                        {"name", Str},
                                                        {"family", Str},
                                                        {"start_ns", I64},
                                                        {"dur_ns", I64},
                                                        {"correlation", I64},
                                                        {"result", I32},
                                                        {"kernel", Str, true}}));
  for (uint32_t i = 0; i < t.events.size(); ++i) {
    const trace::Event& e = t.events[i];
    if (e.kind != EventKind::CudaApi || e.arg == 0 || e.arg > t.cuda.size()) continue;
    const trace::CudaInfo& ci = t.cuda[e.arg - 1];
    table.row({c.rank(e.thread), c.pid(e.thread), c.tid(e.thread), c.step_at(e.thread, e.start_ns), c.id(i), e.name,
               c.strings.add(ci.family == uint8_t(wire::CudaApiFamily::Driver) ? "driver" : "runtime"),
               c.wall(e.start_ns), dur(e), int64_t(ci.correlation_id), ci.result,
               ci.kernel_name ? int64_t(ci.kernel_name) : kNull});
  }
  return table;
}

// Collective calls not nested in another collective on their thread, each
// numbered in its process's step by kind (c10d's call, or the process
// group's work): what ranks are matched by (report_ranks.hpp's arrivals).
Table collectives_table(Context& c) {
  const trace::Trace& t = c.trace();
  std::vector<uint32_t> calls;
  for (uint32_t i = 0; i < t.events.size(); ++i) {
    const trace::Event& e = t.events[i];
    if (e.kind == EventKind::Op && e.name < t.strings.size() && report::is_collective(t.strings[e.name]))
      calls.push_back(i);
  }
  std::sort(calls.begin(), calls.end(), [&](uint32_t a, uint32_t b) {
    const trace::Event &x = t.events[a], &y = t.events[b];
    return std::make_tuple(x.thread, x.start_ns, -x.end_ns) < std::make_tuple(y.thread, y.start_ns, -y.end_ns);
  });
  Table table("collectives", key_columns(Key::ThreadStep, {{"call", Str},
                                                           {"index_in_step", I32, true},
                                                           {"id", I64},
                                                           {"name", Str},
                                                           {"start_ns", I64},
                                                           {"dur_ns", I64},
                                                           {"nested", Bool},
                                                           {"process_group", Str, true},
                                                           {"process_group_desc", Str, true},
                                                           {"seq", I64, true},
                                                           {"collective", Str, true},
                                                           {"in_elements", I64, true},
                                                           {"out_elements", I64, true},
                                                           {"dtype", Str, true},
                                                           {"group_size", I32, true}}));
  // torch's facts of each op (record_param_comms), and for a call the facts
  // of the first op inside it that has them.
  std::map<std::pair<uint32_t, int64_t>, const trace::CollectiveInfo*> facts_at;
  for (const trace::CollectiveInfo& f : t.collectives) facts_at.emplace(std::make_pair(f.thread, f.start_ns), &f);
  std::unordered_map<uint32_t, const trace::CollectiveInfo*> facts;  // event -> facts
  {
    uint32_t thread = UINT32_MAX, call = UINT32_MAX;
    int64_t open_end = INT64_MIN;
    for (uint32_t i : calls) {
      const trace::Event& e = t.events[i];
      if (e.thread != thread) {
        thread = e.thread;
        open_end = INT64_MIN;
      }
      if (e.start_ns >= open_end) {
        call = i;
        open_end = e.end_ns;
      }
      auto it = facts_at.find({e.thread, e.start_ns});
      if (it == facts_at.end()) continue;
      facts.emplace(i, it->second);
      facts.emplace(call, it->second);  // kept if the call has its own or an earlier one's
    }
  }
  auto str = [](uint32_t id) { return id ? int64_t(id) : kNull; };
  auto num = [](int64_t v) { return v >= 0 ? v : kNull; };
  std::map<std::tuple<uint32_t, int64_t, bool>, int32_t> next_index;  // (process, step, c10d) -> count
  uint32_t thread = UINT32_MAX;
  int64_t open_end = INT64_MIN;
  for (uint32_t i : calls) {
    const trace::Event& e = t.events[i];
    if (e.thread != thread) {
      thread = e.thread;
      open_end = INT64_MIN;
    }
    const bool nested = e.start_ns < open_end;  // in the thread's open call
    if (!nested) open_end = e.end_ns;
    const std::string_view name = t.strings[e.name];
    const bool c10d = name.substr(0, 6) == "c10d::";
    const int64_t step = c.step_at(e.thread, e.start_ns);
    const uint32_t process = e.thread < t.threads.size() ? t.threads[e.thread].process : UINT32_MAX;
    int64_t index = kNull;
    if (step != kNull && !nested) index = next_index[{process, step, c10d}]++;
    auto f = facts.find(i);
    const trace::CollectiveInfo none;
    const trace::CollectiveInfo& x = f == facts.end() ? none : *f->second;
    table.row({c.rank(e.thread), c.pid(e.thread), c.tid(e.thread), step, c.strings.add(c10d ? "c10d" : "work"), index,
               c.id(i), e.name, c.wall(e.start_ns), dur(e), nested, str(x.process_group), str(x.process_group_desc),
               num(x.seq), str(x.name), num(x.in_elements), num(x.out_elements), str(x.dtype), num(x.group_size)});
  }
  return table;
}

Table stacks_table(Context& c) {
  const trace::Trace& t = c.trace();
  const int64_t pid = t.processes.empty() ? kNull : t.processes[0].pid;
  const int64_t rank = t.processes.empty() || t.processes[0].rank < 0 ? kNull : t.processes[0].rank;
  Table table("stacks", key_columns(Key::Process, {{"stack_id", I64},
                                                   {"position", I32},
                                                   {"kind", Str},
                                                   {"file", Str},
                                                   {"function", Str, true},
                                                   {"line", I32, true},
                                                   {"offset", I64, true}}));
  for (uint32_t s = 0; s < t.stacks.size(); ++s) {
    const auto& frames = t.stacks[s].frames;
    for (uint32_t k = 0; k < frames.size(); ++k) {
      if (frames[k] >= t.frames.size()) continue;
      const trace::Frame& f = t.frames[frames[k]];
      const bool py = f.kind == trace::FrameKind::Python;
      table.row({rank, pid, c.id(s + 1), int32_t(k), c.strings.add(py ? "python" : "native"), f.file,
                 f.function ? int64_t(f.function) : kNull, py ? int64_t(f.line) : kNull,
                 py ? kNull : int64_t(f.offset)});
    }
  }
  return table;
}

}  // namespace

Status write_columns(const std::string& path, uint32_t ordinal, const trace::Trace& t, const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0) return Status::error(dir + ": " + std::strerror(errno));
  Context c(ordinal, t);
  std::vector<Table> tables;
  tables.push_back(processes_table_dataset(c));
  tables.push_back(threads_table(c));
  std::vector<uint8_t> memory_state;
  OpRollup rollup;
  Table ops = ops_table(c, &memory_state, &rollup);
  tables.push_back(steps_table(c, rollup));
  tables.push_back(std::move(ops));
  tables.push_back(op_totals_table(c, rollup));
  tables.push_back(gpu_table(c));
  tables.push_back(cuda_api_table(c));
  tables.push_back(memory_table(c, memory_state));
  tables.push_back(memory_categories_table(c));
  tables.push_back(collectives_table(c));
  tables.push_back(stacks_table(c));
  const trace::Header& h = t.header;
  uint64_t events = 0, dropped = 0;
  for (const trace::Thread& th : t.threads) {
    events += th.events;
    dropped += th.dropped;
  }
  // Strings go in by id: the manifest holds numbers and names only, nothing to escape.
  std::string m =
      "{\"schema\": " + std::to_string(kSchemaVersion) + ", \"ordinal\": " + std::to_string(ordinal) +
      ", \"source\": " + std::to_string(c.strings.add(path)) + ", \"host\": " + std::to_string(c.strings.add(h.host)) +
      ", \"ptprof_version\": " + std::to_string(c.strings.add(h.ptprof_version)) +
      ", \"schedule\": " + std::to_string(c.strings.add(h.schedule)) + ", \"window\": " + std::to_string(h.window) +
      ", \"window_start_ns\": " + std::to_string(c.wall(h.window_start_ns)) +
      ", \"window_end_ns\": " + std::to_string(c.wall(h.window_end_ns)) +
      ", \"realtime_offset_ns\": " + std::to_string(h.realtime_offset_ns) + ", \"events\": " + std::to_string(events) +
      ", \"dropped\": " + std::to_string(dropped) + ", \"losses\": {";
  bool first = true;
  for (const trace::LossField& f : trace::kLossFields) {
    m += std::string(first ? "" : ", ") + "\"" + std::string(f.name) + "\": " + std::to_string(t.losses.*f.member);
    first = false;
  }
  m += "}, \"rank\": ";
  m += t.processes.empty() || t.processes[0].rank < 0 ? "null" : std::to_string(t.processes[0].rank);
  m += ", \"pid\": ";
  m += t.processes.empty() ? "null" : std::to_string(t.processes[0].pid);
  m += ", \"tables\": [";
  for (size_t i = 0; i < tables.size(); ++i) {
    std::string entry;
    if (Status st = tables[i].write(dir, &entry); !st) return st;
    m += (i ? ", " : "") + entry;
  }
  if (Status st = c.strings.write(dir); !st) return st;
  m += "], \"strings\": " + std::to_string(c.strings.size()) + "}\n";
  return detail::write_file(dir + "/manifest.json", m.data(), m.size());
}

}  // namespace ptprof::dataset
