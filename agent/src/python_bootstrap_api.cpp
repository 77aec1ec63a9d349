// What the in-target Python bootstrap (agent/python/ptprof/_boot.py) calls
// through ctypes. Not in ptprof.h: these are ptprof's own plumbing between its
// agent and its Python side, not an API for programs (docs/bootstrap.md).
#include "export.hpp"
#include "ptprof/bridge_api.h"
#include "runtime.hpp"
#include "tensor_group.hpp"

using namespace ptprof::agent;

// The model's outermost forward returned (PTPROF_STEP=forward or auto).
PTPROF_EXPORT void ptprof_boot_forward_ended(void) { g_runtime.forward_ended(); }

// From now on the bootstrap reports the scopes that end steps (the
// optimizer's step, the DataLoader iterator): 1 when this run's step rule
// takes them (the bridge then keeps no callback outside windows), else 0.
PTPROF_EXPORT int ptprof_boot_reports_steps(void) { return g_runtime.python_reports_steps() ? 1 : 0; }

// `count` of them ended on the calling thread, the last one now: `name` as
// torch names the scope ("Optimizer.step#SGD.step",
// "enumerate(DataLoader)#...__next__"). Returns how many of the next ends of
// that kind the bootstrap counts itself and hands over with the next call
// (python_step_folding.cpp).
PTPROF_EXPORT uint32_t ptprof_boot_scopes_ended(const char* name, uint32_t count) {
  return g_runtime.python_scopes_ended(name, count);
}

// The word that is 1 while the bootstrap must fold no end (a trigger came):
// read from Python at each end it would fold.
PTPROF_EXPORT const uint32_t* ptprof_boot_fold_wake(void) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free);
  return reinterpret_cast<const uint32_t*>(&g_runtime.python_fold_wake());
}

// This process runs a DataLoader's worker loop as worker `index` (-1: not
// known); it is labelled so unless the agent already knew what it is.
PTPROF_EXPORT void ptprof_boot_dataloader_worker(int index) { g_runtime.dataloader_worker_started(index); }

// Registers the callback that sets torch's profiler flag: called with 1 when
// a window starts recording and 0 when it stops, on the interpreter's main
// thread. Returns the current state (1, 0), or -1 when nothing will call it.
PTPROF_EXPORT int ptprof_boot_window_flag(void (*callback)(int)) {
  return g_runtime.install_python_window_flag(callback);
}

// The process initialised torch.distributed's default process group as
// `rank` of `world_size` (mp.spawn-style jobs pass them to
// init_process_group instead of the environment that torchrun sets).
PTPROF_EXPORT void ptprof_boot_distributed(int rank, int world_size) {
  g_runtime.distributed_initialised(rank, world_size);
}

// Nonzero while a window wants tensor identity (memory and shapes recorded):
// the bootstrap then reports modules' and optimizers' tensors.
PTPROF_EXPORT int ptprof_boot_tensor_identity(void) { return ptprof_agent_tensor_identity(); }

// What an nn.Module (kind 1) or an optimizer (kind 2) at address `owner`
// holds, at its first call in a window: `count` entries of
// ptprof_tensor_ref (bridge_api.h), as torch's Python tracer takes them.
PTPROF_EXPORT void ptprof_boot_tensors(int kind, uint64_t owner, const ptprof_tensor_ref* refs, uint32_t count) {
  if (kind != int(ptprof::wire::TensorGroupKind::Module) && kind != int(ptprof::wire::TensorGroupKind::Optimizer))
    return;
  ThreadState* t = thread_state();
  if (!t || !g_runtime.memory_recording() || !refs) return;
  emit_tensor_group(*t, ptprof::wire::TensorGroupKind(kind), 0, owner, 0, refs, count);
}
