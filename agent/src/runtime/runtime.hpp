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
// Threads: each thread that records gets a ThreadState (record/thread_state.hpp),
// created on its first event and owned here; the thread reaches it through a
// thread_local pointer. The hot path touches only that ThreadState, the
// window's recording flag and the clock kind. A thread's exit (a pthread
// key's destructor) retires its slot; once the launcher has drained it the
// slot and its ring go to the next new thread.
//
// Shared memory is reserved (shm_reservation.hpp) before it is used: the region's
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
// Steps and windows are the window controller's (window/window_controller.hpp):
// the schedule, the on-demand triggers and cudaProfilerApi capture ranges
// move them; Runtime hands it the region to publish boundaries in and
// forwards the hooks' calls while the agent is active.
#pragma once
#include <pthread.h>
#include <sys/types.h>
#include <atomic>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/no_destructor.hpp"
#include "cpython/process_role.hpp"
#include "cpython/python_api.hpp"
#include "cpython/python_window_flag.hpp"
#include "cupti/cupti_consumer.hpp"
#include "ptprof/clock.hpp"
#include "ptprof/config.hpp"
#include "ptprof/cuda_status.hpp"
#include "ptprof/schedule.hpp"
#include "ptprof/shm_abi.hpp"
#include "ptprof/string_arena.hpp"
#include "ptprof/string_hash.hpp"
#include "runtime/shm_reservation.hpp"
#include "stacks/native_stack.hpp"
#include "stacks/stack_capture.hpp"
#include "window/window_controller.hpp"

namespace ptprof::agent {

struct ThreadState;

// Where the torch bridge is (torch_bridge_loader.cpp).
enum class BridgeState : uint8_t { NotLoaded, Loading, Loaded, Failed };

class Runtime {
 public:
  void start();
  void stop();  // process exit

  bool active() const { return active_.load(std::memory_order_acquire); }
  clock::Kind clock_kind() const { return clock_kind_; }
  const Config& config() const { return *config_; }

  WindowController& windows() { return windows_; }
  // The window's switches, read on the hot path (window/window_controller.hpp).
  bool recording() const { return windows_.recording(); }
  uint32_t window_options() const { return windows_.window_options(); }
  bool record_shapes() const { return (window_options() & wire::kWindowShapes) != 0; }
  bool profile_memory() const { return (window_options() & wire::kWindowMemory) != 0; }
  bool with_stack() const { return (window_options() & wire::kWindowStack) != 0; }
  bool memory_recording() const { return windows_.memory_recording(); }
  uint64_t current_step() const { return windows_.current_step(); }
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
  // Where operators' stacks come from (stacks/stack_capture.hpp).
  StackSources stack_sources() { return {*python_, *native_, native_stack_}; }

  // Slow path of thread_state(): registers the calling thread. Null when the
  // agent is inert or the thread table is full.
  ThreadState* register_thread();
  void rename_thread(ThreadState* t, const char* name);

  // Interns `s` in this process's string arena; returns its id (0 when the
  // arena is full). `text` receives the arena's copy, stable for the process.
  uint32_t intern(const char* s, const char** text);

  // A step ended (ptprof_step, or a scope that PTPROF_STEP names).
  void end_step() {
    if (active()) windows_.end_step();
  }
  // A user scope or range called `name` (may be null) ended on thread `t`,
  // which has already popped it.
  void scope_ended(ThreadState& t, const char* name);
  // An operator called `name` ended on thread `t` (only under a rule that
  // names an operator: StepRule::watches_ops).
  void op_ended(ThreadState& t, const char* name);
  // The model's outermost forward ended on the calling thread (the Python
  // bootstrap reports it under PTPROF_STEP=forward or auto).
  void forward_ended();
  // The Python bootstrap reports, from now on, the ends of the scopes that
  // end steps under the optimizer, DataLoader, auto and forward rules
  // (the optimizer's step, the DataLoader iterator's __next__):
  // the torch bridge then registers no callback outside windows (any
  // registered callback costs every operator). Returns whether this run's
  // rule takes them (the bootstrap drops its hooks otherwise).
  bool python_reports_steps();
  // `count` of them ended on the calling thread, reported by the bootstrap:
  // the last one now, right after the scope's end (a report inside a scope
  // begun in the step waits for its end: ThreadState::take_step_end); the
  // others earlier, folded by the bootstrap where the previous call said
  // they could be. Returns how many of the next ends of the same kind the
  // bootstrap may fold (python_step_folding.cpp): ends that change nothing
  // but the step's number and the counts, so that a step outside windows
  // costs no call into the agent.
  uint32_t python_scopes_ended(const char* name, uint32_t count);
  // Set (to 1) when the bootstrap must report the next end at once instead
  // of folding it: a trigger arrived (WindowController::fold_wake).
  const std::atomic<uint32_t>& python_fold_wake() const { return windows_.fold_wake(); }
  // The Python bootstrap's switch for torch's profiler flag
  // (cpython/python_window_flag.hpp); returns whether a window records now, or -1
  // when the agent is inert or the process has no CPython to call back.
  int install_python_window_flag(PythonWindowFlag::Callback fn);
  // The Python bootstrap found this process running a DataLoader's worker
  // loop as worker `index`: a 'spawn' worker, which the fork-time frames
  // could not tell (cpython/process_role.hpp). A role already known stays.
  void dataloader_worker_started(int32_t index);
  // The Python bootstrap saw this process initialise its default process
  // group as `rank` of `world_size` (what torch.distributed says after
  // init_process_group): published for the launcher, which names the files
  // and writes the process record with them. Out-of-range values are ignored.
  void distributed_initialised(int32_t rank, int32_t world_size);
  // The interned id of PTPROF_STEP's scope name (Named rule), interned once
  // per process.
  uint32_t named_step_id();
  // cudaProfilerStart (start) or cudaProfilerStop was called (the capture
  // ranges of PTPROF_STEP=cudaProfilerApi).
  void cuda_profiler_api(bool start) {
    if (active()) windows_.cuda_profiler_api(start);
  }

  // The torch bridge: loaded once libtorch is in the process.
  void maybe_load_torch_bridge();
  // Whether this process is the run's first to say the run-wide warning
  // `bit` (wire::SaidOnce): every process of a run meets the same cache and
  // torch, and the user needs the line once, not once per process.
  bool first_to_say(uint32_t bit) { return !session_ || wire::claim_said_once(*session_, bit); }
  // torch's own profiler is being enabled on the calling thread
  // (api/torch_profiler_hooks.cpp): the bridge takes its memory reporter off
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

  // What one operator costs this process (record/cost_calibration.hpp), as the
  // torch bridge measured it; published for the launcher.
  void publish_op_cost(uint32_t ps);

 private:
  // The session and this process's region (runtime_region.cpp).
  bool map_session(const char* name);
  bool create_region();
  // The region's object: created under a fresh name announced in `slot`,
  // sized and mapped. Null, with the slot marked failed, when it cannot be.
  void* open_region(wire::ProcessSlot& slot, const wire::RegionLayout& layout);
  wire::ProcessHeader* init_region_header(void* region, uint64_t ring_bytes, const wire::RegionLayout& layout);
  void fail_region(wire::ProcessSlot& slot, int fd, const char* name, bool shm_short);
  bool same_session(int fd) const;
  bool launcher_alive() const;
  bool sees_session_shm() const;
  void launcher_died();
  // Reserves [offset, offset + bytes) of the region's object in /dev/shm.
  bool reserve_shm(uint64_t offset, uint64_t bytes) { return reservation_.reserve(offset, bytes); }
  uint32_t claim_thread_slot();
  uint64_t reserve_ring(uint32_t slot);
  bool reserve_arena(uint64_t upto);

  std::atomic<bool> active_{false};
  clock::Kind clock_kind_ = clock::Kind::Monotonic;
  std::atomic<uint8_t> stack_mode_{0};  // StackMode
  bool native_stack_ = true;
  NoDestructor<PythonRuntime> python_;
  NoDestructor<NativeStacks> native_;
  NoDestructor<Config> config_;

  void* session_map_ = nullptr;
  wire::SessionHeader* session_ = nullptr;
  // No descriptor is kept (the program may close and reuse it): the launcher's
  // lock is tested on the object opened again by name, if it is still this one.
  char session_name_[sizeof(wire::SessionHeader::name) + 1] = {};
  dev_t session_dev_ = 0;
  ino_t session_ino_ = 0;
  void* region_ = nullptr;
  size_t region_bytes_ = 0;
  ShmReservation reservation_;   // parts of the region reserved as they are needed
  uint64_t arena_reserved_ = 0;  // bytes of the string arena reserved so far
  wire::ProcessHeader* header_ = nullptr;
  // This process's slot in the session, and the nearest ancestor's
  // (window/ancestor_slot.hpp), whose windows this process follows under a
  // schedule (window/window_controller.hpp: follow).
  wire::ProcessSlot* slot_ = nullptr;
  void find_ancestor();
  // This process's role (cpython/process_role.hpp), and the one the next fork's
  // child gets (set in the prepare handler; the child's copy becomes its own).
  ProcessRoleInfo role_;
  ProcessRoleInfo fork_role_;
  // Whether a scope called `name` ends a step; counts what some rule would
  // end a step at, for the run's summary (`times` ends of it).
  bool step_ends_at(std::string_view name, uint32_t times = 1);
  // python_scopes_ended's answer: how many ends of the optimizer's
  // (`optimizer`) or the DataLoader's kind may be folded.
  uint32_t foldable_python_ends(bool optimizer);
  // Under `auto`: whether a step end of `kind` ends a step, choosing the rule
  // when none was chosen yet (Optimizer always takes over).
  bool auto_chooses(StepRule::Kind kind);

  struct InternedName {
    uint32_t id;
    const char* text;  // the arena's copy
  };
  std::mutex intern_mu_;
  NoDestructor<StringMap<InternedName>> interned_;  // finding a name allocates nothing
  std::optional<wire::StringArenaWriter> arena_;    // set with the region

  std::mutex threads_mu_;
  NoDestructor<std::vector<std::unique_ptr<ThreadState>>> threads_;  // by slot
  NoDestructor<std::vector<uint64_t>> ring_bytes_;                   // by slot: reserved ring size, 0: none
  pthread_key_t thread_key_ = 0;
  bool thread_key_ok_ = false;

  static constexpr uint32_t kNoNamedStepId = UINT32_MAX;  // the arena refused the name
  std::atomic<uint32_t> named_step_id_{0};
  WindowController windows_;
  PythonWindowFlag python_window_flag_;
  std::atomic<bool> python_steps_{false};  // python_reports_steps()

  NoDestructor<CuptiConsumer> cupti_;

  // record/cost_calibration.hpp, in picoseconds; kept for a fork child's region.
  std::atomic<uint32_t> record_cost_ps_{0};
  std::atomic<uint32_t> op_cost_ps_{0};
  std::atomic<BridgeState> bridge_state_{BridgeState::NotLoaded};
  std::atomic<void (*)()> bridge_step_aside_{nullptr};
};

// The single instance. Trivially destructible (see NoDestructor), and inert
// until start(): static storage is zero before any initializer runs, so a hook
// that runs first sees active() == false.
extern Runtime g_runtime;

}  // namespace ptprof::agent
