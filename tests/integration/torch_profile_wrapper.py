"""Runs a training script under torch.profiler, unchanged, and writes what
torch.profiler saw as JSON: the reference ptprof's equivalence tests compare
against.

    python torch_profile_wrapper.py [--wait N --warmup N --active N --repeat N
        --skip-first N] [--quiet] --out rows.json -- script.py [args...]

The script runs as __main__ (runpy) inside
torch.profiler.profile(activities=[CPU], record_shapes=True, schedule=...),
started before the script's first line, as ptprof records from the start of
the process. A step ends where ptprof's default step rule ends it: when an
optimizer's step() returns (the end of torch's "Optimizer.step#<Class>.step"
range). The wrapper calls prof.step() there by wrapping the step() of each
optimizer class once its first instance exists (torch 1.13 has no global
optimizer step hook). Without any of --wait/--warmup/--active/--repeat/
--skip-first there is no schedule: everything is recorded as one window, as
ptprof does by default.

The output:
    {"torch_version": "...", "steps": <prof.step() calls>,
     "schedule": {...} or null,
     "windows": [[row, ...], ...],    # key_averages(group_by_input_shape=True) per window
     "rows": [row, ...],              # the same summed over all windows
     "by_name": {name: count, ...}}   # counts summed over shapes and windows
    row = {"name", "count", "input_shapes", "self_cpu_us", "cpu_total_us"}

Names are key_averages()'s: torch folds every "ProfilerStep#N" into one
"ProfilerStep*" row, and torch 1.13 records ProfilerStep spans only when
there is a schedule.

Unless --quiet, it prints the key_averages() table of every window to stdout.
The script's exit status is passed on.
"""

import argparse
import functools
import json
import os
import runpy
import sys

from schedule_args import add_schedule_args, schedule_from_args


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_schedule_args(p)
    p.add_argument("--out", required=True, help="where to write the JSON")
    p.add_argument("--quiet", action="store_true", help="print no tables")
    p.add_argument("--row-limit", type=int, default=20)
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)

    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    sched_desc = schedule_from_args(args)
    sched = schedule(**sched_desc) if sched_desc else None

    windows = []

    def on_trace_ready(prof):
        rows = []
        for evt in prof.key_averages(group_by_input_shape=True):
            rows.append(
                {
                    "name": evt.key,
                    "count": int(evt.count),
                    "input_shapes": evt.input_shapes,
                    "self_cpu_us": float(evt.self_cpu_time_total),
                    "cpu_total_us": float(evt.cpu_time_total),
                }
            )
        windows.append(rows)
        if not args.quiet:
            print("=== torch.profiler window %d ===" % (len(windows) - 1))
            print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=args.row_limit))
            sys.stdout.flush()

    state = {"prof": None, "depth": 0, "steps": 0}

    def wrap_step(cls):
        step = cls.__dict__.get("step")
        if step is None or getattr(step, "_ptprof_wrapper", False):
            return

        @functools.wraps(step)
        def step_then_profiler_step(*a, **kw):
            state["depth"] += 1
            try:
                return step(*a, **kw)
            finally:
                state["depth"] -= 1
                # Only the outermost step (a subclass may call super().step()).
                if state["depth"] == 0 and state["prof"] is not None:
                    state["steps"] += 1
                    state["prof"].step()

        step_then_profiler_step._ptprof_wrapper = True
        cls.step = step_then_profiler_step

    original_init = torch.optim.Optimizer.__init__

    @functools.wraps(original_init)
    def init_then_wrap(self, *a, **kw):
        original_init(self, *a, **kw)
        # torch wraps type(self).step in __init__ (its Optimizer.step# range);
        # ours goes around that, so prof.step() comes after the range closes.
        for cls in type(self).__mro__:
            if cls is torch.optim.Optimizer:
                break
            wrap_step(cls)

    torch.optim.Optimizer.__init__ = init_then_wrap

    script = os.path.abspath(args.script)
    sys.argv = [script] + list(args.script_args)
    sys.path.insert(0, os.path.dirname(script))
    exit_code = 0
    with profile(
        activities=[ProfilerActivity.CPU], record_shapes=True, schedule=sched, on_trace_ready=on_trace_ready
    ) as prof:
        state["prof"] = prof
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as e:
            code = e.code
            exit_code = code if isinstance(code, int) else (0 if code is None else 1)
        finally:
            state["prof"] = None

    merged = {}
    for rows in windows:
        for r in rows:
            key = (r["name"], json.dumps(r["input_shapes"]))
            m = merged.get(key)
            if m is None:
                merged[key] = dict(r)
            else:
                m["count"] += r["count"]
                m["self_cpu_us"] += r["self_cpu_us"]
                m["cpu_total_us"] += r["cpu_total_us"]
    by_name = {}
    for r in merged.values():
        by_name[r["name"]] = by_name.get(r["name"], 0) + r["count"]
    out = {
        "torch_version": torch.__version__,
        "steps": state["steps"],
        "schedule": sched_desc,
        "windows": windows,
        "rows": list(merged.values()),
        "by_name": by_name,
    }
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
