// The agent's windows: which steps record, the boundaries the launcher
// splits the rings by, and the switches that follow them (recording, the
// torch bridge's callbacks, CUPTI, memory events).
//
// Three things move the windows, and each goes through a pure decision that
// returns a StepTransition (ptprof/schedule.hpp) and then the one apply step
// (apply), which publishes the boundaries and flips every switch:
//   - a step boundary (ptprof_step, a scope PTPROF_STEP names):
//     step_transition, or on_demand_transition under PTPROF_ON_DEMAND;
//   - cudaProfilerStart/Stop under PTPROF_STEP=cudaProfilerApi:
//     capture_transition;
//   - the trigger watcher (on_demand.cpp), a thread of the agent's own that
//     sleeps on the session's trigger_seq and opens and closes windows that a
//     trigger asked for by time, inside a step or with no steps;
//   - in a child process under a schedule, until it ends a step of its own,
//     the window follower (window_follower.cpp), a thread of the agent's own
//     that sleeps on its nearest ancestor's window word and opens and ends
//     the same windows (follow_transition): a DataLoader worker records
//     while its parent's window is open.
// All of them run under step_mu_. A window's end is then told to the
// window listener (window_listener.hpp: the CUPTI consumer, which
// synchronizes the device and flushes CUPTI) without step_mu_ held, and the
// listener answers with gpu_flushed(window).
//
// The flags the hot path reads (recording, the window's options, memory
// recording, the current step) are atomics read without the lock.
#pragma once
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>

#include "ptprof/clock.hpp"
#include "ptprof/config.hpp"
#include "ptprof/schedule.hpp"
#include "ptprof/shm_abi.hpp"
#include "window/step_cost_meter.hpp"
#include "window/window_listener.hpp"

namespace ptprof::agent {

class WindowController {
 public:
  // Read on the hot path.
  bool recording() const { return recording_.load(std::memory_order_relaxed); }
  // What the current (or last) window records beyond operators: the run's
  // PTPROF_RECORD_SHAPES / PTPROF_PROFILE_MEMORY / PTPROF_WITH_STACK, or'ed
  // with what the trigger that opened it asked for (wire::kWindow* bits).
  uint32_t window_options() const { return window_options_.load(std::memory_order_relaxed); }
  // Memory events are recorded in windows only (torch.profiler reports
  // memory in active steps only): a window open that profiles memory.
  bool memory_recording() const { return memory_recording_.load(std::memory_order_relaxed); }
  uint64_t current_step() const { return current_step_.load(std::memory_order_relaxed); }

  // Before the first region: the run's configuration and the GPU side the
  // windows switch (both kept by reference).
  void configure(const Config& config, WindowListener& gpu);
  // The region boundaries go to: the process's, then a fork child's own.
  // `slot`: the process's slot in the session, where its window word is.
  void attach(wire::SessionHeader& session, wire::ProcessSlot& slot, wire::ProcessHeader& header, clock::Kind clock);
  // Before begin() or continue_in_child(): the session slot of the nearest
  // ancestor in the session (ancestor_slot.hpp; null: none), whose windows
  // this process follows under a schedule until it ends a step of its own.
  void follow(wire::ProcessSlot* ancestor);
  // The process is registered: step 0 begins (under cudaProfilerApi nothing
  // records before the first capture range), and the trigger watcher starts.
  void begin();

  // A step ended. Ignored under cudaProfilerApi, where only capture ranges
  // move the steps.
  void end_step();
  // cudaProfilerStart (start) or cudaProfilerStop was called: under
  // PTPROF_STEP=cudaProfilerApi each Start..Stop is one step, recorded as
  // the schedule says; nothing is recorded between a Stop and the next Start.
  void cuda_profiler_api(bool start);
  // Step ends folded by the Python bootstrap (runtime/python_step_folding.cpp):
  // `count` steps ended where foldable_steps said they change nothing but
  // the step's number.
  void fold_steps(uint64_t count);
  // How many of the next step ends change nothing but the step's number
  // (at most `most`; none in a window, and under a schedule not the last
  // `metered` before one; runtime/python_step_folding.cpp).
  uint32_t foldable_steps(uint32_t most, uint32_t metered);
  // 1 from a trigger's arrival to the next step end the agent sees: the
  // bootstrap folds no end while it is set.
  const std::atomic<uint32_t>& fold_wake() const { return fold_wake_; }

  // The torch bridge is loaded: `set_recording` (bridge_api.h) is its
  // switch, from now on given the current window's mode.
  void install_bridge_switch(void (*set_recording)(int));
  // Whether the bridge watches the user scopes outside windows
  // (PTPROF_BRIDGE_SCOPES): yes until the Python bootstrap reports the
  // scopes that end steps itself (Runtime::python_reports_steps); never for
  // the manual and cudaProfilerApi rules (configure).
  void set_scopes_wanted(bool on);

  // The GPU activity protocol (shm_abi.hpp, BoundaryKind::GpuFlushed), for
  // the window listener: set while it collects, so that the launcher holds
  // ended windows until gpu_flushed(window) says their records are all in
  // the rings. Neither may be called with step_mu_ held (from the listener).
  void set_gpu_flush_protocol(bool on);
  void gpu_flushed(uint32_t window);

  // Called (any thread, step_mu_ held) each time recording starts or stops:
  // the Python bootstrap's flag (cpython/python_window_flag.hpp).
  using RecordingListener = void (*)(bool recording);
  void set_recording_listener(RecordingListener fn) { recording_listener_.store(fn, std::memory_order_release); }

  // Process exit: the window still open ends with the process (the
  // listener flushes it); the trigger watcher opens no more.
  void stop();
  // Fork: the step lock is held across it, so the child copies a state no
  // transition is half-way through.
  void lock_for_fork() { step_mu_.lock(); }
  void unlock_after_fork() { step_mu_.unlock(); }
  // In a fork child, once it has a region of its own (attach): a window open
  // in the parent goes on in the child from the fork; the child gets its own
  // trigger watcher.
  void continue_in_child();

 private:
  // Moves the schedule to `step`, which begins at `ticks`. Caller holds step_mu_.
  std::optional<uint32_t> apply_step(uint64_t step, uint64_t ticks, bool first);
  // The one apply step: publishes `t`'s boundaries at `ticks` and switches
  // recording, the bridge, CUPTI and memory events. Returns the window it
  // ended, if it ended one. Caller holds step_mu_.
  std::optional<uint32_t> apply(const StepTransition& t, uint64_t ticks);
  void notify_window_end(std::optional<uint32_t> window);
  // The step that ends now, for the cost measured on the process's own
  // steps: fed to meter_ (on the thread ending it, before the schedule
  // moves), whose figures go to the process header. Caller holds step_mu_.
  void measure_step_end();
  // Publishes the window state for this process's children to follow (its
  // slot's window word; also ProcessHeader::window_state) and wakes them
  // when it changed.
  void publish_window_state();
  void publish_window_word(uint32_t word);

  // Following the ancestor's windows (window_follower.cpp). Callers hold
  // step_mu_ (but the thread's own).
  bool follows() const;
  void start_follower();
  static void* follower_main(void* self);
  void follow_ancestor();
  // This process ended a step of its own: its followed window, if open,
  // ends at `ticks`, and the process runs its own schedule from here.
  std::optional<uint32_t> stop_following(uint64_t ticks);

  // The bridge's mode (bridge_api.h: PTPROF_BRIDGE_*) for `recording` in the
  // current window; the switch is called only when the mode changes.
  int bridge_mode(bool recording) const;
  void set_bridge_recording(bool on);

  // On demand (on_demand.cpp). Callers hold step_mu_ (but the thread's own).
  StepTransition on_demand_transition(uint64_t step, bool first);
  bool take_trigger(uint32_t seq, uint64_t now_ns, StepTransition& t);
  StepTransition trigger_by_time(uint32_t seq, uint64_t now_ns);
  void start_trigger_watcher();
  static void* trigger_watcher_main(void* self);
  void watch_triggers();

  const Config* config_ = nullptr;
  WindowListener* gpu_ = nullptr;
  wire::SessionHeader* session_ = nullptr;
  wire::ProcessHeader* header_ = nullptr;
  clock::Kind clock_kind_ = clock::Kind::Monotonic;
  uint32_t run_options_ = 0;  // wire::kWindow* bits of PTPROF_RECORD_SHAPES, ...

  std::atomic<bool> recording_{false};
  std::atomic<uint32_t> window_options_{0};
  std::atomic<bool> memory_recording_{false};
  std::atomic<uint64_t> current_step_{0};  // step_, readable without step_mu_

  // Guarded by step_mu_ from here on.
  std::mutex step_mu_;
  uint64_t step_ = 0;
  WindowState windows_;
  CaptureState capture_;  // cudaProfilerApi
  // On demand (PTPROF_ON_DEMAND): the last trigger request seen, and what is
  // left of the window it opened (steps, or a deadline on the monotonic
  // clock).
  uint32_t trigger_seen_ = 0;
  uint64_t trigger_steps_left_ = 0;
  uint64_t trigger_deadline_ns_ = 0;
  bool stopped_ = false;                   // the process is exiting: the watcher opens no window
  wire::ProcessSlot* slot_ = nullptr;      // attach(): this process's
  wire::ProcessSlot* ancestor_ = nullptr;  // follow()
  bool following_ = false;                 // the windows are the ancestor's: no step of this process's has ended
  void (*bridge_set_recording_)(int) = nullptr;
  int bridge_mode_ = 0;        // last mode given to the bridge
  bool scopes_wanted_ = true;  // configure, set_scopes_wanted
  StepCostMeter meter_;
  bool step_began_recording_ = false;  // whether the current step was recording when it began
  bool folded_last_ = false;           // the last step end handed folded ones over
  uint32_t reported_unrecorded_ = 0;   // step ends reported alone since the last window
  std::atomic<uint32_t> fold_wake_{0};

  std::atomic<RecordingListener> recording_listener_{nullptr};
};

}  // namespace ptprof::agent
