// The agent's exported CUDA wrappers, by entry: each hooks file builds its
// family's table from the X-macro lists (cuda_hook_support.hpp), where the
// CUDA declarations are visible, and hands it to the support code
// (WrapperOf) wherever it must tell the agent's exports from the real
// functions.
#pragma once
#include "cuda/cuda_hook_support.hpp"

namespace ptprof::agent::cuda {

void* runtime_wrapper(HookId id);  // cuda_runtime_hooks.cpp
void* driver_wrapper(HookId id);   // cuda_driver_hooks.cpp

inline void* wrapper(HookId id) {
  return hook_entry(id).family == wire::CudaApiFamily::Runtime ? runtime_wrapper(id) : driver_wrapper(id);
}

}  // namespace ptprof::agent::cuda
