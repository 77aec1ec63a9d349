#include "cli/thread_count.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

namespace ptprof::cli {

Result<std::optional<unsigned>> threads_from_env(const char* var) {
  const char* env = std::getenv(var);
  if (!env || !*env) return std::optional<unsigned>();
  char* end = nullptr;
  const unsigned long n = std::strtoul(env, &end, 10);
  if (*end == '\0' && env[0] != '-' && n >= 1 && n <= 1024) return std::optional<unsigned>(unsigned(n));
  return Status::error(std::string(var) + "='" + env + "' is not a number of threads from 1 to 1024");
}

unsigned usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return unsigned(CPU_COUNT(&set));
  return std::max(std::thread::hardware_concurrency(), 1u);
}

Result<unsigned> drain_threads() {
  auto n = threads_from_env("PTPROF_DRAIN_THREADS");
  if (!n) return n.status();
  if (*n) return **n;
  return std::clamp(usable_cores() / 4, 1u, 8u);
}

}  // namespace ptprof::cli
