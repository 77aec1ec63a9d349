"""What ptprof does inside the target's Python once torch is imported
(docs/bootstrap.md). Run by the bootstrap's entry, ``sitecustomize.py`` beside
this package, only under ``ptprof run``; never imported by a program.

Four things, the first two only when the run needs them:

- ``PTPROF_STEP=forward`` or ``auto``: a step ends where the model's forward
  returns. Eager ``nn.Module`` calls emit no RecordFunction, so the agent
  cannot see them: two global module hooks
  (``torch.nn.modules.module.register_module_forward_pre_hook`` and
  ``register_module_forward_hook``) find the outermost module call on each
  thread. The model is the first module called outside any other; a step ends
  each time an outermost call of it returns (a loss module, also called
  outside any other, ends none). The agent decides what the end means
  (``ptprof_boot_forward_ended``: under ``auto`` an optimizer that steps takes
  over). With no such rule there are no hooks: they cost every module call.
- torch 2.x: torch's Python code emits some scopes only while its own
  profiler is on (it reads ``torch.autograd.profiler._is_profiler_enabled``:
  compiled graphs, Dynamo's compile-time ``(dynamo_timed)`` scopes...). The
  agent calls back (``ptprof_boot_window_flag``) when a ptprof window starts
  and stops recording, and the flag follows: on while ptprof records, as it
  was otherwise. torch's profiler and Kineto stay off.
- A DataLoader worker started with the 'spawn' (or 'forkserver') context is
  a fresh interpreter: the agent cannot tell it from any other child, as it
  tells a forked worker by the parent's frames. torch's worker loop
  (``torch.utils.data._utils.worker._worker_loop``, the target the
  DataLoader's iterator pickles by name) is wrapped: it tells the agent
  (``ptprof_boot_dataloader_worker``) its worker id, then runs as before.
- A rank whose rank is not in its environment (``mp.spawn`` passes it to
  ``init_process_group``): ``init_process_group`` is wrapped, and once it
  returns the agent is told the rank and world size torch has
  (``ptprof_boot_distributed``); the launcher names the files with it.
"""

import ctypes
import os
import sys
import threading
import weakref

# Kept for the life of the process: the agent holds the callback's address.
_keep = []

_WindowCallback = ctypes.CFUNCTYPE(None, ctypes.c_int)


def _agent():
    """The agent's bootstrap entry points, or None without the agent."""
    try:
        lib = ctypes.CDLL(None)
        forward_ended = lib.ptprof_boot_forward_ended
        window_flag = lib.ptprof_boot_window_flag
        worker = lib.ptprof_boot_dataloader_worker
        distributed = lib.ptprof_boot_distributed
    except (OSError, AttributeError):
        return None
    forward_ended.argtypes = []
    forward_ended.restype = None
    window_flag.argtypes = [_WindowCallback]
    window_flag.restype = ctypes.c_int
    worker.argtypes = [ctypes.c_int]
    worker.restype = None
    distributed.argtypes = [ctypes.c_int, ctypes.c_int]
    distributed.restype = None
    return forward_ended, window_flag, worker, distributed


def torch_imported(torch):
    """Called once, right after ``import torch`` finished executing."""
    agent = _agent()
    if agent is None:
        return
    forward_ended, window_flag, worker, distributed = agent
    if os.environ.get("PTPROF_STEP", "").strip() in ("forward", "auto"):
        watch_model_forward(torch, forward_ended)
    follow_windows(torch, window_flag, tensor_owners(torch))
    label_dataloader_workers(torch, worker)
    tell_rank_at_init(torch, distributed)


def tell_rank_at_init(torch, distributed):
    """Wraps ``torch.distributed.init_process_group`` so that the agent
    learns the process's rank and world size from torch once the default
    group exists: ``mp.spawn``-style jobs pass them as arguments (or through
    an init_method), not through the RANK variables torchrun sets."""
    dist = getattr(torch, "distributed", None)
    c10d = getattr(dist, "distributed_c10d", None)
    init = getattr(c10d, "init_process_group", None)
    if init is None or getattr(init, "_ptprof_wrapped", False):
        return
    import functools

    @functools.wraps(init)
    def init_process_group(*args, **kwargs):
        result = init(*args, **kwargs)
        try:
            distributed(int(c10d.get_rank()), int(c10d.get_world_size()))
        except Exception:  # never the program's failure
            pass
        return result

    init_process_group._ptprof_wrapped = True
    c10d.init_process_group = init_process_group
    if getattr(dist, "init_process_group", None) is init:
        dist.init_process_group = init_process_group


def label_dataloader_workers(torch, worker_started):
    """Wraps torch's DataLoader worker loop so that a worker tells the agent its id."""
    import functools
    import inspect

    module = getattr(getattr(getattr(torch.utils, "data", None), "_utils", None), "worker", None)
    loop = getattr(module, "_worker_loop", None)
    if loop is None or getattr(loop, "_ptprof_wrapped", False):
        return
    try:
        signature = inspect.signature(loop)
    except (TypeError, ValueError):
        return
    if "worker_id" not in signature.parameters:
        return

    @functools.wraps(loop)
    def _worker_loop(*args, **kwargs):
        try:
            worker_id = signature.bind(*args, **kwargs).arguments.get("worker_id", -1)
            worker_started(int(worker_id) if isinstance(worker_id, int) else -1)
        except Exception:  # never the worker's failure
            pass
        return loop(*args, **kwargs)

    _worker_loop._ptprof_wrapped = True
    module._worker_loop = _worker_loop


def tensor_owners(torch):
    """Modules' and optimizers' tensors for the memory categories, or None."""
    try:
        from ptprof._tensor_owners import Owners

        return Owners(torch, ctypes.CDLL(None))
    except (ImportError, OSError, AttributeError):
        return None


def follow_windows(torch, window_flag, owners):
    """torch's profiler flag on while a ptprof window records (torch 2.x), and
    the tensor owners' hooks while a window wants tensor identity."""
    profiler = getattr(torch.autograd, "profiler", None)
    has_flag = profiler is not None and hasattr(profiler, "_is_profiler_enabled")  # torch 1.13: nothing gates on it
    if not has_flag and owners is None:
        return
    set_by_ptprof = [False]

    def on_window(recording):
        # Never touches a flag that torch's own profiler set: a script that
        # runs torch.profiler keeps its state when a ptprof window closes.
        try:
            if not has_flag:
                pass
            elif recording:
                if not profiler._is_profiler_enabled:
                    profiler._is_profiler_enabled = True
                    set_by_ptprof[0] = True
            elif set_by_ptprof[0]:
                set_by_ptprof[0] = False
                profiler._is_profiler_enabled = False
            if owners is not None:
                owners.on_window(recording)
        except Exception:  # the callback runs between two of the program's bytecodes
            pass

    callback = _WindowCallback(on_window)
    now = window_flag(callback)
    if now < 0:
        return
    _keep.append(callback)
    on_window(now)


def watch_model_forward(torch, forward_ended):
    """Reports each end of the model's outermost forward to the agent."""
    module_api = torch.nn.modules.module
    compiler = getattr(torch, "compiler", None)
    is_compiling = getattr(compiler, "is_compiling", None) or (lambda: False)
    per_thread = threading.local()
    model = [None]  # weakref to the model: the first module called outside any other
    # torch >= 2.0 calls the forward hook when forward raises too (always_call);
    # torch 1.13 does not, so its pre-hook repairs a depth an exception left.
    always_call = _accepts(module_api.register_module_forward_hook, "always_call")

    def before(module, args):
        # Inside a graph Dynamo traces, nothing: the compiled module's own
        # call (outside the graph) is the one that counts, and the
        # constant-folded branch keeps the hook out of the graph.
        if is_compiling():
            return None
        depth = getattr(per_thread, "depth", 0)
        current = model[0]() if model[0] is not None else None
        if depth == 0 and current is None:
            model[0] = weakref.ref(module)
            current = module
        if module is current:
            if depth and getattr(per_thread, "in_model", False) and not always_call:
                depth = 0  # the model raised last time: its depth never came back
            if depth == 0:
                per_thread.in_model = True
        per_thread.depth = depth + 1
        return None

    def after(module, args, output):
        if is_compiling():
            return None
        depth = getattr(per_thread, "depth", 0) - 1
        per_thread.depth = max(depth, 0)
        if depth <= 0 and getattr(per_thread, "in_model", False) and model[0] is not None and module is model[0]():
            per_thread.in_model = False
            forward_ended()
        return None

    handles = [module_api.register_module_forward_pre_hook(before)]
    if always_call:
        handles.append(module_api.register_module_forward_hook(after, always_call=True))
    else:
        handles.append(module_api.register_module_forward_hook(after))
    _keep.extend(handles)


def _accepts(fn, keyword):
    try:
        import inspect

        return keyword in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


if __name__ == "__main__":
    sys.exit("ptprof._boot is run by ptprof's bootstrap (sitecustomize.py) under `ptprof run`, not as a program")
