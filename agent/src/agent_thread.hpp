// The agent's own threads (the trigger watcher, the window follower) and the
// shared futexes they sleep on: a word in shared memory that another process
// changes and wakes.
#pragma once
#include <atomic>
#include <cstdint>

namespace ptprof::agent {

// Starts a detached thread named `name` running fn(arg), with every signal
// blocked (a process-directed signal is the program's, for its own threads)
// and a small stack. False, with errno's value in *error, when it could not.
bool start_agent_thread(void* (*fn)(void*), void* arg, const char* name, int* error);

// `word`: a 32-bit word, aligned (a std::atomic<uint32_t> or one read
// through std::atomic_ref).
// Sleeps while *word == expected, at most `timeout_ns` (0: no limit). Not a
// private futex: another process wakes it.
void futex_wait_shared(const void* word, uint32_t expected, uint64_t timeout_ns);
// Wakes every thread, of any process, asleep on *word.
void futex_wake_shared(void* word);

}  // namespace ptprof::agent
