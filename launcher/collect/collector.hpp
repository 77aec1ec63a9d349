// Drains a whole session: finds the processes that register, drains each
// (ProcessCollector), decides when a process is gone, and keeps the totals
// for the summary. With several processes and opts.drain_threads > 1 it
// drains them on that many threads (DrainPool), each process on one thread
// in a round; everything else here runs on the caller's thread, between
// rounds.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "collect/drain_pool.hpp"
#include "collect/locked_window_sink.hpp"
#include "collect/process_collector.hpp"
#include "collect/session.hpp"
#include "collect/window_sink.hpp"

namespace ptprof::launcher {

struct Totals {
  uint32_t processes = 0;
  uint32_t threads = 0;
  uint64_t events = 0;
  uint64_t dropped = 0;
  uint32_t lost_processes = 0;
  uint32_t shm_short_processes = 0;  // of lost_processes: /dev/shm had no room for their region
  trace::Losses losses;
  std::vector<std::string> cuda_notes;         // the agents' lines on CUDA, "<line> (pid N)", one per distinct line
  std::vector<OutOfMemoryNote> out_of_memory;  // the first few of each process
  uint64_t out_of_memory_count = 0;            // CUDA allocations that failed for want of memory, all processes
  // The process whose steps the summary speaks of: the one that ended the
  // most steps (the training or inference loop), else the first.
  StepFacts steps;
  // Each process's role and pid, in the order they registered.
  std::vector<std::pair<std::string, int32_t>> roles;
};

class Collector {
 public:
  Collector(Session& session, CollectorOptions opts, clock::Kind clock, WindowSink& sink);
  ~Collector();

  // One round: drain what is there, write finished windows. Returns the
  // number of records consumed (0: idle).
  uint64_t poll();
  // Whether every registered process has exited.
  bool all_finished();
  // Final drain; writes every window still open.
  void finish_all();
  // Registered processes still running (before finish_all: those it cuts off).
  uint32_t still_running();
  Totals totals();
  struct WindowProgress {
    bool begun = false;  // some process began window `index`
    bool open = false;   // some process has not had it written yet
  };
  WindowProgress window_progress(uint32_t index) const;

 private:
  void attach_new_processes();
  void attach(wire::ProcessSlot& slot);
  void abandon_pending();
  bool process_gone(ProcessCollector& p, size_t index);
  // work(i) for each process, on the pool's threads once there are two.
  void for_each_process(const std::function<void(size_t)>& work);

  Session& session_;
  CollectorOptions opts_;
  clock::Converter conv_;
  LockedWindowSink sink_;  // the processes' windows may end on several threads at once
  std::optional<DrainPool> pool_;
  std::vector<std::unique_ptr<ProcessCollector>> processes_;
  std::vector<wire::ProcessSlot*> slots_;  // each process's session slot, as processes_
  uint32_t slots_claimed_ = 0;             // slots below this were claimed by some process
  std::vector<uint32_t> pending_;          // claimed, neither attached nor given up yet
  uint32_t unattached_ = 0;                // given up: region unreadable, or registration never finished
  std::unordered_map<int32_t, int> pid_uses_;
  std::chrono::steady_clock::time_point last_resample_, last_liveness_;
};

}  // namespace ptprof::launcher
