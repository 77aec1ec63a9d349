"""ptprof: annotations for programs profiled by ``ptprof run``.

Nothing here is needed to profile a program: ``ptprof run -- python train.py``
records operators and steps with no change to the script. This module only
adds what a program may want to say itself::

    import ptprof

    for batch in loader:
        with ptprof.range("data"):
            x = prepare(batch)
        train_step(x)
        ptprof.step()           # ends the step (with PTPROF_STEP=manual)

    @ptprof.range("evaluate")   # a range as a decorator
    def evaluate(): ...

    ptprof.mark("checkpoint saved")

    if ptprof.recording():      # inside a window of the schedule now
        ...

The functions are found in the running process, where ``ptprof run`` has
preloaded the agent (libptprof_agent.so); there is nothing to build or
install: ``ptprof run`` puts this directory on PYTHONPATH. Without the agent,
the first call warns once (RuntimeWarning) and every call does nothing.
"""

import functools
import warnings

from ptprof import _abi

__all__ = ["step", "range", "mark", "enabled", "recording"]

# The agent's functions the calls below make (ptprof.h, typed in _abi.py),
# bound lazily on first use (see _bind), or None.
_API = ("ptprof_step", "ptprof_range_push", "ptprof_range_pop", "ptprof_mark")
_step_fn = None
_push_fn = None
_pop_fn = None
_mark_fn = None
_bound = False
_enabled = False
# ptprof_recording, looked up on the first call of recording(): 0 when absent.
_recording_fn = None

# Names already encoded to UTF-8; bounded so a program that makes up names
# (f"step {i}") cannot grow it without limit.
_NAME_CACHE_MAX = 1024
_names = {}


def _bind(stacklevel=3):
    """Looks the agent's functions up in the process, once."""
    global _bound, _enabled, _step_fn, _push_fn, _pop_fn, _mark_fn
    if _bound:
        return _enabled
    _bound = True
    functions = _abi.bind(*_API)
    if functions is None:
        warnings.warn(
            "ptprof: the ptprof agent is not loaded in this process, so ptprof.step(), "
            "ptprof.range() and ptprof.mark() do nothing; run the program under "
            "`ptprof run -- python ...` to profile it",
            RuntimeWarning,
            stacklevel=stacklevel,
        )
        return False
    _step_fn, _push_fn, _pop_fn, _mark_fn = functions
    _enabled = True
    return True


def _encode(name):
    b = _names.get(name)
    if b is None:
        if isinstance(name, bytes):
            b = name
        else:
            b = str(name).encode("utf-8", "surrogateescape")
        # The C side takes a NUL-terminated string.
        if b"\0" in b:
            b = b.replace(b"\0", b"?")
        if len(_names) >= _NAME_CACHE_MAX:
            _names.clear()
        _names[name] = b
    return b


def enabled():
    """True when the ptprof agent is loaded, i.e. the calls here record."""
    if _bound:
        return _enabled
    # Asking is not a use: no warning when the agent is absent.
    if _abi.bind(*_API) is None:
        return False
    return _bind()


def recording():
    """True while this process records: a window of the schedule is open
    (for a DataLoader worker or another child without steps, its parent's
    window), or always without a schedule. Once it returns True, the calling
    thread's next operators are recorded. False without the agent (no
    warning: asking is not a use)."""
    global _recording_fn
    if _recording_fn is None:
        functions = _abi.bind("ptprof_recording")
        _recording_fn = functions[0] if functions is not None else 0
    return bool(_recording_fn and _recording_fn())


def step():
    """Ends the current step; the next one begins (ProfilerStep#N+1)."""
    if _step_fn is not None:
        _step_fn()
    elif not _bound and _bind():
        _step_fn()


def mark(name):
    """Records a named instant on the calling thread."""
    if _mark_fn is not None:
        _mark_fn(_encode(name))
    elif not _bound and _bind():
        _mark_fn(_encode(name))


def _push(name_bytes):
    if _push_fn is not None:
        _push_fn(name_bytes)
        return True
    if not _bound and _bind(stacklevel=4):
        _push_fn(name_bytes)
        return True
    return False


class range:  # noqa: N801  (lower case, like the builtin it mirrors in spirit)
    """A named range: a context manager and a decorator.

        with ptprof.range("forward"):
            ...

        @ptprof.range("evaluate")
        def evaluate(): ...

    Ranges nest per thread; the range closes even when the body raises.
    One object may be entered again (also from several threads, and
    recursively): each entry pushes, each exit pops.
    """

    __slots__ = ("name", "_bytes")

    def __init__(self, name):
        self.name = name
        self._bytes = _encode(name)

    def __enter__(self):
        _push(self._bytes)
        return self

    def __exit__(self, exc_type, exc, tb):
        # Pop whatever happened in the body; never swallow its exception.
        if _pop_fn is not None:
            _pop_fn()
        return False

    def __call__(self, fn):
        name_bytes = self._bytes

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            pushed = _push(name_bytes)
            try:
                return fn(*args, **kwargs)
            finally:
                if pushed:
                    _pop_fn()

        return wrapper

    def __repr__(self):
        return "ptprof.range(%r)" % (self.name,)
