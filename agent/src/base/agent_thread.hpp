// The agent's own threads (the trigger watcher, the window follower); the
// shared futexes they sleep on are ptprof/shared_futex.hpp's.
#pragma once
#include <cstdint>

#include "ptprof/shared_futex.hpp"

namespace ptprof::agent {

// Starts a detached thread named `name` running fn(arg), with every signal
// blocked (a process-directed signal is the program's, for its own threads)
// and a small stack. False, with errno's value in *error, when it could not.
bool start_agent_thread(void* (*fn)(void*), void* arg, const char* name, int* error);

}  // namespace ptprof::agent
