// The launcher's diagnostics go through spdlog, to stderr, as
// "ptprof: <level>: message". The level comes from PTPROF_LOG_LEVEL (default
// warn), as for the agent; `run --log-level` overrides it for both.
#pragma once
#include <string_view>

namespace ptprof::launcher {

// Installs the launcher's logger; reads PTPROF_LOG_LEVEL.
void init_logging();
// A level name as PTPROF_LOG_LEVEL accepts it (config.cpp validates it).
void set_log_level(std::string_view name);

}  // namespace ptprof::launcher
