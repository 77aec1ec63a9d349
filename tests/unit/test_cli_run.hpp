// Runs the ptprof binary as a user does, for the command-line tests.
#pragma once
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

namespace ptprof::testing {

struct Run {
  int status = -1;
  std::string out;
};

// `ptprof ARGS` through the shell; stdout, and stderr unless told not to.
// `env`: VAR=VALUE assignments for its environment alone.
inline Run run_ptprof(const std::string& args, bool with_stderr = true, const std::string& env = "") {
  Run r;
  std::string cmd = (env.empty() ? "" : "env " + env + " ") + std::string(PTPROF_BIN) + " " + args +
                    (with_stderr ? " 2>&1" : " 2>/dev/null");
  std::FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

}  // namespace ptprof::testing
