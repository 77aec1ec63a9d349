#include "ptprof/slot_window.hpp"

#include "ptprof/schedule.hpp"
#include "ptprof/shared_futex.hpp"

namespace ptprof::wire {

bool close_slot_window(ProcessSlot& slot) {
  auto word = slot_window_word(slot);
  uint32_t w = word.load(std::memory_order_acquire);
  for (;;) {
    const WindowState open = window_of_word(w);
    if (!open.in_window) return false;
    if (word.compare_exchange_weak(w, window_word(WindowState{open.window + 1, false}), std::memory_order_release,
                                   std::memory_order_acquire))
      break;
  }
  futex_wake_shared(&slot.reserved);
  return true;
}

}  // namespace ptprof::wire
