// A process's window word in its session slot (wire::ProcessSlot::reserved,
// window_word() in schedule.hpp): the process publishes its window state
// there, and its children without steps of their own sleep on it as a
// shared futex to follow its windows (agent/src/window/window_follower.cpp). In
// the session, which every agent maps; the launcher writes it once, for a
// process that died without its agent's exit.
#pragma once
#include <atomic>
#include <cstdint>

#include "ptprof/shm_abi.hpp"

namespace ptprof::wire {

inline std::atomic_ref<uint32_t> slot_window_word(ProcessSlot& slot) {
  return std::atomic_ref<uint32_t>(slot.reserved);
}

// Ends the window the slot's word says is open, as the process's own exit
// does (the agent's WindowController::stop), and wakes its followers. For a
// process killed in a window (SIGKILL, a crash its agent did not see): its
// children would otherwise record on until they exit. False when no window
// was open.
bool close_slot_window(ProcessSlot& slot);

}  // namespace ptprof::wire
