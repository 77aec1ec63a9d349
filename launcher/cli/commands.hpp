// Each `ptprof` subcommand lives in its own cmd_<name>.cpp and registers
// itself here. A subcommand's callback stores the process exit status in
// `exit_code` (2 for bad input, with a message on stderr).
#pragma once
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

namespace ptprof::cli {

void add_run(CLI::App& app, int& exit_code);
void add_report(CLI::App& app, int& exit_code);
void add_info(CLI::App& app, int& exit_code);
void add_bridge(CLI::App& app, int& exit_code);
void add_export(CLI::App& app, int& exit_code);
void add_query(CLI::App& app, int& exit_code);
void add_diff(CLI::App& app, int& exit_code);
void add_trigger(CLI::App& app, int& exit_code);
void add_sessions(CLI::App& app, int& exit_code);
void add_memory(CLI::App& app, int& exit_code);
void add_flamegraph(CLI::App& app, int& exit_code);

// Bad input to `ptprof <command>`: what was wrong on stderr, exit status 2.
inline int usage_error(std::string_view command, const std::string& msg) {
  spdlog::error("{}: {}", command, msg);
  return 2;
}

}  // namespace ptprof::cli
