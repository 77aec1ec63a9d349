// PTPROF_DCHECK (common/include/ptprof/check.hpp), as a debug build compiles
// it: a failed contract aborts with a message naming the condition. Only the
// macro is used here: an inline function that uses it would be compiled
// both ways in one program.
#undef NDEBUG  // this file tests the debug-build form
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <string>

#include "ptprof/check.hpp"

namespace {

// Runs `body` in a child with stderr on a pipe; returns the child's stderr
// and sets `signal` to the signal that ended it (0 if it exited).
template <class Body>
std::string run_in_child(Body body, int* signal) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(fds[1], STDERR_FILENO);
    // Catch's own SIGABRT handler would report the abort this test expects
    // as a failure on stdout (the parent's log), though the parent passes.
    std::signal(SIGABRT, SIG_DFL);
    body();
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, size_t(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  *signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return out;
}

}  // namespace

TEST_CASE("PTPROF_DCHECK: a kept contract is silent, a broken one aborts naming it", "[check]") {
  int signal = -1;
  std::string out = run_in_child([] { PTPROF_DCHECK(1 + 1 == 2); }, &signal);
  CHECK(signal == 0);
  CHECK(out.empty());

  out = run_in_child([] { PTPROF_DCHECK(2 + 2 == 5); }, &signal);
  CHECK(signal == SIGABRT);
  CHECK(out.find("ptprof: check failed: 2 + 2 == 5 at ") != std::string::npos);
  CHECK(out.find("test_check.cpp:") != std::string::npos);
}
