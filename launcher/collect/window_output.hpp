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

// The stem of a process's trace files: <host>[.r<rank>].<pid>[-<exec>], so
// that `ls` groups a rank's files and a shared directory tells the ranks of
// several nodes apart. `uses`: the images before this one under the same pid
// (an exec keeps the pid). The rank is the one the process has when a window
// is written: torchrun's RANK from the start, mp.spawn's once the process
// group is initialised.
struct FileStem {
  std::string host;
  int32_t pid = 0;
  int uses = 0;
  std::string with_rank(int32_t rank) const;
};

class WindowOutput {
 public:
  WindowOutput(const CollectorOptions& opts, const ProcessContext& process, FileStem stem, WindowSink& sink)
      : opts_(opts), process_(process), stem_(std::move(stem)), sink_(sink) {}

  // Opens `w`'s trace unless it is open; false when it cannot be, and then
  // the window is lost (done: never opened again).
  bool open(Window& w);
  // Writes out `w`, its trace open, ended at `end` (ticks); `drops` and
  // `losses` are charged to it.
  void close(Window& w, uint64_t end, const std::vector<ThreadDrops>& drops, const trace::Losses& losses);

 private:
  // The file `w` goes to, named with the process's rank as it is now.
  std::string path(const Window& w) const;
  WindowFile describe(const Window& w, const trace::Losses& losses) const;
  void write_steps(Window& w);
  void write_drops(Window& w, const std::vector<ThreadDrops>& drops, WindowFile& f);

  const CollectorOptions& opts_;
  const ProcessContext& process_;
  FileStem stem_;
  WindowSink& sink_;
};

}  // namespace ptprof::launcher
