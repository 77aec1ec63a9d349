"""Runs a script unchanged under torch.profiler(with_stack=True) and writes,
per aten op name, the innermost frame of that script that torch names for
the op (the first entry of the op's stack in the script's file). The
reference of test_stacks.py.

    python torch_stack_wrapper.py --out lines.json -- script.py [args...]

torch 1.x gives each op its stack (evt.stack, the line executing in each
frame). torch 2.x leaves evt.stack empty and puts python_function events
("file(line): function") around the ops instead, named by the line of the
function's definition (or, for frames already running when the profiler
started, their line then): from those, only the function is comparable.

torch 1.x gives an op under a backward function the stack of the forward op
of that function's sequence number (EventList._set_backward_stacktraces),
and finds "under" from its events' nesting, rebuilt from start and end
times truncated to microseconds (start and duration apart): an op that ends
within 2 us of its backward function's end may fall out of it, and
then keeps its own stack (the caller of backward()), from run to run. Such
an op is ambiguous: the frames it could get (its own and each candidate
backward function's forward op's) go to "possible_*", not to "lines" and
"functions". Truncation only ever moves an op out of a scope, never into
one, so the ops it leaves alone are attributed as torch means.

Output: {"torch_version": "...", "from_stack": bool,
         "lines": {op name: [line, ...]}, "functions": {op name: [name, ...]},
         "possible_lines": {...}, "possible_functions": {...}}
(sorted, unique: a set per op name, so that run-to-run drift of torch's
counts does not matter).
"""

import argparse
import json
import os
import runpy
import sys


def parse(entry):
    """ "path/to/file.py(12): function" -> (path, 12, function), else None."""
    head, sep, function = entry.partition("): ")
    path, _, line = head.rpartition("(")
    if not sep or not path or not line.isdigit():
        return None
    return path, int(line), function


def in_script(path, script):
    # torch 2.x shortens paths (relative to the working directory or sys.path)
    return os.path.abspath(path) == script or script.endswith("/" + path.lstrip("./"))


def innermost_script_frame(entries, script):
    for entry in entries:
        frame = parse(entry)
        if frame and in_script(frame[0], script):
            return frame
    return None


def python_ancestors(evt):
    out = []
    p = evt.cpu_parent
    while p is not None:
        out.append(p.name)
        p = p.cpu_parent
    return out


BACKWARD_FUNCTION = 1  # at::RecordScope


def ancestors(evt):
    p = evt.cpu_parent
    while p is not None:
        yield p
        p = p.cpu_parent


def ambiguous_ops(events):
    """torch 1.x: id(op) -> the stacks it could have been given, for each op
    whose place under a backward function depends on microsecond truncation
    (see the module's docstring)."""

    def bw_parent(evt):
        return next((p for p in [evt, *ancestors(evt)] if p.scope == BACKWARD_FUNCTION), None)

    # torch's own rule, on torch's own tree.
    forward = {}
    for evt in events:
        if bw_parent(evt) is None and evt.stack is not None:
            forward.setdefault((evt.sequence_nr, evt.thread), evt.stack)
    backward = {}
    for evt in events:
        if evt.scope == BACKWARD_FUNCTION:
            backward.setdefault(evt.thread, []).append(evt)
    out = {}
    for evt in events:
        if not evt.name.startswith("aten::"):
            continue
        start, end = evt.time_range.start, evt.time_range.end
        above = set(id(p) for p in ancestors(evt))
        # A backward function the op may truly lie in although torch's tree
        # says it does not. torch truncates start and duration apart (end =
        # start_us + duration_us), so a scope's end may read up to 2 us
        # early: an op inside it starts and ends at most 1 us past that.
        missed = [
            b
            for b in backward.get(evt.thread, ())
            if id(b) not in above
            and b is not evt
            and b.time_range.start <= start <= b.time_range.end + 1
            and end <= b.time_range.end + 1
        ]
        if missed:
            out[id(evt)] = [evt.stack] + [forward.get((b.sequence_nr, b.fwd_thread), []) for b in missed]
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    args = p.parse_args()

    import torch
    from torch.profiler import ProfilerActivity, profile

    script = os.path.abspath(args.script)
    sys.argv = [script] + args.script_args
    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
        runpy.run_path(script, run_name="__main__")
    events = prof.events()
    from_stack = any(evt.stack for evt in events)
    possible_stacks = ambiguous_ops(events) if from_stack else {}
    lines, functions, possible_lines, possible_functions = {}, {}, {}, {}
    for evt in events:
        if not evt.name.startswith("aten::"):
            continue
        stacks = possible_stacks.get(id(evt))
        into_lines, into_functions = (lines, functions) if stacks is None else (possible_lines, possible_functions)
        for stack in stacks or [evt.stack if from_stack else python_ancestors(evt)]:
            frame = innermost_script_frame(stack, script)
            if frame is not None:
                into_lines.setdefault(evt.name, set()).add(frame[1])
                into_functions.setdefault(evt.name, set()).add(frame[2])

    def lists(d):
        return {k: sorted(v) for k, v in d.items()}

    with open(args.out, "w") as f:
        json.dump(
            {
                "torch_version": torch.__version__,
                "from_stack": from_stack,
                "lines": lists(lines),
                "functions": lists(functions),
                "possible_lines": lists(possible_lines),
                "possible_functions": lists(possible_functions),
            },
            f,
            indent=1,
            sort_keys=True,
        )


if __name__ == "__main__":
    main()
