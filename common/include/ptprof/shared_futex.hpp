// Futexes in shared memory: a 32-bit word that a process sleeps on and
// another process changes and wakes (the window follower on its ancestor's
// window word, the trigger watcher on the session's trigger sequence).
#pragma once
#include <cstdint>

namespace ptprof {

// `word`: a 32-bit word, aligned (a std::atomic<uint32_t> or one read
// through std::atomic_ref).
// Sleeps while *word == expected, at most `timeout_ns` (0: no limit). Not a
// private futex: another process wakes it.
void futex_wait_shared(const void* word, uint32_t expected, uint64_t timeout_ns);
// Wakes every thread, of any process, asleep on *word.
void futex_wake_shared(void* word);

}  // namespace ptprof
