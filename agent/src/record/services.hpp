// What the record layer asks of the agent's runtime: whether a session is
// active, a slot and ring for a thread's first event, and the process's
// string arena. Three calls, so that the hot path's header does not include
// the runtime; defined by runtime/services.cpp, and by a test double in the
// unit tests (tests/unit/agent/services_double.cpp).
#pragma once
#include <cstdint>

namespace ptprof::agent {

struct ThreadState;

// A session is active in this process (hooks record nothing otherwise).
bool agent_active();
// Registers the calling thread (thread_state()'s slow path); null when the
// agent is inert or the thread gets no slot or ring.
ThreadState* register_calling_thread();
// Interns `s` in this process's string arena: its id, 0 when the arena
// refused it; `text` receives the arena's copy, stable for the process.
uint32_t intern_name(const char* s, const char** text);

}  // namespace ptprof::agent
