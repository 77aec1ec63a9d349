"""The target program of the GPU replay (issue 54): re-enacts the CPU side of
a recorded GPU run, from its plan file, with the torch under test, so that
`ptprof run` profiles it as it would the real run.

    python replay_driver.py PLAN --scopes LIB.so --cudart LIBCUDART.so [--no-cupti]

PLAN is what replay_plan.py made of a Kineto trace (any trace:
`replay_plan.py TRACE -o PLAN`); LIB.so is replay_scopes.cpp built for this
interpreter's torch (`python build_scopes.py LIB.so`); LIBCUDART.so is the
CUDA runtime the calls go through (the tests' stand-in,
<build>/tests/stub-cuda/runtime/libcudart.so.13). The stand-in CUPTI is the
library PTPROF_CUPTI_PATH names (the agent loads the same one).

What it does, in order: imports torch (so libtorch, and under `ptprof run` the
torch bridge, load as in a real run); loads the runtime RTLD_GLOBAL, then the
helper library; reads the plan; makes one thread per plan thread, named after
the trace's thread; calls the stand-in's ptprof_replay_begin() (time 0 of the
plan) right before starting them all at once. Each thread replays its own
scopes and calls in plan order: it opens a scope (a RecordFunction: FUNCTION
for cpu_op, USER_SCOPE for user_annotation) at its start, closes it at its
end, and issues a call (ptprof_replay_issue: the stand-in's
ptprof_replay_call, then the hooked entry point) at its start -- each at
begin + t, never earlier; when it is late it goes on at once. The GPU work is
the stand-in CUPTI's to deliver, at its plan times.

--no-cupti skips ptprof_replay_begin (and lets the calls find no stand-in):
for a smoke test under a CUPTI without the replay's entry points.

Exit status: 0 every thread joined; 1 a thread failed; 2 bad usage, a bad
plan, or no PTPROF_CUPTI_PATH (without --no-cupti). Prints one summary line:
events replayed, and how late they ran (worst, median).
"""

import argparse
import ctypes
import gc
import os
import sys
import threading
import time

PLAN_MAGIC = "ptprof-replay-plan"
SPIN_NS = 200_000  # the last stretch of a wait is a yielding spin: sleep overshoots by ~50-100 us


class DriverError(Exception):
    """Bad usage or input: main() prints it and returns 2."""


class Thread:
    """One plan thread: its trace identity and its actions."""

    def __init__(self, index, pid, tid, name):
        self.index = index
        self.pid = pid
        self.tid = tid
        self.name = name
        self.items = []  # (kind, start, end, ...) in plan order
        self.lateness = []  # ns late, per action
        self.error = None


def as_bytes(name):
    """A plan name as the bytes the C side takes (the file's bytes, even where they are no UTF-8)."""
    return name.encode("utf-8", "surrogateescape")


def read_plan(path):
    """The plan's threads (with their scope and call lines) and line counts."""
    try:
        f = open(path, encoding="utf-8", errors="surrogateescape")
    except OSError as e:
        raise DriverError("%s: %s" % (path, e.strerror or e)) from None
    threads = {}
    counts = {"scope": 0, "call": 0, "work": 0}
    with f:
        header = f.readline().rstrip("\n").split("\t")
        if header[0] != PLAN_MAGIC or len(header) < 2 or header[1] != "1":
            raise DriverError("%s: not a replay plan (version 1)" % path)
        for number, line in enumerate(f, 2):
            line = line.rstrip("\n")
            kind, _, rest = line.partition("\t")
            try:
                if kind == "thread":
                    n, pid, tid, name = rest.split("\t", 3)
                    threads[int(n)] = Thread(int(n), pid, tid, None if name == "-" else name)
                elif kind == "scope":
                    n, start, end, scope_kind, name = rest.split("\t", 4)
                    threads[int(n)].items.append(
                        ("scope", int(start), int(end), scope_kind == "user_annotation", as_bytes(name))
                    )
                    counts["scope"] += 1
                elif kind == "call":
                    n, start, end, _call_kind, _cbid, corr, name = rest.split("\t", 6)
                    threads[int(n)].items.append(("call", int(start), int(end), int(corr), as_bytes(name)))
                    counts["call"] += 1
                elif kind == "work":
                    counts["work"] += 1
            except (ValueError, KeyError) as e:
                raise DriverError("%s:%d: bad %s line (%s)" % (path, number, kind, e)) from None
    return [threads[n] for n in sorted(threads)], counts


def wait_until(target_ns):
    """Returns at begin + t or later, never earlier; the ns it returned late."""
    while True:
        now = time.perf_counter_ns()
        left = target_ns - now
        if left <= 0:
            return -left
        if left > SPIN_NS:
            time.sleep((left - SPIN_NS) / 1e9)
        else:
            time.sleep(0)  # lets the other replay threads run (releases the GIL)


def replay(thread, lib, begin_ns, barrier):
    """One thread's scopes and calls, in plan order, each at its time."""
    open_scope = lib.ptprof_replay_open
    close_scope = lib.ptprof_replay_close
    issue = lib.ptprof_replay_issue
    late = thread.lateness
    stack = []  # (end, handle) of the open scopes
    try:
        barrier.wait()
        for item in thread.items:
            start = item[1]
            while stack and stack[-1][0] <= start:
                end, handle = stack.pop()
                late.append(wait_until(begin_ns[0] + end))
                close_scope(handle)
            late.append(wait_until(begin_ns[0] + start))
            if item[0] == "scope":
                stack.append((item[2], open_scope(item[4], 1 if item[3] else 0)))
            else:
                issue(item[3] & 0xFFFFFFFF, item[4])  # at its start; its end only bounds the thread
        while stack:
            end, handle = stack.pop()
            late.append(wait_until(begin_ns[0] + end))
            close_scope(handle)
        # A call's time is the thread's, as a blocking call's would be: a thread
        # whose last event is a long synchronisation ends after it.
        wait_until(begin_ns[0] + max((item[2] for item in thread.items), default=0))
    except Exception as e:  # reported by main(); the other threads go on
        thread.error = e
        while stack:
            close_scope(stack.pop()[1])


def load_helpers(scopes_path, cudart_path, no_cupti):
    """The runtime (global, so dlsym(RTLD_DEFAULT) finds it), the helper library, and the stand-in CUPTI."""
    try:
        ctypes.CDLL(cudart_path, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
    except OSError as e:
        raise DriverError("--cudart %s: %s" % (cudart_path, e)) from None
    try:
        lib = ctypes.CDLL(scopes_path)
    except OSError as e:
        raise DriverError("--scopes %s: %s (build it with build_scopes.py for this torch)" % (scopes_path, e)) from None
    lib.ptprof_replay_open.restype = ctypes.c_void_p
    lib.ptprof_replay_open.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.ptprof_replay_close.restype = None
    lib.ptprof_replay_close.argtypes = [ctypes.c_void_p]
    lib.ptprof_replay_issue.restype = ctypes.c_int
    lib.ptprof_replay_issue.argtypes = [ctypes.c_uint32, ctypes.c_char_p]
    lib.ptprof_replay_entry_calls.restype = ctypes.c_uint64
    lib.ptprof_replay_entry_calls.argtypes = []
    lib.ptprof_replay_prepare.restype = None
    lib.ptprof_replay_prepare.argtypes = []
    cupti_path = os.environ.get("PTPROF_CUPTI_PATH")
    begin = None
    if not no_cupti:
        if not cupti_path:
            raise DriverError("PTPROF_CUPTI_PATH is not set: it must name the replay's stand-in CUPTI")
        try:
            cupti = ctypes.CDLL(cupti_path)
        except OSError as e:
            raise DriverError("PTPROF_CUPTI_PATH=%s: %s" % (cupti_path, e)) from None
        try:
            begin = cupti.ptprof_replay_begin
        except AttributeError:
            raise DriverError(
                "PTPROF_CUPTI_PATH=%s has no ptprof_replay_begin: not the replay's stand-in CUPTI "
                "(--no-cupti replays without it)" % cupti_path
            ) from None
        begin.restype = None
        begin.argtypes = []
    lib.ptprof_replay_prepare()  # after the stand-in is loaded: it finds it with RTLD_NOLOAD
    return lib, begin


def percentile(sorted_values, p):
    if not sorted_values:
        return 0
    return sorted_values[min(len(sorted_values) - 1, int(p * len(sorted_values)))]


def parse_args(argv):
    p = argparse.ArgumentParser(prog="replay_driver.py", description="Replays a GPU replay plan's CPU side.")
    p.add_argument("plan", help="the plan file (replay_plan.py)")
    p.add_argument("--scopes", required=True, metavar="LIB.so", help="replay_scopes.cpp built for this torch")
    p.add_argument("--cudart", required=True, metavar="LIBCUDART.so", help="the CUDA runtime to issue calls through")
    p.add_argument(
        "--no-cupti", action="store_true", help="no stand-in CUPTI: skip ptprof_replay_begin/ptprof_replay_call"
    )
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    import torch  # noqa: F401  (first: libtorch and ptprof's torch bridge load as in a real run)

    try:
        lib, begin = load_helpers(os.path.abspath(args.scopes), os.path.abspath(args.cudart), args.no_cupti)
        threads, counts = read_plan(args.plan)
    except DriverError as e:
        print("replay_driver.py: %s" % e, file=sys.stderr)
        return 2
    begin_ns = [0]
    # Every thread waits at the barrier; the last party (here) takes time 0 first.
    barrier = threading.Barrier(len(threads) + 1)
    workers = [
        threading.Thread(
            target=replay, args=(t, lib, begin_ns, barrier), name=t.name or "replay-%d" % t.index, daemon=False
        )
        for t in threads
    ]
    gc.disable()  # a collection in the middle would make every thread late at once
    for w in workers:
        w.start()
    if begin is not None:
        begin()
    begin_ns[0] = time.perf_counter_ns()
    barrier.wait()
    for w in workers:
        w.join()
    gc.enable()
    wall_ns = time.perf_counter_ns() - begin_ns[0]
    lateness = sorted(x for t in threads for x in t.lateness)
    failed = [t for t in threads if t.error is not None]
    for t in failed:
        print("replay_driver.py: thread %d (%s): %r" % (t.index, t.name or "-", t.error), file=sys.stderr)
    print(
        "replay: %d threads, %d scopes, %d calls (%d entry points called), %d work (the stand-in's); "
        "%d actions in %.3f s, late at worst %.3f ms, p50 %.3f ms"
        % (
            len(threads),
            counts["scope"],
            counts["call"],
            lib.ptprof_replay_entry_calls(),
            counts["work"],
            len(lateness),
            wall_ns / 1e9,
            (lateness[-1] if lateness else 0) / 1e6,
            percentile(lateness, 0.5) / 1e6,
        )
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
