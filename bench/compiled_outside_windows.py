"""What a torch.compile'd model's step costs outside ptprof's windows (issue
#25): a compiled MLP trained on the CPU, its steps timed (the thread's CPU
time, median of the steps after the compile and a warm-up), in processes that
never record: no profiler, `ptprof run --on-demand` never triggered with the
ptprof under test, and the same with a baseline ptprof (an earlier build),
interleaved round by round in one run (only ratios measured together mean
anything on a shared machine). One inductor cache for all runs, filled by a
first run, so each process takes the same path through the compiler.

    python bench/compiled_outside_windows.py --ptprof build/bin/ptprof \
        [--baseline OTHER/bin/ptprof] [--rounds 5] [--steps 300]

Prints each mode's median step time per round and the medians of the
per-round ratios to no profiler.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

SCRIPT = r"""
import os, statistics, sys, time
import torch, torch.nn as nn
torch.set_num_threads(1)
torch.manual_seed(0)
model = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(64, 64), nn.ReLU())])
compiled = torch.compile(model)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(8, 64)
times = []
for i in range(int(sys.argv[1])):
    t0 = time.thread_time_ns()
    opt.zero_grad()
    compiled(x).sum().backward()
    opt.step()
    times.append(time.thread_time_ns() - t0)
print("STEP_US %.2f" % (statistics.median(times[50:]) / 1000.0))
"""


def step_us(cmd, env):
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=900)
    for line in out.stdout.splitlines():
        if line.startswith("STEP_US "):
            return float(line.split()[1])
    raise SystemExit("no step time from %s (exit %d)" % (" ".join(cmd), out.returncode))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptprof", required=True)
    ap.add_argument("--baseline")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "compiled_mlp.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(d, "inductor"), TORCHINDUCTOR_COMPILE_THREADS="1")
        modes = [("none", None)] + [("ptprof", args.ptprof)] + ([("baseline", args.baseline)] if args.baseline else [])

        def command(ptprof):
            run = [args.python, script, str(args.steps)]
            return run if ptprof is None else [ptprof, "run", "--on-demand", "-o", os.path.join(d, "out"), "--"] + run

        step_us(command(None), env)  # fills the inductor cache
        results = {m: [] for m, _ in modes}
        for r in range(args.rounds):
            for mode, ptprof in modes:
                results[mode].append(step_us(command(ptprof), env))
            print("round %d: %s" % (r + 1, "  ".join("%s %.1f us" % (m, results[m][-1]) for m, _ in modes)), flush=True)
        for mode, _ in modes[1:]:
            ratios = [a / b for a, b in zip(results[mode], results["none"])]
            print(
                "%s / none: median %.3f (per round: %s)"
                % (mode, statistics.median(ratios), ", ".join("%.3f" % x for x in ratios))
            )


if __name__ == "__main__":
    main()
