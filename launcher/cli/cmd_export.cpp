// `ptprof export`: trace files to Chrome trace JSON (Kineto's schema) and/or
// Perfetto protobuf. A thin front end over the analysis library's exports.
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "ptprof/analysis/export.hpp"
#include "ptprof/analysis/trace_file.hpp"

namespace ptprof::cli {
namespace {

constexpr const char* kMaxFileSizeVariable = "PTPROF_EXPORT_MAX_FILE_SIZE";

struct ExportArgs {
  std::vector<std::string> paths;
  std::string chrome;
  std::string perfetto;
  std::string max_file_size;
};

void report(const exporting::ExportResult& r, const char* what) {
  for (const auto& w : r.warnings) spdlog::warn("export: {}", w);
  // What was written is the command's output, shown at any log level.
  for (const auto& f : r.files) std::fprintf(stderr, "ptprof export: wrote %s\n", f.c_str());
  std::fprintf(stderr, "ptprof export: %llu events as %s\n", static_cast<unsigned long long>(r.events), what);
}

int run_export(const ExportArgs& a) {
  if (a.chrome.empty() && a.perfetto.empty())
    return usage_error("export", "nothing to write: give --chrome OUT.json[.gz] and/or --perfetto OUT.pftrace");
  if (!a.max_file_size.empty() && a.chrome.empty())
    return usage_error("export", "--max-file-size splits the Chrome export: give --chrome OUT.json[.gz] with it");
  exporting::ChromeOptions chrome;
  std::string size_text = a.max_file_size;
  std::string size_source = "--max-file-size";
  if (size_text.empty()) {
    const char* env = std::getenv(kMaxFileSizeVariable);
    if (env && *env) {
      size_text = env;
      size_source = kMaxFileSizeVariable;
    }
  }
  if (!size_text.empty()) {
    auto bytes = exporting::parse_byte_size(size_text);
    constexpr uint64_t kMinimum = 64 << 10;
    if (!bytes || *bytes < kMinimum)
      return usage_error("export", size_source + " '" + size_text +
                                       "' is not a size of at least 64K: give bytes, or a number with K, M or G "
                                       "(powers of 1024), e.g. 500M");
    chrome.max_file_size = *bytes;
  }

  std::vector<std::string> notes;
  auto expanded = format::expand_trace_paths(a.paths, &notes);
  if (!expanded) return usage_error("export", expanded.error());
  for (const auto& n : notes) spdlog::warn("export: {}", n);
  const std::vector<std::string>& files = *expanded;
  if (!a.chrome.empty()) {
    auto r = exporting::export_chrome(files, a.chrome, chrome);
    if (!r) return usage_error("export", r.error());
    report(*r, "Chrome trace JSON");
  }
  if (!a.perfetto.empty()) {
    auto r = exporting::export_perfetto(files, a.perfetto);
    if (!r) return usage_error("export", r.error());
    report(*r, "Perfetto protobuf");
  }
  return 0;
}

}  // namespace

void add_export(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd =
      app.add_subcommand("export",
                         "Trace files to the formats trace viewers read; any mix of files and directories is merged\n"
                         "into one trace. Chrome trace JSON is Kineto's schema, as torch.profiler's\n"
                         "export_chrome_trace writes it: Perfetto UI, chrome://tracing and Holistic Trace Analysis\n"
                         "open it. Perfetto protobuf is about a third of the JSON text but larger than gzipped\n"
                         "JSON (.json.gz); .pftrace.gz is the smallest (docs/export.md has measured sizes).");
  cmd->add_option("paths", args->paths, "Trace files, or directories (their *.bin files)")->required();
  cmd->add_option("--chrome", args->chrome,
                  "Write Chrome trace JSON here; gzip-compressed when the name ends in .gz "
                  "(e.g. trace.json.gz, what HTA reads)");
  cmd->add_option("--perfetto", args->perfetto,
                  "Write Perfetto protobuf (TrackEvent) here, e.g. trace.pftrace (gzip-compressed when the "
                  "name ends in .gz)");
  cmd->add_option("--max-file-size", args->max_file_size,
                  "Split the Chrome export into parts of at most this much JSON text (bytes, or K, M, "
                  "G; at least 64K), cut between ProfilerStep spans; each part opens on its own, named "
                  "OUT.part001.json, ... A step larger than the limit gets a part to itself. "
                  "Default: PTPROF_EXPORT_MAX_FILE_SIZE, else no limit");
  cmd->callback([args, &exit_code] { exit_code = run_export(*args); });
}

}  // namespace ptprof::cli
