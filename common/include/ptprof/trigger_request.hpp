// The trigger protocol's two messages, read and written the same way by
// every side (shm_abi.hpp, SessionHeader::trigger_*): the request that
// `ptprof trigger` writes and each agent reads, and the reply (the window's
// file paths) that the launcher writes and the trigger prints. The session is
// shared memory that any process of the job can write, so the readers trust
// no field: a deadline saturates, options are masked, the paths end at the
// buffer and are whole lines.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/shm_abi.hpp"

namespace ptprof::wire {

struct TriggerRequest {
  bool applies = false;      // the request names this process (or every process)
  uint32_t window = 0;       // the window it records: request number - 1
  uint64_t steps = 0;        // steps to record; 0: by time
  uint64_t deadline_ns = 0;  // by time: CLOCK_MONOTONIC ns at which the window ends
  uint32_t options = 0;      // kWindow* bits the request adds to the run's own
};

// Request `seq` (a value of trigger_seq, 1 or more) as process `pid` reads it at `now_ns`.
inline TriggerRequest read_trigger_request(const SessionHeader& s, uint32_t seq, int32_t pid, uint64_t now_ns) {
  TriggerRequest r;
  const int32_t only = s.trigger_pid;
  r.applies = only == 0 || only == pid;
  r.window = seq - 1;
  r.steps = s.trigger_steps;
  const uint64_t duration = s.trigger_duration_ns;
  r.deadline_ns = duration > UINT64_MAX - now_ns ? UINT64_MAX : now_ns + duration;
  r.options = s.trigger_options & kWindowOptionsMask;
  return r;
}

// The launcher's reply: `paths`, one per line, whole lines only; a path that
// does not fit (or holds a newline) is counted in trigger_paths_left.
inline void write_trigger_paths(SessionHeader& s, const std::vector<std::string_view>& paths) {
  size_t used = 0;
  uint32_t left = 0;
  for (std::string_view p : paths) {
    if (used + p.size() + 1 < sizeof s.trigger_paths && p.find('\n') == std::string_view::npos) {
      std::memcpy(s.trigger_paths + used, p.data(), p.size());
      used += p.size();
      s.trigger_paths[used++] = '\n';
    } else {
      ++left;
    }
  }
  s.trigger_paths[used] = '\0';
  s.trigger_paths_left = left;
}

// The reply as the trigger reads it: the paths of the whole lines before the
// first NUL (or the buffer's end); an unterminated last line is not a path.
inline std::vector<std::string> read_trigger_paths(const SessionHeader& s) {
  const std::string_view all(s.trigger_paths, strnlen(s.trigger_paths, sizeof s.trigger_paths));
  std::vector<std::string> out;
  for (size_t at = 0, nl; (nl = all.find('\n', at)) != std::string_view::npos; at = nl + 1)
    if (nl > at) out.emplace_back(all.substr(at, nl - at));
  return out;
}

}  // namespace ptprof::wire
