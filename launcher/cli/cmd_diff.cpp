// `ptprof diff A B`: the operators whose time or count changed most between
// two runs, as Holistic Trace Analysis' trace diff. Each side is a trace file
// or a directory (its *.bin files, merged as `ptprof report` merges them).
#include <cstdio>
#include <memory>

#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "cli/report_inputs.hpp"
#include "ptprof/analysis/diff.hpp"

namespace ptprof::cli {
namespace {

struct DiffArgs {
  std::string a, b;
  std::string sort_by = "self_cpu_time_total";
  long long row_limit = 30;
  std::string format = "table";
};

std::string names(const std::vector<std::string_view>& items) {
  std::string s;
  for (auto i : items) s += (s.empty() ? "" : ", ") + std::string(i);
  return s;
}

int run_diff(const DiffArgs& args) {
  auto key = diff::parse_sort_key(args.sort_by);
  if (!key)
    return usage_error("diff", "unknown --sort-by '" + args.sort_by + "'; accepted: " + names(diff::sort_key_names()));
  if (args.format != "table" && args.format != "json")
    return usage_error("diff", "unknown --format '" + args.format + "'; accepted: table, json");
  if (args.row_limit < 0) return usage_error("diff", "--row-limit must be >= 0 (0 = all rows)");
  auto a = read_compared_side({args.a}, "diff");
  if (!a) return usage_error("diff", a.error());
  auto b = read_compared_side({args.b}, "diff");
  if (!b) return usage_error("diff", b.error());
  diff::Diff d = diff::compare(a->report, b->report, *key, a->info, b->info);
  // Also on stderr: a table piped to another program still warns its reader.
  for (const std::string& w : d.warnings) spdlog::warn("diff: A and B differ in how they were recorded: " + w);
  std::string out = args.format == "json" ? diff::render_json(d, size_t(args.row_limit))
                                          : diff::render_table(d, size_t(args.row_limit));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace

void add_diff(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App* cmd =
      app.add_subcommand("diff",
                         "Compare two runs operator by operator (as Holistic Trace Analysis' trace diff): calls,\n"
                         "self CPU and CPU total of each name in A and B and the change, largest change first;\n"
                         "names found on one side only are marked added or removed. When the two sides recorded\n"
                         "different numbers of steps, every value is a per-step average (said on the first line);\n"
                         "a warning says when they differ in schedule, ptprof version or what was recorded.");
  cmd->add_option("A", args->a, "The baseline: a trace file, or a directory (its *.bin files)")->required();
  cmd->add_option("B", args->b, "The run compared with it: a trace file or a directory")->required();
  cmd->add_option("--sort-by", args->sort_by, "Order by the size of the change in: " + names(diff::sort_key_names()))
      ->capture_default_str();
  cmd->add_option("--row-limit", args->row_limit, "Rows to print, 0 = all")->capture_default_str();
  cmd->add_option("--format", args->format, "Output: table or json (times in us)")->capture_default_str();
  cmd->callback([args, &exit_code] { exit_code = run_diff(*args); });
}

}  // namespace ptprof::cli
