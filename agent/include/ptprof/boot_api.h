// What the agent exports to its in-target Python bootstrap (the ptprof
// package's _boot.py, bound through ctypes in _abi.py).
//
// Not an API for programs (that is ptprof.h) and not installed: this is
// ptprof's own plumbing between the agent and its Python side
// (docs/bootstrap.md). _abi.py declares each of these with the argument and
// result types written here; a change to one is a change to both.
#pragma once
#include <stdint.h>

#include "ptprof/bridge_api.h"

#ifdef __cplusplus
extern "C" {
#endif

// The model's outermost forward returned (PTPROF_STEP=forward or auto).
void ptprof_boot_forward_ended(void);

// From now on the bootstrap reports the scopes that end steps (the
// optimizer's step, the DataLoader iterator): 1 when this run's step rule
// takes them (the bridge then keeps no callback outside windows), else 0.
int ptprof_boot_reports_steps(void);

// `count` of them ended on the calling thread, the last one now: `name` as
// torch names the scope ("Optimizer.step#SGD.step",
// "enumerate(DataLoader)#...__next__"). Returns how many of the next ends of
// that kind the bootstrap counts itself and hands over with the next call
// (the agent's runtime/python_step_folding.cpp).
uint32_t ptprof_boot_scopes_ended(const char* name, uint32_t count);

// The word that is 1 while the bootstrap must fold no end (a trigger came):
// read from Python at each end it would fold.
const uint32_t* ptprof_boot_fold_wake(void);

// This process runs a DataLoader's worker loop as worker `index` (-1: not
// known); it is labelled so unless the agent already knew what it is.
void ptprof_boot_dataloader_worker(int index);

// Registers the callback that sets torch's profiler flag: called with 1 when
// a window starts recording and 0 when it stops, on the interpreter's main
// thread. Returns the current state (1, 0), or -1 when nothing will call it.
int ptprof_boot_window_flag(void (*callback)(int));

// The process initialised torch.distributed's default process group as
// `rank` of `world_size` (mp.spawn-style jobs pass them to
// init_process_group instead of the environment that torchrun sets).
void ptprof_boot_distributed(int rank, int world_size);

// Nonzero while a window wants tensor identity (memory and shapes recorded):
// the bootstrap then reports modules' and optimizers' tensors.
int ptprof_boot_tensor_identity(void);

// What an nn.Module (kind 1) or an optimizer (kind 2) at address `owner`
// holds, at its first call in a window: `count` entries of
// ptprof_tensor_ref (bridge_api.h), as torch's Python tracer takes them.
void ptprof_boot_tensors(int kind, uint64_t owner, const struct ptprof_tensor_ref* refs, uint32_t count);

#ifdef __cplusplus
}
#endif
