"""What ptprof does inside the target's Python once torch is imported
(docs/bootstrap.md). Run by the bootstrap's entry, ``sitecustomize.py`` beside
this package, only under ``ptprof run``; never imported by a program.

Seven things, the first two only when the run needs them:

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
- the ends of the optimizer's step and of the DataLoader's ``__next__``,
  which end steps, reported from Python (``ptprof/_step_scopes.py``; folded
  outside windows where the agent allows), so that the torch bridge registers no
  callback outside windows (any registered callback costs every operator).
- torch 2.x: torch's Python code emits some scopes only while its own
  profiler is on (it reads ``torch.autograd.profiler._is_profiler_enabled``:
  compiled graphs, Dynamo's compile-time ``(dynamo_timed)`` scopes...). The
  agent calls back (``ptprof_boot_window_flag``) when a ptprof window starts
  and stops recording, and the flag follows: on while ptprof records, as it
  was otherwise. torch's profiler and Kineto stay off.
- torch 2.x, while a window records and once ``torch.compile`` has been
  used: what Dynamo knows of each compile and torch's profiler scopes do not
  say (a recompile's reason, the graph breaks with theirs, cache hits and
  misses), sent as ptprof marks named ``torch.compile: ...`` at the end of
  the compile (Dynamo's compile callbacks; ``follow_compiles``). The report
  counts them per step (docs/report.md, "Compile").
- torch 2.x, ``torch.compile``: inductor's generated C++ kernels as rows of
  their own while a window records, named with the aten ops inductor says
  each was fused from (``ptprof/_inductor_kernels.py``; outside windows the
  generated code calls inductor's own kernels).
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

import os
import sys
import threading
import weakref

from ptprof import _abi

# Kept for the life of the process: the agent holds the callback's address.
_keep = []


def _agent():
    """The agent's bootstrap entry points (agent/include/ptprof/boot_api.h,
    bound in _abi.py), or None without the agent."""
    functions = _abi.bind(
        "ptprof_boot_forward_ended",
        "ptprof_boot_window_flag",
        "ptprof_boot_dataloader_worker",
        "ptprof_boot_distributed",
        "ptprof_mark",
        "ptprof_boot_reports_steps",
        "ptprof_boot_scopes_ended",
        "ptprof_boot_fold_wake",
    )
    if functions is None:
        return None
    forward_ended, window_flag, worker, distributed, mark, reports_steps, scopes_ended, fold_wake = functions
    wake = fold_wake().contents  # the agent's word itself, read at each use
    return forward_ended, window_flag, worker, distributed, mark, reports_steps, (scopes_ended, wake)


def torch_imported(torch):
    """Called once, right after ``import torch`` finished executing."""
    agent = _agent()
    if agent is None:
        return
    forward_ended, window_flag, worker, distributed, mark, reports_steps, scopes_ended = agent
    if os.environ.get("PTPROF_STEP", "").strip() in ("forward", "auto"):
        watch_model_forward(torch, forward_ended)
    from ptprof._step_scopes import report_step_scopes

    report_step_scopes(torch, scopes_ended, reports_steps, _keep)
    kernels = inductor_kernels(torch)
    follow_windows(torch, window_flag, CompileWatcher(torch, mark, kernels), tensor_owners(torch), kernels)
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

        functions = _abi.bind("ptprof_boot_tensor_identity", "ptprof_boot_tensors")
        if functions is None:
            return None
        return Owners(torch, *functions)
    except (ImportError, OSError, AttributeError):
        return None


def inductor_kernels(torch):
    """Inductor's C++ kernels as rows while windows record (a KernelRows), or
    None: a torch without torch.compile, an agent without ranges."""
    if not hasattr(torch, "compile"):
        return None
    try:
        from ptprof._inductor_kernels import KernelRows
    except ImportError:
        return None
    functions = _abi.bind("ptprof_range_push", "ptprof_range_pop")
    if functions is None:
        return None
    return KernelRows(*functions)


def follow_windows(torch, window_flag, compiles=None, owners=None, kernels=None):
    """torch's profiler flag on while a ptprof window records, Dynamo's
    compile callbacks registered then (``compiles``: a CompileWatcher), the
    tensor owners' hooks while a window wants tensor identity (``owners``:
    memory categories), and inductor's C++ kernels wrapped as rows
    (``kernels``: a KernelRows)."""
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
        if compiles is not None:
            compiles.follow(recording)
        if kernels is not None:
            kernels.follow(recording)

    callback = _abi.WindowCallback(on_window)
    now = window_flag(callback)
    if now < 0:
        return
    _keep.append(callback)
    on_window(now)


class CompileWatcher:
    """What Dynamo knows of each compile that torch's scopes do not say, told
    to the agent as marks (``ptprof_mark``, recorded only while a window
    records) at the compile's end, on the compiling thread, so that the
    report places them in the step that compiled:

    - ``torch.compile: recompile [<compile id>]: <reason>``: the first guard
      that failed, as Dynamo gives it (its CompilationMetrics'
      ``recompile_reason``), e.g. ``tensor 'x' size mismatch at index 0.
      expected 8, actual 16``;
    - ``torch.compile: graph break [<compile id>]: <reason>``: one per graph
      break Dynamo counted in that compile (``counters["graph_break"]``,
      keyed by its reason);
    - ``torch.compile: cache hit: <cache>`` / ``cache miss: <cache>``: one per
      lookup of AOTAutograd's and Inductor's FX graph caches.

    Dynamo's start and end callbacks (``torch._dynamo.callback``) are
    registered while a window records and removed when it stops, so outside
    windows torch calls nothing of ptprof's. Dynamo is imported by the first
    ``torch.compile``, which may come after the window opened: torch.compile
    is wrapped to register then (one Python call per torch.compile call)."""

    PREFIX = "torch.compile: "
    # (counters group, key, what the mark says)
    CACHE_COUNTERS = (
        ("aot_autograd", "autograd_cache_hit", "cache hit: AOTAutogradCache"),
        ("aot_autograd", "autograd_cache_miss", "cache miss: AOTAutogradCache"),
        ("inductor", "fxgraph_cache_hit", "cache hit: FxGraphCache"),
        ("inductor", "fxgraph_cache_miss", "cache miss: FxGraphCache"),
    )
    MAX_REASON = 400  # characters: marks are interned names

    def __init__(self, torch, mark, kernels=None):
        self.mark = mark
        self.kernels = kernels  # a KernelRows: inductor's C++ kernels' provenance from the first compile on
        self.recording = False
        self.handler = None  # the callback handler that holds ours
        self.before = None  # the counters at the outermost compile's start
        self.wrap_compile(torch)

    def wrap_compile(self, torch):
        compile_fn = getattr(torch, "compile", None)
        if compile_fn is None or getattr(compile_fn, "_ptprof_wrapped", False):
            return
        import functools

        watcher = self

        @functools.wraps(compile_fn)
        def compile(*args, **kwargs):
            result = compile_fn(*args, **kwargs)
            if watcher.recording:
                watcher.register()
            if watcher.kernels is not None:
                watcher.kernels.compiled(torch)
            return result

        compile._ptprof_wrapped = True
        torch.compile = compile

    def follow(self, recording):
        self.recording = bool(recording)
        if self.recording:
            self.register()
        else:
            self.unregister()

    def register(self):
        if self.handler is not None:
            return
        handler = getattr(sys.modules.get("torch._dynamo.callback"), "callback_handler", None)
        try:
            handler.register_start_callback(self.started)
            handler.register_end_callback(self.ended)
        except Exception:  # a torch without these callbacks
            return
        self.handler = handler

    def unregister(self):
        handler, self.handler = self.handler, None
        self.before = None
        if handler is None:
            return
        for remove, callback in (
            (getattr(handler, "remove_start_callback", None), self.started),
            (getattr(handler, "remove_end_callback", None), self.ended),
        ):
            try:
                remove(callback)
            except Exception:
                pass

    @staticmethod
    def counters():
        counters = getattr(sys.modules.get("torch._dynamo.utils"), "counters", None)
        if counters is None:
            return None
        breaks = dict(counters.get("graph_break", {}))
        cache = [counters.get(group, {}).get(key, 0) for group, key, _ in CompileWatcher.CACHE_COUNTERS]
        return breaks, cache

    def started(self, args):
        try:
            self.before = self.counters()
        except Exception:  # never the compile's failure
            self.before = None

    def ended(self, args):
        try:
            self.tell(args)
        except Exception:  # never the compile's failure
            pass
        self.before = None

    def send(self, text):
        text = " ".join(str(text).split())  # one line
        if len(text) > self.MAX_REASON:
            text = text[: self.MAX_REASON - 3] + "..."
        self.mark((self.PREFIX + text).encode("utf-8", "replace"))

    def tell(self, args):
        compile_id = str(getattr(args, "compile_id", "") or "?")
        trigger = getattr(getattr(args, "callback_trigger", None), "name", "")
        if trigger == "DYNAMO":
            utils = sys.modules.get("torch._dynamo.utils")
            context = utils.get_metrics_context() if hasattr(utils, "get_metrics_context") else None
            reason = (getattr(context, "_metrics", None) or {}).get("recompile_reason")
            if reason:
                self.send("recompile [%s]: %s" % (compile_id, reason))
        before, now = self.before, self.counters()
        if before is None or now is None:
            return
        for reason, n in now[0].items():
            for _ in range(max(0, n - before[0].get(reason, 0))):
                self.send("graph break [%s]: %s" % (compile_id, reason))
        for (_, _, what), was, is_now in zip(self.CACHE_COUNTERS, before[1], now[1]):
            for _ in range(max(0, is_now - was)):
                self.send(what)


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
