#include "trace_ready.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <spdlog/spdlog.h>

extern char** environ;

namespace ptprof::launcher {

std::string expand_trace_ready(const std::string& command, const std::string& path) {
  std::string quoted = "'";
  for (char c : path) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted += "'";
  std::string out;
  for (size_t i = 0; i < command.size(); ++i) {
    if (command[i] == '{' && i + 1 < command.size() && command[i + 1] == '}') {
      out += quoted;
      ++i;
    } else {
      out += command[i];
    }
  }
  return out;
}

Result<std::unique_ptr<format::TraceSink>> TraceReady::open(const std::string& path, const trace::Header& header) {
  auto writer = format::TraceWriter::create(path, header);
  if (!writer) return writer.status();
  return std::unique_ptr<format::TraceSink>(std::move(*writer));
}

void TraceReady::window_written(const WindowFile& f) {
  files_.push_back(f);
  if (command_.empty()) return;
  std::string cmd = expand_trace_ready(command_, f.path);
  const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
  pid_t pid;
  int rc = posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ);
  if (rc != 0) {
    spdlog::warn("cannot run on-trace-ready command: {}", std::strerror(rc));
    return;
  }
  running_.push_back(pid);
}

void TraceReady::reap() {
  running_.erase(std::remove_if(running_.begin(), running_.end(),
                                [](pid_t pid) {
                                  int status;
                                  return ::waitpid(pid, &status, WNOHANG) == pid;
                                }),
                 running_.end());
}

void TraceReady::wait_all() {
  for (pid_t pid : running_) {
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  running_.clear();
}

}  // namespace ptprof::launcher
