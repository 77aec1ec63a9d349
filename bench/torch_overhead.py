"""Overhead of profiling a small-op PyTorch training loop, side by side.

The loop: 8 x (Linear 64->64, ReLU), batch 8, SGD: about 430 operators a
step, so per-operator costs dominate. Six ways of running it, each in its own
process, interleaved round by round in one run (these machines are shared and
noisy; only ratios measured together mean anything):

    none            no profiler
    floor           a global RecordFunction callback that does nothing
    ptprof          ptprof run
    ptprof+shapes   ptprof run --record-shapes
    torch           torch.profiler.profile(activities=[CPU])
    torch+shapes    torch.profiler.profile(activities=[CPU], record_shapes=True)
    ptprof+attribution  ptprof run --python-attribution (each op's line of the user's code)
    ptprof+stack    ptprof run --with-stack (each op's Python and native stacks)
    ptprof+pystack  ptprof run --with-stack --no-native-stack (Python stacks only)
    torch+stack     torch.profiler.profile(activities=[CPU], with_stack=True)

It prints the median step time of each, what each adds per operator over
`none` and over `floor`, ptprof's cost as a fraction of torch.profiler's, and
the time a step that ends a window takes beyond a normal step (ptprof:
publishing a boundary; torch.profiler: building its results).

    python bench/torch_overhead.py --ptprof build/bin/ptprof \
        [--floor-lib build/lib/libptprof_bench_floor.so] [--rounds 5] [--steps 300]

Without --floor-lib, bench/floor/rf_floor.cpp is built for the torch of the
interpreter running the benchmark (tests/integration/torch_cxx.py), cached in
$PTPROF_BUILD_DIR/torch-cxx-cache, else in a directory under the system's
temporary directory; so the floor always matches the torch being measured.
"""

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(HERE)
FLOOR_SOURCE = os.path.join(HERE, "floor", "rf_floor.cpp")

MODES = ["none", "floor", "ptprof", "ptprof+shapes", "torch", "torch+shapes", "ptprof+attribution", "ptprof+stack",
         "ptprof+pystack", "torch+stack"]


def build_loop():
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    torch.set_num_threads(1)
    layers = []
    for _ in range(8):
        layers += [nn.Linear(64, 64), nn.ReLU()]
    model = nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(8, 64)
    y = torch.randn(8, 64)
    loss_fn = nn.MSELoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return step


def count_ops(step):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as p:
        step()
    return len(p.events())


def timed_steps(step, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        step()
        times.append(time.perf_counter_ns() - t0)
    return times


def worker(mode, steps, floor_lib, window_steps):
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule
    step = build_loop()
    result = {}
    if mode == "ops":
        for _ in range(20):
            step()
        result["ops"] = count_ops(step)
        print(json.dumps(result))
        return
    if mode == "floor":
        lib = ctypes.CDLL(floor_lib)
        lib.ptprof_bench_add_noop_callback(0)
    for _ in range(50):  # warm up caches and allocators
        step()
    if mode.startswith("torch"):
        with profile(activities=[ProfilerActivity.CPU], record_shapes=mode == "torch+shapes",
                     with_stack=mode == "torch+stack"):
            result["steps"] = timed_steps(step, steps)
        # Window ends: a schedule of `window_steps` active steps, repeating;
        # the step whose prof.step() ends a window carries torch's processing.
        times = []
        with profile(activities=[ProfilerActivity.CPU], record_shapes=mode == "torch+shapes",
                     schedule=schedule(wait=0, warmup=0, active=window_steps, repeat=0),
                     on_trace_ready=lambda p: None) as p:
            for _ in range(window_steps * 4):
                t0 = time.perf_counter_ns()
                step()
                p.step()
                times.append(time.perf_counter_ns() - t0)
        result["window"] = times
    else:
        result["steps"] = timed_steps(step, steps)
    print(json.dumps(result))


def run_mode(args, mode, window=False):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", mode, "--steps", str(args.steps),
           "--floor-lib", args.floor_lib or "", "--window-steps", str(args.window_steps)]
    env = dict(os.environ)
    if mode.startswith("ptprof"):
        pre = [args.ptprof, "run", "-o", args.out]
        if mode == "ptprof+shapes":
            pre.append("--record-shapes")
        if mode == "ptprof+attribution":
            pre.append("--python-attribution")
        if mode == "ptprof+stack":
            pre.append("--with-stack")
        if mode == "ptprof+pystack":
            pre += ["--with-stack", "--no-native-stack"]
        if window:
            pre += ["--schedule", "wait=0,warmup=0,active=%d,repeat=0" % args.window_steps]
            cmd[cmd.index("--worker") + 1] = "none"
            cmd += ["--window-run"]
        cmd = pre + ["--"] + cmd
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if proc.returncode != 0:
        sys.exit("benchmark worker %s failed:\n%s" % (mode, proc.stderr[-3000:]))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def build_floor():
    """bench/floor/rf_floor.cpp built for this interpreter's torch."""
    sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "integration"))
    try:
        import torch_cxx
    finally:
        sys.path.pop(0)
    build_dir = os.environ.get("PTPROF_BUILD_DIR")
    cache = (os.path.join(build_dir, "torch-cxx-cache") if build_dir else
             os.path.join(tempfile.gettempdir(), "ptprof-torch-cxx-cache-%d" % os.getuid()))
    try:
        return torch_cxx.build(FLOOR_SOURCE, cache)
    except torch_cxx.BuildError as e:
        sys.exit("cannot build the floor library (or pass --floor-lib):\n%s" % e)


def window_cost(times, window_steps):
    """Median time of the steps that end a window minus the median of the others."""
    ends = [t for i, t in enumerate(times) if i % window_steps == window_steps - 1]
    rest = [t for i, t in enumerate(times) if i % window_steps != window_steps - 1]
    return statistics.median(ends) - statistics.median(rest)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptprof", default="build/bin/ptprof")
    ap.add_argument("--floor-lib", default=None,
                    help="the floor library; default: build bench/floor/rf_floor.cpp for this torch")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--window-steps", type=int, default=10)
    ap.add_argument("--out", default="/tmp/ptprof-bench-out")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of " + ",".join(MODES))
    ap.add_argument("--worker")
    ap.add_argument("--window-run", action="store_true")
    args = ap.parse_args()

    if args.worker:
        if args.window_run:
            # Under ptprof with a schedule: time every step; ptprof's window
            # ends happen inside optimizer.step().
            step = build_loop()
            for _ in range(50):
                step()
            print(json.dumps({"window": timed_steps(step, args.window_steps * 20)}))
            return
        worker(args.worker, args.steps, args.floor_lib, args.window_steps)
        return

    modes = [m for m in MODES if m in args.modes.split(",")]
    if "floor" in modes and not args.floor_lib:
        args.floor_lib = build_floor()
    ops = run_mode(args, "ops")["ops"]
    medians = {m: [] for m in modes}
    window = {"ptprof": [], "torch": []}
    for r in range(args.rounds):
        for m in modes:
            res = run_mode(args, m)
            medians[m].append(statistics.median(res["steps"]))
            if m == "torch":
                window["torch"].append(window_cost(res["window"], args.window_steps))
        if "ptprof" in modes:
            window["ptprof"].append(window_cost(run_mode(args, "ptprof", window=True)["window"], args.window_steps))
        print("round %d/%d done" % (r + 1, args.rounds), file=sys.stderr, flush=True)

    # Each round runs every mode back to back, so differences are taken
    # within a round (paired) and their median over rounds is reported: the
    # machine's drift between rounds cancels out.
    step_ns = {m: statistics.median(v) for m, v in medians.items()}

    def paired(a, b):
        if a not in medians or b not in medians:
            return float("nan")
        return statistics.median((x - y) / ops for x, y in zip(medians[a], medians[b]))

    print("small-op loop: %d operators per step, %d rounds x %d steps; per-op figures are medians of "
          "differences within a round" % (ops, args.rounds, args.steps))
    print("%-15s %12s %14s %16s" % ("mode", "step (us)", "ns/op vs none", "ns/op vs floor"))
    for m in modes:
        print("%-15s %12.1f %14.1f %16.1f" % (m, step_ns[m] / 1e3, paired(m, "none"), paired(m, "floor")))
    for a, b in (("ptprof", "torch"), ("ptprof+shapes", "torch+shapes"), ("ptprof+stack", "torch+stack"),
                 ("ptprof+pystack", "torch+stack")):
        if a not in medians or b not in medians or "none" not in medians:
            continue
        ratios = [(x - n) / (y - n) for x, y, n in zip(medians[a], medians[b], medians["none"]) if y > n]
        if ratios:
            print("%s adds %.2f x what %s adds" % (a, statistics.median(ratios), b))
    for m in ("ptprof+attribution", "ptprof+stack", "ptprof+pystack"):
        if m in medians and "ptprof" in medians:
            print("%s costs %.1f ns/op over ptprof" % (m, paired(m, "ptprof")))
    if window["ptprof"] and window["torch"]:
        print("window end, extra time in the step that ends a window: ptprof %.1f us, torch.profiler %.1f us"
              % (statistics.median(window["ptprof"]) / 1e3, statistics.median(window["torch"]) / 1e3))


if __name__ == "__main__":
    main()
