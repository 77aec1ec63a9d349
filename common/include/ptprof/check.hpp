// PTPROF_DCHECK: contracts checked in debug builds and in the sanitizer and
// fuzzing builds (CMake defines PTPROF_ENABLE_DCHECKS there, so the suite
// runs with them: scripts/sanitize.sh, scripts/fuzz.sh), and compiled out of
// release ones (NDEBUG), so the hot path pays nothing for them.
//
// A failure writes one line with write(2) and aborts: no allocation and no
// stdio, so the check is safe inside the agent's hooks and in a fork child.
#pragma once
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace ptprof::dcheck {

[[noreturn]] inline void failed(const char* condition, const char* file, int line) {
  char digits[16] = {};
  char* d = digits + sizeof digits - 1;
  for (unsigned n = line > 0 ? unsigned(line) : 0u; d == digits + sizeof digits - 1 || n; n /= 10)
    *--d = char('0' + n % 10);
  const char* parts[] = {"ptprof: check failed: ", condition, " at ", file, ":", d, "\n"};
  for (const char* part : parts) {
    if (::write(STDERR_FILENO, part, std::strlen(part)) < 0) break;
  }
  std::abort();
}

}  // namespace ptprof::dcheck

#if defined(NDEBUG) && !defined(PTPROF_ENABLE_DCHECKS)
// Still type-checked, never evaluated.
#define PTPROF_DCHECK(condition) static_cast<void>(false && (condition))
#else
#define PTPROF_DCHECK(condition) \
  ((condition) ? static_cast<void>(0) : ::ptprof::dcheck::failed(#condition, __FILE__, __LINE__))
#endif
