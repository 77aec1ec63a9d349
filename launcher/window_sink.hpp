// Where a finished window goes: the collector tells the sink when a window
// file is complete, and the sink runs PTPROF_ON_TRACE_READY and keeps the
// list for the summary.
#pragma once
#include <cstdint>
#include <string>

namespace ptprof::launcher {

struct WindowFile {
  std::string path;
  uint64_t bytes = 0;
  uint64_t events = 0;
  uint64_t dropped = 0;
  int32_t pid = 0;
  uint32_t window = 0;
};

class WindowSink {
 public:
  virtual ~WindowSink() = default;
  virtual void window_written(const WindowFile& f) = 0;
  virtual void warn(const std::string& message) = 0;
};

}  // namespace ptprof::launcher
