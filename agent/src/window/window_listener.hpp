// What the window controller tells the GPU side as the windows move: the
// CUPTI consumer (cupti/cupti_consumer.hpp) implements it, and the
// controller knows it only through this, so the window layer sits below
// CUPTI's.
#pragma once
#include <cstdint>

namespace ptprof::agent {

class WindowListener {
 public:
  // Recording began (on) or ended; called with the step lock held.
  virtual void recording_changed(bool on) = 0;
  // A step is ending (before the step lock is taken): GPU records completed
  // so far may be handed over now, spreading a window's conversion over its
  // steps.
  virtual void step_ending() = 0;
  // Window `window` ended (its WindowEnd is published); called on the thread
  // that ended it without the step lock held, and at exit for the window
  // still open. While the GPU flush protocol is raised
  // (WindowController::set_gpu_flush_protocol), the listener answers with
  // WindowController::gpu_flushed(window) once the window's GPU records are
  // in the rings.
  virtual void window_ended(uint32_t window) = 0;

 protected:
  WindowListener() = default;
  WindowListener(const WindowListener&) = default;
  WindowListener& operator=(const WindowListener&) = default;
  ~WindowListener() = default;  // never owned through this
};

}  // namespace ptprof::agent
