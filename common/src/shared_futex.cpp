#include "ptprof/shared_futex.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace ptprof {

void futex_wait_shared(const void* word, uint32_t expected, uint64_t timeout_ns) {
  constexpr uint64_t kNsPerSecond = 1'000'000'000ull;
  timespec ts{};
  ts.tv_sec = time_t(timeout_ns / kNsPerSecond);
  ts.tv_nsec = long(timeout_ns % kNsPerSecond);
  ::syscall(SYS_futex, word, FUTEX_WAIT, expected, timeout_ns ? &ts : nullptr, nullptr, 0);
}

void futex_wake_shared(void* word) { ::syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0); }

}  // namespace ptprof
