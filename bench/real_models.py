"""Real models end to end: what ptprof and torch.profiler add to a training
step of models users train, side by side.

Two architectures from Hugging Face transformers (pip), built from a small
config with random weights (nothing is downloaded), trained with AdamW on
fixed random batches, torch.set_num_threads(1):

    gpt2    GPT2LMHeadModel, 4 layers, 128 wide, 4 heads, batch 4 x 64 tokens
    bert    BertForSequenceClassification, 4 layers, 128 wide, 4 heads,
            batch 8 x 64 tokens, 2 labels

Ways of running them, one process each (the model's own step-to-step noise
is small; the noise between processes, heap layout and a shared machine, is
larger than what a profiler adds to these steps, so every figure is a
difference within one process):

    ptprof[+OPT]    ptprof run --schedule wait=2,warmup=0,active=1,repeat=0
                    [--record-shapes | --profile-memory | --with-stack]: every
                    third step recorded (the agent's ptprof_recording() says
                    which)
    torch[+OPT]     every third step inside torch.profiler.profile(
                    activities=[CPU], [record_shapes | profile_memory |
                    with_stack]), the four options taking turns in one
                    process; building its results at the exit of each
                    profile, after the step, is not timed

A process times --pairs pairs of steps after --warmup steps, on the wall
clock and in the thread's CPU time; the step after a profiled one is not
timed (the profiler's work at the end of its window, torch.profiler's
results, ptprof's drain, leaves the caches cold for it). *none* is the median of its unprofiled
steps; *added* the median of its profiled steps less that. ptprof's added
time as a fraction of torch.profiler's with the same option is printed per
model (what a process under `ptprof run` pays whether it records or not is
the on-demand figure of bench/torch_overhead.py, not in these).

    .venv/bin/python bench/real_models.py --ptprof build/bin/ptprof \
        [--rounds 1] [--pairs 12] [--warmup 3] [--models gpt2,bert] [--modes ...] [--json OUT]

Needs transformers in the interpreter running it (scripts/bench.sh installs
it into .venv on first use).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MODELS = ["gpt2", "bert"]
MODES = ["ptprof", "ptprof+shapes", "ptprof+memory", "ptprof+stack", "torch", "torch+shapes", "torch+memory",
         "torch+stack"]
ALTERNATING = "wait=2,warmup=0,active=1,repeat=0"
PTPROF_FLAGS = {"ptprof": [], "ptprof+shapes": ["--record-shapes"], "ptprof+memory": ["--profile-memory"],
                "ptprof+stack": ["--with-stack"]}
TORCH_OPTIONS = {"torch": {}, "torch+shapes": {"record_shapes": True}, "torch+memory": {"profile_memory": True},
                 "torch+stack": {"with_stack": True}}
# Each ptprof mode's counterpart in torch.profiler.
PAIRS = [("ptprof", "torch"), ("ptprof+shapes", "torch+shapes"), ("ptprof+memory", "torch+memory"),
         ("ptprof+stack", "torch+stack")]


def build_model(name):
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    torch.set_num_threads(1)
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
        loss = model(**batch).loss
        loss.backward()
        opt.step()

    return step


def timed(step):
    w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
    step()
    return time.perf_counter_ns() - w0, time.thread_time_ns() - c0


def worker(args):
    """One process, one model, one mode: --pairs pairs of steps, one profiled
    and one not; prints JSON of both medians."""
    import ctypes

    from torch.profiler import ProfilerActivity, profile
    step = build_model(args.models[0])
    for _ in range(args.warmup):
        step()
    recording = None
    if args.worker in PTPROF_FLAGS:
        recording = ctypes.CDLL(None).ptprof_recording  # the agent's: is this step in a window?
        recording.restype = ctypes.c_int
    # torch.profiler's options take turns in one process: plain, torch,
    # plain, torch+shapes, ... (one process start instead of four).
    options = list(TORCH_OPTIONS) if args.worker == "torch" else [args.worker]
    times = {k: [] for k in options}
    plain = []
    # A step right after a profiled one is neither: the profiler's work at
    # the window's end (torch.profiler's results, ptprof's drain on the other
    # core) leaves the caches cold for it. So: untimed, unprofiled, profiled.
    i = 0
    after_profiled = False
    while min(len(plain), min(len(v) for v in times.values())) < args.pairs:
        if recording is not None:
            profiled = bool(recording())
            t = timed(step)
            if profiled:
                times[args.worker].append(t)
            elif not after_profiled:
                plain.append(t)
            after_profiled = profiled
        elif i % 3 == 2:
            mode = options[(i // 3) % len(options)]
            with profile(activities=[ProfilerActivity.CPU], **TORCH_OPTIONS[mode]):
                times[mode].append(timed(step))
        elif i % 3 == 1:
            plain.append(timed(step))
        else:
            step()
        i += 1
        if i > 3 * len(options) * args.pairs + 6 * args.pairs + 10:
            sys.exit("real_models: %s: %d plain steps and %s after %d" %
                     (args.worker, len(plain), {k: len(v) for k, v in times.items()}, i))
    res = {}
    for mode, t in times.items():
        res[mode] = {}
        for clock, k in (("wall", 0), ("cpu", 1)):
            res[mode][clock] = {"plain": statistics.median(x[k] for x in plain),
                                "profiled": statistics.median(x[k] for x in t)}
    if args.worker == "torch":
        with profile(activities=[ProfilerActivity.CPU]) as p:
            step()
        res["ops"] = len(p.events())
    print(json.dumps(res))


def run(args, model, mode):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", mode, "--models", model,
           "--pairs", str(args.pairs), "--warmup", str(args.warmup)]
    if mode in PTPROF_FLAGS:
        out = os.path.join(args.out, "ptprof-" + mode.replace("+", "-"))
        shutil.rmtree(out, ignore_errors=True)
        cmd = [args.ptprof, "run", "-o", out, "--schedule", ALTERNATING] + PTPROF_FLAGS[mode] + ["--"] + cmd
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("real_models: %s under %s failed:\n%s" % (model, mode, p.stderr[-3000:]))
    return json.loads(p.stdout.strip().splitlines()[-1])


def summarize(rounds_data, modes):
    """Per model and clock: the unprofiled step (median over every process and
    round), each mode's added ms (median over rounds), and ptprof/torch ratios
    of added time (median of per-round ratios)."""
    out = {}
    for model, rounds in rounds_data.items():
        m = {"step_ms": {}, "added_ms": {}, "ratio": {}}
        for clock in ("wall", "cpu"):
            m["step_ms"][clock] = statistics.median(r[mode][clock]["plain"] for r in rounds for mode in modes) / 1e6
            added = {mode: [(r[mode][clock]["profiled"] - r[mode][clock]["plain"]) / 1e6 for r in rounds]
                     for mode in modes}
            m["added_ms"][clock] = {mode: statistics.median(v) for mode, v in added.items()}
            ratios = {}
            for mine, theirs in PAIRS:
                if mine in modes and theirs in modes:
                    per_round = [a / b for a, b in zip(added[mine], added[theirs]) if b > 0]
                    ratios[mine] = statistics.median(per_round) if per_round else float("nan")
            m["ratio"][clock] = ratios
        out[model] = m
    return out


def print_summary(s, ops):
    for model, m in s.items():
        print("\n%s (%d ops per step): unprofiled step %.2f ms wall, %.2f ms CPU" % (
            model, ops.get(model, 0), m["step_ms"]["wall"], m["step_ms"]["cpu"]))
        print("%-14s %10s %10s" % ("mode", "+wall ms", "+cpu ms"))
        for mode, wall in m["added_ms"]["wall"].items():
            print("%-14s %10.2f %10.2f" % (mode, wall, m["added_ms"]["cpu"][mode]))
        for mine, ratio in m["ratio"]["wall"].items():
            print("  %s / torch.profiler's added time: wall %.2f, cpu %.2f" % (mine, ratio, m["ratio"]["cpu"][mine]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptprof", default="build/bin/ptprof")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--pairs", type=int, default=12, help="pairs of steps (profiled, not) timed per process")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first")
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
    try:
        import transformers  # noqa: F401
    except ImportError:
        sys.exit("real_models: transformers is not importable by %s (pip install transformers)" % sys.executable)
    args.ptprof = os.path.abspath(args.ptprof)
    args.out = tempfile.mkdtemp(prefix="ptprof-real-models-")
    try:
        ops = {}
        data = {model: [] for model in args.models}
        for rnd in range(args.rounds):
            for model in args.models:
                r = {}
                for mode in [m for m in modes if m in PTPROF_FLAGS] + (["torch"] if any(
                        m in TORCH_OPTIONS for m in modes) else []):
                    got = run(args, model, mode)
                    ops[model] = got.pop("ops", ops.get(model, 0))
                    r.update({k: v for k, v in got.items() if k in modes})
                data[model].append(r)
            print("round %d/%d done" % (rnd + 1, args.rounds), file=sys.stderr, flush=True)
        import torch
        s = summarize(data, modes)
        print("torch %s, %d rounds, %d pairs of steps per process" % (torch.__version__, args.rounds, args.pairs))
        print_summary(s, ops)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"torch": torch.__version__, "rounds": args.rounds, "pairs": args.pairs, "ops": ops,
                           "models": s, "raw": data}, f, indent=1)
    finally:
        shutil.rmtree(args.out, ignore_errors=True)


if __name__ == "__main__":
    main()
