#include "cpython/python_window_flag.hpp"

#include "base/log.hpp"

namespace ptprof::agent {

void PythonWindowFlag::recording_changed(bool recording) {
  wanted_.store(recording ? 1 : 0, std::memory_order_release);
  if (!fn_.load(std::memory_order_acquire)) return;
  // One queued call at a time: it reads the latest wanted_ when it runs.
  if (queued_.exchange(true, std::memory_order_acq_rel)) return;
  if (add_pending_(&PythonWindowFlag::deliver, this) != 0) {
    // CPython's queue is full (32 calls): the next change tries again.
    queued_.store(false, std::memory_order_release);
    log(Level::Warn, "python bootstrap: the interpreter's pending-call queue is full; torch's profiler flag lags");
  }
}

int PythonWindowFlag::deliver(void* self) {
  auto* f = static_cast<PythonWindowFlag*>(self);
  f->queued_.store(false, std::memory_order_release);
  const int wanted = f->wanted_.load(std::memory_order_acquire);
  if (wanted == f->delivered_) return 0;
  f->delivered_ = wanted;
  if (Callback fn = f->fn_.load(std::memory_order_acquire)) fn(wanted);
  return 0;  // the callback reports its own errors: a -1 here would raise in unrelated code
}

}  // namespace ptprof::agent
