#include "cli/run_summary.hpp"

#include <cstdio>
#include <set>
#include <string>

#include "cli/step_cost_line.hpp"
#include "cli/step_summary.hpp"

#include "ptprof/cost.hpp"
#include "ptprof/losses.hpp"
#include "ptprof/saturating.hpp"

namespace ptprof::cli {
namespace {

std::string human_bytes(uint64_t b) {
  char out[32];
  if (b < 1024)
    std::snprintf(out, sizeof out, "%llu B", (unsigned long long)b);
  else if (b < (1u << 20))
    std::snprintf(out, sizeof out, "%.1f KiB", b / 1024.0);
  else if (b < (1ull << 30))
    std::snprintf(out, sizeof out, "%.1f MiB", b / 1048576.0);
  else
    std::snprintf(out, sizeof out, "%.2f GiB", b / 1073741824.0);
  return out;
}

// What the run lost: drops, processes not profiled or cut off, the ledger.
void print_losses(const launcher::Totals& t, uint32_t cut_off, std::chrono::seconds grace) {
  // Rings cut short by a full /dev/shm: more --ring-kb would not help.
  if (t.dropped)
    std::fprintf(stderr, "ptprof: warning: %llu events were dropped because a ring was full; %s\n",
                 (unsigned long long)t.dropped,
                 t.losses.shm_small_rings ? "some rings were cut short because /dev/shm was short (see below)"
                                          : "raise --ring-kb or record fewer events");
  if (t.lost_processes) std::fprintf(stderr, "ptprof: warning: %u processes could not be profiled\n", t.lost_processes);
  if (t.shm_short_processes)
    std::fprintf(stderr,
                 "ptprof: warning: /dev/shm was short: %u processes got no region and were not profiled; give "
                 "/dev/shm more room (docker run --shm-size) or lower --ring-kb\n",
                 t.shm_short_processes);
  if (cut_off)
    std::fprintf(stderr,
                 "ptprof: warning: %u process%s still running %lld s after the target exited and %s cut off: "
                 "%s events after that are not in the trace (--wait-descendants or PTPROF_WAIT_DESCENDANTS=1 "
                 "waits for the whole process tree)\n",
                 cut_off, cut_off == 1 ? " was" : "es were", (long long)grace.count(), cut_off == 1 ? "was" : "were",
                 cut_off == 1 ? "its" : "their");
  for (const std::string& line : t.cuda_notes) std::fprintf(stderr, "%s\n", line.c_str());
  for (const launcher::OutOfMemoryNote& o : t.out_of_memory)
    std::fprintf(stderr,
                 "ptprof: warning: out of memory: %s of %s failed in %s (pid %d); `ptprof memory` shows its stack "
                 "and the memory at that moment\n",
                 o.api.c_str(), human_bytes(o.bytes).c_str(), o.op.empty() ? "[outside any op]" : o.op.c_str(), o.pid);
  if (t.out_of_memory_count > t.out_of_memory.size())
    std::fprintf(stderr, "ptprof: warning: out of memory: %llu more CUDA allocations failed\n",
                 (unsigned long long)(t.out_of_memory_count - t.out_of_memory.size()));
  for (const std::string& line : trace::loss_lines(t.losses))
    std::fprintf(stderr, "ptprof: warning: %s\n", line.c_str());
}

// torch.compile's time in the windows (the report's compile phase), when
// the run compiled in them.
void print_compile(const launcher::FileWindowSink& sink) {
  int64_t ns = 0;
  uint64_t recompiles = 0, graph_breaks = 0;
  for (const auto& f : sink.files()) {
    ns = ptprof::detail::saturating_add(ns, f.compile_ns);
    recompiles += f.recompiles;
    graph_breaks += f.graph_breaks;
  }
  if (ns == 0 && recompiles == 0 && graph_breaks == 0) return;
  const double s = double(ns) / 1e9;
  std::fprintf(stderr,
               "ptprof: torch.compile: %.*f %s compiling, %llu recompile%s, %llu graph break%s (`ptprof report` "
               "has them by step and kind, with torch's reasons)\n",
               s >= 1 ? 2 : 1, s >= 1 ? s : s * 1e3, s >= 1 ? "s" : "ms", (unsigned long long)recompiles,
               recompiles == 1 ? "" : "s", (unsigned long long)graph_breaks, graph_breaks == 1 ? "" : "s");
}

// The files written, what they cost, and those that could not be.
// `steps`: the facts of the process that ended the most steps.
void print_files(const launcher::FileWindowSink& sink, const launcher::StepFacts& steps) {
  // Every run states its own cost (cost.hpp): what recording these events
  // took from the target, by the per-event costs its processes measured,
  // and what the program's own steps say when a schedule left some
  // unrecorded.
  cost::Tally cost_total;
  for (const auto& f : sink.files()) cost_total += f.cost;
  if (!sink.files().empty()) std::fprintf(stderr, "ptprof: this run's cost: %s\n", cost::describe(cost_total).c_str());
  if (const auto line = step_cost_line(steps, cost_total.ops ? cost_total.op_ns() / double(cost_total.ops) : 0))
    std::fprintf(stderr, "%s\n", line->c_str());
  print_compile(sink);
  for (const auto& f : sink.files())
    std::fprintf(stderr, "ptprof: wrote %s (%s, %llu events)\n", f.path.c_str(), human_bytes(f.bytes).c_str(),
                 (unsigned long long)f.events);
  for (const std::string& line : sink.failed_commands()) std::fprintf(stderr, "ptprof: warning: %s\n", line.c_str());
  for (const auto& failure : sink.failed_files())
    std::fprintf(stderr, "ptprof: error: window %u of process %d was not written, its events are lost: %s\n",
                 failure.file.window, failure.file.pid, failure.error.c_str());
  if (sink.files().empty() && sink.failed_files().empty())
    std::fprintf(stderr, "ptprof: no events were recorded; no trace file written\n");
}

// Windows written (any process), by their schedule number.
uint32_t windows_recorded(const launcher::FileWindowSink& sink) {
  std::set<uint32_t> windows;
  for (const auto& f : sink.files()) windows.insert(f.window);
  return uint32_t(windows.size());
}

}  // namespace

void print_run_summary(const launcher::Totals& t, const launcher::FileWindowSink& sink, uint32_t cut_off,
                       std::chrono::seconds grace, const Config& config) {
  std::fprintf(stderr, "ptprof: %u process%s, %u thread%s, %llu events, %llu dropped\n", t.processes,
               t.processes == 1 ? "" : "es", t.threads, t.threads == 1 ? "" : "s", (unsigned long long)t.events,
               (unsigned long long)t.dropped);
  if (t.roles.size() > 1) {
    std::string line;
    for (const auto& [role, pid] : t.roles)
      line += (line.empty() ? "" : ", ") + role + " (pid " + std::to_string(pid) + ")";
    std::fprintf(stderr, "ptprof: processes: %s\n", line.c_str());
  }
  print_losses(t, cut_off, grace);
  print_files(sink, t.steps);
  if (!config.on_demand)
    for (const std::string& line : step_summary_lines(t.steps, config.step, config.schedule, windows_recorded(sink)))
      std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace ptprof::cli
