"""Runs a training script under torch's profiler with memory
(torch.autograd.profiler.profile(profile_memory=True, record_shapes=True),
the profiler torch.profiler.profile drives) for steps FIRST .. FIRST+COUNT-1
and writes what it saw as JSON: the memory reference of test_memory.py.

    python torch_memory_wrapper.py --first N --count N --out rows.json -- script.py [args...]

The profiler is entered directly rather than through torch.profiler's
schedule, so no ProfilerStep record_function of its own (torch 1.13's
allocates a handle tensor per step) adds allocations to the window. A step
ends where ptprof's default step rule ends it (an optimizer's step()
returns; see torch_profile_wrapper.py); the profiler is entered when step
FIRST begins (the end of step FIRST-1) and left when step FIRST+COUNT-1 ends.

The output: {"torch_version": "...", "steps": [recorded steps],
             "rows": [{"name", "count", "input_shapes", "cpu_memory_usage",
                       "self_cpu_memory_usage"}, ...],  # key_averages(group_by_input_shape=True)
             "memory_events": [[bytes, device_type], ...]}  # every memory event torch reported
"""

import argparse
import functools
import json
import os
import runpy
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--first", type=int, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    args = p.parse_args()

    import torch

    state = {"step": 0, "depth": 0, "prof": None, "recorded": [], "rows": None, "memory": []}

    def start():
        state["prof"] = torch.autograd.profiler.profile(profile_memory=True, record_shapes=True)
        state["prof"].__enter__()

    def stop():
        prof = state["prof"]
        state["prof"] = None
        prof.__exit__(None, None, None)
        state["rows"] = [{
            "name": e.key,
            "count": int(e.count),
            "input_shapes": e.input_shapes,
            "cpu_memory_usage": int(e.cpu_memory_usage),
            "self_cpu_memory_usage": int(e.self_cpu_memory_usage),
        } for e in prof.key_averages(group_by_input_shape=True)]
        state["memory"] = [[int(e.nbytes()), int(e.device_type())] for e in prof.kineto_results.events()
                           if e.name() == "[memory]"]

    def step_ended():
        step = state["step"]
        if state["prof"] is not None:
            state["recorded"].append(step)
            if step == args.first + args.count - 1:
                stop()
        state["step"] = step + 1
        if state["step"] == args.first:
            start()

    def wrap_step(cls):
        step = cls.__dict__.get("step")
        if step is None or getattr(step, "_ptprof_wrapper", False):
            return

        @functools.wraps(step)
        def step_then_count(*a, **kw):
            state["depth"] += 1
            try:
                return step(*a, **kw)
            finally:
                state["depth"] -= 1
                if state["depth"] == 0:
                    step_ended()

        step_then_count._ptprof_wrapper = True
        cls.step = step_then_count

    original_init = torch.optim.Optimizer.__init__

    @functools.wraps(original_init)
    def init_then_wrap(self, *a, **kw):
        original_init(self, *a, **kw)
        for cls in type(self).__mro__:
            if cls is torch.optim.Optimizer:
                break
            wrap_step(cls)

    torch.optim.Optimizer.__init__ = init_then_wrap
    if args.first == 0:
        start()

    script = os.path.abspath(args.script)
    sys.argv = [script] + list(args.script_args)
    sys.path.insert(0, os.path.dirname(script))
    exit_code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code
        exit_code = code if isinstance(code, int) else (0 if code is None else 1)
    if state["prof"] is not None:
        stop()
    with open(args.out, "w") as f:
        json.dump({"torch_version": torch.__version__, "steps": state["recorded"], "rows": state["rows"] or [],
                   "memory_events": state["memory"]}, f, indent=1)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
