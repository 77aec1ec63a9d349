// `ptprof sessions`: the user's running `ptprof run` sessions.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "collect/live_sessions.hpp"

namespace ptprof::cli {
namespace {

// Each column as wide as its widest cell, two spaces apart; the last one
// (the command) unpadded.
void print_columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c + 1 < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line.append(width[c] - row[c].size() + 2, ' ');
    }
    std::printf("%s\n", line.c_str());
  }
}

int list_sessions() {
  const auto sessions = launcher::list_live_sessions();
  if (sessions.empty()) {
    std::printf("no running ptprof sessions of this user\n");
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"SESSION", "LAUNCHER", "ON-DEMAND", "PROCESSES", "OUTPUT", "COMMAND"}};
  for (const auto& s : sessions) {
    const wire::SessionHeader& h = *s->header();
    std::string pids;
    for (int32_t pid : s->running_pids()) pids += (pids.empty() ? "" : ",") + std::to_string(pid);
    rows.push_back({s->name().substr(1), std::to_string(h.launcher_pid), h.on_demand ? "yes" : "no",
                    pids.empty() ? "-" : pids, std::string(h.output, strnlen(h.output, sizeof h.output)),
                    std::string(h.command, strnlen(h.command, sizeof h.command))});
  }
  print_columns(rows);
  return 0;
}

}  // namespace

void add_sessions(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("sessions",
                                 "List this user's running `ptprof run` sessions: name, launcher pid, whether it "
                                 "records on demand, its processes, output directory and command");
  sub->callback([&exit_code]() { exit_code = list_sessions(); });
}

}  // namespace ptprof::cli
