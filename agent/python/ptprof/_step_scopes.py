"""The ends of the scopes that end steps, reported from Python (torch 2.x), so
that the torch bridge keeps no RecordFunction callback outside windows.

torch takes its no-callback fast path only when no global RecordFunction
callback at all is registered: the bridge's user-scope watcher alone, which
sees ``Optimizer.step#<Class>.step`` and ``enumerate(DataLoader)#<Iter>.__next__``
end, cost every operator 15-22 ns in steps that record nothing
(bench/registered_callbacks.py). Here the same two are seen without one:
torch's global optimizer step post-hook (torch >= 2.0), which runs inside the
optimizer's scope, and a wrapper of the DataLoader iterator's ``__next__``
(after it returns or raises, as its scope ends). The agent decides what an end
means (its step rule) and takes them only once it has said it will
(``ptprof_boot_reports_steps``); torch 1.13 has no global optimizer hook, so
there the bridge keeps its watcher.

Each report says how many of the next ends of its kind change nothing but
the counts (outside windows, agent/src/python_step_folding.cpp): those are
counted here and handed over with the next report, or at exit, so that a step
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
    register = getattr(optimizer, "register_optimizer_step_post_hook", None)
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
