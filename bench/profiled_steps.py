"""What profilers add to a training step, each measured within one process:
ptprof and torch.profiler with each option, and torch's own floor, on the
small-op loop and on real models, side by side.

Models, torch.set_num_threads(1), fixed random batches:

    small   8 x (Linear 64->64, ReLU), batch 8, SGD: about 430 operators a
            step (bench/torch_overhead.py's small-op loop)
    gpt2    transformers' GPT2LMHeadModel, 2 layers, 64 wide, 2 heads,
            batch 2 x 32 tokens, AdamW
    bert    transformers' BertForSequenceClassification, 2 layers, 64 wide,
            2 heads, batch 4 x 32 tokens, 2 labels, AdamW

The transformers models are small configs with random weights (nothing is
downloaded), so a step is many small operators, where profilers cost the
most (ptprof's and torch.profiler's cost is per operator).

Why within one process: on a shared machine the step time of two processes
running the same loop differs by more than a profiler adds to it (the
small-op loop's 0.5 ms steps moved by up to 0.4 ms between processes of one
run, in both directions). So each process alternates profiled and
unprofiled steps, and only differences within a process are used:

    floor           one global RecordFunction callback that does nothing (no
                    ids, no inputs), switched on and off within the process
                    (bench/floor/rf_floor.cpp): what torch costs once anyone
                    listens. When ptprof is measured too, in ptprof's own
                    process, between its windows (schedule wait=7,active=4:
                    after a window, a plain step, two with the floor, a
                    plain one), so that ptprof / floor compares one process
                    with itself
    ptprof[+OPT]    ptprof run --schedule wait=2,warmup=0,active=3,repeat=0
                    [--record-shapes | --profile-memory | --with-stack |
                    --python-attribution] (the agent's ptprof_recording()
                    says which steps it records)
    torch           torch.profiler.profile(activities=[CPU]) around five
                    steps (four timed), and each option of it (record_shapes,
                    profile_memory, with_stack) taking turns in one process;
                    building its results at the exit of each profile is not
                    timed

Only steady steps are timed: not the first step of a window (ptprof's
window start, torch.profiler's first step after its start, the floor's first
step after it is switched on), nor the first step after one (the profiler's
work at the end of a window leaves the caches cold for it; the window ends
themselves are bench/torch_overhead.py's item 3). A process's *added* time is
its median profiled step less its median unprofiled step, on the wall clock
and in the thread's CPU time; the figures are medians over rounds, ratios
medians of per-round ratios. What a process under `ptprof run` pays whether
it records or not (outside windows) cannot be measured within one process:
bench/torch_overhead.py's on-demand mode measures it against processes
without ptprof.

ptprof's own estimate (the run summary's cost line, `N ops x C ns`) is
compared with its measured added time per operator.

    python bench/profiled_steps.py --ptprof build/bin/ptprof [--floor-lib LIB] \
        [--rounds 1] [--pairs 12] [--warmup 10] [--models small,gpt2,bert] [--modes ...] [--json OUT]

gpt2 and bert need transformers in the interpreter running it (scripts/bench.sh
installs it into .venv on first use).
"""

import argparse
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
MODELS = ["small", "gpt2", "bert"]
MODES = ["floor", "ptprof", "ptprof+shapes", "ptprof+memory", "ptprof+stack", "ptprof+attribution", "torch",
         "torch+shapes", "torch+memory", "torch+stack"]
ALTERNATING = "wait=2,warmup=0,active=3,repeat=0"  # steady steps: the 2nd and 3rd
PTPROF_FLAGS = {"ptprof": [], "ptprof+shapes": ["--record-shapes"], "ptprof+memory": ["--profile-memory"],
                "ptprof+stack": ["--with-stack"], "ptprof+attribution": ["--python-attribution"]}
TORCH_OPTIONS = {"torch": {}, "torch+shapes": {"record_shapes": True}, "torch+memory": {"profile_memory": True},
                 "torch+stack": {"with_stack": True}}
# Ratios of added time: (numerator, denominator).
PAIRS = [("ptprof", "floor"), ("ptprof", "torch"), ("ptprof+shapes", "torch+shapes"),
         ("ptprof+memory", "torch+memory"), ("ptprof+stack", "torch+stack"), ("ptprof+attribution", "ptprof")]
# "ptprof: this run's cost: ... (N ops x C ns, ...)" (launcher/cli/run_summary.cpp).
OP_COST = re.compile(r"([0-9]+) ops? x ([0-9.]+) ns")
# "ptprof: measured on its own steps (...): +X ms per recorded step (median; ...)", or "... no slower than
# unrecorded ones (median difference -X ms, ...)" (launcher/cli/step_cost_line.cpp).
OWN_STEPS = re.compile(r"measured on its own steps \(.*?\): (?:\+([0-9.]+) ms per recorded step|recorded steps were "
                       r"no slower than unrecorded ones \(median difference ([-+0-9.]+) ms)")


def build_model(name):
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(1)
    if name == "small":
        sys.path.insert(0, HERE)
        try:
            import torch_overhead  # the same loop as its small one
        finally:
            sys.path.pop(0)
        return torch_overhead.build_loop("small")
    import transformers

    transformers.logging.set_verbosity_error()
    if name == "gpt2":
        cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=1024, n_positions=32)
        model = transformers.GPT2LMHeadModel(cfg)
        ids = torch.randint(0, cfg.vocab_size, (2, 32))
        batch = {"input_ids": ids, "labels": ids}
    elif name == "bert":
        cfg = transformers.BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=2,
                                      intermediate_size=256, vocab_size=1024, max_position_embeddings=32,
                                      num_labels=2)
        model = transformers.BertForSequenceClassification(cfg)
        batch = {"input_ids": torch.randint(0, cfg.vocab_size, (4, 32)),
                 "attention_mask": torch.ones(4, 32, dtype=torch.long), "labels": torch.randint(0, 2, (4,))}
    else:
        raise ValueError(name)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        opt.zero_grad()
        model(**batch).loss.backward()
        opt.step()

    return step


def timed(step):
    w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
    step()
    return time.perf_counter_ns() - w0, time.thread_time_ns() - c0


# Out-of-window steps of a ptprof process that also times the floor, by their
# index after a window (1-based): the floor is switched on before step 3 and
# off before step 6, and the step after any switch is not steady (torch
# rebuilds its callback cache; the window's end leaves caches cold).
FLOOR_PLAN = {1: ("plain", False), 2: ("plain", True), 3: ("floor", False), 4: ("floor", True),
              5: ("floor", True), 6: ("plain", False), 7: ("plain", True)}
# ptprof's schedule when the floor shares its process: the plan above, then a
# window whose first step is not steady.
WITH_FLOOR = "wait=7,warmup=0,active=4,repeat=0"
# torch.profiler: steady steps timed per profile() (after one untimed step).
TORCH_BLOCK = 4


def worker(args):
    """One process, one model, one kind of mode: --pairs steady steps of each
    mode and as many unprofiled ones; prints JSON of the medians. A ptprof
    process given --floor-lib also switches the floor on and off outside its
    windows, so ptprof's and the floor's added times come from one process."""
    import ctypes

    from torch.profiler import ProfilerActivity, profile
    step = build_model(args.models[0])
    for _ in range(args.warmup):
        step()
    res = {}
    if args.worker == "torch":
        with profile(activities=[ProfilerActivity.CPU]) as p:
            step()
        res["ops"] = len(p.events())
    recording = floor = None
    if args.worker in PTPROF_FLAGS:
        recording = ctypes.CDLL(None).ptprof_recording  # the agent's: is this step in a window?
        recording.restype = ctypes.c_int
    if args.worker == "floor" or (args.worker in PTPROF_FLAGS and args.floor_lib):
        lib = ctypes.CDLL(args.floor_lib)
        lib.ptprof_bench_floor_handle.restype = ctypes.c_ulonglong
        handle = ctypes.c_ulonglong(lib.ptprof_bench_floor_handle(0))
        floor = lambda on: lib.ptprof_bench_floor_enable(handle, on)  # noqa: E731
    # torch.profiler's options take turns in one process (one start, not four).
    options = list(TORCH_OPTIONS) if args.worker == "torch" else [args.worker]
    times = {k: [] for k in options}
    if recording is not None and floor:
        times["floor"] = []
    plain = []
    i = 0
    previous = False
    outside = 0  # out-of-window steps since the last window
    floor_on = False
    limit = 12 * (len(options) + 1) * args.pairs + 20
    while min(len(plain), min(len(v) for v in times.values())) < args.pairs:
        if recording is not None:
            profiled = bool(recording())
            if profiled:
                if floor_on:
                    floor(0)
                    floor_on = False
                outside = 0
                t = timed(step)
                if previous:  # the first step of a window is not steady
                    times[args.worker].append(t)
            elif floor:
                outside += 1
                kind, steady = FLOOR_PLAN.get(outside, ("plain", True))
                if (kind == "floor") != floor_on:
                    floor_on = kind == "floor"
                    floor(1 if floor_on else 0)
                t = timed(step)
                if steady:
                    (times["floor"] if floor_on else plain).append(t)
            else:
                t = timed(step)
                if not previous:  # the step after a window is not steady
                    plain.append(t)
            previous = profiled
        elif i % 2:
            mode = options[(i // 2) % len(options)]
            if floor:
                floor(1)
                step()
                times[mode].append(timed(step))
                floor(0)
            else:
                with profile(activities=[ProfilerActivity.CPU], **TORCH_OPTIONS[mode]):
                    step()
                    times[mode].extend(timed(step) for _ in range(TORCH_BLOCK))
        else:
            step()
            plain.extend(timed(step) for _ in range(TORCH_BLOCK if args.worker == "torch" else 1))
        i += 1
        if i > limit:
            sys.exit("profiled_steps: %s: %d plain steps and %s after %d" %
                     (args.worker, len(plain), {k: len(v) for k, v in times.items()}, i))
    for mode, t in times.items():
        res[mode] = {}
        for clock, k in (("wall", 0), ("cpu", 1)):
            res[mode][clock] = {"plain": statistics.median(x[k] for x in plain),
                                "profiled": statistics.median(x[k] for x in t)}
    print(json.dumps(res))


def run(args, model, kind, with_floor=False):
    """One worker process; `with_floor`: a ptprof process that also times the
    floor outside its windows."""
    floor_lib = args.floor_lib if kind == "floor" or with_floor else ""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", kind, "--models", model,
           "--pairs", str(args.pairs), "--warmup", str(args.warmup), "--floor-lib", floor_lib or ""]
    if kind in PTPROF_FLAGS:
        out = os.path.join(args.out, "ptprof-" + kind.replace("+", "-"))
        shutil.rmtree(out, ignore_errors=True)
        schedule = WITH_FLOOR if with_floor else ALTERNATING
        cmd = [args.ptprof, "run", "-o", out, "--schedule", schedule] + PTPROF_FLAGS[kind] + ["--"] + cmd
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("profiled_steps: %s under %s failed:\n%s" % (model, kind, p.stderr[-3000:]))
    res = json.loads(p.stdout.strip().splitlines()[-1])
    m = OP_COST.search(p.stderr)
    if kind in PTPROF_FLAGS and m:
        res[kind]["estimate_ns_per_op"] = float(m.group(2))
    m = OWN_STEPS.search(p.stderr)
    # With the floor in its wait steps, ptprof's unrecorded steps are not plain.
    if kind in PTPROF_FLAGS and m and not with_floor:
        res[kind]["own_steps_added_ms"] = float(m.group(1) if m.group(1) is not None else m.group(2))
    return res


def summarize(rounds_data, modes, ops):
    """Per model and clock: the unprofiled step (median over every process and
    round), each mode's added ms and ns per op (medians over rounds), the
    ratios (medians of per-round ratios), ptprof's estimate against its
    measured cost per op."""
    out = {}
    for model, rounds in rounds_data.items():
        m = {"ops": ops.get(model, 0), "step_ms": {}, "added_ms": {}, "ns_per_op": {}, "ratio": {},
             "added_ms_rounds": {}}
        for clock in ("wall", "cpu"):
            m["step_ms"][clock] = statistics.median(r[mode][clock]["plain"] for r in rounds for mode in modes) / 1e6
            added = {mode: [(r[mode][clock]["profiled"] - r[mode][clock]["plain"]) / 1e6 for r in rounds]
                     for mode in modes}
            m["added_ms_rounds"][clock] = added
            m["added_ms"][clock] = {mode: statistics.median(v) for mode, v in added.items()}
            # Operators per step are counted by the torch.profiler process (nan without one).
            m["ns_per_op"][clock] = {mode: v * 1e6 / m["ops"] if m["ops"] else float("nan")
                                     for mode, v in m["added_ms"][clock].items()}
            ratios = {}
            for a, b in PAIRS:
                if a in modes and b in modes:
                    per_round = [x / y for x, y in zip(added[a], added[b]) if y > 0]
                    ratios["%s/%s" % (a, b)] = statistics.median(per_round) if per_round else float("nan")
            m["ratio"][clock] = ratios
        if "ptprof" in modes:
            est = [r["ptprof"].get("estimate_ns_per_op") for r in rounds]
            if all(e is not None for e in est) and m["ops"]:
                meas = [(r["ptprof"]["cpu"]["profiled"] - r["ptprof"]["cpu"]["plain"]) / m["ops"] for r in rounds]
                m["estimate_ns_per_op"] = statistics.median(est)
                per_round = [e / x for e, x in zip(est, meas) if x > 0]
                m["estimate_over_measured"] = statistics.median(per_round) if per_round else float("nan")
            # What the run summary measured on the program's own steps, per
            # step, against the added CPU time measured here.
            own = [r["ptprof"].get("own_steps_added_ms") for r in rounds]
            if all(o is not None for o in own):
                meas = [(r["ptprof"]["cpu"]["profiled"] - r["ptprof"]["cpu"]["plain"]) / 1e6 for r in rounds]
                per_round = [o / x for o, x in zip(own, meas) if x > 0]
                m["own_steps_added_ms"] = statistics.median(own)
                m["own_steps_over_measured"] = statistics.median(per_round) if per_round else float("nan")
                m["own_steps_over_measured_rounds"] = per_round
        out[model] = m
    return out


def print_summary(s):
    for model, m in s.items():
        print("\n%s (%d ops per step): unprofiled step %.3f ms wall, %.3f ms CPU" % (
            model, m["ops"], m["step_ms"]["wall"], m["step_ms"]["cpu"]))
        print("%-20s %10s %10s %10s" % ("mode", "+wall ms", "+cpu ms", "cpu ns/op"))
        for mode, wall in m["added_ms"]["wall"].items():
            print("%-20s %10.3f %10.3f %10.1f" % (mode, wall, m["added_ms"]["cpu"][mode], m["ns_per_op"]["cpu"][mode]))
        for k, ratio in m["ratio"]["wall"].items():
            print("  %s: wall %.2f, cpu %.2f" % (k, ratio, m["ratio"]["cpu"][k]))
        if "estimate_ns_per_op" in m:
            print("  ptprof's estimate %.1f ns/op, %.2f x its measured cost" % (m["estimate_ns_per_op"],
                                                                               m["estimate_over_measured"]))
        if "own_steps_added_ms" in m:
            print("  ptprof's own steps: +%.3f ms per step, %.2f x its measured cost" % (m["own_steps_added_ms"],
                                                                                     m["own_steps_over_measured"]))


def build_floor():
    """bench/floor/rf_floor.cpp built for this interpreter's torch (as torch_overhead.py does)."""
    sys.path.insert(0, HERE)
    try:
        import torch_overhead
    finally:
        sys.path.pop(0)
    return torch_overhead.build_floor()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptprof", default="build/bin/ptprof")
    ap.add_argument("--floor-lib", default=None, help="the floor library; default: built for this torch")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--pairs", type=int, default=12, help="pairs of steps (profiled, not) timed per process")
    ap.add_argument("--warmup", type=int, default=10, help="untimed steps first")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ",".join(MODELS))
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of " + ",".join(MODES))
    ap.add_argument("--json", help="also write the figures to this file as JSON")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.models = [x for x in args.models.split(",") if x]
    for x in args.models:
        if x not in MODELS:
            ap.error("unknown model %r; accepted: %s" % (x, ", ".join(MODELS)))
    modes = [x for x in args.modes.split(",") if x]
    for x in modes:
        if x not in MODES:
            ap.error("unknown mode %r; accepted: %s" % (x, ", ".join(MODES)))
    if args.rounds < 1 or args.pairs < 1 or args.warmup < 0:
        ap.error("--rounds and --pairs must be at least 1, --warmup at least 0")
    if args.worker:
        worker(args)
        return
    if any(m != "small" for m in args.models):
        try:
            import transformers  # noqa: F401
        except ImportError:
            sys.exit("profiled_steps: transformers is not importable by %s (pip install transformers)" %
                     sys.executable)
    if "floor" in modes and not args.floor_lib:
        args.floor_lib = build_floor()
    args.ptprof = os.path.abspath(args.ptprof)
    args.out = tempfile.mkdtemp(prefix="ptprof-profiled-steps-")
    # One process per ptprof mode, one for the floor, one for torch.profiler's options.
    # The floor shares ptprof's process when both are asked for (their ratio
    # is then free of the differences between processes).
    floor_with_ptprof = "floor" in modes and "ptprof" in modes
    kinds = [m for m in modes if m in PTPROF_FLAGS or (m == "floor" and not floor_with_ptprof)]
    if any(m in TORCH_OPTIONS for m in modes):
        kinds.append("torch")
    try:
        ops = {}
        data = {model: [] for model in args.models}
        for rnd in range(args.rounds):
            for model in args.models:
                r = {}
                for kind in kinds:
                    got = run(args, model, kind, floor_with_ptprof and kind == "ptprof")
                    ops[model] = got.pop("ops", ops.get(model, 0))
                    r.update({k: v for k, v in got.items() if k in modes})
                data[model].append(r)
            print("round %d/%d done" % (rnd + 1, args.rounds), file=sys.stderr, flush=True)
        import torch
        s = summarize(data, modes, ops)
        print("torch %s, %d rounds, %d pairs of steps per process" % (torch.__version__, args.rounds, args.pairs))
        print_summary(s)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"torch": torch.__version__, "rounds": args.rounds, "pairs": args.pairs, "models": s,
                           "raw": data}, f, indent=1)
    finally:
        shutil.rmtree(args.out, ignore_errors=True)


if __name__ == "__main__":
    main()
