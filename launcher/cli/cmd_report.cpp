// `ptprof report`: torch's key_averages() tables from trace files. A thin
// front end: parse options, read each file into the library's ReportBuilder,
// render.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "cli/report_inputs.hpp"
#include "ptprof/analysis/output_file.hpp"
#include "ptprof/analysis/report.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "ptprof/analysis/report_html.hpp"

namespace ptprof::cli {
namespace {

struct ReportArgs {
  std::vector<std::string> paths;
  std::string sort_by = "cpu_time_total";
  long long row_limit = -1;  // -1: the format's default
  bool group_by_input_shape = false;
  bool group_by_compiled_source = false;
  long long group_by_stack_n = 0;
  std::string window = "all";
  std::string format = "table";
  std::string html;
  std::string baseline;
};

// What the report says beside its output (the file written, the drops): on
// stderr at any log level, so that stdout holds the report alone.
void note(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stderr); }

std::string join(const std::vector<std::string_view>& items) {
  std::string s;
  for (auto i : items) s += (s.empty() ? "" : ", ") + std::string(i);
  return s;
}

int write_html(const report::Report& r, const html::HtmlBaseline* baseline, const memory::Summary& memory,
               const html::HtmlEvents* events, const std::string& path) {
  const Status written = exporting::write_file(path, html::render_html(r, baseline, &memory, events));
  if (!written) return usage_error("report", "cannot write " + written.message());
  note("ptprof report: wrote " + path + "\n" + report::drops_warning(r));
  return 0;
}

int run_report(const ReportArgs& a) {
  report::Options opts;
  auto key = report::parse_sort_key(a.sort_by);
  if (!key)
    return usage_error("report", "unknown --sort-by '" + a.sort_by + "'; accepted: " + join(report::sort_key_names()));
  opts.sort_by = *key;
  opts.group_by_input_shape = a.group_by_input_shape;
  opts.group_by_compiled_source = a.group_by_compiled_source;
  if (a.group_by_stack_n < 0 || a.group_by_stack_n > 1000)
    return usage_error("report",
                       "--group-by-stack-n takes a number of stack entries from 0 (no grouping) to 1000, not " +
                           std::to_string(a.group_by_stack_n));
  opts.group_by_stack_n = uint32_t(a.group_by_stack_n);
  auto format = report::parse_format(a.format);
  if (!format) return usage_error("report", "unknown --format '" + a.format + "'; accepted: table, csv, json");
  if (a.row_limit < -1) return usage_error("report", "--row-limit must be >= 0 (0 = all rows)");
  if (a.window != "all") {
    char* end = nullptr;
    unsigned long w = std::strtoul(a.window.c_str(), &end, 10);
    if (a.window.empty() || *end != '\0' || a.window[0] == '-' || w > UINT32_MAX)
      return usage_error("report", "--window takes a window index (0, 1, ...) or 'all', not '" + a.window + "'");
    opts.window = uint32_t(w);
  }

  if (!a.baseline.empty() && a.html.empty())
    return usage_error("report", "--baseline needs --html (the page holds the comparison)");

  report::ReportBuilder builder(opts);
  // The comparison is `ptprof diff`'s: rows by name only, whatever the
  // grouping of the page's table; the window still applies.
  report::Options by_name;
  by_name.window = opts.window;
  std::optional<report::ReportBuilder> compared;
  diff::SideInfo run_info;  // how this run was recorded, for the comparison's warnings
  if (!a.baseline.empty()) compared.emplace(by_name);
  // The page's memory plot: the traces of the window reported.
  std::optional<memory::SummaryBuilder> mem;
  if (!a.html.empty()) mem.emplace();
  // The page's timeline and flame graphs: the events of the window reported.
  std::unique_ptr<html::HtmlEvents> page_events;
  if (!a.html.empty()) page_events = std::make_unique<html::HtmlEvents>();
  std::vector<uint32_t> seen_windows;
  // The page's sections need every event; the printed formats read each
  // trace as they aggregate it (only JSON shows the steps' phases).
  Status read = mem ? read_traces(a.paths, "report",
                                  [&](const std::string& f, const trace::Trace& t) {
                                    seen_windows.push_back(t.header.window);
                                    builder.add(f, t);
                                    if (compared) {
                                      compared->add(f, t);
                                      diff::note_trace(run_info, t);
                                    }
                                    if (!opts.window || t.header.window == *opts.window) {
                                      mem->add(f, t);
                                      page_events->add(t);
                                    }
                                  })
                    : add_traces(a.paths, "report", builder, *format == report::Format::Json, &seen_windows);
  if (!read) return usage_error("report", read.message());
  report::Report r = std::move(builder).finish();
  if (opts.window && r.files.empty()) {
    std::string present;
    for (uint32_t w : seen_windows) present += (present.empty() ? "" : ", ") + std::to_string(w);
    return usage_error("report", "no trace of window " + a.window + " in the inputs (their windows: " + present + ")");
  }

  // Rows grouped by stack need stacks: without any, say why the Source
  // Location column is missing rather than ignore the option.
  if (opts.group_by_stack_n > 0 && !r.has_stack && !r.rows.empty())
    spdlog::warn("report: --group-by-stack-n " + std::to_string(opts.group_by_stack_n) +
                 " has no effect: the traces hold no call stacks (record them with `ptprof run --with-stack` or "
                 "`--python-attribution`); rows are grouped by name only");
  const memory::Summary mem_summary = mem ? std::move(*mem).finish() : memory::Summary{};
  if (!a.html.empty() && !compared) return write_html(r, nullptr, mem_summary, page_events.get(), a.html);
  if (compared) {
    auto base = read_compared_side({a.baseline}, "report");
    if (!base) return usage_error("report", "--baseline: " + base.error());
    // Sorted as `ptprof diff` sorts by default; the page's table re-sorts.
    html::HtmlBaseline b{
        diff::compare(base->report, std::move(*compared).finish(), diff::SortKey::SelfCpuTime, base->info, run_info),
        base->report.files};
    return write_html(r, &b, mem_summary, page_events.get(), a.html);
  }
  std::string out;
  switch (*format) {
    case report::Format::Table:
      out = report::render_table(r, a.row_limit < 0 ? 100 : size_t(a.row_limit));
      if (r.rows.empty()) spdlog::warn("report: no operator events in the inputs");
      break;
    case report::Format::Csv:
      out = report::render_csv(r, a.row_limit < 0 ? 0 : size_t(a.row_limit));
      break;
    case report::Format::Json:
      out = report::render_json(r, a.row_limit < 0 ? 0 : size_t(a.row_limit));
      break;
  }
  // Drops are never hidden: the table carries them, machine formats keep
  // stdout parseable and say it on stderr (JSON also has them in "drops").
  if (*format != report::Format::Table) note(report::drops_warning(r));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace

void add_report(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd =
      app.add_subcommand("report",
                         "Operator tables with torch.profiler's key_averages().table() columns and semantics,\n"
                         "then per-step times; any mix of trace files and directories is merged.\n"
                         "CPU Mem / Self CPU Mem (and CUDA Mem / Self CUDA Mem for device memory) appear when the\n"
                         "traces were recorded with `ptprof run --profile-memory`: as torch's, the bytes allocated\n"
                         "(+) and freed (-) while each op ran, its children included / excluded; memory events\n"
                         "inside no op form a [memory] row. `ptprof memory` shows peaks and live allocations.");
  cmd->add_option("paths", args->paths, "Trace files, or directories (their *.bin files)")->required();
  cmd->add_option("--sort-by", args->sort_by, "Sort key, as torch's sort_by: " + join(report::sort_key_names()))
      ->capture_default_str();
  cmd->add_option("--row-limit", args->row_limit,
                  "Rows to print, 0 = all (default: 100 for table, as torch; all for csv/json)");
  cmd->add_flag("--group-by-input-shape", args->group_by_input_shape,
                "One row per (name, input shapes), as key_averages(group_by_input_shape=True)");
  cmd->add_flag("--group-by-compiled-source", args->group_by_compiled_source,
                "Fold the time of inductor's generated kernels onto the aten ops inductor says each was fused "
                "from: a row per set of ops, 'aten::relu' or 'aten::sum + aten::threshold_backward' (kernel rows "
                "named '<kernel> [<aten ops>]', torch.compile'd CPU code under ptprof run)");
  cmd->add_option("--group-by-stack-n", args->group_by_stack_n,
                  "One row per (name, first N entries of the Python call stack), with a Source Location column, "
                  "as key_averages(group_by_stack_n=N); needs traces recorded with --with-stack or "
                  "--python-attribution");
  cmd->add_option("--window", args->window, "Schedule window to report: an index, or 'all' to merge every window")
      ->capture_default_str();
  cmd->add_option("--format", args->format, "Output: table, csv (times in us) or json (times in us)")
      ->capture_default_str();
  cmd->add_option("--html", args->html,
                  "Write the report as one self-contained HTML page here instead of printing it: "
                  "run metadata, drops, per-step, per-phase and top-operator plots, processes and ranks, a "
                  "timeline (zoom, pan, click an op for its details), flame graphs of recorded stacks, memory over "
                  "time, the sortable tables");
  cmd->add_option("--baseline", args->baseline,
                  "With --html: add a section comparing this run with BASELINE (a trace file or a directory), "
                  "as `ptprof diff BASELINE <these inputs>` does");
  cmd->callback([args, &exit_code] { exit_code = run_report(*args); });
}

}  // namespace ptprof::cli
