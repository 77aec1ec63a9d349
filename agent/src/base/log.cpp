#include "base/log.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace ptprof::agent {
namespace {
std::atomic<int> g_level{int(Level::Warn)};
}

void set_log_level(const char* name) {
  if (!name) return;
  struct {
    const char* n;
    Level l;
  } table[] = {{"trace", Level::Trace},  {"debug", Level::Debug}, {"info", Level::Info},      {"warn", Level::Warn},
               {"warning", Level::Warn}, {"error", Level::Error}, {"critical", Level::Error}, {"off", Level::Off}};
  for (auto& e : table)
    if (std::strcmp(e.n, name) == 0) g_level.store(int(e.l), std::memory_order_relaxed);
}

bool log_enabled(Level l) { return int(l) >= g_level.load(std::memory_order_relaxed) && l != Level::Off; }

void log(Level l, const char* fmt, ...) {
  if (!log_enabled(l)) return;
  static const char* names[] = {"trace", "debug", "info", "warning", "error", "off"};
  char buf[1024];
  int n = std::snprintf(buf, sizeof buf, "ptprof[%d] %s: ", int(getpid()), names[int(l)]);
  va_list ap;
  va_start(ap, fmt);
  int m = std::vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
  va_end(ap);
  size_t len = size_t(n) + (m < 0 ? 0 : std::min<size_t>(size_t(m), sizeof buf - n - 2));
  buf[len++] = '\n';
  ssize_t ignored = ::write(2, buf, len);
  (void)ignored;
}

}  // namespace ptprof::agent
