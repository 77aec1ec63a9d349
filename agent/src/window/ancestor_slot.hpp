// The session slot of a process's nearest ancestor in the same session, for
// a child to follow its windows (window_controller.hpp: follow). Each
// process publishes its window state in its own slot's window word
// (wire::ProcessSlot::reserved, window_word() in schedule.hpp): the session
// object is mapped by every agent, while a process region's name is gone
// once the launcher has mapped it.
#pragma once
#include <atomic>
#include <cstdint>

#include "ptprof/shm_abi.hpp"
#include "ptprof/slot_window.hpp"

namespace ptprof::agent {

// The slot of the nearest ancestor of this process (its parent, or the
// parent's parent... up to the launcher) that registered in `session`,
// other than `self`; null when none did (the target's first process).
wire::ProcessSlot* find_ancestor_slot(wire::SessionHeader& session, const wire::ProcessSlot* self);

}  // namespace ptprof::agent
