#include "process/subprocess.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "ptprof/shm_abi.hpp"

extern char** environ;

namespace ptprof::launcher {

std::vector<char*> exec_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

namespace {

bool executable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Closes the file actions whatever path run_to_completion leaves by.
struct FileActions {
  posix_spawn_file_actions_t actions;
  FileActions() { posix_spawn_file_actions_init(&actions); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
};

int shell_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// Waits for `pid`, killing its process group once `timeout_s` have passed.
bool wait_with_limit(pid_t pid, int timeout_s, int* status, bool* timed_out) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    pid_t got = ::waitpid(pid, status, WNOHANG);
    if (got == pid) return true;
    if (got < 0 && errno != EINTR) return false;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      *timed_out = true;
      while (::waitpid(pid, status, 0) < 0)
        if (errno != EINTR) return false;
      return true;
    }
    ::usleep(20 * 1000);
  }
}

}  // namespace

std::string find_executable(const std::string& name) {
  if (name.empty()) return {};
  if (name.find('/') != std::string::npos) return executable(name) ? name : std::string();
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (executable(candidate)) return candidate;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return {};
}

std::vector<std::string> helper_environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (kv.rfind(std::string(wire::kSessionEnv) + "=", 0) == 0) continue;
    if (kv.rfind("LD_PRELOAD=", 0) == 0) {
      std::string kept;
      std::string list = kv.substr(11);
      size_t start = 0;
      while (start <= list.size()) {
        size_t sep = list.find_first_of(": ", start);
        std::string item = list.substr(start, sep == std::string::npos ? std::string::npos : sep - start);
        if (!item.empty() && item.find("libptprof_agent") == std::string::npos)
          kept += (kept.empty() ? "" : ":") + item;
        if (sep == std::string::npos) break;
        start = sep + 1;
      }
      if (!kept.empty()) env.push_back("LD_PRELOAD=" + kept);
      continue;
    }
    env.push_back(std::move(kv));
  }
  return env;
}

Finished run_to_completion(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                           const std::string& output_file, int timeout_s) {
  Finished f;
  if (argv.empty()) {
    f.error = "no command";
    return f;
  }
  std::string program = find_executable(argv[0]);
  if (program.empty()) {
    f.error = argv[0] + (argv[0].find('/') != std::string::npos ? " is not an executable file" : " is not on PATH");
    return f;
  }
  int out_fd = -1;
  int pipe_fds[2] = {-1, -1};
  if (!output_file.empty()) {
    out_fd = ::open(output_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (out_fd < 0) {
      f.error = "cannot write " + output_file + ": " + std::strerror(errno);
      return f;
    }
  } else if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    f.error = std::string("cannot create a pipe: ") + std::strerror(errno);
    return f;
  }
  const int write_fd = out_fd >= 0 ? out_fd : pipe_fds[1];
  FileActions fa;
  posix_spawn_file_actions_addopen(&fa.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa.actions, write_fd, 1);
  posix_spawn_file_actions_adddup2(&fa.actions, write_fd, 2);
  auto args = exec_strings(argv);
  auto envp = exec_strings(env);
  pid_t pid = -1;
  const bool limited = timeout_s > 0 && out_fd >= 0;
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (limited) {
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
  }
  int rc = posix_spawn(&pid, program.c_str(), &fa.actions, &attr, args.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  ::close(write_fd);
  if (rc != 0) {
    if (pipe_fds[0] >= 0) ::close(pipe_fds[0]);
    f.error = "cannot run " + program + ": " + std::strerror(rc);
    return f;
  }
  f.started = true;
  if (pipe_fds[0] >= 0) {
    char buf[4096];
    for (;;) {
      ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
      if (n > 0) {
        f.output.append(buf, size_t(n));
      } else if (n == 0 || errno != EINTR) {
        break;
      }
    }
    ::close(pipe_fds[0]);
  }
  int status = 0;
  if (limited) {
    if (!wait_with_limit(pid, timeout_s, &status, &f.timed_out)) {
      f.error = std::string("cannot wait for ") + program + ": " + std::strerror(errno);
      f.exit_status = 1;
      return f;
    }
  }
  while (!limited && ::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      f.error = std::string("cannot wait for ") + program + ": " + std::strerror(errno);
      f.exit_status = 1;
      return f;
    }
  }
  f.exit_status = shell_status(status);
  return f;
}

}  // namespace ptprof::launcher
