// What the launcher tells every process's collector: where the window files
// go, what their headers say, and when a window is written.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace ptprof::launcher {

struct CollectorOptions {
  std::string output_dir;
  std::string host;      // safe as a file name component (run_names.hpp)
  std::string run_id;    // in every file name: unique per run; empty in tests
  std::string schedule;  // for the file header
  int64_t realtime_offset_ns = 0;
  // How long a window waits, after its end, for spans that began inside it
  // to end (the scope around the optimizer step, say) before it is written
  // with those spans cut at the window's end.
  std::chrono::milliseconds grace{2000};
  // How often the windows being written are flushed to their .tmp files, so
  // that a launcher killed mid-run leaves them readable up to that point.
  std::chrono::milliseconds flush_interval{500};
  // Whether the user interrupted the run (Ctrl-C, SIGTERM, SIGHUP to the
  // launcher): a step still open when a process exits after that is the
  // step the interrupt cut short, shown partial as after a kill, even when
  // the program caught the KeyboardInterrupt and exited cleanly. Null: never.
  bool (*interrupted)() = nullptr;
  // Threads that drain the session's processes, each process on one of them
  // at a time; 1: the caller's alone. `ptprof run` takes it from
  // PTPROF_DRAIN_THREADS or the cores (launcher/cli/thread_count.hpp).
  unsigned drain_threads = 1;
};

}  // namespace ptprof::launcher
