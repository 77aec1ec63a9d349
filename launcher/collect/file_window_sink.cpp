#include "collect/file_window_sink.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

extern char** environ;

namespace ptprof::launcher {

std::string expand_trace_ready(const std::string& command) {
  // The shell's quoting state at each {}: outside quotes, inside '...'
  // (where nothing expands: close, insert, reopen) or inside "..." (where
  // $1 expands as one word already).
  enum class Quote { None, Single, Double } q = Quote::None;
  std::string out;
  for (size_t i = 0; i < command.size(); ++i) {
    char c = command[i];
    if (c == '{' && i + 1 < command.size() && command[i + 1] == '}') {
      out += q == Quote::None ? "\"$1\"" : q == Quote::Single ? "'\"$1\"'" : "$1";
      ++i;
      continue;
    }
    out += c;
    if (q == Quote::Single) {
      if (c == '\'') q = Quote::None;
    } else if (c == '\\' && i + 1 < command.size()) {
      out += command[++i];  // an escaped character, quote or brace, is literal
    } else if (q == Quote::Double) {
      if (c == '"') q = Quote::None;
    } else if (c == '\'') {
      q = Quote::Single;
    } else if (c == '"') {
      q = Quote::Double;
    }
  }
  return out;
}

Result<std::unique_ptr<format::TraceSink>> FileWindowSink::open(const std::string& path, const trace::Header& header) {
  auto writer = format::TraceWriter::create(path, header);
  if (!writer) return writer.status();
  return std::unique_ptr<format::TraceSink>(std::move(*writer));
}

void FileWindowSink::window_failed(const WindowFile& f, const std::string& error) { failed_.push_back({f, error}); }

void FileWindowSink::window_written(const WindowFile& f) {
  files_.push_back(f);
  if (command_.empty()) return;
  const std::string script = expand_trace_ready(command_);
  const char* argv[] = {"/bin/sh", "-c", script.c_str(), "ptprof-hook", f.path.c_str(), nullptr};
  // The launcher's environment and the path as PTPROF_TRACE_FILE.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "PTPROF_TRACE_FILE=", 18) != 0) env_strings.emplace_back(*e);
  env_strings.push_back("PTPROF_TRACE_FILE=" + f.path);
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), envp.data());
  if (rc != 0) {
    spdlog::warn("cannot run on-trace-ready command: {}", std::strerror(rc));
    failed_commands_.push_back("on-trace-ready command for " + f.path + " could not start: " + std::strerror(rc));
    return;
  }
  running_.push_back({pid, f.path});
}

void FileWindowSink::collected(const Running& r, int status) {
  std::string how;
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
    how = "exit status " + std::to_string(WEXITSTATUS(status));
  else if (WIFSIGNALED(status))
    how =
        std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  if (how.empty()) return;
  std::string line = "on-trace-ready command for " + r.path + " failed (" + how + ")";
  spdlog::warn("{}", line);
  failed_commands_.push_back(std::move(line));
}

bool FileWindowSink::owns(pid_t pid) const {
  return std::any_of(running_.begin(), running_.end(), [pid](const Running& r) { return r.pid == pid; });
}

void FileWindowSink::reap() {
  running_.erase(std::remove_if(running_.begin(), running_.end(),
                                [this](const Running& r) {
                                  int status;
                                  if (::waitpid(r.pid, &status, WNOHANG) != r.pid) return false;
                                  collected(r, status);
                                  return true;
                                }),
                 running_.end());
}

void FileWindowSink::wait_all() {
  for (const Running& r : running_) {
    int status;
    pid_t got;
    while ((got = ::waitpid(r.pid, &status, 0)) < 0 && errno == EINTR) {
    }
    if (got == r.pid) collected(r, status);
  }
  running_.clear();
}

}  // namespace ptprof::launcher
