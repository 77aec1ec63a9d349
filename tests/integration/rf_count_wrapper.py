"""Runs a training script unchanged under rf_counter (a plain RecordFunction
callback, see rf_counter.cpp) and writes what it counted as JSON: the exact
reference ptprof's equivalence test compares against.

    python rf_count_wrapper.py [--wait N --warmup N --active N --repeat N
        --skip-first N] [--no-shapes] [--cache-dir DIR] --out counts.json
        -- script.py [args...]

rf_counter.cpp is built for the torch this interpreter imports
(torch_cxx.py; cached in --cache-dir, default $PTPROF_BUILD_DIR/torch-cxx-cache,
else a directory under the system's temporary directory) and started right
after `import torch`, before the script's first line; the script then runs as
__main__ (runpy). Steps are ptprof's default rule (a step ends where
"Optimizer.step#<Class>.step" ends, deferred to the end of a user scope begun
in the same step), counted by the counter itself from 0. The schedule flags
mean what they mean to torch.profiler.schedule (active defaults to 1, the
others to 0); without any of them every step is recorded, as ptprof does by
default. The recorded steps are checked against torch.profiler.schedule
itself.

The output:
    {"torch_version": "...", "torch_path": "...",
     "steps": <step ends seen>, "schedule": {...} or null,
     "recorded_steps": [n, ...],     # steps begun and recorded
     "rows": [{"name", "input_shapes", "count", "folded"}, ...],  # summed over windows
     "windows": {"<window>": [row, ...]},
     "folded": <events merged away>, "open": <events still open at the end>}
"count" is what ptprof's report (and torch.profiler's key_averages) should
show; "folded" is how many events of that key the merge (an event whose only
child has its own name absorbs that child) removed.

The script's exit status is passed on.
"""

import argparse
import ctypes
import json
import os
import runpy
import sys
import tempfile

from schedule_args import add_schedule_args, schedule_from_args

HERE = os.path.dirname(os.path.abspath(__file__))
COUNTER_SOURCE = os.path.join(HERE, "rf_counter.cpp")


def default_cache_dir():
    build = os.environ.get("PTPROF_BUILD_DIR")
    if build:
        return os.path.join(build, "torch-cxx-cache")
    return os.path.join(tempfile.gettempdir(), "ptprof-torch-cxx-cache-%d" % os.getuid())


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_schedule_args(p)
    p.add_argument("--no-shapes", action="store_true", help="count by name only (input_shapes '[]')")
    p.add_argument("--cache-dir", default=None, help="where the counter library is built")
    p.add_argument("--out", required=True, help="where to write the JSON")
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    return p.parse_args(argv)


def load_counter(cache_dir):
    sys.path.insert(0, HERE)
    try:
        import torch_cxx
    finally:
        sys.path.remove(HERE)
    lib = ctypes.CDLL(torch_cxx.build(COUNTER_SOURCE, cache_dir))
    i64 = ctypes.c_int64
    lib.rf_counter_start.argtypes = [ctypes.c_int, ctypes.c_int, i64, i64, i64, i64, i64]
    lib.rf_counter_start.restype = ctypes.c_int
    lib.rf_counter_stop.argtypes = []
    lib.rf_counter_stop.restype = None
    lib.rf_counter_step.argtypes = []
    lib.rf_counter_step.restype = i64
    lib.rf_counter_window_of.argtypes = [i64]
    lib.rf_counter_window_of.restype = i64
    lib.rf_counter_write_json.argtypes = [ctypes.c_char_p]
    lib.rf_counter_write_json.restype = ctypes.c_int
    return lib


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)

    import torch

    sched = schedule_from_args(args)
    lib = load_counter(args.cache_dir or default_cache_dir())
    s = sched or {"skip_first": 0, "wait": 0, "warmup": 0, "active": 1, "repeat": 0}
    if (
        lib.rf_counter_start(
            0 if args.no_shapes else 1,
            1 if sched else 0,
            s["skip_first"],
            s["wait"],
            s["warmup"],
            s["active"],
            s["repeat"],
        )
        != 0
    ):
        sys.exit("rf_counter_start failed")

    script = os.path.abspath(args.script)
    sys.argv = [script] + list(args.script_args)
    sys.path.insert(0, os.path.dirname(script))
    exit_code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code
        exit_code = code if isinstance(code, int) else (0 if code is None else 1)
    finally:
        lib.rf_counter_stop()

    fd, raw_path = tempfile.mkstemp(prefix="rf-counter-", suffix=".json")
    os.close(fd)
    try:
        if lib.rf_counter_write_json(raw_path.encode()) != 0:
            sys.exit("rf_counter_write_json failed")
        with open(raw_path) as f:
            raw = json.load(f)
    finally:
        os.unlink(raw_path)

    steps = raw["steps"]  # step ends seen: steps 0..steps have begun
    recorded = [n for n in range(steps + 1) if lib.rf_counter_window_of(n) >= 0]
    if sched is not None:
        # The counter's schedule is torch.profiler.schedule's.
        from torch.profiler import ProfilerAction, schedule

        fn = schedule(**s)
        expected = [n for n in range(steps + 1) if fn(n) in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)]
        if recorded != expected:
            sys.exit("rf_counter's schedule disagrees with torch.profiler.schedule: %r vs %r" % (recorded, expected))

    merged = {}
    windows = {}
    for r in raw["rows"]:
        row = {"name": r["name"], "input_shapes": r["input_shapes"], "count": r["count"], "folded": r["folded"]}
        windows.setdefault(str(r["window"]), []).append(row)
        key = (r["name"], r["input_shapes"])
        if key in merged:
            merged[key]["count"] += r["count"]
            merged[key]["folded"] += r["folded"]
        else:
            merged[key] = dict(row)
    out = {
        "torch_version": torch.__version__,
        "torch_path": os.path.dirname(os.path.realpath(torch.__file__)),
        "steps": steps,
        "schedule": sched,
        "recorded_steps": recorded,
        "rows": list(merged.values()),
        "windows": windows,
        "folded": raw["folded"],
        "open": raw["open"],
    }
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
