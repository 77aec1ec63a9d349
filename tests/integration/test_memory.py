"""Memory (--profile-memory) on real PyTorch, once per torch.

1. Per-op CPU Mem and Self CPU Mem equal torch.profiler's to the byte.
   Each script runs twice, with STEPS=6 and the schedule wait=1, warmup=1,
   active=3 (recorded steps 2, 3, 4) on both sides: under `ptprof run
   --record-shapes --profile-memory` (`ptprof report --format json
   --group-by-input-shape`), and under torch.profiler(profile_memory=True,
   record_shapes=True) (torch_profile_wrapper.py --profile-memory). Memory
   amounts of a script are deterministic (the same allocations, the same
   sizes, in the same ops, every run), and both profilers track the same
   blocks: those allocated while a window records (torch's CPU allocator
   reports the free of a block only if it was allocated while profiled).
   Compared per (name, input shapes): cpu_memory and self_cpu_memory, summed
   over the rows' calls. Left out on both sides: profiler::* and
   ProfilerStep* rows, and "[memory]" (memory events inside no op: on
   torch's side they include the frees of its own ProfilerStep handles).
   Taken out of torch's side: what its ProfilerStep record_function itself
   allocates per recorded step (torch 1.13: `torch.zeros(1)`), measured
   once (profiler_step_artifact).
   Only rows where either side has memory are compared.

2. mem_keep_ones.py keeps one torch.ones(512, 512) per step for 12 steps:
   `ptprof memory` lists aten::ones first among the allocations live at the
   end of the window: 12 blocks of 1 MiB, 12 MiB.

3. mem_big_step.py allocates a 256 MiB tensor in one step: the peak of
   allocated CPU memory is within 1% of 256 MiB (it is 256 MiB plus the few
   KiB the other steps keep), at aten::zeros.
"""

import collections
import json
import os

import ptproftest as T

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
SCHEDULE = dict(wait=1, warmup=1, active=3)
MIB = 1 << 20

ARTIFACT = None  # profiler_step_artifact(), measured once in __main__


def keep(name):
    return not name.startswith("profiler::") and not name.startswith("ProfilerStep") and name != "[memory]"


def shapes_text(shapes):
    return shapes if isinstance(shapes, str) else str(shapes)


def profiler_step_artifact():
    """(name, shapes) -> [cpu_memory, self_cpu_memory] of one ProfilerStep
    record_function of torch.profiler, alone (see the docstring)."""
    code = ("import json, torch\n"
            "from torch.profiler import profile, ProfilerActivity\n"
            "with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as p:\n"
            "    r = torch.autograd.profiler.record_function('ProfilerStep#0')\n"
            "    r.__enter__()\n"
            "    r.__exit__(None, None, None)\n"
            "print(json.dumps([[e.key, str(e.input_shapes), e.cpu_memory_usage, e.self_cpu_memory_usage]\n"
            "                  for e in p.key_averages(group_by_input_shape=True)]))\n")
    proc = T.run_python(["-c", code])
    if proc.returncode != 0:
        raise AssertionError("measuring ProfilerStep's allocations failed: " + T.describe(proc))
    out = {}
    for k, shapes, mem, self_mem in json.loads(proc.stdout.strip().splitlines()[-1]):
        if keep(k) and (mem or self_mem):
            out[(k, shapes)] = [mem, self_mem]
    return out


def ptprof_memory_rows(script, d, env):
    out = os.path.join(d, "ptprof-out")
    spec = ",".join("%s=%d" % kv for kv in SCHEDULE.items())
    proc = T.run_ptprof(["run", "-o", out, "--schedule", spec, "--record-shapes", "--profile-memory", "--",
                         T.PYTHON, script], env=env)
    if proc.returncode != 0:
        raise AssertionError("ptprof run failed: " + T.describe(proc))
    rep = T.report_json(out, "--group-by-input-shape")
    table = collections.defaultdict(lambda: [0, 0])
    for r in rep["rows"]:
        if keep(r["name"]):
            key = (r["name"], shapes_text(r["input_shapes"]))
            table[key][0] += r.get("cpu_memory_bytes", 0)
            table[key][1] += r.get("self_cpu_memory_bytes", 0)
    return {k: v for k, v in table.items() if v != [0, 0]}, [s["step"] for s in rep["steps"]]


def torch_memory_rows(script, d, env):
    full = T.torch_profile_full(script, os.path.join(d, "torch.json"), env=env, profile_memory=True, **SCHEDULE)
    table = collections.defaultdict(lambda: [0, 0])
    steps = 0
    for r in full["rows"]:
        if r["name"].startswith("ProfilerStep"):
            steps += r["count"]
        if keep(r["name"]):
            key = (r["name"], shapes_text(r["input_shapes"]))
            table[key][0] += r["cpu_memory_usage"]
            table[key][1] += r["self_cpu_memory_usage"]
    for key, (mem, self_mem) in ARTIFACT.items():
        table[key][0] -= mem * steps
        table[key][1] -= self_mem * steps
    return {k: v for k, v in table.items() if v != [0, 0]}, steps


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
        ours, steps = ptprof_memory_rows(script, d, env)
        T.check_eq(steps, [2, 3, 4], name + ": recorded steps")
        theirs, torch_steps = torch_memory_rows(script, d, env)
        T.check_eq(torch_steps, 3, name + ": ProfilerStep spans torch.profiler recorded")
        T.check(len(theirs) > 0, name + ": torch.profiler saw memory in some op")
        T.check(ours == theirs, "%s: (name, input shapes) -> [CPU Mem, Self CPU Mem], torch.profiler vs ptprof "
                "(%d vs %d keys):\n%s" % (name, len(theirs), len(ours), diff(theirs, ours)))
        print("%s: %d (name, shapes) with memory, equal to the byte (total CPU Mem of the top rows %d bytes)"
              % (name, len(ours), sum(v[1] for v in ours.values())), flush=True)


def memory_text(out, *extra):
    proc = T.run_ptprof(["memory", out, "--bytes", "--row-limit", "0"] + list(extra))
    if proc.returncode != 0:
        raise AssertionError("ptprof memory failed: " + T.describe(proc))
    return proc.stdout


def section(text, title):
    """The lines of the section whose heading starts with `title`."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(title))
    out = []
    for l in lines[start + 1:]:
        if not l.startswith("  "):
            break
        out.append(l)
    return out


def test_live_allocations_of_a_leak():
    with T.tempdir() as d:
        out = os.path.join(d, "out")
        proc = T.run_ptprof(["run", "-o", out, "--profile-memory", "--record-shapes", "--", T.PYTHON, KEEP_ONES],
                            env=T.clean_env(STEPS=12))
        if proc.returncode != 0:
            raise AssertionError("ptprof run failed: " + T.describe(proc))
        text = memory_text(out)
        live = section(text, "Live at the end of the window")
        T.check(len(live) >= 2, "a header and at least one live group:\n" + text)
        fields = live[1].split(None, 4)  # bytes count each device op [shapes]
        T.check_eq(fields[4].split(" ", 1)[0], "aten::ones", "the largest live group's op:\n" + text)
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
        proc = T.run_ptprof(["run", "-o", out, "--profile-memory", "--", T.PYTHON, BIG_STEP],
                            env=T.clean_env(STEPS=4))
        if proc.returncode != 0:
            raise AssertionError("ptprof run failed: " + T.describe(proc))
        csv = os.path.join(d, "timeline.csv")
        text = memory_text(out, "--timeline", csv)
        peak = [l for l in section(text, "Peak memory") if " CPU " in l and "allocated" in l]
        T.check(len(peak) == 1, "one CPU peak line:\n" + text)
        words = peak[0].split()
        allocated = int(words[words.index("allocated") + 1])
        truth = 256 * MIB
        T.check(truth <= allocated <= truth * 1.01, "peak %d bytes, truth %d (within 1%%):\n%s"
                % (allocated, truth, text))
        T.check_eq(words[words.index("at") + 1], "aten::zeros", "the op at the peak:\n" + text)
        with open(csv) as f:
            rows = f.read().splitlines()
        T.check_eq(rows[0], "time_ns,pid,device,allocated_bytes,reserved_bytes", "timeline header")
        T.check(max(int(r.split(",")[3]) for r in rows[1:]) == allocated, "the timeline's peak is the peak")
        print("peak %d bytes = 256 MiB + %d (%.4f%%) at aten::zeros" % (allocated, allocated - truth,
                                                                        100.0 * (allocated - truth) / truth))


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
    ARTIFACT = profiler_step_artifact()
    print("ProfilerStep's own allocations (torch.profiler side): %s" % ARTIFACT, flush=True)
    T.main()
