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
"""

import functools
import importlib


def report_step_scopes(torch, scope_ended, reports_steps, keep):
    """Hooks the optimizers' steps and the DataLoader iterators, then asks the
    agent to take their ends; undoes the hooks when it will not. `keep`
    holds what must live as long as the process."""
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

    def stepped(opt, args, kwargs):
        cls = type(opt)
        name = names.get(cls)
        if name is None:
            name = names[cls] = ("Optimizer.step#%s.step" % cls.__name__).encode()
        scope_ended(name)

    handle = register(stepped)
    next_batch = iterator.__next__

    @functools.wraps(next_batch)
    def __next__(self):
        try:
            return next_batch(self)
        finally:
            name = getattr(self, "_profile_name", None)
            if isinstance(name, str):
                scope_ended(name.encode())

    __next__._ptprof_wrapped = True
    iterator.__next__ = __next__
    if reports_steps() == 1:
        keep.append(handle)
        return True
    handle.remove()
    iterator.__next__ = next_batch
    return False
