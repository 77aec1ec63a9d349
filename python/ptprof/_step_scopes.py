"""The ends of the scopes that end steps, reported from Python, so that the
torch bridge keeps no RecordFunction callback outside windows.

torch takes its no-callback fast path only when no global RecordFunction
callback at all is registered: the bridge's user-scope watcher alone, which
sees ``Optimizer.step#<Class>.step`` and ``enumerate(DataLoader)#<Iter>.__next__``
end, cost every operator 15-22 ns in steps that record nothing
(bench/registered_callbacks.py). Here the same two are seen without one:
each optimizer class's ``step``, which torch wraps in the scope when the
class's first instance is made, wrapped once more (reporting after the
scope's end, the outermost step only: torch 2.x's global post-hooks run
inside every step, a nested one too), and a wrapper of the DataLoader
iterator's ``__next__`` (after it returns or raises, as its scope ends). The
agent decides what an end means (its step rule) and takes them only once it
has said it will (``ptprof_boot_reports_steps``).

Each report says how many of the next ends of its kind change nothing but
the counts (outside windows, agent/src/runtime/python_step_folding.cpp):
those are counted here and handed over with the next report, or at exit, so that a step
outside windows costs a few Python operations instead of a call into the
agent; a trigger's arrival (the agent's wake word) stops the folding at once.
"""

import atexit
import functools
import importlib
import os


class _Reporter:
    """One kind of end (the optimizer's, the DataLoader's): reports it, or
    counts it while the agent's last answer allows."""

    def __init__(self, scopes_ended, wake):
        skip = 0  # ends the agent said may be folded
        held = 0  # ends folded, not handed over yet
        last = None

        def ended(name):
            nonlocal skip, held, last
            if skip and not wake.value:
                skip -= 1
                held += 1
                return
            last = name
            skip = scopes_ended(name, held + 1)
            held = 0

        def flush():
            # The held ends, the last of them as if it ended now: at exit.
            nonlocal skip, held
            if held:
                skip = scopes_ended(last, held)
                held = 0

        def forked():
            # A fork child's steps are its own; the held ends are its parent's.
            nonlocal skip, held
            skip = held = 0

        self.ended, self.flush, self.forked = ended, flush, forked


def report_step_scopes(torch, agent, reports_steps, keep):
    """Hooks the optimizers' steps and the DataLoader iterators, then asks the
    agent to take their ends; undoes the hooks when it will not. `agent`:
    ``ptprof_boot_scopes_ended`` and the wake word; `keep` holds what must
    live as long as the process."""
    try:  # submodules: not always attributes of their packages yet
        optimizer = importlib.import_module("torch.optim.optimizer")
        dataloader = importlib.import_module("torch.utils.data.dataloader")
    except ImportError:
        return False
    register = _class_step_hooks(optimizer)
    iterator = getattr(dataloader, "_BaseDataLoaderIter", None)
    if register is None or iterator is None or getattr(iterator.__next__, "_ptprof_wrapped", False):
        return False
    names = {}  # optimizer class -> its scope's name, as torch spells it
    optimizer_steps, batches = _Reporter(*agent), _Reporter(*agent)
    optimizer_ended, batch_ended = optimizer_steps.ended, batches.ended

    def stepped(opt, args, kwargs):
        cls = type(opt)
        name = names.get(cls)
        if name is None:
            name = names[cls] = ("Optimizer.step#%s.step" % cls.__name__).encode()
        optimizer_ended(name)

    handle = register(stepped)
    next_batch = iterator.__next__

    @functools.wraps(next_batch)
    def __next__(self):
        try:
            return next_batch(self)
        finally:
            name = getattr(self, "_profile_name", None)
            if isinstance(name, str):
                batch_ended(name.encode())

    __next__._ptprof_wrapped = True
    iterator.__next__ = __next__
    if reports_steps() == 1:
        keep.append(handle)
        for reporter in (optimizer_steps, batches):
            atexit.register(reporter.flush)
            os.register_at_fork(after_in_child=reporter.forked)
        return True
    handle.remove()
    iterator.__next__ = next_batch
    return False


# The hooks called after each outermost step of a wrapped optimizer class
# (the benchmark empties and refills it: bench/registered_callbacks.py
# --agent-steps).
CLASS_STEP_HOOKS = {}


def _class_step_hooks(optimizer):
    """``register(hook)`` for the optimizers' steps: ``hook(opt, args,
    kwargs)`` after each outermost step of an optimizer whose class torch
    wraps in its scope (every class that has an instance, from ``__init__``
    and ``__setstate__``: ``Optimizer._patch_step_function``, on torch 1.13
    ``_hook_for_profile``). After the scope's end, not inside it as torch
    2.x's global post-hooks are, and only for the outermost step: a step that
    calls another wrapped step (a subclass's ``super().step()``, a wrapper
    optimizer's inner one) ends one step, as the scopes nest; an exception
    leaves the count right. Returns a handle with ``remove()``; None where
    torch does not wrap so."""
    base = getattr(optimizer, "Optimizer", None)
    patch = next((n for n in ("_patch_step_function", "_hook_for_profile") if hasattr(base, n)), None)
    original = getattr(base, patch, None) if patch else None
    if original is None or getattr(original, "_ptprof_wrapped", False):
        return None
    depth = [0]  # a step that calls its base class's wrapped step reports once

    @functools.wraps(original)
    def patch_step(self):
        original(self)
        cls = type(self)
        step = getattr(cls, "step", None)
        if not getattr(step, "hooked", False) or getattr(step, "_ptprof_wrapped", False):
            return

        @functools.wraps(step)  # keeps torch's `hooked`
        def wrapper(*args, **kwargs):
            depth[0] += 1
            try:
                out = step(*args, **kwargs)
            finally:
                depth[0] -= 1
            if depth[0] == 0:
                for hook in CLASS_STEP_HOOKS.values():
                    hook(args[0], args, kwargs)
            return out

        wrapper._ptprof_wrapped = True
        cls.step = wrapper

    patch_step._ptprof_wrapped = True

    def register(hook):
        setattr(base, patch, patch_step)
        CLASS_STEP_HOOKS[id(hook)] = hook

        class Handle:
            @staticmethod
            def remove():
                CLASS_STEP_HOOKS.pop(id(hook), None)
                setattr(base, patch, original)

        return Handle()

    return register
