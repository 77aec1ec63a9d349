// Where the collector's windows go: it opens each window's trace through the
// sink, and tells the sink when the trace is complete. The launcher's sink
// writes files and runs PTPROF_ON_TRACE_READY; tests keep traces in memory.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "ptprof/analysis/trace_file.hpp"
#include "ptprof/cost.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::launcher {

struct WindowFile {
  std::string path;
  uint64_t bytes = 0;
  uint64_t events = 0;
  uint64_t dropped = 0;
  trace::Losses losses;
  int32_t pid = 0;
  uint32_t window = 0;
  cost::Tally cost;  // what recording its events cost the target
  // torch.compile in it (WindowTrace::compile): compile time, recompiles, graph breaks.
  int64_t compile_ns = 0;
  uint32_t recompiles = 0;
  uint32_t graph_breaks = 0;
};

class WindowSink {
 public:
  virtual ~WindowSink() = default;
  // The trace of one window, to be written at `path`.
  virtual Result<std::unique_ptr<format::TraceSink>> open(const std::string& path, const trace::Header& header) = 0;
  // The trace opened for `f.path` is complete.
  virtual void window_written(const WindowFile& f) = 0;
  // The trace of `f.window` could not be written (or completed): `error` says
  // why; its events are lost.
  virtual void window_failed(const WindowFile& f, const std::string& error) {
    (void)f;
    (void)error;
  }
};

}  // namespace ptprof::launcher
