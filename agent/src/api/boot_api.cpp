// What the in-target Python bootstrap calls through ctypes
// (ptprof/boot_api.h says what each does; python/ptprof/_abi.py binds them).
// Each forwards to the runtime, which is inert without a session.
#include "ptprof/boot_api.h"

#include <atomic>

#include "base/visibility.hpp"
#include "record/tensor_group.hpp"
#include "record/thread_state.hpp"
#include "runtime/runtime.hpp"

using namespace ptprof::agent;

PTPROF_EXPORT void ptprof_boot_forward_ended(void) { g_runtime.forward_ended(); }

PTPROF_EXPORT int ptprof_boot_reports_steps(void) { return g_runtime.python_reports_steps() ? 1 : 0; }

PTPROF_EXPORT uint32_t ptprof_boot_scopes_ended(const char* name, uint32_t count) {
  return g_runtime.python_scopes_ended(name, count);
}

PTPROF_EXPORT const uint32_t* ptprof_boot_fold_wake(void) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free);
  return reinterpret_cast<const uint32_t*>(&g_runtime.python_fold_wake());
}

PTPROF_EXPORT void ptprof_boot_dataloader_worker(int index) { g_runtime.dataloader_worker_started(index); }

PTPROF_EXPORT int ptprof_boot_window_flag(void (*callback)(int)) {
  return g_runtime.install_python_window_flag(callback);
}

PTPROF_EXPORT void ptprof_boot_distributed(int rank, int world_size) {
  g_runtime.distributed_initialised(rank, world_size);
}

PTPROF_EXPORT int ptprof_boot_tensor_identity(void) { return ptprof_agent_tensor_identity(); }

PTPROF_EXPORT void ptprof_boot_tensors(int kind, uint64_t owner, const ptprof_tensor_ref* refs, uint32_t count) {
  if (kind != int(ptprof::wire::TensorGroupKind::Module) && kind != int(ptprof::wire::TensorGroupKind::Optimizer))
    return;
  ThreadState* t = thread_state();
  if (!t || !g_runtime.memory_recording() || !refs) return;
  emit_tensor_group(*t, ptprof::wire::TensorGroupKind(kind), 0, owner, 0, refs, count);
}
