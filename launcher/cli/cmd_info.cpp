// `ptprof info`: what trace files hold, from their metadata and footers
// (events are not decoded, so it is instant on any file size). Counts print as
// plain integers so scripts can check "recorded + dropped" exactly.
#include <sys/stat.h>

#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <memory>

#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "ptprof/analysis/trace_file.hpp"
#include "ptprof/losses.hpp"

namespace ptprof::cli {
namespace {

std::string wall_clock(int64_t monotonic_ns, int64_t realtime_offset_ns) {
  int64_t ns = monotonic_ns + realtime_offset_ns;
  std::time_t secs = std::time_t(ns / 1'000'000'000);
  std::tm tm{};
  if (!gmtime_r(&secs, &tm)) return "?";
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[16];
  std::snprintf(frac, sizeof frac, ".%06dZ", int((ns % 1'000'000'000) / 1000));
  return std::string(buf) + frac;
}

void print_trace(const std::string& path, const trace::Trace& t) {
  struct stat st {};
  uint64_t size = ::stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
  uint64_t events = 0, dropped = 0;
  for (const auto& th : t.threads) {
    events += th.events;
    dropped += th.dropped;
  }
  const trace::Header& h = t.header;
  std::printf("%s\n", path.c_str());
  std::printf("  size       %" PRIu64 " bytes", size);
  if (events) std::printf(" (%.2f bytes/event)", double(size) / double(events));
  std::printf("\n  format     version %u\n", h.version);
  std::printf("  host       %s\n", h.host.c_str());
  std::printf("  window     %u: %s .. %s (%s)\n", h.window, wall_clock(h.window_start_ns, h.realtime_offset_ns).c_str(),
              wall_clock(h.window_end_ns, h.realtime_offset_ns).c_str(),
              report::format_time_us((double(h.window_end_ns) - double(h.window_start_ns)) / 1000.0).c_str());
  std::printf("  schedule   %s\n", h.schedule.empty() ? "(none: one window)" : h.schedule.c_str());
  std::printf("  ptprof     %s\n", h.ptprof_version.c_str());
  std::printf("  processes  %zu\n", t.processes.size());
  for (const auto& p : t.processes) std::printf("    pid %d  ppid %d  %s\n", p.pid, p.ppid, p.cmdline.c_str());
  std::printf("  threads    %zu\n", t.threads.size());
  std::printf("    %10s %10s  %-20s %12s %12s\n", "pid", "tid", "name", "events", "dropped");
  for (const auto& th : t.threads) {
    int pid = th.process < t.processes.size() ? t.processes[th.process].pid : 0;
    std::printf("    %10d %10d  %-20s %12" PRIu64 " %12" PRIu64 "\n", pid, th.tid, th.name.c_str(), th.events,
                th.dropped);
  }
  std::printf("  total      events %" PRIu64 "  dropped %" PRIu64 "\n", events, dropped);
  const trace::Losses& l = t.losses;
  std::string losses = "  losses   ";
  for (const trace::LossField& f : trace::kLossFields)
    losses += "  " + std::string(f.name) + " " + std::to_string(l.*f.member);
  std::printf("%s\n", losses.c_str());
  for (const std::string& line : trace::loss_lines(l)) std::printf("  warning    %s\n", line.c_str());
}

int run_info(const std::vector<std::string>& paths) {
  std::vector<std::string> notes;
  auto expanded = format::expand_trace_paths(paths, &notes);
  if (!expanded) {
    spdlog::error("info: {}", expanded.error());
    return 2;
  }
  for (const auto& n : notes) spdlog::warn("info: {}", n);
  const std::vector<std::string>& files = *expanded;
  for (size_t i = 0; i < files.size(); ++i) {
    std::vector<std::string> warnings;
    auto t = format::read_trace_summary(files[i], &warnings);
    for (const auto& w : warnings) spdlog::warn("info: {}", w);
    if (!t) {
      spdlog::error("info: {}", t.error());
      return 2;
    }
    if (i) std::printf("\n");
    print_trace(files[i], *t);
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace

void add_info(CLI::App& app, int& exit_code) {
  auto paths = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd =
      app.add_subcommand("info", "What trace files hold: header, window, processes, threads, events and drops");
  cmd->add_option("paths", *paths, "Trace files, or directories (their *.bin files)")->required();
  cmd->callback([paths, &exit_code] { exit_code = run_info(*paths); });
}

}  // namespace ptprof::cli
