"""Memory (--profile-memory) on real PyTorch, once per torch.

1. Against torch's profiler with memory on the same scripts (the five
   examples, mem_mixed.py and mem_big_step.py), STEPS=6, recorded steps 2,
   3, 4 on both sides: `ptprof run --schedule wait=1,warmup=1,active=3
   --record-shapes --profile-memory`, and torch_memory_wrapper.py
   (torch.autograd.profiler.profile(profile_memory=True, record_shapes=True),
   what torch.profiler.profile drives, entered where step 2 begins and left
   where step 4 ends, without torch.profiler's ProfilerStep record_function,
   whose handle tensor would add allocations of the profiler's own). Memory
   of a script is deterministic (the same allocations of the same sizes in
   the same ops every run). torch's CPU allocator reports the free of a
   block only if it was allocated while memory was profiled: torch's profiler
   sees the blocks allocated in the window; ptprof has torch track every
   block, so it also sees the frees of blocks allocated before the window.
   a. The memory events: the multiset of their bytes (+ allocations,
      - frees) equals torch's, to the byte (ptprof's read from its Chrome
      export's [memory] events, so the export's Bytes are checked too), less
      ptprof's frees of blocks allocated before the window (window_blocks).
   b. Per (name, input shapes): CPU Mem and Self CPU Mem, summed over the
      rows' calls, equal torch's to the byte, on both torches. torch's values
      come from its own event tree (kineto_results.experimental_event_tree(),
      torch_memory_wrapper.py), where an allocation is a child of the op
      running on its thread: exact and the same every run. torch 1.13's
      key_averages() cannot be the reference: its EventList attributes an
      allocation to every op whose whole-microsecond [start, end] holds its
      time, so its table moves from run to run (printed, not required). The
      derivation is checked: on torch 2.x its table equals key_averages'
      (whose attribution is exact there), and on both torches the tree's ops
      are the flat event list's (name, input shapes text, calls; an op still
      open when the profiler stops has no end in 1.13's tree and is not in
      its flat list, so it is not counted there).
      Left out on both sides: profiler::* and ProfilerStep* rows, "[memory]",
      and the record_function scope that encloses the optimizer step
      (model_train, model_train_step): both windows begin and end inside it,
      where the optimizer step returns, while ptprof's step ends when it
      ends, so the two see different parts of its first and last calls.

2. mem_keep_ones.py keeps one torch.ones(512, 512) per step for 12 steps:
   `ptprof memory` lists aten::ones with its size [512, 512] (the concrete
   inputs recorded with the shapes: torch's shapes text has [] for an int
   list) first among the allocations live at the end of the window: 12
   blocks of 1 MiB, 12 MiB.

3. mem_free_before_window.py frees in the window a block it allocated
   before: `ptprof memory` counts that free (test_free_before_window).

4. mem_big_step.py allocates a 256 MiB tensor in one step: the peak of
   allocated CPU memory is within 1% of 256 MiB (it is 256 MiB plus the few
   KiB the other steps keep), at aten::zeros.
"""

import collections
import gzip
import json
import os

import ptproftest as T

COST_S = 200

SCRIPTS = [
    os.path.join(T.EXAMPLES_DIR, "train_mlp.py"),
    os.path.join(T.EXAMPLES_DIR, "train_mlp_10_steps.py"),
    os.path.join(T.EXAMPLES_DIR, "train_mlp_ranges.py"),
    os.path.join(T.EXAMPLES_DIR, "train_conv_bn_adam.py"),
    os.path.join(T.EXAMPLES_DIR, "train_lstm_clip.py"),
    os.path.join(T.HERE, "scripts", "mem_mixed.py"),
    os.path.join(T.HERE, "scripts", "mem_big_step.py"),
]
KEEP_ONES = os.path.join(T.HERE, "scripts", "mem_keep_ones.py")
BIG_STEP = os.path.join(T.HERE, "scripts", "mem_big_step.py")
FREE_BEFORE = os.path.join(T.HERE, "scripts", "mem_free_before_window.py")
WRAPPER = os.path.join(T.HERE, "torch_memory_wrapper.py")
SCHEDULE = dict(wait=1, warmup=1, active=3)
ENCLOSING_SCOPES = {"model_train", "model_train_step"}
MIB = 1 << 20


def keep(name):
    return not (
        name.startswith("profiler::")
        or name.startswith("ProfilerStep")
        or name == "[memory]"
        or name in ENCLOSING_SCOPES
    )


def eventlist_is_exact():
    """torch 1.x's EventList attributes memory by whole-microsecond timestamps."""
    return not os.environ.get("PTPROF_TORCH_VERSION", "").startswith("1.")


def memory_table(rows, mem_key, self_key):
    """(name, shapes text) -> [CPU Mem, Self CPU Mem], zero entries dropped."""
    table = collections.defaultdict(lambda: [0, 0])
    for r in rows:
        if keep(r["name"]):
            shapes = r["input_shapes"]
            key = (r["name"], shapes if isinstance(shapes, str) else str(shapes))
            table[key][0] += r.get(mem_key, 0)
            table[key][1] += r.get(self_key, 0)
    return {k: v for k, v in table.items() if v != [0, 0]}


def run_ptprof(script, d, env):
    out = os.path.join(d, "ptprof-out")
    spec = ",".join("%s=%d" % kv for kv in SCHEDULE.items())
    proc = T.run_ptprof(
        ["run", "-o", out, "--schedule", spec, "--record-shapes", "--profile-memory", "--", T.PYTHON, script], env=env
    )
    if proc.returncode != 0:
        raise AssertionError("ptprof run failed: " + T.describe(proc))
    rep = T.report_json(out, "--group-by-input-shape")
    chrome = os.path.join(d, "trace.json.gz")
    proc = T.run_ptprof(["export", out, "--chrome", chrome])
    if proc.returncode != 0:
        raise AssertionError("ptprof export failed: " + T.describe(proc))
    with gzip.open(chrome, "rt") as f:
        doc = json.load(f)
    events = sorted(e["args"]["Bytes"] for e in window_blocks(doc["traceEvents"]))
    return (
        memory_table(rep["rows"], "cpu_memory_bytes", "self_cpu_memory_bytes"),
        events,
        [s["step"] for s in rep["steps"]],
    )


def window_blocks(trace_events):
    """The CPU [memory] events of the export, less the frees of blocks not
    allocated in the window (no allocation at their Addr since the last free
    there): ptprof has torch track every block under --profile-memory, so it
    sees the free of a block allocated before the window, which torch's
    profiler, entered at the window's start, never tracked and never reports
    (the export keeps them: they are real; the report's memory columns leave
    them out, as torch's do)."""
    memory = sorted(
        (e for e in trace_events if e.get("name") == "[memory]" and e["args"]["Device Type"] == 0),
        key=lambda e: (e["ts"], e["args"]["Ev Idx"]),
    )
    live, kept = set(), []
    for e in memory:
        addr, nbytes = e["args"]["Addr"], e["args"]["Bytes"]
        if nbytes > 0:
            live.add(addr)
        elif addr in live:
            live.discard(addr)
        else:
            continue  # a block from before the window
        kept.append(e)
    return kept


def run_torch(script, d, env):
    out = os.path.join(d, "torch.json")
    first = SCHEDULE["wait"] + SCHEDULE["warmup"]
    proc = T.run_python(
        [WRAPPER, "--first", str(first), "--count", str(SCHEDULE["active"]), "--out", out, "--", script], env=env
    )
    if proc.returncode != 0:
        raise AssertionError("torch_memory_wrapper failed: " + T.describe(proc))
    with open(out) as f:
        full = json.load(f)
    events = sorted(b for b, device in full["memory_events"] if device == 0)
    return full, events, full["steps"]


def op_calls(triples):
    """(name, input shapes) -> calls, of the ops kept."""
    return {(name, shapes): n for name, shapes, n in triples if keep(name)}


def diff(expected, actual, limit=40):
    lines = []
    for key in sorted(set(expected) | set(actual)):
        e, a = expected.get(key, [0, 0]), actual.get(key, [0, 0])
        if e != a:
            lines.append("  %-45s %-40s torch=%s ptprof=%s" % (key[0][:45], key[1][:40], e, a))
    more = len(lines) - limit
    return "\n".join(lines[:limit] + (["  ... %d more" % more] if more > 0 else []))


def check_script(script):
    name = os.path.basename(script)
    env = T.clean_env(STEPS=6)
    with T.tempdir() as d:
        ours, our_events, steps = run_ptprof(script, d, env)
        T.check_eq(steps, [2, 3, 4], name + ": steps ptprof recorded")
        full, their_events, torch_steps = run_torch(script, d, env)
        # The reference: the table derived from torch's event tree. It covers every op of
        # torch's flat event list, with the same input shapes text ...
        tree_calls, flat_calls = op_calls(full["tree_op_calls"]), op_calls(full["op_events"])
        T.check(
            tree_calls == flat_calls,
            "%s: (name, input shapes) -> calls, torch's event tree vs its event "
            "list: %s"
            % (
                name,
                sorted(
                    (k, tree_calls.get(k), flat_calls.get(k))
                    for k in set(tree_calls) | set(flat_calls)
                    if tree_calls.get(k) != flat_calls.get(k)
                )[:20],
            ),
        )
        theirs = memory_table(full["tree_rows"], "cpu_memory_usage", "self_cpu_memory_usage")
        eventlist = memory_table(full["rows"], "cpu_memory_usage", "self_cpu_memory_usage")
        # ... and equals key_averages' table where that one is exact (torch 2.x).
        if eventlist_is_exact():
            T.check(
                eventlist == theirs,
                "%s: [CPU Mem, Self CPU Mem], torch's key_averages vs its event tree:\n%s"
                % (name, diff(eventlist, theirs)),
            )
        else:
            differ = sum(1 for k in set(eventlist) | set(theirs) if eventlist.get(k) != theirs.get(k))
            print(
                "%s: torch 1.x's key_averages (microsecond attribution) differs from its event tree in %d of %d "
                "(name, shapes)" % (name, differ, len(set(eventlist) | set(theirs))),
                flush=True,
            )
        T.check_eq(torch_steps, [2, 3, 4], name + ": steps torch's profiler recorded")
        T.check(len(their_events) > 10, name + ": torch reported memory events (%d)" % len(their_events))
        same_events = our_events == their_events
        T.check(
            same_events,
            "%s: memory events (bytes), torch vs ptprof: %d vs %d events, %d vs %d bytes; only "
            "torch: %s; only ptprof: %s"
            % (
                name,
                len(their_events),
                len(our_events),
                sum(their_events),
                sum(our_events),
                sorted((collections.Counter(their_events) - collections.Counter(our_events)).elements())[:20],
                sorted((collections.Counter(our_events) - collections.Counter(their_events)).elements())[:20],
            ),
        )
        if same_events:
            print(
                "%s: %d memory events, %d bytes net, equal to torch's" % (name, len(our_events), sum(our_events)),
                flush=True,
            )
        T.check(
            ours == theirs,
            "%s: (name, input shapes) -> [CPU Mem, Self CPU Mem], torch's event tree vs "
            "ptprof (%d vs %d keys):\n%s" % (name, len(theirs), len(ours), diff(theirs, ours)),
        )
        if ours == theirs:
            print(
                "%s: %d (name, input shapes) with memory: CPU Mem and Self CPU Mem equal to torch's"
                % (name, len(ours)),
                flush=True,
            )


def memory_text(out, *extra):
    proc = T.run_ptprof(["memory", out, "--bytes", "--row-limit", "0"] + list(extra))
    if proc.returncode != 0:
        raise AssertionError("ptprof memory failed: " + T.describe(proc))
    return proc.stdout


def section(text, title):
    """The lines of the section whose heading starts with `title`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    out = []
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        out.append(line)
    return out


def test_stack_at_the_peak():
    """With call stacks recorded (--with-stack, and the cheap
    --python-attribution), the peak's line is followed by the Python stack of
    the op at the peak, innermost first: its first entry is the script's line
    that made the 256 MiB tensor."""
    with open(BIG_STEP) as f:
        line = next(
            i
            for i, source_line in enumerate(f.read().splitlines(), 1)
            if source_line.strip().startswith("big = torch.zeros(")
        )
    expected = "%s(%d): main" % (BIG_STEP, line)
    for flags in (["--with-stack"], ["--python-attribution"]):
        with T.tempdir() as d:
            out = os.path.join(d, "out")
            proc = T.run_ptprof(
                ["run", "-o", out, "--profile-memory"] + flags + ["--", T.PYTHON, BIG_STEP], env=T.clean_env(STEPS=4)
            )
            if proc.returncode != 0:
                raise AssertionError("ptprof run %s failed: %s" % (flags, T.describe(proc)))
            text = memory_text(out)
            peak = section(text, "Peak memory")
            at = next((i for i, line in enumerate(peak) if " CPU " in line and "allocated" in line), None)
            T.check(at is not None and at + 1 < len(peak), "a CPU peak line and its stack %s:\n%s" % (flags, text))
            T.check_eq(peak[at + 1].strip(), expected, "the peak's innermost frame %s:\n%s" % (flags, text))
        print("%s: peak at %s" % (" ".join(flags), peak[at + 1].strip()), flush=True)


def test_live_allocations_of_a_leak():
    with T.tempdir() as d:
        out = os.path.join(d, "out")
        # One window of the 12 steps: it ends before the interpreter's exit frees the list.
        proc = T.run_ptprof(
            [
                "run",
                "-o",
                out,
                "--profile-memory",
                "--record-shapes",
                "--schedule",
                "active=12,repeat=1",
                "--",
                T.PYTHON,
                KEEP_ONES,
            ],
            env=T.clean_env(STEPS=12),
        )
        if proc.returncode != 0:
            raise AssertionError("ptprof run failed: " + T.describe(proc))
        text = memory_text(out)
        live = section(text, "Live at the end of the window")
        T.check(len(live) >= 2, "a header and at least one live group:\n" + text)
        fields = live[1].split(None, 4)  # bytes count each device op [concrete inputs]
        T.check_eq(fields[4], "aten::ones [512, 512]", "the largest live group's op and size:\n" + text)
        T.check_eq(int(fields[1]), 12, "blocks aten::ones left live:\n" + text)
        T.check_eq(int(fields[0]), 12 * MIB, "bytes aten::ones left live:\n" + text)
        T.check_eq(int(fields[2]), MIB, "each block's size:\n" + text)
        T.check_eq(fields[3], "CPU", "device")
        human = T.run_ptprof(["memory", out]).stdout
        T.check("12.00 MiB" in human and "1.00 MiB" in human, "human units:\n" + human)
        print(live[1].strip(), flush=True)


def test_peak_of_a_big_step():
    with T.tempdir() as d:
        out = os.path.join(d, "out")
        proc = T.run_ptprof(["run", "-o", out, "--profile-memory", "--", T.PYTHON, BIG_STEP], env=T.clean_env(STEPS=4))
        if proc.returncode != 0:
            raise AssertionError("ptprof run failed: " + T.describe(proc))
        csv = os.path.join(d, "timeline.csv")
        text = memory_text(out, "--timeline", csv)
        peak = [line for line in section(text, "Peak memory") if " CPU " in line and "allocated" in line]
        T.check(len(peak) == 1, "one CPU peak line:\n" + text)
        words = peak[0].split()
        allocated = int(words[words.index("allocated") + 1])
        truth = 256 * MIB
        T.check(
            truth <= allocated <= truth * 1.01, "peak %d bytes, truth %d (within 1%%):\n%s" % (allocated, truth, text)
        )
        T.check_eq(words[words.index("at") + 1], "aten::zeros", "the op at the peak:\n" + text)
        with open(csv) as f:
            rows = f.read().splitlines()
        T.check_eq(rows[0], "time_ns,pid,device,allocated_bytes,reserved_bytes", "timeline header")
        T.check(max(int(r.split(",")[3]) for r in rows[1:]) == allocated, "the timeline's peak is the peak")
        print(
            "peak %d bytes = 256 MiB + %d (%.4f%%) at aten::zeros"
            % (allocated, allocated - truth, 100.0 * (allocated - truth) / truth)
        )


def test_free_before_window():
    """mem_free_before_window.py keeps a torch.ones(256, 1024) (1 MiB) from
    step 0, before the window (steps 2-4), and frees it in step 3 inside the
    record_function scope drop_keep. `ptprof memory` shows that free: in the
    frees of blocks allocated before the window (with the others the script
    makes, listed where they are checked, as is the export), as drop_keep's
    one free of 1 MiB, and the timeline's allocated bytes drop by 1 MiB at it. torch's profiler, entered at the
    window's start, never sees it, and the memory columns agree with torch's
    (check_script: drop_keep has no CPU Mem on either side)."""
    check_script(FREE_BEFORE)
    with T.tempdir() as d:
        out = os.path.join(d, "out")
        spec = ",".join("%s=%d" % kv for kv in SCHEDULE.items())
        proc = T.run_ptprof(
            ["run", "-o", out, "--schedule", spec, "--profile-memory", "--", T.PYTHON, FREE_BEFORE],
            env=T.clean_env(STEPS=6),
        )
        if proc.returncode != 0:
            raise AssertionError("ptprof run failed: " + T.describe(proc))
        csv = os.path.join(d, "timeline.csv")
        text = memory_text(out, "--timeline", csv)
        # The frees of blocks from before the window, known from the script:
        # the kept 1 MiB block (step 3), step 1's loss (a float32 scalar, 4
        # bytes) replaced in step 2, and on torch 2.x step 1's gradients of
        # the Linear(16, 4) (4x16 and 4 float32: 256 and 16 bytes), which
        # zero_grad() frees in step 2 (set_to_none is its default from torch
        # 2.0; 1.13 zeroes them in place).
        expected = [MIB, 4] + ([] if os.environ.get("PTPROF_TORCH_VERSION", "").startswith("1.") else [256, 16])
        line = "%d free(s), %d, of blocks allocated before the window" % (len(expected), sum(expected))
        T.check(line in text, "the line %r in:\n%s" % (line, text))
        # The export has those frees, with no allocation at their Addr in the window.
        chrome = os.path.join(d, "trace.json.gz")
        proc = T.run_ptprof(["export", out, "--chrome", chrome])
        if proc.returncode != 0:
            raise AssertionError("ptprof export failed: " + T.describe(proc))
        with gzip.open(chrome, "rt") as f:
            trace_events = json.load(f)["traceEvents"]
        kept = set(id(e) for e in window_blocks(trace_events))
        before = [
            -e["args"]["Bytes"]
            for e in trace_events
            if e.get("name") == "[memory]" and e["args"]["Device Type"] == 0 and id(e) not in kept
        ]
        T.check_eq(sorted(before), sorted(expected), "the export's frees of blocks from before the window")
        per_op = [line.split() for line in section(text, "Allocations per op")[1:]]
        drop = [f for f in per_op if f[-1] == "drop_keep"]
        # torch 1.x's record_function also frees its handle tensors (a few hundred bytes) in the scope.
        T.check(
            len(drop) == 1 and MIB <= int(drop[0][3]) < MIB + 4096,
            "drop_keep frees the 1 MiB block (and nothing else but small ones):\n" + text,
        )
        with open(csv) as f:
            rows = [r.split(",") for r in f.read().splitlines()[1:]]
        cpu = [int(r[3]) for r in rows if r[2] == "CPU"]
        drops = [a - b for a, b in zip(cpu, cpu[1:]) if a - b == MIB]
        T.check(len(drops) == 1, "the CPU allocated bytes drop by 1 MiB once: %s" % cpu)
        print("%s (drop_keep); allocated %d -> %d" % (line, max(cpu), min(cpu)), flush=True)


def test_train_mlp():
    check_script(SCRIPTS[0])


def test_train_mlp_10_steps():
    check_script(SCRIPTS[1])


def test_train_mlp_ranges():
    check_script(SCRIPTS[2])


def test_train_conv_bn_adam():
    check_script(SCRIPTS[3])


def test_train_lstm_clip():
    check_script(SCRIPTS[4])


def test_mem_mixed():
    check_script(SCRIPTS[5])


def test_mem_big_step():
    check_script(SCRIPTS[6])


if __name__ == "__main__":
    T.main()
