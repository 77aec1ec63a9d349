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

Output: {"torch_version": "...", "from_stack": bool,
         "lines": {op name: [line, ...]}, "functions": {op name: [name, ...]}}
(sorted, unique: a set per op name, so that run-to-run drift of torch's
counts does not matter).
"""

import argparse
import json
import os
import runpy
import sys


def parse(entry):
    """"path/to/file.py(12): function" -> (path, 12, function), else None."""
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
    lines, functions = {}, {}
    for evt in events:
        if not evt.name.startswith("aten::"):
            continue
        frame = innermost_script_frame(evt.stack if from_stack else python_ancestors(evt), script)
        if frame is not None:
            lines.setdefault(evt.name, set()).add(frame[1])
            functions.setdefault(evt.name, set()).add(frame[2])
    with open(args.out, "w") as f:
        json.dump({"torch_version": torch.__version__, "from_stack": from_stack,
                   "lines": {k: sorted(v) for k, v in lines.items()},
                   "functions": {k: sorted(v) for k, v in functions.items()}}, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
