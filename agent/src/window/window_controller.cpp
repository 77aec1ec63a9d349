#include "window/window_controller.hpp"

#include <ctime>

#include "base/agent_thread.hpp"
#include "ptprof/bridge_api.h"
#include "ptprof/check.hpp"
#include "record/thread_state.hpp"
#include "window/ancestor_slot.hpp"
#include "window/boundary_publisher.hpp"

namespace ptprof::agent {

static_assert(std::is_trivially_destructible_v<WindowController>, "hooks run during static destruction");

void WindowController::configure(const Config& config, WindowListener& gpu) {
  config_ = &config;
  gpu_ = &gpu;
  run_options_ = (config.record_shapes ? wire::kWindowShapes : 0) | (config.profile_memory ? wire::kWindowMemory : 0) |
                 (config.with_stack ? wire::kWindowStack : 0);
  window_options_.store(run_options_, std::memory_order_relaxed);
  // Steps that only ptprof.step() or cudaProfilerStart/Stop end: no user
  // scope ends one, so outside windows the bridge registers nothing at all
  // (a user-scope watcher alone costs every operator: bench/registered_callbacks.py).
  scopes_wanted_ = config.step.kind != StepRule::Kind::Manual && config.step.kind != StepRule::Kind::CudaProfilerApi;
}

void WindowController::attach(wire::SessionHeader& session, wire::ProcessSlot& slot, wire::ProcessHeader& header,
                              clock::Kind clock) {
  session_ = &session;
  slot_ = &slot;
  header_ = &header;
  clock_kind_ = clock;
}

void WindowController::begin() {
  // A child started by exec (spawn, a subprocess, a rank) is in its
  // ancestor's window, if one is open, until its first step of its own;
  // unless the schedule records step 0 (no wait, warmup or skip_first),
  // which is then its own, as a rank's first step under torchrun.
  if (follows() && !Schedule::records(config_->schedule.action(0))) {
    // Its first transition here, before the program runs: a child spawned
    // inside the ancestor's window records from its start.
    std::optional<uint32_t> ended;
    {
      std::lock_guard lock(step_mu_);
      following_ = true;
      header_->follows_pid.store(ancestor_->pid, std::memory_order_relaxed);
      const StepTransition t =
          follow_transition(windows_, slot_window_word(*ancestor_).load(std::memory_order_acquire));
      if (t.begin_window) ended = apply(t, clock::ticks_ordered(clock_kind_));
    }
    notify_window_end(ended);
    start_follower();
  } else if (config_->step.kind != StepRule::Kind::CudaProfilerApi) {
    const uint64_t t = clock::ticks_ordered(clock_kind_);
    std::lock_guard lock(step_mu_);
    apply_step(0, t, /*first=*/true);
    step_began_recording_ = recording();
  }
  if (config_->on_demand) start_trigger_watcher();
}

std::optional<uint32_t> WindowController::apply_step(uint64_t step, uint64_t ticks, bool first) {
  const StepTransition t = config_->on_demand ? on_demand_transition(step, first)
                                              : step_transition(config_->schedule, windows_, step_, step, first);
  return apply(t, ticks);
}

std::optional<uint32_t> WindowController::apply(const StepTransition& t, uint64_t ticks) {
  // A transition ends only the window that is open and begins one only
  // when none is left open.
  PTPROF_DCHECK(!t.end_window || windows_.in_window);
  PTPROF_DCHECK(!t.begin_window || (t.after.in_window && (t.end_window || !windows_.in_window)));
  std::optional<uint32_t> ended;
  {
    BoundaryPublisher boundaries(*header_);
    if (t.end_window) {
      boundaries.publish(wire::BoundaryKind::WindowEnd, ticks, windows_.window, step_);
      ended = windows_.window;
    }
    if (t.step) {
      step_ = *t.step;
      current_step_.store(*t.step, std::memory_order_relaxed);
      header_->steps_ended.store(*t.step, std::memory_order_relaxed);
    }
    // A window open from the start of the region takes everything in it:
    // tick 0, so that no event is lost to a clock read on another core that
    // runs a little behind this one.
    if (t.begin_window)
      boundaries.publish(wire::BoundaryKind::WindowBegin, t.begin_at_zero ? 0 : ticks, t.after.window, step_);
    windows_ = t.after;
  }
  publish_window_state();
  // Between a capture range's Stop and the next Start a window may stay
  // open while nothing records: memory follows both.
  const bool memory = t.recording && t.after.in_window && (window_options() & wire::kWindowMemory) != 0;
  memory_recording_.store(memory, std::memory_order_relaxed);
  // The bridge is switched before the flag is published (release): whoever
  // sees recording on (ptprof_recording) sees torch's callback on too.
  const bool was = recording_.load(std::memory_order_relaxed);
  set_bridge_recording(t.recording);  // also when only the window's options changed
  recording_.store(t.recording, std::memory_order_release);
  if (t.recording != was) {
    gpu_->recording_changed(t.recording);
    if (RecordingListener fn = recording_listener_.load(std::memory_order_acquire)) fn(t.recording);
  }
  // A window that opens inside a step (by time) has no ProfilerStep span for
  // that step: it would hold only the step's tail.
  if (t.recording && t.step) {
    if (ThreadState* th = thread_state()) th->emit_instant(wire::RecordType::Step, uint32_t(*t.step), ticks);
  }
  return ended;
}

void WindowController::notify_window_end(std::optional<uint32_t> window) {
  if (window) gpu_->window_ended(*window);
}

void WindowController::end_step() {
  if (config_->step.kind == StepRule::Kind::CudaProfilerApi) return;
  gpu_->step_ending();
  std::optional<uint32_t> ended;
  {
    std::lock_guard lock(step_mu_);
    fold_wake_.store(0, std::memory_order_relaxed);  // before the trigger is read (apply_step)
    measure_step_end();
    const uint64_t ticks = clock::ticks_ordered(clock_kind_);
    if (following_) ended = stop_following(ticks);
    if (const auto own = apply_step(step_ + 1, ticks, /*first=*/false)) ended = own;
    step_began_recording_ = recording();
  }
  notify_window_end(ended);
}

void WindowController::measure_step_end() {
  // The thread's own record count: a thread the agent does not know (or one
  // inside the agent) gives no sample, and the next step starts the count.
  const ThreadState* t = detail::tls_thread;
  timespec cpu{};
  if (!t || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) != 0) {
    meter_.step_ended(step_, nullptr, 0, 0, step_began_recording_, recording());
    return;
  }
  meter_.step_ended(step_, t, uint64_t(cpu.tv_sec) * 1'000'000'000u + uint64_t(cpu.tv_nsec), t->ops_recorded,
                    step_began_recording_, recording());
  const std::optional<StepCostMeter::Figures> f = meter_.figures();
  if (!f || !header_) return;
  header_->step_cost_ops.store(f->ops, std::memory_order_relaxed);
  header_->step_cost_added_ns.store(f->added_ns, std::memory_order_relaxed);
  header_->step_cost_unrecorded_ns.store(f->unrecorded_ns, std::memory_order_relaxed);
  header_->step_cost_unrecorded_steps.store(f->unrecorded_steps, std::memory_order_relaxed);
  header_->step_cost_pairs.store(f->pairs, std::memory_order_release);
}

void WindowController::cuda_profiler_api(bool start) {
  if (config_->step.kind != StepRule::Kind::CudaProfilerApi) return;
  gpu_->step_ending();
  std::optional<uint32_t> ended;
  {
    std::lock_guard lock(step_mu_);
    const std::optional<CaptureTransition> c = capture_transition(config_->schedule, windows_, capture_, start);
    if (c) {
      capture_ = c->after;
      ended = apply(c->step, clock::ticks_ordered(clock_kind_));
    }
  }
  notify_window_end(ended);
}

int WindowController::bridge_mode(bool recording) const {
  if (!recording) return scopes_wanted_ ? PTPROF_BRIDGE_SCOPES : 0;
  const uint32_t options = window_options();
  return PTPROF_BRIDGE_OPS | ((options & wire::kWindowShapes) != 0 ? PTPROF_BRIDGE_SHAPES : 0) |
         ((options & wire::kWindowMemory) != 0 ? PTPROF_BRIDGE_MEMORY : 0);
}

// Caller holds step_mu_.
void WindowController::set_bridge_recording(bool on) {
  const int mode = bridge_mode(on);
  if (!bridge_set_recording_ || mode == bridge_mode_) return;
  bridge_mode_ = mode;
  bridge_set_recording_(mode);
}

void WindowController::install_bridge_switch(void (*set_recording)(int)) {
  // Under step_mu_, so that a concurrent step change cannot miss it.
  std::lock_guard lock(step_mu_);
  bridge_set_recording_ = set_recording;
  bridge_mode_ = -1;  // whatever the bridge's init chose: say what this step wants
  set_bridge_recording(recording());
  // No operator can run before torch is loaded: a first step still in
  // progress restarts here, so that it does not hold the import of torch.
  if (step_ == 0 && recording() && !following_) {
    if (ThreadState* t = thread_state()) t->emit_instant(wire::RecordType::Step, 0, t->now());
  }
}

void WindowController::set_scopes_wanted(bool on) {
  std::lock_guard lock(step_mu_);
  scopes_wanted_ = on;
  set_bridge_recording(recording());
}

void WindowController::publish_window_state() { publish_window_word(window_word(windows_)); }

void WindowController::publish_window_word(uint32_t word) {
  header_->window_state.store(word, std::memory_order_relaxed);
  if (slot_window_word(*slot_).exchange(word, std::memory_order_release) != word) futex_wake_shared(&slot_->reserved);
}

void WindowController::set_gpu_flush_protocol(bool on) {
  if (header_) header_->gpu_flush.store(on ? 1 : 0, std::memory_order_release);
}

void WindowController::gpu_flushed(uint32_t window) {
  std::lock_guard lock(step_mu_);
  BoundaryPublisher(*header_).publish(wire::BoundaryKind::GpuFlushed, clock::ticks_ordered(clock_kind_), window, step_);
}

void WindowController::stop() {
  std::optional<uint32_t> open;
  {
    std::lock_guard lock(step_mu_);
    stopped_ = true;
    if (windows_.in_window) open = windows_.window;
    // The children that follow this process end its window with it.
    const uint32_t next = windows_.in_window ? windows_.window + 1 : windows_.window;
    publish_window_word(window_word(WindowState{next, false}));
  }
  notify_window_end(open);
}

void WindowController::continue_in_child() {
  {
    std::lock_guard lock(step_mu_);
    if (windows_.in_window) {
      // Recording continues in the child: its window starts at the fork, and
      // takes everything in the child's region. No step span: a child has
      // no steps of its own (its parent's step goes on without it).
      BoundaryPublisher(*header_).publish(wire::BoundaryKind::WindowBegin, 0, windows_.window, step_);
    }
    publish_window_state();
    // The parent is this child's ancestor now (follow()); a parent that
    // followed its own passes the following on only through its windows.
    following_ = follows();
    header_->follows_pid.store(following_ ? ancestor_->pid : 0, std::memory_order_relaxed);
  }
  if (following_) start_follower();
  if (config_->on_demand) start_trigger_watcher();  // the parent's is not in this process
}

}  // namespace ptprof::agent
