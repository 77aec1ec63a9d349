// On-demand capture in the agent (PTPROF_ON_DEMAND, `ptprof trigger`): the
// window controller's trigger decisions and its watcher thread.
//
// A request (ptprof/shm_abi.hpp: trigger_*) names the processes, a length in steps
// or in time, and options (shapes, memory, stacks) for its window alone.
// `--steps N` counts step boundaries, so its window opens and closes at them
// (on_demand_transition, from end_step). `--duration T` needs no boundary:
// the trigger watcher, a thread of the agent's own that sleeps on a futex on
// the session's trigger_seq, opens the window as soon as the request arrives
// and closes it when the time has passed, in the middle of a step or in a job
// that has no steps at all (trigger_by_time). The watcher never records an
// event; it applies its decisions under step_mu_, as a step boundary does.
#include "base/agent_thread.hpp"
#include "base/log.hpp"
#include "ptprof/trigger_request.hpp"
#include "window/window_controller.hpp"

namespace ptprof::agent {

void* WindowController::trigger_watcher_main(void* self) {
  static_cast<WindowController*>(self)->watch_triggers();
  return nullptr;
}

// Request `seq` has been seen here; if it names this process, `t` opens its
// window (window seq - 1) with the request's options. Caller holds step_mu_.
bool WindowController::take_trigger(uint32_t seq, uint64_t now_ns, StepTransition& t) {
  trigger_seen_ = seq;
  const wire::TriggerRequest r = wire::read_trigger_request(*session_, seq, header_->pid, now_ns);
  if (!r.applies) return false;
  t.begin_window = true;
  t.after.in_window = true;
  t.after.window = r.window;
  trigger_steps_left_ = r.steps;
  trigger_deadline_ns_ = r.deadline_ns;
  window_options_.store(run_options_ | r.options, std::memory_order_relaxed);
  return true;
}

// Step boundary `step`, on demand: no window until `ptprof trigger` moves the
// session's trigger_seq; then, from this boundary, the next trigger_steps
// steps are window trigger_seq - 1 (a request by time that the watcher has
// not taken yet opens here too, and ends here if its time has passed). A
// process that registers later ignores the requests made before it. Caller
// holds step_mu_.
StepTransition WindowController::on_demand_transition(uint64_t step, bool first) {
  StepTransition t;
  t.after = windows_;
  t.step = step;
  const uint64_t now = clock::monotonic_ns();
  const uint32_t seq = session_->trigger_seq.load(std::memory_order_acquire);
  if (first) trigger_seen_ = seq;
  if (windows_.in_window) {
    const bool ended = trigger_steps_left_ ? --trigger_steps_left_ == 0 : now >= trigger_deadline_ns_;
    if (ended) {
      t.end_window = true;
      t.after.in_window = false;
    }
  }
  if (!t.after.in_window && seq != trigger_seen_) take_trigger(seq, now, t);
  t.recording = t.after.in_window;
  return t;
}

// The watcher's decision at `now_ns`, inside a step: a window by time whose
// deadline has passed ends; request `seq`, if it is by time and not taken
// yet, opens its window. Requests by steps are left to the step boundaries.
// Caller holds step_mu_.
StepTransition WindowController::trigger_by_time(uint32_t seq, uint64_t now_ns) {
  StepTransition t;
  t.after = windows_;
  const bool by_time = windows_.in_window && trigger_steps_left_ == 0;
  if (by_time && now_ns >= trigger_deadline_ns_) {
    t.end_window = true;
    t.after.in_window = false;
  }
  if (!t.after.in_window && seq != trigger_seen_ && session_->trigger_steps == 0) take_trigger(seq, now_ns, t);
  t.recording = t.after.in_window;
  return t;
}

void WindowController::start_trigger_watcher() {
  int error = 0;
  if (!start_agent_thread(trigger_watcher_main, this, "ptprof-trigger", &error))
    log(Level::Warn, "cannot start the trigger watcher (error %d): a --duration trigger opens and ends at steps only",
        error);
}

// The watcher's loop: apply trigger_by_time, sleep until the next request or
// deadline.
void WindowController::watch_triggers() {
  for (;;) {
    uint32_t seq = 0;
    uint64_t timeout_ns = 0;
    std::optional<uint32_t> ended;
    {
      std::lock_guard lock(step_mu_);
      if (stopped_) return;
      seq = session_->trigger_seq.load(std::memory_order_acquire);
      // The bootstrap folds no step end from here to the next the agent sees.
      if (seq != trigger_seen_) fold_wake_.store(1, std::memory_order_release);
      const StepTransition t = trigger_by_time(seq, clock::monotonic_ns());
      if (t.end_window || t.begin_window) ended = apply(t, clock::ticks_ordered(clock_kind_));
      if (windows_.in_window && trigger_steps_left_ == 0) {
        const uint64_t at = clock::monotonic_ns();
        timeout_ns = trigger_deadline_ns_ > at ? trigger_deadline_ns_ - at : 1;
      }
    }
    notify_window_end(ended);  // outside step_mu_: the CUPTI flush takes it
    futex_wait_shared(&session_->trigger_seq, seq, timeout_ns);
  }
}

}  // namespace ptprof::agent
