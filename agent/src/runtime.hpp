// The agent's runtime: the one object that holds the agent's global state.
//
// Lifecycle: start() runs from the library constructor. Without
// PTPROF_SESSION in the environment it returns at once and the agent stays
// inert: every hook passes through and every API call is a no-op. With a
// session it maps the session, creates this process's region (string arena,
// thread table, rings), applies the schedule for step 0, and installs the
// fork handlers. A fork child gets its own region (after_fork_child); an exec
// starts over in the new image.
//
// Threads: each thread that records gets a ThreadState (thread_state.hpp),
// created on its first event and owned here; the thread reaches it through a
// thread_local pointer. The hot path touches only that ThreadState, the
// `recording_` flag and the clock kind. A thread's exit (a pthread key's
// destructor) retires its slot; once the launcher has drained it the slot and
// its ring go to the next new thread.
//
// Shared memory is reserved (fallocate) before it is used: the region's
// header when it is created, a thread's ring when the thread registers (a
// smaller ring, or none, when /dev/shm is short), the string arena as it
// grows. A store on the hot path therefore never faults. What a short
// /dev/shm cost is counted in the region's header.
//
// The session object PTPROF_SESSION names is checked (size, every header
// field) before use; anything off leaves the agent inert. The launcher holds
// a lock on it while it lives: an agent that finds the lock gone registers
// nothing more, and the first to notice removes the session's objects.
//
// Steps and windows: end_step() moves the schedule on; it is serialized by
// step_mu_ and publishes window boundaries in the region for the launcher.
// On demand, a thread of the agent's own (the trigger watcher, on_demand.cpp)
// sleeps on the session's trigger_seq and opens and closes windows that a
// trigger asked for by time (`--duration`), inside a step or with no steps.
#pragma once
#include <pthread.h>
#include <atomic>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cupti_consumer.hpp"
#include "native_stack.hpp"
#include "no_destructor.hpp"
#include "ptprof/clock.hpp"
#include "ptprof/config.hpp"
#include "ptprof/cuda_status.hpp"
#include "ptprof/schedule.hpp"
#include "ptprof/shm_abi.hpp"
#include "ptprof/string_arena.hpp"
#include "python_api.hpp"
#include "stack_capture.hpp"

namespace ptprof::agent {

struct ThreadState;

class Runtime {
 public:
  void start();
  void stop();  // process exit

  bool active() const { return active_.load(std::memory_order_acquire); }
  bool recording() const { return recording_.load(std::memory_order_relaxed); }
  clock::Kind clock_kind() const { return clock_kind_; }
  const Config& config() const { return *config_; }
  // What the current (or last) window records beyond operators: the run's
  // PTPROF_RECORD_SHAPES / PTPROF_PROFILE_MEMORY / PTPROF_WITH_STACK, or'ed
  // with what the trigger that opened it asked for (wire::kWindow* bits).
  uint32_t window_options() const { return window_options_.load(std::memory_order_relaxed); }
  bool record_shapes() const { return (window_options() & wire::kWindowShapes) != 0; }
  bool profile_memory() const { return (window_options() & wire::kWindowMemory) != 0; }
  bool with_stack() const { return (window_options() & wire::kWindowStack) != 0; }
  // What ops record of their call stack: PTPROF_WITH_STACK (Full) or
  // PTPROF_PYTHON_ATTRIBUTION at start, Full in a window whose trigger asked
  // for stacks. A runtime switch: ops begun later follow a change.
  StackMode stack_mode() const {
    if (window_options() & wire::kWindowStack) return StackMode::Full;
    return StackMode(stack_mode_.load(std::memory_order_relaxed));
  }
  void set_stack_mode(StackMode m) { stack_mode_.store(uint8_t(m), std::memory_order_relaxed); }
  // Full stacks include native frames (PTPROF_NATIVE_STACK, default 1).
  bool native_stack() const { return native_stack_; }
  PythonRuntime& python() { return *python_; }
  NativeStacks& native() { return *native_; }
  // Memory events are recorded in windows only (torch.profiler reports
  // memory in active steps only): a window open that profiles memory.
  bool memory_recording() const { return memory_recording_.load(std::memory_order_relaxed); }

  // Slow path of thread_state(): registers the calling thread. Null when the
  // agent is inert or the thread table is full.
  ThreadState* register_thread();
  void rename_thread(ThreadState* t, const char* name);

  // Interns `s` in this process's string arena; returns its id (0 when the
  // arena is full). `text` receives the arena's copy, stable for the process.
  uint32_t intern(const char* s, const char** text);

  // A step ended (ptprof_step, or a scope that PTPROF_STEP names).
  void end_step();
  // A user scope or range called `name` (may be null) ended on thread `t`,
  // which has already popped it.
  void scope_ended(ThreadState& t, const char* name);
  uint64_t current_step() const { return current_step_.load(std::memory_order_relaxed); }
  // The interned id of PTPROF_STEP's scope name (Named rule), interned once
  // per process.
  uint32_t named_step_id();

  // The torch bridge: loaded once libtorch is in the process.
  void maybe_load_torch_bridge();
  // torch's own profiler is being enabled on the calling thread
  // (torch_profiler_hooks.cpp): the bridge takes its memory reporter off
  // the thread's PROFILER_STATE slot, which torch wants empty.
  void torch_profiler_starting() {
    if (auto fn = bridge_step_aside_.load(std::memory_order_acquire)) fn();
  }

  // CUDA (PTPROF_ACTIVITIES has cuda): CUPTI is tried once CUDA is in the
  // process (checked after each library load), held only while windows record.
  void check_for_cuda() {
    if (active() && config_->activities.cuda) cupti_->check_for_cuda(recording());
  }
  CuptiConsumer& cupti() { return *cupti_; }
  bool cuda_correlating() const { return cupti_->correlating(); }
  // Publishes the CUDA status and its one-line reason for the launcher;
  // returns the reason's string id (0 when the arena refused it).
  uint32_t publish_cuda_status(wire::CudaStatus s, bool yielded, const char* message);

  // Fork handlers (pthread_atfork).
  void before_fork();
  void after_fork_parent();
  void after_fork_child();

  void count_lost_event();
  // The calling thread tried to record an event but has no thread state:
  // counted when the thread could not be given a slot or a ring.
  void note_unrecorded_event();
  // Pthread key destructor: the calling thread exits.
  void thread_exited(ThreadState* t);

  // cudaProfilerStart (start) or cudaProfilerStop was called: under
  // PTPROF_STEP=cudaProfilerApi each Start..Stop is one step, recorded as
  // the schedule says; nothing is recorded between a Stop and the next Start.
  void cuda_profiler_api(bool start);

  // The GPU activity protocol (shm_abi.hpp, BoundaryKind::GpuFlushed), for
  // the CUPTI consumer: set while it collects, so that the launcher holds
  // ended windows until gpu_flushed(window) says their records are all in
  // the rings. Neither may be called with step_mu_ held (from a callback of
  // end_step).
  void set_gpu_flush_protocol(bool on);
  void gpu_flushed(uint32_t window);
  // Called (on the thread that ended it, without step_mu_ held) after each
  // WindowEnd is published, and at exit for the window still open: where the
  // CUPTI consumer flushes CUPTI and then calls gpu_flushed(window).
  using WindowEndListener = void (*)(uint32_t window);
  void set_window_end_listener(WindowEndListener fn) { window_end_listener_.store(fn, std::memory_order_release); }
  // What one operator costs this process (cost_calibration.hpp), as the
  // torch bridge measured it; published for the launcher.
  void publish_op_cost(uint32_t ps);

 private:
  bool map_session(const char* name);
  bool create_region();
  void fail_region(wire::ProcessSlot& slot, int fd, const char* name, bool shm_short);
  bool launcher_alive() const;
  void launcher_died();
  // Reserves [offset, offset + bytes) of the region's object in /dev/shm.
  bool reserve_shm(uint64_t offset, uint64_t bytes) const;
  uint32_t claim_thread_slot();
  uint64_t reserve_ring(uint32_t slot);
  bool reserve_arena(uint64_t upto);
  void publish_boundary(wire::BoundaryKind kind, uint64_t ticks, uint32_t window);
  // Returns the index of the window it ended, if it ended one.
  std::optional<uint32_t> apply_step(uint64_t step, uint64_t ticks, bool first);
  // Publishes `t`'s boundaries at `ticks` and switches recording; `step`:
  // the step that begins at `ticks`, none when a window opens or ends by
  // time, inside a step. Caller holds step_mu_.
  std::optional<uint32_t> apply_transition(const StepTransition& t, uint64_t ticks, std::optional<uint64_t> step);
  // On demand (on_demand.cpp).
  StepTransition on_demand_transition(bool first);
  bool take_trigger(uint32_t seq, uint64_t now_ns, StepTransition& t);
  void start_trigger_watcher();
  static void* trigger_watcher_main(void*);
  void watch_triggers();
  // The bridge's switch (bridge_api.h: PTPROF_BRIDGE_*) for `recording` in
  // the current window.
  int bridge_mode(bool recording) const;
  void notify_window_end(std::optional<uint32_t> window);
  std::optional<uint32_t> move_capture(bool start);
  void set_bridge_recording(bool on);

  std::atomic<bool> active_{false};
  std::atomic<bool> recording_{false};
  clock::Kind clock_kind_ = clock::Kind::Monotonic;
  uint32_t run_options_ = 0;  // wire::kWindow* bits of PTPROF_RECORD_SHAPES, ...
  std::atomic<uint32_t> window_options_{0};
  std::atomic<bool> memory_recording_{false};
  std::atomic<uint8_t> stack_mode_{0};  // StackMode
  bool native_stack_ = true;
  NoDestructor<PythonRuntime> python_;
  NoDestructor<NativeStacks> native_;
  NoDestructor<Config> config_;

  void* session_map_ = nullptr;
  wire::SessionHeader* session_ = nullptr;
  int session_fd_ = -1;  // kept open: the launcher's lock on it says it is alive
  void* region_ = nullptr;
  size_t region_bytes_ = 0;
  int region_fd_ = -1;           // kept open to reserve parts of the region as they are needed
  uint64_t arena_reserved_ = 0;  // bytes of the string arena reserved so far
  wire::ProcessHeader* header_ = nullptr;

  struct InternedName {
    uint32_t id;
    const char* text;  // the arena's copy
  };
  // Heterogeneous lookup: finding a name allocates nothing.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::mutex intern_mu_;
  NoDestructor<std::unordered_map<std::string, InternedName, NameHash, std::equal_to<>>> interned_;
  std::optional<wire::StringArenaWriter> arena_;  // set with the region

  std::mutex threads_mu_;
  NoDestructor<std::vector<std::unique_ptr<ThreadState>>> threads_;  // by slot
  NoDestructor<std::vector<uint64_t>> ring_bytes_;                   // by slot: reserved ring size, 0: none
  pthread_key_t thread_key_ = 0;
  bool thread_key_ok_ = false;

  std::mutex step_mu_;
  uint64_t step_ = 0;
  std::atomic<uint64_t> current_step_{0};                 // step_, readable without step_mu_
  static constexpr uint32_t kNoNamedStepId = UINT32_MAX;  // the arena refused the name
  std::atomic<uint32_t> named_step_id_{0};
  WindowState windows_;
  // On demand (PTPROF_ON_DEMAND): the last trigger request seen, and what is
  // left of the window it opened (steps, or a deadline on the monotonic
  // clock). Guarded by step_mu_.
  uint32_t trigger_seen_ = 0;
  uint64_t trigger_steps_left_ = 0;
  uint64_t trigger_deadline_ns_ = 0;
  bool stopped_ = false;  // the process is exiting: the watcher opens no window; guarded by step_mu_
  int bridge_mode_ = 0;   // last mode given to the bridge; guarded by step_mu_

  std::atomic<WindowEndListener> window_end_listener_{nullptr};
  bool capturing_ = false;  // cudaProfilerApi: between a Start and its Stop
  uint64_t captures_ = 0;   // cudaProfilerApi: capture ranges begun so far

  NoDestructor<CuptiConsumer> cupti_;

  // cost_calibration.hpp, in picoseconds; kept for a fork child's region.
  std::atomic<uint32_t> record_cost_ps_{0};
  std::atomic<uint32_t> op_cost_ps_{0};
  std::atomic<int> bridge_state_{0};  // 0 not loaded, 1 loading, 2 loaded, 3 failed
  void (*bridge_set_recording_)(int) = nullptr;
  std::atomic<void (*)()> bridge_step_aside_{nullptr};
};

// The single instance. Trivially destructible (see NoDestructor), and inert
// until start(): static storage is zero before any initializer runs, so a hook
// that runs first sees active() == false.
extern Runtime g_runtime;

}  // namespace ptprof::agent
