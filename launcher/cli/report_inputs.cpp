#include "cli/report_inputs.hpp"

#include <spdlog/spdlog.h>

#include "ptprof/analysis/trace_file.hpp"

namespace ptprof::cli {

Status read_traces(const std::vector<std::string>& paths, std::string_view command, const TraceVisitor& add) {
  std::vector<std::string> notes;
  auto files = format::expand_trace_paths(paths, &notes);
  if (!files) return Status::error(files.error());
  for (const auto& n : notes) spdlog::warn("{}: {}", command, n);
  for (const std::string& f : *files) {
    std::vector<std::string> warnings;
    auto t = format::read_trace(f, &warnings);
    for (const auto& w : warnings) spdlog::warn("{}: {}", command, w);
    if (!t) return Status::error(t.error());
    add(f, *t);
  }
  return Status::ok_status();
}

Status add_traces(const std::vector<std::string>& paths, std::string_view command, report::ReportBuilder& builder,
                  bool phases, std::vector<uint32_t>* windows) {
  std::vector<std::string> notes;
  auto files = format::expand_trace_paths(paths, &notes);
  if (!files) return Status::error(files.error());
  for (const auto& n : notes) spdlog::warn("{}: {}", command, n);
  for (const std::string& f : *files) {
    std::vector<std::string> warnings;
    auto window = builder.add_file(f, &warnings, phases);
    for (const auto& w : warnings) spdlog::warn("{}: {}", command, w);
    if (!window) return window.status();
    if (windows) windows->push_back(*window);
  }
  return Status::ok_status();
}

Result<report::Report> read_report(const std::vector<std::string>& paths, const report::Options& options,
                                   std::string_view command) {
  report::ReportBuilder builder(options);
  if (Status s = add_traces(paths, command, builder, true, nullptr); !s) return s;
  return std::move(builder).finish();
}

}  // namespace ptprof::cli
