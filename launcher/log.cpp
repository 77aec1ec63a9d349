#include "log.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "ptprof/config.hpp"

namespace ptprof::launcher {

void init_logging() {
  // _mt: the collector drains on several threads (DrainPool), which may warn.
  auto logger = spdlog::stderr_logger_mt("ptprof");
  logger->set_pattern("%n: %l: %v");
  spdlog::set_default_logger(std::move(logger));
  spdlog::set_level(spdlog::level::warn);
  if (const char* level = std::getenv(env::kLogLevel)) set_log_level(level);
}

void set_log_level(std::string_view name) {
  // spdlog knows "warning" and "warn"; an unknown name keeps the level (the
  // configuration check reports it).
  const spdlog::level::level_enum level = spdlog::level::from_str(std::string(name));
  if (level != spdlog::level::off || name == "off") spdlog::set_level(level);
}

}  // namespace ptprof::launcher
