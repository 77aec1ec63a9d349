"""Cost per op of ptprof's call stack modes on a loop of top-level ops.

Every iteration calls one aten op straight from the script (torch.add on a
1-element tensor), so every op is top-level and pays the full price of
--python-attribution (whose ops are those called from Python); the loop
body is a function two calls deep, as in a real script. Modes, each in its
own process, interleaved round by round (the machine is shared; only
differences within a round mean anything; ops are timed in the thread's CPU
time, which time spent waiting for a core does not inflate):

    ptprof              ptprof run
    ptprof+attribution  ptprof run --python-attribution
    ptprof+pystack      ptprof run --with-stack --no-native-stack
    ptprof+stack        ptprof run --with-stack
    none                no profiler
    torch+stack         torch.profiler.profile(activities=[CPU], with_stack=True)

With --before OTHER_PTPROF (another build's launcher, its agent beside it),
the three stack modes also run under it (before+attribution, ...), so that a
change is measured against its base in the same run.

    python bench/stack_cost.py --ptprof build/bin/ptprof [--rounds 7] [--ops 200000] [--before PATH]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

MODES = {
    "ptprof": [],
    "ptprof+attribution": ["--python-attribution"],
    "ptprof+pystack": ["--with-stack", "--no-native-stack"],
    "ptprof+stack": ["--with-stack"],
}


def worker(n, torch_stack):
    import contextlib

    import torch

    torch.set_num_threads(1)
    x = torch.zeros(1)

    def body(k):
        for _ in range(k):
            torch.add(x, x)

    def run(k):
        body(k)

    run(2000)  # warm up
    times = []
    for _ in range(5):
        prof = (
            torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], with_stack=True)
            if torch_stack
            else contextlib.nullcontext()
        )
        with prof:
            t0 = time.thread_time_ns()
            run(n)
            times.append((time.thread_time_ns() - t0) / n)
    print(json.dumps({"ns_per_op": statistics.median(times)}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptprof", default="build/bin/ptprof")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--ops", type=int, default=200000)
    ap.add_argument("--out", default="/tmp/ptprof-stack-cost")
    ap.add_argument("--before", help="another build's ptprof, whose stack modes run too")
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--torch-stack", action="store_true")
    args = ap.parse_args()
    if args.worker:
        worker(args.ops, args.torch_stack)
        return
    modes = {m: [args.ptprof, "run", "-o", args.out] + flags for m, flags in MODES.items()}
    if args.before:
        for m, flags in MODES.items():
            if flags:
                modes[m.replace("ptprof", "before")] = [args.before, "run", "-o", args.out] + flags
    modes["none"] = []
    modes["torch+stack"] = []
    per = {m: [] for m in modes}
    for r in range(args.rounds):
        # Alternate the order so that no mode always runs first in a round.
        for m, prefix in list(modes.items()) if r % 2 == 0 else list(reversed(modes.items())):
            cmd = (
                prefix
                + (["--"] if prefix else [])
                + [sys.executable, os.path.abspath(__file__), "--worker", "--ops", str(args.ops)]
            )
            if m == "torch+stack":
                cmd.append("--torch-stack")
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit("%s failed:\n%s" % (m, p.stderr[-2000:]))
            per[m].append(json.loads(p.stdout.strip().splitlines()[-1])["ns_per_op"])
        print("round %d/%d done" % (r + 1, args.rounds), file=sys.stderr, flush=True)
    print(
        "top-level torch.add loop, %d rounds x %d ops; cost over ptprof = median of differences within a round"
        % (args.rounds, args.ops)
    )
    print(
        "%-20s %10s %18s %16s %22s"
        % ("mode", "ns/op", "ns/op over ptprof", "ns/op over none", "/ torch+stack's (over none)")
    )
    torch_add = statistics.median(a - b for a, b in zip(per["torch+stack"], per["none"]))
    for m in modes:
        over_ptprof = statistics.median(a - b for a, b in zip(per[m], per["ptprof"]))
        over_none = statistics.median(a - b for a, b in zip(per[m], per["none"]))
        ratio = statistics.median((a - n) / (t - n) for a, n, t in zip(per[m], per["none"], per["torch+stack"]))
        print("%-20s %10.1f %18.1f %16.1f %22.2f" % (m, statistics.median(per[m]), over_ptprof, over_none, ratio))
    print("torch+stack adds %.1f ns/op over none" % torch_add)


if __name__ == "__main__":
    main()
