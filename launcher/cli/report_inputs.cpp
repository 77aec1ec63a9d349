#include "cli/report_inputs.hpp"

#include <algorithm>
#include <thread>

#include <spdlog/spdlog.h>

#include "cli/thread_count.hpp"
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
  return builder.add_files(
      *files, phases, report_threads(),
      [&](const std::vector<std::string>& warnings) {
        for (const auto& w : warnings) spdlog::warn("{}: {}", command, w);
      },
      windows);
}

unsigned report_threads() {
  constexpr unsigned kMost = 8;
  if (auto n = threads_from_env("PTPROF_REPORT_THREADS"); !n)
    spdlog::warn("{}; ignored", n.error());
  else if (*n)
    return **n;
  return std::clamp(std::thread::hardware_concurrency(), 1u, kMost);
}

Result<ComparedSide> read_compared_side(const std::vector<std::string>& paths, std::string_view command) {
  report::ReportBuilder builder{report::Options{}};
  ComparedSide side;
  const Status read = read_traces(paths, command, [&](const std::string& f, const trace::Trace& t) {
    builder.add(f, t);
    diff::note_trace(side.info, t);
  });
  if (!read) return read;
  side.report = std::move(builder).finish();
  return side;
}

}  // namespace ptprof::cli
