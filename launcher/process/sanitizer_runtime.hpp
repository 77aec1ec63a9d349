// In a sanitizer build (CMake's PTPROF_SANITIZE) the agent is instrumented
// too, and a sanitizer's runtime must be the first library of any process it
// is loaded into; a target that is not itself instrumented (a shell, Python)
// gets it only through LD_PRELOAD, ahead of the agent.
#pragma once
#include <string>

namespace ptprof::launcher {

// The path of the AddressSanitizer or ThreadSanitizer runtime this launcher
// runs with, to be preloaded before the agent; empty in ordinary builds.
std::string sanitizer_runtime();

}  // namespace ptprof::launcher
