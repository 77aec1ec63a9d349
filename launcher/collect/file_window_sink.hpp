// Writes window files, remembers them (and those that could not be written)
// for the summary and runs PTPROF_ON_TRACE_READY for each, without holding up
// the draining.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "collect/window_sink.hpp"

namespace ptprof::launcher {

class FileWindowSink : public WindowSink {
 public:
  explicit FileWindowSink(std::string command) : command_(std::move(command)) {}
  // A trace file (format::TraceWriter).
  Result<std::unique_ptr<format::TraceSink>> open(const std::string& path, const trace::Header& header) override;
  void window_written(const WindowFile& f) override;
  void window_failed(const WindowFile& f, const std::string& error) override;
  void reap();      // collects finished commands
  void wait_all();  // waits for every command started
  // Whether `pid` is a command started here (and not yet collected).
  bool owns(pid_t pid) const;

  struct Failure {
    WindowFile file;
    std::string error;
  };
  const std::vector<WindowFile>& files() const { return files_; }
  const std::vector<Failure>& failed_files() const { return failed_; }
  // "on-trace-ready command for PATH failed (exit status N)", one per failure.
  const std::vector<std::string>& failed_commands() const { return failed_commands_; }

 private:
  struct Running {
    pid_t pid;
    std::string path;
  };
  void collected(const Running& r, int status);

  std::string command_;
  std::vector<WindowFile> files_;
  std::vector<Failure> failed_;
  std::vector<Running> running_;
  std::vector<std::string> failed_commands_;
};

// `command` as a script for `sh -c SCRIPT ptprof-hook PATH`: every {} becomes
// a reference to $1 that is one word wherever it stands (bare, inside '...'
// or inside "..."), so the path is never shell text and needs no quoting.
std::string expand_trace_ready(const std::string& command);

}  // namespace ptprof::launcher
