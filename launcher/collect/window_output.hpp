// The last stage of the collector: a window's trace is opened through the
// WindowSink (the file header, the process record) when the window's first
// event comes, and closed when the window is written (its steps, the drops
// and losses seen since the last window written, its end and its cost), the
// sink told how it went.
#pragma once
#include <string>
#include <vector>

#include "collect/collector_options.hpp"
#include "collect/window_book.hpp"
#include "collect/window_sink.hpp"

namespace ptprof::launcher {

class WindowOutput {
 public:
  WindowOutput(const CollectorOptions& opts, const ProcessContext& process, std::string file_stem, WindowSink& sink)
      : opts_(opts), process_(process), file_stem_(std::move(file_stem)), sink_(sink) {}

  // Opens `w`'s trace unless it is open; false when it cannot be, and then
  // the window is lost (done: never opened again).
  bool open(Window& w);
  // Writes out `w`, its trace open, ended at `end` (ticks); `drops` and
  // `losses` are charged to it.
  void close(Window& w, uint64_t end, const std::vector<ThreadDrops>& drops, const trace::Losses& losses);

 private:
  std::string path(const Window& w) const;
  WindowFile describe(const Window& w, const trace::Losses& losses) const;
  void write_steps(Window& w);
  void write_drops(Window& w, const std::vector<ThreadDrops>& drops, WindowFile& f);

  const CollectorOptions& opts_;
  const ProcessContext& process_;
  std::string file_stem_;
  WindowSink& sink_;
};

}  // namespace ptprof::launcher
