// `ptprof memory FILE|DIR...`: where the memory went, from traces recorded
// with --profile-memory (analysis/include/ptprof/analysis/memory.hpp).
#include <cstdio>
#include <memory>

#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "cli/report_inputs.hpp"
#include "ptprof/analysis/memory.hpp"
#include "ptprof/analysis/memory_snapshot.hpp"
#include "ptprof/analysis/output_file.hpp"

namespace ptprof::cli {
namespace {

struct MemoryArgs {
  std::vector<std::string> inputs;
  std::string timeline;
  std::string snapshot;
  std::string categories;
  bool bytes = false;
  long long row_limit = 20;
};

int run_memory(const MemoryArgs& args) {
  if (args.row_limit < 0) return usage_error("memory", "--row-limit must be >= 0 (0 = all rows)");
  memory::SummaryBuilder builder;
  memory::SnapshotBuilder snapshot;
  Status read = read_traces(args.inputs, "memory", [&](const std::string& path, const trace::Trace& t) {
    builder.add(path, t);
    if (!args.snapshot.empty()) snapshot.add(t);
  });
  if (!read) return usage_error("memory", read.message());
  memory::Summary s = std::move(builder).finish();
  if (!args.snapshot.empty()) {
    const memory::Snapshot snap = std::move(snapshot).finish();
    const Status written = exporting::write_file(args.snapshot, snap.pickle);
    if (!written) return usage_error("memory", "cannot write --snapshot " + written.message());
    if (snap.processes == 0)
      std::fprintf(stderr, "ptprof memory: no CUDA memory events: %s holds an empty snapshot\n", args.snapshot.c_str());
    else
      std::fprintf(stderr,
                   "ptprof memory: wrote %s: pid %d, %llu trace entries, %llu segments live at the end, %llu "
                   "out-of-memory events%s\n",
                   args.snapshot.c_str(), snap.pid, (unsigned long long)snap.entries, (unsigned long long)snap.segments,
                   (unsigned long long)snap.ooms,
                   snap.processes > 1 ? " (of several processes with CUDA memory, the one with the most events)" : "");
  }
  if (!args.timeline.empty()) {
    const Status written = exporting::write_file(args.timeline, memory::render_timeline_csv(s));
    if (!written) return usage_error("memory", "cannot write --timeline " + written.message());
  }
  if (!args.categories.empty()) {
    if (s.category_timelines.empty())
      return usage_error("memory",
                         "--categories: " + (s.categories_unavailable.empty() ? std::string("no memory events")
                                                                              : s.categories_unavailable));
    const Status written = exporting::write_file(args.categories, memory::render_categories_json(s));
    if (!written) return usage_error("memory", "cannot write --categories " + written.message());
  }
  const std::string out = memory::render_text(s, memory::RenderOptions{args.bytes, size_t(args.row_limit)});
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace

void add_memory(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<MemoryArgs>();
  CLI::App* cmd = app.add_subcommand(
      "memory",
      "Where the memory went, from traces recorded with `ptprof run --profile-memory`: per process and\n"
      "device, the peak of torch's allocated (and reserved) total with the op at the peak; CUDA\n"
      "allocations that failed for want of memory, with the memory then; what grows step over step\n"
      "(blocks of two or more steps still live at the last step's end: leaks) and the memory live\n"
      "at the end of each step; the allocations still live at the end of their window (allocated in\n"
      "it, not freed in it), grouped by the op that made them and its input shapes, largest first;\n"
      "memory by category (parameters, gradients, activations...: torch's memory timeline rules,\n"
      "with --record-shapes) at each step's end and at its peak; allocations and frees per op.\n"
      "An allocation belongs to the outermost op open on its thread (aten::ones, not the aten::empty\n"
      "inside it). Sizes in KiB/MiB/GiB (1024-based); --bytes prints exact byte counts.");
  cmd->add_option("inputs", args->inputs, "Trace files or directories (their *.bin files)")->required();
  cmd->add_option("--timeline", args->timeline,
                  "Also write a CSV of torch's allocated and reserved totals after every allocation and free:\n"
                  "time_ns (CLOCK_MONOTONIC), pid, device, allocated_bytes, reserved_bytes");
  cmd->add_option("--snapshot", args->snapshot,
                  "Also write a memory snapshot in PyTorch's format (a pickle, as\n"
                  "torch.cuda.memory._dump_snapshot writes) for pytorch.org/memory_viz: CUDA allocations,\n"
                  "frees, segments and failed allocations with their Python stacks, and the segments live at\n"
                  "the end; of one process (the one with the most CUDA memory events)");
  cmd->add_option("--categories", args->categories,
                  "Also write memory by category (parameter, optimizer state, input, temporary, activation,\n"
                  "gradient, autograd detail, unknown: torch's rules) over time as JSON: per process and\n"
                  "device, torch.profiler's export_memory_timeline [times, sizes]. Needs traces recorded with\n"
                  "`ptprof run --profile-memory --record-shapes`");
  cmd->add_flag("--bytes", args->bytes, "Print sizes as exact byte counts");
  cmd->add_option("--row-limit", args->row_limit, "Rows per table, 0 = all")->capture_default_str();
  cmd->callback([args, &exit_code] { exit_code = run_memory(*args); });
}

}  // namespace ptprof::cli
