// The agent's logger: plain write(2) to stderr, no allocation, usable from a
// fork child and from inside hooks. Level from PTPROF_LOG_LEVEL.
#pragma once

namespace ptprof::agent {

enum class Level { Trace, Debug, Info, Warn, Error, Off };

void set_log_level(const char* name);
bool log_enabled(Level l);
void log(Level l, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace ptprof::agent
