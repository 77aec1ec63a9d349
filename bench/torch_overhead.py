"""Overhead of profiling PyTorch training loops, side by side.

Two loops, both with torch.set_num_threads(1):

    small   8 x (Linear 64->64, ReLU), batch 8, SGD: about 430 operators a
            step, so per-operator costs dominate;
    conv    a small conv net (3 conv layers, batch 8, 3x32x32 images), SGD:
            fewer, heavier operators.

Ways of running them, each in its own process, interleaved round by round in
one run (these machines are shared and noisy; only ratios measured together
mean anything; steps are timed in the thread's CPU time, see now_ns()):

    none            no profiler
    none-again      no profiler, a second process in each round: what two
                    processes running the same loop differ by, the noise the
                    other modes' differences from `none` are read against
                    (only when --modes names it)
    floor           a global RecordFunction callback that does nothing (no
                    ids, no inputs): what torch costs once any callback is on
    floor+inputs    the same callback asking for inputs: what torch costs any
                    callback that records shapes (only when --modes names it)
    ptprof          ptprof run
    ptprof+shapes   ptprof run --record-shapes
    ptprof+memory   ptprof run --profile-memory
    ptprof-on-demand  ptprof run --on-demand, never triggered (what a job
                    waiting for `ptprof trigger` costs)
    ptprof-alternating  ptprof run --schedule wait=1,warmup=0,active=1: every
                    other step recorded, in one process; the recorded steps
                    less the others is ptprof's cost per operator without
                    what differs between processes (see below)
    torch           torch.profiler.profile(activities=[CPU])
    torch+shapes    ... record_shapes=True
    torch+memory    ... profile_memory=True
    ptprof+attribution  ptprof run --python-attribution (each op's line of the user's code)
    ptprof+stack    ptprof run --with-stack (each op's Python and native stacks)
    ptprof+pystack  ptprof run --with-stack --no-native-stack (Python stacks only)
    torch+stack     ... with_stack=True

It prints, per loop, the median step time of each, what each adds per step
and per operator over `none` and over `floor` (medians of differences taken
within a round), ptprof's addition as a fraction of torch.profiler's with the
same option, the time a step that ends a window takes beyond a normal step
(ptprof: publishing a boundary; torch.profiler: stopping and building its
results, plus exporting its trace), and ptprof's own estimate of what it
added (the run summary's cost line) against the measured difference:
against ptprof's difference from `none` (other processes), and, with
ptprof-alternating, against the difference between the recorded and the
unrecorded steps of one process, which leaves out what a process under
`ptprof run` pays whether it records or not (the agent's presence, the
launcher on the other core; ptprof-on-demand measures that part).
ptprof-on-demand runs only when --modes names it.

    python bench/torch_overhead.py --ptprof build/bin/ptprof \
        [--floor-lib LIB] [--rounds 5] [--steps 300] [--loops small,conv] [--json OUT]

Without --floor-lib, bench/floor/rf_floor.cpp is built for the torch of the
interpreter running the benchmark (tests/integration/torch_cxx.py), cached in
$PTPROF_BUILD_DIR/torch-cxx-cache, else in a directory under the system's
temporary directory; so the floor always matches the torch being measured.
"""

import argparse
import ctypes
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(HERE)
FLOOR_SOURCE = os.path.join(HERE, "floor", "rf_floor.cpp")

DEFAULT_MODES = [
    "none",
    "floor",
    "ptprof",
    "ptprof+shapes",
    "ptprof+memory",
    "torch",
    "torch+shapes",
    "torch+memory",
    "ptprof+attribution",
    "ptprof+stack",
    "torch+stack",
    "ptprof-alternating",
]
MODES = DEFAULT_MODES + ["ptprof+pystack", "ptprof-on-demand", "floor+inputs", "none-again"]
ALTERNATING = "wait=1,warmup=0,active=1,repeat=0"
LOOPS = ["small", "conv"]
PTPROF_FLAGS = {
    "ptprof": [],
    "ptprof+shapes": ["--record-shapes"],
    "ptprof+memory": ["--profile-memory"],
    "ptprof-on-demand": ["--on-demand"],
    "ptprof+attribution": ["--python-attribution"],
    "ptprof+stack": ["--with-stack"],
    "ptprof+pystack": ["--with-stack", "--no-native-stack"],
    "ptprof-alternating": ["--schedule", ALTERNATING],
}
TORCH_OPTIONS = {
    "torch": {},
    "torch+shapes": {"record_shapes": True},
    "torch+memory": {"profile_memory": True},
    "torch+stack": {"with_stack": True},
}


def build_loop(kind):
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    torch.set_num_threads(1)
    if kind == "small":
        layers = []
        for _ in range(8):
            layers += [nn.Linear(64, 64), nn.ReLU()]
        model = nn.Sequential(*layers)
        x = torch.randn(8, 64)
        y = torch.randn(8, 64)
    else:
        model = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 32, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(32, 10),
        )
        x = torch.randn(8, 3, 32, 32)
        y = torch.randn(8, 10)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
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


# Steps are timed in the CPU time of the calling thread, not on the wall
# clock: on a shared machine the wall clock counts the time the target waits
# for a core (behind the launcher's drain thread, a compiler, another
# benchmark), which is no per-operator cost. TIMER=wall times the wall clock.
TIMER = os.environ.get("PTPROF_BENCH_TIMER", "cpu")


def now_ns():
    return time.perf_counter_ns() if TIMER == "wall" else time.thread_time_ns()


def timed_steps(step, n):
    times = []
    for _ in range(n):
        t0 = now_ns()
        step()
        times.append(now_ns() - t0)
    return times


def steps_for(args, loop):
    return args.steps if loop == "small" else max(10, args.steps // 5)


def worker(args):
    """One process: every loop of --loops under one mode; prints JSON."""
    from torch.profiler import ProfilerActivity, profile, schedule

    mode = args.worker
    result = {}
    if mode == "ops":
        for loop in args.loops:
            step = build_loop(loop)
            for _ in range(20):
                step()
            result[loop] = count_ops(step)
        print(json.dumps(result))
        return
    if mode == "floor":
        ctypes.CDLL(args.floor_lib).ptprof_bench_add_floor_callback(0, 0)
    elif mode == "floor+inputs":  # what torch costs any callback that asks for inputs (shapes)
        ctypes.CDLL(args.floor_lib).ptprof_bench_add_floor_callback(1, 0)
    for loop in args.loops:
        step = build_loop(loop)
        n = steps_for(args, loop)
        for _ in range(min(50, n)):  # warm up caches and allocators
            step()
        r = {}
        if args.window_run:
            # Under ptprof with a schedule: ptprof's window ends happen inside
            # optimizer.step(), so timing every step catches them.
            r["window"] = timed_steps(step, args.window_steps * 20)
        elif mode in TORCH_OPTIONS:
            opts = TORCH_OPTIONS[mode]
            with profile(activities=[ProfilerActivity.CPU], **opts):
                r["steps"] = timed_steps(step, n)
            if loop == "small" and mode == "torch":
                # Window ends: a schedule of `window_steps` active steps; the
                # step whose prof.step() ends a window carries torch's stop and
                # result building, and here the trace's export too.
                trace = os.path.join(args.out, "torch-window.json")
                times = []
                with profile(
                    activities=[ProfilerActivity.CPU],
                    schedule=schedule(wait=0, warmup=0, active=args.window_steps, repeat=0),
                    on_trace_ready=lambda p, trace=trace: p.export_chrome_trace(trace),
                ) as p:
                    for _ in range(args.window_steps * 4):
                        t0 = now_ns()
                        step()
                        p.step()
                        times.append(now_ns() - t0)
                r["window"] = times
        else:
            r["steps"] = timed_steps(step, n)
        result[loop] = r
    print(json.dumps(result))


# "ptprof: cost: ... op pairs x N ns ..." from the run summary (launcher/cli/cmd_run.cpp).
OP_COST = re.compile(r"([0-9]+) ops? x ([0-9.]+) ns")


def run_mode(args, mode, window=False):
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--worker",
        mode,
        "--steps",
        str(args.steps),
        "--floor-lib",
        args.floor_lib or "",
        "--window-steps",
        str(args.window_steps),
        "--loops",
        ",".join(args.loops if not window else ["small"]),
        "--out",
        args.out,
    ]
    if mode in PTPROF_FLAGS:
        out = os.path.join(args.out, "ptprof-" + mode.replace("+", "-"))
        shutil.rmtree(out, ignore_errors=True)
        pre = [args.ptprof, "run", "-o", out] + PTPROF_FLAGS[mode]
        if window:
            pre += ["--schedule", "wait=0,warmup=0,active=%d,repeat=0" % args.window_steps]
            cmd += ["--window-run"]
        cmd[cmd.index("--worker") + 1] = "none"
        cmd = pre + ["--"] + cmd
    if mode == "none-again":
        cmd[cmd.index("--worker") + 1] = "none"
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit("benchmark worker %s failed:\n%s" % (mode, proc.stderr[-3000:]))
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    if mode in PTPROF_FLAGS:
        m = OP_COST.search(proc.stderr)
        if m:
            res["op_cost_ns"] = float(m.group(2))
    return res


def build_floor():
    """bench/floor/rf_floor.cpp built for this interpreter's torch."""
    sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "integration"))
    try:
        import torch_cxx
    finally:
        sys.path.pop(0)
    build_dir = os.environ.get("PTPROF_BUILD_DIR")
    cache = (
        os.path.join(build_dir, "torch-cxx-cache")
        if build_dir
        else os.path.join(tempfile.gettempdir(), "ptprof-torch-cxx-cache-%d" % os.getuid())
    )
    try:
        return torch_cxx.build(FLOOR_SOURCE, cache)
    except torch_cxx.BuildError as e:
        sys.exit("cannot build the floor library (or pass --floor-lib):\n%s" % e)


def window_cost(times, window_steps):
    """Median time of the steps that end a window minus the median of the others."""
    ends = [t for i, t in enumerate(times) if i % window_steps == window_steps - 1]
    rest = [t for i, t in enumerate(times) if i % window_steps != window_steps - 1]
    return statistics.median(ends) - statistics.median(rest)


def alternating_cost(times):
    """Median of (recorded step - the unrecorded step before it), from the
    steps of a ptprof-alternating run. Which parity is recorded depends on
    the warm-up's length: the slower one."""
    even, odd = times[0::2], times[1::2]
    n = min(len(even), len(odd))
    d = [odd[i] - even[i] for i in range(n)]
    med = statistics.median(d) if d else float("nan")
    return med if med >= 0 else statistics.median(even[i + 1] - odd[i] for i in range(n - 1))


def unrecorded_steps(times):
    """Median time of the unrecorded (wait) steps of a ptprof-alternating
    run: the faster parity, as in alternating_cost()."""
    return min(statistics.median(times[0::2]), statistics.median(times[1::2]))


def median_or_nan(values):
    return statistics.median(values) if values else float("nan")


def paired(per_mode, a, b):
    """The median over rounds of mode a's step less mode b's (nan when either is missing)."""
    if a not in per_mode or b not in per_mode:
        return float("nan")
    return statistics.median(x - y for x, y in zip(per_mode[a], per_mode[b]))


def summarize(args, ops, medians, window, op_costs, alternating=None):
    """The figures, as a JSON-able dict: per loop, per mode."""
    import torch

    out = {"torch": torch.__version__, "rounds": args.rounds, "ops": ops, "timer": TIMER, "loops": {}}
    for loop, per_mode in medians.items():
        rows = {}
        for m, v in per_mode.items():
            rows[m] = {
                "step_us": statistics.median(v) / 1e3,
                "added_us": paired(per_mode, m, "none") / 1e3,
                "ns_per_op": paired(per_mode, m, "none") / ops[loop],
                "ns_per_op_over_floor": paired(per_mode, m, "floor") / ops[loop],
            }
            if "none" in per_mode:
                rows[m]["ns_per_op_rounds"] = [(x - n) / ops[loop] for x, n in zip(v, per_mode["none"])]
        ratios = {}
        for a, b in (
            ("ptprof", "floor"),
            ("ptprof", "torch"),
            ("ptprof+shapes", "torch+shapes"),
            ("ptprof+shapes", "floor+inputs"),
            ("ptprof+memory", "torch+memory"),
            ("ptprof+stack", "torch+stack"),
            ("ptprof+pystack", "torch+stack"),
            ("ptprof+attribution", "ptprof"),
        ):
            if a in per_mode and b in per_mode and "none" in per_mode:
                r = [(x - n) / (y - n) for x, y, n in zip(per_mode[a], per_mode[b], per_mode["none"]) if y > n]
                ratios["%s/%s" % (a, b)] = median_or_nan(r)
        entry = {"steps": steps_for(args, loop), "modes": rows, "ratios": ratios}
        if loop == "small" and op_costs:
            est = median_or_nan(op_costs)
            entry["estimate_ns_per_op"] = est
            entry["estimate_over_measured"] = est / rows["ptprof"]["ns_per_op"] if "ptprof" in rows else float("nan")
            if alternating and alternating["diffs"]:
                # Each round's own estimate against its own difference.
                per_round = [
                    e / (d / ops[loop]) for e, d in zip(alternating["estimates"], alternating["diffs"]) if d > 0
                ]
                entry["in_process_ns_per_op"] = statistics.median(alternating["diffs"]) / ops[loop]
                entry["in_process_ns_per_op_rounds"] = [d / ops[loop] for d in alternating["diffs"]]
                entry["estimate_over_in_process"] = median_or_nan(per_round)
            if alternating and alternating["unrecorded"] and "none" in per_mode:
                # Wait steps against the same round's run without a profiler:
                # what a process under `ptprof run` pays in steps it does not record.
                d = [u - n for u, n in zip(alternating["unrecorded"], per_mode["none"])]
                entry["wait_step_ns_per_op"] = median_or_nan(d) / ops[loop]
                entry["wait_step_ns_per_op_rounds"] = [x / ops[loop] for x in d]
                entry["estimate_over_in_process_rounds"] = per_round
        out["loops"][loop] = entry
    if window["ptprof"] or window["torch"]:
        out["window_end_us"] = {k: median_or_nan(v) / 1e3 for k, v in window.items()}
    return out


def print_summary(s):
    print(
        "torch %s, %d rounds, steps timed in %s time; per-step and per-op figures are medians of differences "
        "within a round" % (s["torch"], s["rounds"], "wall-clock" if s["timer"] == "wall" else "thread CPU")
    )
    for loop, e in s["loops"].items():
        print("\n%s loop: %d operators per step, %d steps per run" % (loop, s["ops"][loop], e["steps"]))
        print("%-15s %11s %11s %14s %16s" % ("mode", "step (us)", "added (us)", "ns/op vs none", "ns/op vs floor"))
        for m, r in e["modes"].items():
            print(
                "%-15s %11.1f %11.1f %14.1f %16.1f"
                % (m, r["step_us"], r["added_us"], r["ns_per_op"], r["ns_per_op_over_floor"])
            )
        for k, v in e["ratios"].items():
            a, b = k.split("/")
            print("%s adds %.2f x what %s adds" % (a, v, b))
        if "estimate_ns_per_op" in e:
            print(
                "ptprof's own estimate: %.1f ns/op, %.2f x the measured difference"
                % (e["estimate_ns_per_op"], e["estimate_over_measured"])
            )
        if "in_process_ns_per_op" in e:
            print(
                "recorded less unrecorded steps of one process: %.1f ns/op (rounds: %s); estimate / that: %.2f "
                "(rounds: %s)"
                % (
                    e["in_process_ns_per_op"],
                    " ".join("%.0f" % v for v in e["in_process_ns_per_op_rounds"]),
                    e["estimate_over_in_process"],
                    " ".join("%.2f" % v for v in e["estimate_over_in_process_rounds"]),
                )
            )
        if "wait_step_ns_per_op" in e:
            print(
                "unrecorded (wait) steps of that process over no profiler: %.1f ns/op (rounds: %s)"
                % (e["wait_step_ns_per_op"], " ".join("%.0f" % v for v in e["wait_step_ns_per_op_rounds"]))
            )
    if "window_end_us" in s:
        w = s["window_end_us"]
        print(
            "\nwindow end, extra time in the step that ends a window: ptprof %.1f us, torch.profiler %.1f us "
            "(stop, results and export_chrome_trace)" % (w.get("ptprof", float("nan")), w.get("torch", float("nan")))
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptprof", default="build/bin/ptprof")
    ap.add_argument(
        "--floor-lib", default=None, help="the floor library; default: build bench/floor/rf_floor.cpp for this torch"
    )
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=300, help="steps per run of the small loop (conv: a fifth)")
    ap.add_argument("--window-steps", type=int, default=10)
    ap.add_argument("--out", default=None, help="scratch directory (default: a temporary one)")
    ap.add_argument("--modes", default=",".join(DEFAULT_MODES), help="comma-separated subset of " + ",".join(MODES))
    ap.add_argument("--loops", default=",".join(LOOPS), help="comma-separated subset of " + ",".join(LOOPS))
    ap.add_argument("--json", help="also write the figures to this file as JSON")
    ap.add_argument("--worker")
    ap.add_argument("--window-run", action="store_true")
    ap.add_argument("--no-window", action="store_true", help="skip the window-end runs (item 3)")
    args = ap.parse_args()
    args.loops = [loop for loop in args.loops.split(",") if loop]
    for loop in args.loops:
        if loop not in LOOPS:
            ap.error("unknown loop %r; accepted: %s" % (loop, ", ".join(LOOPS)))

    if args.worker:
        worker(args)
        return

    args.ptprof = os.path.abspath(args.ptprof)
    scratch = None
    if not args.out:
        scratch = args.out = tempfile.mkdtemp(prefix="ptprof-bench-")
    try:
        modes = [m for m in MODES if m in args.modes.split(",")]
        if ("floor" in modes or "floor+inputs" in modes) and not args.floor_lib:
            args.floor_lib = build_floor()
        ops = run_mode(args, "ops")
        medians = {loop: {m: [] for m in modes if m != "ptprof-alternating"} for loop in args.loops}
        window = {"ptprof": [], "torch": []}
        op_costs = []
        alternating = {"diffs": [], "estimates": [], "unrecorded": []}
        for r in range(args.rounds):
            for m in modes:
                res = run_mode(args, m)
                if m == "ptprof-alternating":
                    if "small" in args.loops:
                        alternating["diffs"].append(alternating_cost(res["small"]["steps"]))
                        alternating["estimates"].append(res.get("op_cost_ns", float("nan")))
                        alternating["unrecorded"].append(unrecorded_steps(res["small"]["steps"]))
                    continue
                for loop in args.loops:
                    medians[loop][m].append(statistics.median(res[loop]["steps"]))
                if "window" in res.get("small", {}) and not args.no_window:
                    window["torch"].append(window_cost(res["small"]["window"], args.window_steps))
                if m == "ptprof" and "op_cost_ns" in res:
                    op_costs.append(res["op_cost_ns"])
            if "ptprof" in modes and "small" in args.loops and not args.no_window:
                res = run_mode(args, "ptprof", window=True)
                window["ptprof"].append(window_cost(res["small"]["window"], args.window_steps))
            print("round %d/%d done" % (r + 1, args.rounds), file=sys.stderr, flush=True)
        import torch  # noqa: F401  (its version goes into the figures)

        s = summarize(args, ops, medians, window, op_costs, alternating)
        print_summary(s)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(s, f, indent=1)
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
