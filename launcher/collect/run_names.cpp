#include "collect/run_names.hpp"

#include <sys/random.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

#include <unistd.h>

namespace ptprof::launcher {

std::string file_safe_host(std::string_view host) {
  constexpr size_t kMaxLength = 64;
  std::string out;
  for (char c : host.substr(0, kMaxLength)) {
    bool safe =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    // No "..": harmless inside one component, but alarming in a name.
    if (c == '.' && !out.empty() && out.back() == '.') safe = false;
    out += safe ? c : '_';
  }
  if (out.empty()) return "localhost";
  if (out.front() == '.') out.front() = '_';
  return out;
}

std::string new_run_id() {
  uint32_t id = 0;
  if (::getrandom(&id, sizeof id, GRND_NONBLOCK) != ssize_t(sizeof id)) {
    // No entropy yet (early boot): time and pid still differ between runs.
    auto now = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
    id = uint32_t(now ^ (now >> 32) ^ (uint64_t(::getpid()) << 16));
  }
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", id);
  return buf;
}

}  // namespace ptprof::launcher
