"""Cost per op of ptprof's call stack modes on a loop of top-level ops.

Every iteration calls one aten op straight from the script (torch.add on a
1-element tensor), so every op is top-level and pays the full price of
--python-attribution (whose ops are those called from Python); the loop
body is a function two calls deep, as in a real script. Modes, each in its
own process, interleaved round by round (the machine is shared; only
differences within a round mean anything):

    ptprof              ptprof run
    ptprof+attribution  ptprof run --python-attribution
    ptprof+pystack      ptprof run --with-stack --no-native-stack
    ptprof+stack        ptprof run --with-stack

    python bench/stack_cost.py --ptprof build/bin/ptprof [--rounds 7] [--ops 200000]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

MODES = {"ptprof": [], "ptprof+attribution": ["--python-attribution"],
         "ptprof+pystack": ["--with-stack", "--no-native-stack"], "ptprof+stack": ["--with-stack"]}


def worker(n):
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
        t0 = time.perf_counter_ns()
        run(n)
        times.append((time.perf_counter_ns() - t0) / n)
    print(json.dumps({"ns_per_op": statistics.median(times)}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptprof", default="build/bin/ptprof")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--ops", type=int, default=200000)
    ap.add_argument("--out", default="/tmp/ptprof-stack-cost")
    ap.add_argument("--worker", action="store_true")
    args = ap.parse_args()
    if args.worker:
        worker(args.ops)
        return
    per = {m: [] for m in MODES}
    for r in range(args.rounds):
        # Alternate the order so that no mode always runs first in a round.
        for m, flags in (list(MODES.items()) if r % 2 == 0 else list(reversed(MODES.items()))):
            cmd = [args.ptprof, "run", "-o", args.out] + flags + ["--", sys.executable, os.path.abspath(__file__),
                                                                   "--worker", "--ops", str(args.ops)]
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if p.returncode != 0:
                sys.exit("%s failed:\n%s" % (m, p.stderr[-2000:]))
            per[m].append(json.loads(p.stdout.strip().splitlines()[-1])["ns_per_op"])
        print("round %d/%d done" % (r + 1, args.rounds), file=sys.stderr, flush=True)
    print("top-level torch.add loop, %d rounds x %d ops; cost over ptprof = median of differences within a round"
          % (args.rounds, args.ops))
    print("%-20s %12s %18s" % ("mode", "ns/op", "ns/op over ptprof"))
    for m in MODES:
        diff = statistics.median(a - b for a, b in zip(per[m], per["ptprof"]))
        print("%-20s %12.1f %18.1f" % (m, statistics.median(per[m]), diff))


if __name__ == "__main__":
    main()
