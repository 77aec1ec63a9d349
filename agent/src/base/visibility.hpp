#pragma once
// The agent is built with hidden visibility; only what is marked here is
// visible to the target (the C API, the bridge API, the interposed libc calls).
#define PTPROF_EXPORT extern "C" __attribute__((visibility("default")))
