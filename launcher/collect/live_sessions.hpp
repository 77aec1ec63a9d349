// The user's running `ptprof run` sessions, as /dev/shm holds them: what
// `ptprof sessions` lists and what `ptprof trigger` asks for a window.
//
// A session object is mode 0600 and its owner is the user who started the
// run: only that user can open it, and these functions also refuse one whose
// owner is not the caller, so that no one else can trigger or read a run.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptprof/shm_abi.hpp"
#include "ptprof/status.hpp"

namespace ptprof::launcher {

// A session mapped read-write, its launcher alive when it was opened.
class LiveSession {
 public:
  ~LiveSession();
  LiveSession(const LiveSession&) = delete;
  LiveSession& operator=(const LiveSession&) = delete;

  const std::string& name() const { return name_; }
  wire::SessionHeader* header() const { return header_; }
  bool launcher_alive() const;
  // Pids of the registered processes that still run.
  std::vector<int32_t> running_pids() const;

  // Opens `name` ("/ptprof-..." or "ptprof-..."): an error naming the reason
  // when it is not there, not the caller's, not a session or its launcher
  // is gone.
  static Result<std::unique_ptr<LiveSession>> open(const std::string& name);

 private:
  LiveSession() = default;
  std::string name_;
  wire::SessionHeader* header_ = nullptr;
  int fd_ = -1;
};

// The caller's sessions whose launcher is alive, by name.
std::vector<std::unique_ptr<LiveSession>> list_live_sessions();

}  // namespace ptprof::launcher
