#include "window/ancestor_slot.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace ptprof::agent {
namespace {

constexpr int kMaxGenerations = 16;  // a parent chain longer than this is not followed

// The parent of `pid` (/proc/PID/stat's fourth field); 0 when unknown.
pid_t parent_of(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", int(pid));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  // The command name in parentheses may hold anything: the state and the
  // parent follow its last ')'.
  const char* close = std::strrchr(buf, ')');
  int ppid = 0;
  char state = 0;
  if (!close || std::sscanf(close + 1, " %c %d", &state, &ppid) != 2) return 0;
  return pid_t(ppid);
}

}  // namespace

wire::ProcessSlot* find_ancestor_slot(wire::SessionHeader& session, const wire::ProcessSlot* self) {
  pid_t pid = ::getppid();
  for (int generation = 0; generation < kMaxGenerations && pid > 1 && pid != session.launcher_pid; ++generation) {
    const uint32_t claimed = std::min(session.next_slot.load(std::memory_order_acquire), wire::kMaxProcesses);
    // The latest slot of that pid: a pid reused in the session is its newest process.
    for (uint32_t i = claimed; i-- > 0;) {
      wire::ProcessSlot& slot = session.slots[i];
      if (&slot == self || slot.pid != pid) continue;
      if (slot.state.load(std::memory_order_acquire) == uint32_t(wire::SlotState::Ready)) return &slot;
    }
    pid = parent_of(pid);
  }
  return nullptr;
}

}  // namespace ptprof::agent
