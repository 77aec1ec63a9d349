// `ptprof export`: trace files to Chrome trace JSON (Kineto's schema) and/or
// Perfetto protobuf. A thin front end over the analysis library's exports.
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>

#include <spdlog/spdlog.h>

#include "cli/analysis_python.hpp"
#include "cli/commands.hpp"
#include "ptprof/analysis/dataset.hpp"
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
  std::string parquet;
  std::string python;
  std::string columns;  // the hand-off to ptprof.dataset (--columns), not for users
  bool paced = false;
};

// The hand-off: each file's tables into DIR/NNNNNN, its path printed when
// complete. Paced, at most two wait for the reader: each later one waits for
// a line on stdin (the reader's "done").
int write_columns(const std::vector<std::string>& files, const std::string& dir, bool paced) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return usage_error("export", "--columns " + dir + ": " + std::strerror(errno));
  int waiting = 0;
  for (size_t k = 0; k < files.size(); ++k) {
    std::vector<std::string> warnings;
    auto t = format::read_trace(files[k], &warnings);
    for (const auto& w : warnings) spdlog::warn("export: {}", w);
    if (!t) {
      std::fprintf(stderr, "ptprof export: %s\n", t.error().c_str());
      return 1;
    }
    char name[32];
    std::snprintf(name, sizeof name, "/%06zu", k);
    if (Status st = dataset::write_columns(files[k], uint32_t(k), *t, dir + name); !st) {
      std::fprintf(stderr, "ptprof export: %s\n", st.message().c_str());
      return 1;
    }
    std::printf("%s%s\n", dir.c_str(), name);
    std::fflush(stdout);
    if (paced && ++waiting >= 2) {
      std::string line;
      if (!std::getline(std::cin, line)) return 1;  // the reader is gone
      --waiting;
    }
  }
  return 0;
}

// `--parquet OUT`: ptprof.dataset, run by a Python with pyarrow, drives
// this command's --columns and writes the Parquet files.
int write_parquet(const ExportArgs& a, const std::vector<std::string>& files) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a.parquet, ec) && !(fs::is_directory(a.parquet, ec) && fs::is_empty(a.parquet, ec)))
    return usage_error("export", "--parquet " + a.parquet +
                                     " exists and is not an empty directory: give a new directory (a dataset is "
                                     "written whole, never merged into another)");
  std::vector<std::string> args = {"--out", a.parquet, "--"};
  args.insert(args.end(), files.begin(), files.end());
  return run_analysis_module("export", a.python, "ptprof.dataset", args);
}

void report(const exporting::ExportResult& r, const char* what) {
  for (const auto& w : r.warnings) spdlog::warn("export: {}", w);
  // What was written is the command's output, shown at any log level.
  for (const auto& f : r.files) std::fprintf(stderr, "ptprof export: wrote %s\n", f.c_str());
  std::fprintf(stderr, "ptprof export: %llu events as %s\n", static_cast<unsigned long long>(r.events), what);
}

int run_export(const ExportArgs& a) {
  if (a.chrome.empty() && a.perfetto.empty() && a.parquet.empty() && a.columns.empty())
    return usage_error("export",
                       "nothing to write: give --chrome OUT.json[.gz], --perfetto OUT.pftrace and/or --parquet OUT/");
  if (!a.python.empty() && a.parquet.empty())
    return usage_error("export", "--python names the interpreter that writes --parquet: give --parquet OUT/ with it");
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
  if (!a.columns.empty()) return write_columns(files, a.columns, a.paced);
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
  if (!a.parquet.empty()) return write_parquet(a, files);
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
                         "JSON (.json.gz); .pftrace.gz is the smallest (docs/export.md has measured sizes).\n"
                         "--parquet writes a columnar dataset for SQL and dataframes across many ranks.");
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
  cmd->add_option("--parquet", args->parquet,
                  "Write a Parquet dataset into this new directory: one folder per table (ops, steps, gpu, "
                  "memory, collectives, ...), Hive-partitioned by run and rank bucket, zstd; DuckDB, pyarrow, "
                  "Dask and Spark read it (docs/dataset.md has every column). Needs pyarrow in the Python "
                  "that writes it (pip install 'ptprof[analysis]')");
  cmd->add_option("--python", args->python,
                  "The interpreter that writes --parquet (it must import pyarrow). Default: PTPROF_ANALYSIS_PYTHON "
                  "(set to its own Python by the wheel's ptprof command), "
                  "else python3 on PATH");
  // The columnar hand-off ptprof.dataset reads: an interface between
  // ptprof's two halves, not a format for users.
  cmd->add_option("--columns", args->columns)->group("");
  cmd->add_flag("--paced", args->paced)->group("");
  cmd->callback([args, &exit_code] { exit_code = run_export(*args); });
}

}  // namespace ptprof::cli
