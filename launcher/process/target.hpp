// The profiled program: started with the session's environment, sent the
// signals the launcher receives from other processes, and waited for.
#pragma once
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "ptprof/status.hpp"

namespace ptprof::launcher {

class Target {
 public:
  // Starts argv[0] (PATH search) with `env`. On failure (the child exits
  // 127 and is reaped here) the error says why.
  static Result<Target> start(const std::vector<std::string>& argv, const std::vector<std::string>& env);

  pid_t pid() const { return pid_; }
  // Non-blocking. Once it returns true, exit_status() is final.
  bool poll_exit();
  // Shell-style status: the exit code, or 128 + N when killed by signal N.
  int exit_status() const { return status_; }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
};

// Makes the launcher forward SIGINT, SIGTERM and SIGHUP to `pid`, except
// those the terminal sent (the target, in the same process group, got them
// already).
void forward_signals_to(pid_t pid);
// Whether the launcher got SIGINT, SIGTERM or SIGHUP, forwarded or not,
// since forward_signals_to: the user interrupted the run.
bool run_interrupted();
// Makes the launcher a subreaper (before the target starts), so that the
// orphaned processes of the target's tree become its children: their exit is
// seen (a process that is gone) and they are reaped here.
void become_subreaper();
// Reaps exited descendants other than the target and those `keep` claims
// (the launcher's own children, e.g. on-trace-ready commands, reaped by
// whoever started them).
void reap_orphans(pid_t target, const std::function<bool(pid_t)>& keep);
// The launcher's children, running or not yet reaped, but those `skip`
// claims. As a subreaper, once the target has exited these are the tops of
// what is left of its process tree (none: the whole tree is gone).
uint32_t count_children(const std::function<bool(pid_t)>& skip);

}  // namespace ptprof::launcher
