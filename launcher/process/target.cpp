#include "process/target.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "process/subprocess.hpp"

namespace ptprof::launcher {
namespace {

std::atomic<pid_t> g_forward_pid{-1};
std::atomic<bool> g_interrupted{false};

void forward(int sig, siginfo_t* info, void*) {
  g_interrupted.store(true);
  // Terminal-generated signals (SI_KERNEL) reach the whole foreground group,
  // the target included; forwarding those would deliver them twice.
  if (info && (info->si_code == SI_USER || info->si_code == SI_QUEUE || info->si_code == SI_TKILL)) {
    pid_t pid = g_forward_pid.load();
    if (pid > 0) ::kill(pid, sig);
  }
}

}  // namespace

Result<Target> Target::start(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) {
    return Status::error(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  auto args = exec_strings(argv);
  auto envp = exec_strings(env);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    return Status::error(std::string("cannot fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(pipefd[0]);
    ::execvpe(args[0], args.data(), envp.data());
    int err = errno;
    ssize_t ignored = ::write(pipefd[1], &err, sizeof err);
    (void)ignored;
    ::_exit(127);
  }
  ::close(pipefd[1]);
  int err = 0;
  ssize_t n;
  do {
    n = ::read(pipefd[0], &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  ::close(pipefd[0]);
  if (n == sizeof err) {
    int status;
    ::waitpid(pid, &status, 0);
    return Status::error("cannot start '" + argv[0] + "': " + std::strerror(err));
  }
  Target t;
  t.pid_ = pid;
  return t;
}

bool Target::poll_exit() {
  if (exited_) return true;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r != pid_) return false;
  exited_ = true;
  if (WIFEXITED(status))
    status_ = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    status_ = 128 + WTERMSIG(status);
  else
    status_ = 1;
  return true;
}

void forward_signals_to(pid_t pid) {
  g_forward_pid.store(pid);
  struct sigaction sa {};
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

bool run_interrupted() { return g_interrupted.load(); }

void become_subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }

void reap_orphans(pid_t target, const std::function<bool(pid_t)>& keep) {
  // Only reap processes that are not the target; waitid with WNOWAIT peeks.
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
    if (info.si_pid == target || keep(info.si_pid)) return;
    int status;
    ::waitpid(info.si_pid, &status, WNOHANG);
  }
}

uint32_t count_children(const std::function<bool(pid_t)>& skip) {
  // /proc/self/task/*/children lists each thread's children.
  std::error_code ec;
  uint32_t n = 0;
  bool listed = false;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::ifstream in(it->path() / "children");
    if (!in) continue;
    listed = true;
    pid_t pid;
    while (in >> pid)
      if (!skip(pid)) ++n;
  }
  if (listed) return n;
  // A kernel without that file: waitid tells whether there is any child.
  siginfo_t info{};
  return ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 && errno == ECHILD ? 0 : 1;
}

}  // namespace ptprof::launcher
