// The record layer's three calls into the runtime (record/services.hpp).
#include "record/services.hpp"

#include "runtime/runtime.hpp"

namespace ptprof::agent {

bool agent_active() { return g_runtime.active(); }

ThreadState* register_calling_thread() { return g_runtime.register_thread(); }

uint32_t intern_name(const char* s, const char** text) { return g_runtime.intern(s, text); }

}  // namespace ptprof::agent
