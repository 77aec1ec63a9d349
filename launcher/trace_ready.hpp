// Writes window files, remembers them for the summary and runs
// PTPROF_ON_TRACE_READY for each, without holding up the draining.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "window_sink.hpp"

namespace ptprof::launcher {

class TraceReady : public WindowSink {
 public:
  explicit TraceReady(std::string command) : command_(std::move(command)) {}
  // A trace file (format::TraceWriter).
  Result<std::unique_ptr<format::TraceSink>> open(const std::string& path, const trace::Header& header) override;
  void window_written(const WindowFile& f) override;
  void reap();      // collects finished commands
  void wait_all();  // waits for every command started
  const std::vector<WindowFile>& files() const { return files_; }

 private:
  std::string command_;
  std::vector<WindowFile> files_;
  std::vector<pid_t> running_;
};

// `command` with every {} replaced by `path`, quoted for sh.
std::string expand_trace_ready(const std::string& command, const std::string& path);

}  // namespace ptprof::launcher
