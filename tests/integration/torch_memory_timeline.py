"""Runs a training script under torch.profiler as torch's memory timeline
needs it (record_shapes, profile_memory, with_stack; no schedule: one window
from before the script's first line) and writes torch's own categories: the
reference ptprof's memory categories are compared with (test_memory_categories.py).

    python torch_memory_timeline.py --out ref.json -- script.py [args...]

Writes {"timeline": export_memory_timeline's [times, sizes] for the CPU,
"step_ends_us": the end of every "Optimizer.step#..." range (ptprof's default
step rule ends a step there), in the timeline's microseconds}. torch 2.x only.
"""

import argparse
import json
import os
import runpy
import sys
import tempfile


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    args = p.parse_args()

    from torch.profiler import ProfilerActivity, profile

    script = os.path.abspath(args.script)
    sys.argv = [script] + list(args.script_args)
    sys.path.insert(0, os.path.dirname(script))
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True, with_stack=True) as prof:
        runpy.run_path(script, run_name="__main__")

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "timeline.json")
        prof.export_memory_timeline(path, device="cpu")
        with open(path) as f:
            timeline = json.load(f)
    ends = []
    stack = list(prof.profiler.kineto_results.experimental_event_tree())
    while stack:
        e = stack.pop()
        if e.name.startswith("Optimizer.step#"):
            ends.append(e.end_time_ns // 1000)
        stack.extend(e.children)
    with open(args.out, "w") as f:
        json.dump({"timeline": timeline, "step_ends_us": sorted(ends)}, f)


if __name__ == "__main__":
    main()
