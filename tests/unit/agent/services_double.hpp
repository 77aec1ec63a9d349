// A double of the runtime's three services (agent/src/record/services.hpp),
// linked into the unit tests in place of the runtime: the agent's lower
// layers (record, window, cupti, stacks) are tested without a session.
// Each test sets what it needs through a ServicesScope, which puts the
// double back as it found it (inert: no session, an empty arena).
#pragma once
#include <cstdint>
#include <deque>
#include <string>

namespace ptprof::agent {
struct ThreadState;
}

namespace ptprof::agent::testing {

struct ServicesDouble {
  bool active = false;
  // What register_calling_thread() returns (null: no slot for the thread).
  ThreadState* registered = nullptr;
  // The arena: names get ids 1, 2, ... in order of first sight; once
  // `capacity` names are held, a new one is refused (id 0), as by a full
  // arena. Copies longer than `max_bytes` are cut short, as the runtime's.
  uint32_t capacity = UINT32_MAX;
  uint32_t max_bytes = 4096;
  std::deque<std::string> names;  // stable addresses: the arena's copies
  uint32_t intern_calls = 0;
  uint32_t register_calls = 0;
};

ServicesDouble& services();

class ServicesScope {
 public:
  ServicesScope() { services() = {}; }
  ~ServicesScope() { services() = {}; }
  ServicesScope(const ServicesScope&) = delete;
  ServicesScope& operator=(const ServicesScope&) = delete;
  ServicesDouble* operator->() { return &services(); }
};

}  // namespace ptprof::agent::testing
