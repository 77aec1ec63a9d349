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
                    process, between its windows (after a window, a plain
                    step, two with the floor, a plain one), so that
                    ptprof / floor compares one process with itself
    ptprof[+OPT]    one process, `ptprof run --on-demand`, whose windows
                    are triggered one option at a time (`ptprof trigger --pid
                    ... --steps 8 [--record-shapes | --profile-memory |
                    --with-stack]`, started by this script's parent process
                    when the worker asks over a socket, TriggerServer), so
                    every option is measured against the same process's
                    plain steps and floor (the agent's ptprof_recording()
                    says which steps it records; a window is attributed to
                    the option of the last trigger, and the next is asked
                    for only after the window has ended)
    ptprof+attribution  ptprof run --python-attribution --schedule
                    wait=2,warmup=0,active=3,repeat=0, a process of its own
                    (no trigger option asks for it)
    torch           torch.profiler.profile(activities=[CPU]) around seven
                    steps (six timed), and each option of it (record_shapes,
                    profile_memory, with_stack) taking turns; in ptprof's
                    process, one profile() between two of its windows, when
                    no window is under way or asked for (ptprof records
                    nothing then, and its callbacks are off); else in a
                    process of its own, against plain steps in between.
                    Building its results at the exit of each profile is not
                    timed

So when ptprof is measured with torch.profiler and the floor (bench/run_all.py
does), each round is one process, and every ratio compares a process with
itself.

Only steady steps are timed: not the first step of a window (ptprof's
window start, torch.profiler's first step after its start, the floor's first
step after it is switched on), nor the first step after one (the profiler's
work at the end of a window leaves the caches cold for it; the window ends
themselves are bench/torch_overhead.py's item 3). A process's *added* time is
the median over its profiled steps of each step less its local baseline (the
median of the LOCAL_PLAIN steady unprofiled steps on each side of it; the
median profiled step less the median unprofiled one where a process does not
interleave them), on the wall clock and in the thread's CPU time; the figures
are medians over rounds, ratios medians of per-round ratios. What a process under `ptprof run` pays whether
it records or not (outside windows) cannot be measured within one process:
bench/torch_overhead.py's on-demand mode measures it against processes
without ptprof (`scripts/bench.sh --across-processes`; below the noise
between processes on a 2-core VM).

ptprof's own estimate (the run summary's cost line, `N ops x C ns`) is
compared with its measured added time per operator, and what the run summary
measured on the program's own steps (`ptprof: measured on its own steps`: the
median of the newest 64 differences between a steady recorded step and the
steady unrecorded step before it) with the same statistic taken from this
benchmark's timings of the same steps.

    python bench/profiled_steps.py --ptprof build/bin/ptprof [--floor-lib LIB] \
        [--rounds 1] [--pairs 12] [--warmup 10] [--models small,gpt2,bert] [--modes ...] [--json OUT]

gpt2 and bert need transformers in the interpreter running it (scripts/bench.sh
installs it into .venv on first use).
"""

import argparse
import bisect
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["small", "gpt2", "bert"]
MODES = [
    "floor",
    "ptprof",
    "ptprof+shapes",
    "ptprof+memory",
    "ptprof+stack",
    "ptprof+attribution",
    "torch",
    "torch+shapes",
    "torch+memory",
    "torch+stack",
]
ALTERNATING = "wait=2,warmup=0,active=3,repeat=0"  # steady steps: the 2nd and 3rd
PTPROF_FLAGS = {
    "ptprof": [],
    "ptprof+shapes": ["--record-shapes"],
    "ptprof+memory": ["--profile-memory"],
    "ptprof+stack": ["--with-stack"],
    "ptprof+attribution": ["--python-attribution"],
}
# The options a trigger can ask for, window by window: measured in one process.
TRIGGER_FLAGS = {
    "ptprof": [],
    "ptprof+shapes": ["--record-shapes"],
    "ptprof+memory": ["--profile-memory"],
    "ptprof+stack": ["--with-stack"],
}
# A triggered window: its first and last steps are not steady. Eight steps,
# six of them steady: with five (three steady) twice as many gaps between
# windows (the plan below, a `ptprof trigger` each, on torch 1.13 50-70 ms
# for each torch.profiler block's exit) took most of a round: the small-op
# loop's took 14.7 s on torch 1.13 with five, 11.6-12.3 with eight; gpt2's
# 23.5 and 15.9 s (2026-12-05, 80 and 40 steps of each kind).
WINDOW_STEPS = 8
OWN_STEPS_KEPT = 64  # the run summary's median is over its newest 64 differences (step_cost_meter.hpp)
TORCH_OPTIONS = {
    "torch": {},
    "torch+shapes": {"record_shapes": True},
    "torch+memory": {"profile_memory": True},
    "torch+stack": {"with_stack": True},
}
# Ratios of added time: (numerator, denominator).
PAIRS = [
    ("ptprof", "floor"),
    ("ptprof", "torch"),
    ("ptprof+shapes", "torch+shapes"),
    ("ptprof+memory", "torch+memory"),
    ("ptprof+stack", "torch+stack"),
    ("ptprof+attribution", "ptprof"),
]
# "ptprof: this run's cost: ... (N ops x C ns, ...)" (launcher/cli/run_summary.cpp).
OP_COST = re.compile(r"([0-9]+) ops? x ([0-9.]+) ns")
# "ptprof: measured on its own steps (...): +X ms per recorded step (median; ...)", or "... no slower than
# unrecorded ones (median difference -X ms, ...)" (launcher/cli/step_cost_line.cpp).
OWN_STEPS = re.compile(
    r"measured on its own steps \(.*?\): (?:\+([0-9.]+) ms per recorded step|recorded steps were "
    r"no slower than unrecorded ones \(median difference ([-+0-9.]+) ms)"
)


def torch_overhead():
    """bench/torch_overhead.py, this script's sibling: its loops, floor and operator count."""
    sys.path.insert(0, HERE)
    try:
        import torch_overhead as module
    finally:
        sys.path.pop(0)
    return module


def build_model(name):
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(1)
    if name == "small":
        return torch_overhead().build_loop("small")  # the same loop as its small one
    import transformers

    transformers.logging.set_verbosity_error()
    if name == "gpt2":
        cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=1024, n_positions=32)
        model = transformers.GPT2LMHeadModel(cfg)
        ids = torch.randint(0, cfg.vocab_size, (2, 32))
        batch = {"input_ids": ids, "labels": ids}
    elif name == "bert":
        cfg = transformers.BertConfig(
            num_hidden_layers=2,
            hidden_size=64,
            num_attention_heads=2,
            intermediate_size=256,
            vocab_size=1024,
            max_position_embeddings=32,
            num_labels=2,
        )
        model = transformers.BertForSequenceClassification(cfg)
        batch = {
            "input_ids": torch.randint(0, cfg.vocab_size, (4, 32)),
            "attention_mask": torch.ones(4, 32, dtype=torch.long),
            "labels": torch.randint(0, 2, (4,)),
        }
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
FLOOR_PLAN = {
    1: ("plain", False),
    2: ("plain", True),
    3: ("floor", False),
    4: ("floor", True),
    5: ("floor", True),
    6: ("plain", False),
    7: ("plain", True),
}
# torch.profiler: steady steps timed per profile() (after one untimed step);
# as many as a window has, so that its options are done in as many gaps.
TORCH_BLOCK = 6
# ...and in ptprof's process, after FLOOR_PLAN: one profile() block (a step
# of the plan), then two plain steps that are not steady (after the
# profile's exit they took 1.4 and 1.1 x a plain step, small-op loop, torch
# 1.13) and a steady one before the next trigger is posted.
TORCH_PLAN = {8: ("torch", False), 9: ("plain", False), 10: ("plain", False), 11: ("plain", True)}


def post_trigger(control, mode):
    """Asks the benchmark's parent (TriggerServer) for a window of `mode`:
    it starts `ptprof trigger`, whose window opens at the end of the step
    during which the agent sees the request (a few steps later). The parent
    starts it, not this process, and this process does not wait: starting a
    process costs the starter (the step after a Popen here took 1.15-1.8 x
    a plain step, small-op loop, torch 1.13), and a step after a wait of a
    few ms starts with cold caches (1.3-1.8 x), and the agent times steps
    in the stepping thread's CPU time, the step before a window as the
    baseline of its own-steps figure."""
    control.sendall(("%s %d\n" % (mode, os.getpid())).encode())


def trigger_failed(control):
    """The parent's answer when a posted trigger's window is long in coming:
    exits with its error, if it has one."""
    control.settimeout(30)
    reply = b""
    while True:
        try:
            got = control.recv(4096)
        except socket.timeout:
            sys.exit("profiled_steps: no window and no answer from the trigger server in 30 s")
        if not got:
            sys.exit("profiled_steps: the benchmark's parent closed the trigger socket")
        reply += got
        errors = [x for x in reply.decode().splitlines() if x != "posted"]
        if errors:
            sys.exit("profiled_steps: " + errors[0])
        if reply.endswith(b"\n"):
            control.settimeout(None)
            return


class TriggerServer:
    """The parent's side of post_trigger: a Unix socket in `directory` the
    worker connects to; for each line it reads (an option and the worker's
    pid) it starts `ptprof trigger --pid PID --steps WINDOW_STEPS [flags]`,
    answers once the
    trigger says it has posted its request ("waiting for it"), and checks
    every trigger's exit when the worker is done."""

    def __init__(self, ptprof, directory):
        self.ptprof = ptprof
        self.path = os.path.join(directory, "trigger.sock")
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(1)
        self.sock.settimeout(0.2)
        self.triggers, self.errors = [], []
        self.worker = None  # the worker's Popen, set by run()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        conn = None
        while conn is None:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                if self.worker is not None and self.worker.poll() is not None:
                    return
        try:
            with conn, conn.makefile("rb") as f:
                for line in f:
                    self.start_trigger(conn, line)
        except (ConnectionResetError, BrokenPipeError):
            # The worker reads the answers only now and then (trigger_failed):
            # when it exits with some unread, its end resets the connection.
            # Its triggers' exits are checked in close().
            pass

    def start_trigger(self, conn, line):
        mode, pid = line.decode().split()
        p = subprocess.Popen(
            [self.ptprof, "trigger", "--pid", pid, "--steps", str(WINDOW_STEPS)] + TRIGGER_FLAGS[mode],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        said = []
        for out in p.stderr:
            said.append(out)
            if "waiting for it" in out:
                break
        self.triggers.append(p)
        if said and "waiting for it" in said[-1]:
            conn.sendall(b"posted\n")
        else:
            p.wait()
            conn.sendall(
                ("ptprof trigger failed (%s): %s\n" % (p.returncode, " ".join(x.strip() for x in said))).encode()
            )

    def close(self):
        self.thread.join()
        self.sock.close()
        os.unlink(self.path)
        for p in self.triggers:
            _, err = p.communicate()
            if p.returncode != 0:
                self.errors.append("ptprof trigger failed (%d): %s" % (p.returncode, err.strip()))


class TriggeredWindows:
    """trigger_windows_worker's loop state, one step at a time: which kind
    of step comes next by the plan, where each kept step's time goes, and
    the trigger under way."""

    def __init__(self, args, step, floor, control, profile, cpu):
        self.args, self.step, self.floor, self.control = args, step, floor, control
        self.profile, self.cpu = profile, cpu  # torch.profiler's, imported before the loop
        self.modes = args.window_modes
        self.times = {m: [] for m in self.modes + args.torch_modes}
        if floor:
            self.times["floor"] = []
        self.plan = dict(FLOOR_PLAN)
        if args.torch_modes:
            self.plan.update(TORCH_PLAN)
        self.plain = []
        self.seq = []  # every kept step in order: (kind, (wall, cpu))
        self.own = []  # per window, its steady recorded steps less the step before its opening step
        self.current, self.turn = None, 0
        self.previous = False  # the last step was recorded
        self.last_kept = None  # where the last step's time went: (list, own appended too) or None
        self.outside = 0  # unrecorded steps since the last window
        self.posted = False  # this gap's trigger is posted: the steps up to the window are not steady
        self.floor_on = False
        self.pending = []  # CPU ns of the steps since this gap's trigger was posted
        self.base = None  # the own-steps baseline of the window under way

    def enough(self):
        return min(len(self.plain), min(len(v) for v in self.times.values())) >= self.args.pairs + 1

    def finished(self):
        """Every kind has its steps and the last window has ended (so that
        the agent's newest windows are this loop's too)."""
        return self.enough() and not self.posted and not self.previous

    def one_step(self, profiled):
        """One step, recorded or not as the agent says. Returns False for a
        torch.profiler block, which the step limit does not count."""
        if profiled != self.previous and self.last_kept is not None:
            self.drop_last_kept()
        self.last_kept = None
        if profiled:
            self.recorded_step()
        else:
            self.outside += 1
            if self.outside == 1:
                self.pending = []
            if not self.unrecorded_step():
                self.previous = False
                return False
        self.previous = profiled
        return True

    def drop_last_kept(self):
        """The last step closed the window: not steady after all."""
        kept, with_own = self.last_kept
        kept.pop()
        self.seq.pop()
        if with_own:
            self.own[-1].pop()

    def recorded_step(self):
        """A step in a window: kept unless it is the window's first."""
        if not self.previous:
            if not self.posted:
                sys.exit("profiled_steps: a window began that no trigger asked for")
            self.posted = False
            self.own.append([])
            self.base = self.pending[-2] if len(self.pending) >= 2 else None  # pending[-1] opened the window
        self.outside = 0
        t = timed(self.step)
        if self.previous:  # a window's first step is not steady
            self.times[self.current].append(t)
            self.seq.append((self.current, t))
            if self.base is not None:
                self.own[-1].append(t[1] - self.base)
            self.last_kept = (self.times[self.current], self.base is not None)

    def unrecorded_step(self):
        """A step between windows, by the plan: plain, the floor's or a
        torch.profiler block; after the plan the next trigger is posted.
        Returns False for a torch.profiler block."""
        kind, steady = self.plan.get(self.outside, ("plain", True))
        if self.floor and (kind == "floor") != self.floor_on:
            self.floor_on = kind == "floor"
            self.floor(1 if self.floor_on else 0)
        if kind == "torch" and all(len(self.times[m]) > self.args.pairs for m in self.args.torch_modes):
            kind, steady = "plain", False  # torch.profiler's steps are all taken
        if kind == "torch":
            self.torch_block()
            return False
        if self.outside > len(self.plan) and not self.posted and not self.enough():
            # The plan ends plain, so the floor is off up to the window.
            self.current = self.modes[self.turn % len(self.modes)]
            self.turn += 1
            post_trigger(self.control, self.current)
            self.posted = True
        t = timed(self.step)
        if self.posted:
            self.pending.append(t[1])
            if len(self.pending) % 500 == 0:
                trigger_failed(self.control)
        elif steady:
            kept = self.times["floor"] if self.floor_on else self.plain
            kept.append(t)
            self.seq.append(("floor" if self.floor_on else "plain", t))
            self.last_kept = (kept, False)
        return True

    def torch_block(self):
        """One profile() of torch.profiler's next option: an untimed step and
        TORCH_BLOCK timed ones."""
        # No trigger is under way: this step and the block's are not in a window.
        torch_modes = self.args.torch_modes
        tmode = torch_modes[(self.turn - 1) % len(torch_modes)]
        with self.profile(activities=[self.cpu], **TORCH_OPTIONS[tmode]):
            self.step()
            block = [timed(self.step) for _ in range(TORCH_BLOCK)]
        self.times[tmode].extend(block)
        self.seq.extend((tmode, t) for t in block)


def trigger_windows_worker(args, step, recording, floor):
    """ptprof's options in one `ptprof run --on-demand` process: it triggers
    its own windows, one option each in turn, and between them times plain
    steps, (with `floor`) the floor by FLOOR_PLAN and (with --torch-modes)
    torch.profiler's options in turn, one profile() of TORCH_BLOCK steady
    steps after each window (TORCH_PLAN). Returns the steady steps of each,
    plain, and the own-steps differences (each steady recorded step less
    the step before the window's opening step: the run summary's
    statistic, from this side).

    After the plan the next trigger is posted (post_trigger) and the steps
    go on, not kept, until the window opens, at the end of the step during
    which the agent sees the request; it closes at the end of its last
    step. Both happen inside the step that optimizer.step() ends, so that
    step carries the opening and a window's last step the closing; the
    agent reads the thread's CPU time before either (window_controller.cpp,
    measure_step_end). Neither is steady here: a window's last step is
    dropped once the next step shows it was the last. The own-steps
    baseline is the step before the opening one (the agent's is the
    opening step itself, timed before the window opens)."""
    from torch.profiler import ProfilerActivity, profile

    control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    control.connect(args.trigger_socket)
    loop = TriggeredWindows(args, step, floor, control, profile, ProfilerActivity.CPU)
    limit = 40 * len(args.window_modes) * args.pairs + 200
    i = 0
    while not loop.finished():
        counted = loop.one_step(bool(recording()))
        i += 1
        if counted and i > limit:
            sys.exit(
                "profiled_steps: %d plain steps and %s after %d"
                % (len(loop.plain), {k: len(v) for k, v in loop.times.items()}, i)
            )
    control.close()
    # The agent keeps the newest 64 differences, WINDOW_STEPS - 1 a window
    # (its windows' last steps carry no closing); these are the same windows'.
    newest = [d for w in loop.own[-(OWN_STEPS_KEPT // (WINDOW_STEPS - 1)) :] for d in w]
    return loop.times, loop.plain, newest, loop.seq


def worker(args):
    """One process, one model, one kind of mode: --pairs steady steps of each
    mode and as many unprofiled ones; prints JSON of the medians. A ptprof
    process given --floor-lib also switches the floor on and off outside its
    windows, so ptprof's and the floor's added times come from one process."""
    import ctypes

    step = build_model(args.models[0])
    for _ in range(args.warmup):
        step()
    res = {}
    if args.worker == "torch" or args.torch_modes:
        res["ops"] = torch_overhead().count_ops(step)
    recording = floor = None
    if args.worker in PTPROF_FLAGS:
        recording = ctypes.CDLL(None).ptprof_recording  # the agent's: is this step in a window?
        recording.restype = ctypes.c_int
    if args.worker == "floor" or (args.worker in PTPROF_FLAGS and args.floor_lib):
        lib = ctypes.CDLL(args.floor_lib)
        lib.ptprof_bench_floor_handle.restype = ctypes.c_ulonglong
        handle = ctypes.c_ulonglong(lib.ptprof_bench_floor_handle(0))
        floor = lambda on: lib.ptprof_bench_floor_enable(handle, on)  # noqa: E731
    if args.window_modes:
        times, plain, own, seq = trigger_windows_worker(args, step, recording, floor)
        print(json.dumps(medians(res, times, plain, own, seq)))
        return
    if args.worker == "torch":
        times, plain = torch_phase(step, list(TORCH_OPTIONS), args.pairs)
        print(json.dumps(medians(res, times, plain)))
        return
    options = [args.worker]
    times = {k: [] for k in options}
    plain = []
    i = 0
    previous = False
    limit = 12 * (len(options) + 1) * args.pairs + 20
    while min(len(plain), min(len(v) for v in times.values())) < args.pairs:
        if recording is not None:
            profiled = bool(recording())
            if profiled:
                t = timed(step)
                if previous:  # the first step of a window is not steady
                    times[args.worker].append(t)
            else:
                t = timed(step)
                if not previous:  # the step after a window is not steady
                    plain.append(t)
            previous = profiled
        elif i % 2:
            floor(1)
            step()
            times[args.worker].append(timed(step))
            floor(0)
        else:
            step()
            plain.append(timed(step))
        i += 1
        if i > limit:
            sys.exit(
                "profiled_steps: %s: %d plain steps and %s after %d"
                % (args.worker, len(plain), {k: len(v) for k, v in times.items()}, i)
            )
    print(json.dumps(medians(res, times, plain)))


def torch_phase(step, modes, pairs):
    """torch.profiler's options in turn, one profile() each of an untimed
    step and TORCH_BLOCK timed ones, between as many plain steps (after an
    untimed one: a profile's exit leaves caches cold), until each has
    `pairs`. Returns the steps of each option and the plain ones."""
    from torch.profiler import ProfilerActivity, profile

    times = {m: [] for m in modes}
    plain = []
    i = 0
    while min(len(plain), min(len(v) for v in times.values())) < pairs:
        mode = modes[i % len(modes)]
        with profile(activities=[ProfilerActivity.CPU], **TORCH_OPTIONS[mode]):
            step()
            times[mode].extend(timed(step) for _ in range(TORCH_BLOCK))
        step()
        plain.extend(timed(step) for _ in range(TORCH_BLOCK))
        i += 1
    return times, plain


# A step's local baseline: the median of this many steady plain steps on each
# side of it (fewer at the ends of the run).
LOCAL_PLAIN = 4


def local_added(seq, mode, k):
    """The median over `mode`'s steps in `seq` of each step less its local
    baseline, in clock `k`. A process drifts: in one process the same kind of
    step moved by about the profilers' cost between stretches of the run
    (BERT's steps, 2026-12-05), so its steps are set against the plain steps
    around them, not against every plain step of the run (six processes:
    the rounds' ptprof / torch.profiler spread 0.26 of its median that way,
    0.11 this way)."""
    at = [i for i, (kind, _) in enumerate(seq) if kind == "plain"]
    diffs = []
    for i, (kind, t) in enumerate(seq):
        if kind != mode:
            continue
        j = bisect.bisect_left(at, i)
        near = at[max(0, j - LOCAL_PLAIN) : j + LOCAL_PLAIN]
        diffs.append(t[k] - statistics.median(seq[n][1][k] for n in near))
    return statistics.median(diffs)


def medians(res, times, plain, own=None, seq=None):
    """`res` with each mode's median plain and profiled step per clock, and
    (`own`) the own-steps differences' median under "ptprof". With `seq`
    (every kept step in order: (kind, (wall, cpu))), also each mode's added
    time against local baselines (local_added)."""
    for mode, t in times.items():
        res[mode] = {}
        for clock, k in (("wall", 0), ("cpu", 1)):
            res[mode][clock] = {
                "plain": statistics.median(x[k] for x in plain),
                "profiled": statistics.median(x[k] for x in t),
            }
            if seq:
                res[mode][clock]["added"] = local_added(seq, mode, k)
    if own:
        res["ptprof"]["own_steps_bench_ms"] = statistics.median(own) / 1e6
    return res


def run(args, model, kind, with_floor=False, window_modes=(), torch_modes=()):
    """One worker process; `with_floor`: a ptprof process that also times the
    floor outside its windows; `window_modes`: a ptprof process that triggers
    its own windows, these options in turn; `torch_modes`: and times these
    torch.profiler options between them."""
    floor_lib = args.floor_lib if kind == "floor" or with_floor else ""
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--worker",
        kind,
        "--models",
        model,
        "--pairs",
        str(args.pairs),
        "--warmup",
        str(args.warmup),
        "--floor-lib",
        floor_lib or "",
        "--window-modes",
        ",".join(window_modes),
        "--torch-modes",
        ",".join(torch_modes),
    ]
    server = None
    if kind in PTPROF_FLAGS:
        out = os.path.join(args.out, "ptprof-" + kind.replace("+", "-"))
        shutil.rmtree(out, ignore_errors=True)
        how = ["--on-demand"] if window_modes else ["--schedule", ALTERNATING] + PTPROF_FLAGS[kind]
        cmd = [args.ptprof, "run", "-o", out] + how + ["--"] + cmd
        if window_modes:
            server = TriggerServer(args.ptprof, args.out)
            cmd += ["--trigger-socket", server.path]
    # Files, not pipes: the worker's output is read after it ends, and the
    # trigger server runs meanwhile.
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        proc = subprocess.Popen(cmd, stdout=fo, stderr=fe, text=True)
        if server:
            server.worker = proc
        proc.wait()
        if server:
            server.close()
        fo.seek(0)
        fe.seek(0)
        p = subprocess.CompletedProcess(cmd, proc.returncode, fo.read(), fe.read())
    if p.returncode != 0:
        sys.exit("profiled_steps: %s under %s failed:\n%s" % (model, kind, p.stderr[-3000:]))
    if server and server.errors:
        sys.exit("profiled_steps: %s" % "; ".join(server.errors))
    res = json.loads(p.stdout.strip().splitlines()[-1])
    m = OP_COST.search(p.stderr)
    if kind in PTPROF_FLAGS and m:
        res[kind]["estimate_ns_per_op"] = float(m.group(2))
    m = OWN_STEPS.search(p.stderr)
    if kind in PTPROF_FLAGS and m:
        res[kind]["own_steps_added_ms"] = float(m.group(1) if m.group(1) is not None else m.group(2))
    return res


def added_ns(rec):
    """A process's added time for one mode and clock: against local baselines
    where the process kept its steps in order, else the two medians."""
    return rec["added"] if "added" in rec else rec["profiled"] - rec["plain"]


def summarize(rounds_data, modes, ops):
    """Per model and clock: the unprofiled step (median over every process and
    round), each mode's added ms and ns per op (medians over rounds), the
    ratios (medians of per-round ratios), ptprof's estimate against its
    measured cost per op."""
    out = {}
    for model, rounds in rounds_data.items():
        m = {
            "ops": ops.get(model, 0),
            "step_ms": {},
            "added_ms": {},
            "ns_per_op": {},
            "ratio": {},
            "added_ms_rounds": {},
        }
        for clock in ("wall", "cpu"):
            m["step_ms"][clock] = statistics.median(r[mode][clock]["plain"] for r in rounds for mode in modes) / 1e6
            added = {mode: [added_ns(r[mode][clock]) / 1e6 for r in rounds] for mode in modes}
            m["added_ms_rounds"][clock] = added
            m["added_ms"][clock] = {mode: statistics.median(v) for mode, v in added.items()}
            # Operators per step are counted by the torch.profiler process (nan without one).
            m["ns_per_op"][clock] = {
                mode: v * 1e6 / m["ops"] if m["ops"] else float("nan") for mode, v in m["added_ms"][clock].items()
            }
            ratios = {}
            for a, b in PAIRS:
                if a in modes and b in modes:
                    per_round = [x / y for x, y in zip(added[a], added[b]) if y > 0]
                    ratios["%s/%s" % (a, b)] = statistics.median(per_round) if per_round else float("nan")
            m["ratio"][clock] = ratios
        if "ptprof" in modes:
            est = [r["ptprof"].get("estimate_ns_per_op") for r in rounds]
            if all(e is not None for e in est) and m["ops"]:
                meas = [added_ns(r["ptprof"]["cpu"]) / m["ops"] for r in rounds]
                m["estimate_ns_per_op"] = statistics.median(est)
                per_round = [e / x for e, x in zip(est, meas) if x > 0]
                m["estimate_over_measured"] = statistics.median(per_round) if per_round else float("nan")
            # What the run summary measured on the program's own steps, per
            # step, against the same statistic from this benchmark's timings
            # of the same steps (the process's windows of every option).
            own = [r["ptprof"].get("own_steps_added_ms") for r in rounds]
            if all(o is not None for o in own) and all("own_steps_bench_ms" in r["ptprof"] for r in rounds):
                meas = [r["ptprof"]["own_steps_bench_ms"] for r in rounds]
                m["own_steps_bench_ms"] = statistics.median(meas)
                per_round = [o / x for o, x in zip(own, meas) if x > 0]
                m["own_steps_added_ms"] = statistics.median(own)
                m["own_steps_over_measured"] = statistics.median(per_round) if per_round else float("nan")
                m["own_steps_over_measured_rounds"] = per_round
        out[model] = m
    return out


def print_summary(s):
    for model, m in s.items():
        print(
            "\n%s (%d ops per step): unprofiled step %.3f ms wall, %.3f ms CPU"
            % (model, m["ops"], m["step_ms"]["wall"], m["step_ms"]["cpu"])
        )
        print("%-20s %10s %10s %10s" % ("mode", "+wall ms", "+cpu ms", "cpu ns/op"))
        for mode, wall in m["added_ms"]["wall"].items():
            print("%-20s %10.3f %10.3f %10.1f" % (mode, wall, m["added_ms"]["cpu"][mode], m["ns_per_op"]["cpu"][mode]))
        for k, ratio in m["ratio"]["wall"].items():
            print("  %s: wall %.2f, cpu %.2f" % (k, ratio, m["ratio"]["cpu"][k]))
        if "estimate_ns_per_op" in m:
            print(
                "  ptprof's estimate %.1f ns/op, %.2f x its measured cost"
                % (m["estimate_ns_per_op"], m["estimate_over_measured"])
            )
        if "own_steps_added_ms" in m:
            print(
                "  ptprof's own steps: +%.3f ms per step, %.2f x its measured cost"
                % (m["own_steps_added_ms"], m["own_steps_over_measured"])
            )


def build_floor():
    """bench/floor/rf_floor.cpp built for this interpreter's torch (as torch_overhead.py does)."""
    return torch_overhead().build_floor()


def parse_args():
    """The command line, checked: (args, the modes asked for)."""
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
    ap.add_argument("--window-modes", default="", help=argparse.SUPPRESS)
    ap.add_argument("--torch-modes", default="", help=argparse.SUPPRESS)
    ap.add_argument("--trigger-socket", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.models = [x for x in args.models.split(",") if x]
    args.window_modes = [x for x in args.window_modes.split(",") if x]
    args.torch_modes = [x for x in args.torch_modes.split(",") if x]
    for x in args.models:
        if x not in MODELS:
            ap.error("unknown model %r; accepted: %s" % (x, ", ".join(MODELS)))
    modes = [x for x in args.modes.split(",") if x]
    for x in modes:
        if x not in MODES:
            ap.error("unknown mode %r; accepted: %s" % (x, ", ".join(MODES)))
    if args.rounds < 1 or args.pairs < 1 or args.warmup < 0:
        ap.error("--rounds and --pairs must be at least 1, --warmup at least 0")
    return args, modes


def measure(args, modes):
    """Every round's processes, each model's: (per model its rounds' figures, per model its operators a step)."""
    # One process for ptprof's options (it triggers its own windows, one option
    # each in turn), with the floor and torch.profiler's options between its
    # windows, so that every ratio compares one process with itself; one for
    # attribution. Without ptprof's options, one process for the floor and
    # one for torch.profiler's options.
    window_modes = [m for m in modes if m in TRIGGER_FLAGS]
    torch_modes = [m for m in modes if m in TORCH_OPTIONS]
    floor_with_ptprof = "floor" in modes and bool(window_modes)
    kinds = (["ptprof"] if window_modes else []) + [m for m in modes if m in PTPROF_FLAGS and m not in TRIGGER_FLAGS]
    if "floor" in modes and not floor_with_ptprof:
        kinds.append("floor")
    if torch_modes and not window_modes:
        kinds.append("torch")
    ops = {}
    data = {model: [] for model in args.models}
    for rnd in range(args.rounds):
        for model in args.models:
            r = {}
            for kind in kinds:
                with_windows = kind == "ptprof" and bool(window_modes)
                got = run(
                    args,
                    model,
                    kind,
                    floor_with_ptprof and kind == "ptprof",
                    window_modes if with_windows else (),
                    torch_modes if with_windows else (),
                )
                ops[model] = got.pop("ops", ops.get(model, 0))
                r.update({k: v for k, v in got.items() if k in modes})
            data[model].append(r)
        print("round %d/%d done" % (rnd + 1, args.rounds), file=sys.stderr, flush=True)
    return data, ops


def main():
    args, modes = parse_args()
    if args.worker:
        worker(args)
        return
    if any(m != "small" for m in args.models):
        try:
            import transformers  # noqa: F401
        except ImportError:
            sys.exit("profiled_steps: transformers is not importable by %s (pip install transformers)" % sys.executable)
    if "floor" in modes and not args.floor_lib:
        args.floor_lib = build_floor()
    args.ptprof = os.path.abspath(args.ptprof)
    args.out = tempfile.mkdtemp(prefix="ptprof-profiled-steps-")
    try:
        data, ops = measure(args, modes)
        import torch

        s = summarize(data, modes, ops)
        print("torch %s, %d rounds, %d pairs of steps per process" % (torch.__version__, args.rounds, args.pairs))
        print_summary(s)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(
                    {"torch": torch.__version__, "rounds": args.rounds, "pairs": args.pairs, "models": s, "raw": data},
                    f,
                    indent=1,
                )
    finally:
        shutil.rmtree(args.out, ignore_errors=True)


if __name__ == "__main__":
    main()
