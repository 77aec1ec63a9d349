// Runs a helper program to completion (a compiler, a Python interpreter),
// with its output captured in a string or a file; the bridge builder's only
// way of starting processes.
#pragma once
#include <string>
#include <vector>

namespace ptprof::launcher {

struct Finished {
  bool started = false;  // false: argv[0] could not be run (error says why)
  int exit_status = 0;   // shell-style: the exit code, or 128 + signal
  std::string output;    // stdout and stderr together, when not sent to a file
  std::string error;
  bool timed_out = false;  // killed (with its process group) at the time limit
};

// Runs `argv` (argv[0] searched on PATH) with `env` ("K=V" entries). Output
// goes to `output_file` when it is not empty, else into Finished::output.
// With `timeout_s` > 0 (and an output file) the command runs in a process
// group of its own, killed whole when it has run that long.
Finished run_to_completion(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                           const std::string& output_file = {}, int timeout_s = 0);

// The current environment as "K=V" entries, without any LD_PRELOAD entry
// naming ptprof's agent (helpers must not profile themselves) and without
// PTPROF_SESSION.
std::vector<std::string> helper_environment();

// Whether `name` is an executable file, directly (a name with a slash) or on PATH.
std::string find_executable(const std::string& name);

// The null-terminated array of pointers execve takes, into `v` (which must
// outlive it).
std::vector<char*> exec_strings(const std::vector<std::string>& v);

}  // namespace ptprof::launcher
