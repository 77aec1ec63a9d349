"""Cost per nn.Module call of the bootstrap's module hooks (--step forward).

A model of many tiny modules (nn.Identity: the call itself is the work) is
called in a loop under torch.no_grad(). Modes, each in its own process,
interleaved round by round (the machine is shared: only differences within
a round mean anything; calls are timed in the thread's CPU time):

    none              no profiler
    ptprof            ptprof run (default step rule: no module hooks)
    ptprof+forward    ptprof run --step forward (the bootstrap's two global hooks)

No schedule window is open in the timed part (--schedule skip_first=1000000),
so what is measured is the hooks, not the recording of operators.

    python bench/forward_hook_cost.py --ptprof build/bin/ptprof [--rounds 5] [--calls 20000]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

MODES = {"ptprof": [], "ptprof+forward": ["--step", "forward"]}
MODULES = 50


def worker(calls):
    import torch
    import torch.nn as nn

    torch.set_num_threads(1)
    model = nn.Sequential(*[nn.Identity() for _ in range(MODULES)])
    x = torch.ones(1)
    with torch.no_grad():
        for _ in range(200):
            model(x)
        t0 = time.thread_time_ns()
        for _ in range(calls):
            model(x)
        t1 = time.thread_time_ns()
    # Module calls per model call: the Sequential and its children.
    print(json.dumps({"ns_per_module_call": (t1 - t0) / (calls * (MODULES + 1))}))


def run_mode(mode, args):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--calls", str(args.calls)]
    if mode != "none":
        cmd = (
            [args.ptprof, "run", "-o", args.out, "--schedule", "skip_first=1000000,active=1"]
            + MODES[mode]
            + ["--"]
            + cmd
        )
    proc = subprocess.run(cmd, capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)["ns_per_module_call"]
    raise SystemExit("%s failed:\n%s\n%s" % (mode, proc.stdout, proc.stderr))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ptprof", default="build/bin/ptprof")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--out", default="/tmp/ptprof-forward-hook-bench")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args.calls)
    modes = ["none"] + list(MODES)
    results = {m: [] for m in modes}
    for r in range(args.rounds):
        for m in modes:
            results[m].append(run_mode(m, args))
        print("round %d: %s" % (r, "  ".join("%s %.0f ns" % (m, results[m][-1]) for m in modes)), flush=True)
    base = statistics.median(results["none"])
    for m in modes:
        med = statistics.median(results[m])
        print("%-16s median %.0f ns per module call (%+.0f ns vs none)" % (m, med, med - base))


if __name__ == "__main__":
    main()
