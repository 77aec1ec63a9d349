// `ptprof sessions`: the user's running `ptprof run` sessions.
#include <cstdio>
#include <string>

#include "cli/commands.hpp"
#include "collect/live_sessions.hpp"

namespace ptprof::cli {
namespace {

int list_sessions() {
  const auto sessions = launcher::list_live_sessions();
  if (sessions.empty()) {
    std::printf("no running ptprof sessions of this user\n");
    return 0;
  }
  std::printf("%-26s %9s %9s  %-24s %-24s %s\n", "SESSION", "LAUNCHER", "ON-DEMAND", "PROCESSES", "OUTPUT", "COMMAND");
  for (const auto& s : sessions) {
    const wire::SessionHeader& h = *s->header();
    std::string pids;
    for (int32_t pid : s->running_pids()) pids += (pids.empty() ? "" : ",") + std::to_string(pid);
    std::printf("%-26s %9d %9s  %-24s %-24s %s\n", s->name().c_str() + 1, h.launcher_pid, h.on_demand ? "yes" : "no",
                pids.empty() ? "-" : pids.c_str(), h.output, h.command);
  }
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
