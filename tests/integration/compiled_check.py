"""NOT YET REGISTERED (not test_*.py): the acceptance check of issue #25
item 1, which fails today, run by hand:

    PTPROF_BIN=build/bin/ptprof PTPROF_PYTHON=.venv/bin/python \
        .venv/bin/python tests/integration/compiled_check.py

The bootstrap sets torch's flag in windows (test_bootstrap.py checks it), but
torch's C++ side gates too: torch._C._profiler._RecordFunctionFast.__enter__
opens a RecordFunction only when a ProfilerStateBase is in the thread's
PROFILER_STATE slot (or the global one). The torch bridge puts its
MemoryReporter there only under PTPROF_PROFILE_MEMORY=1, and then the gated
scopes are recorded (COMPILED_CHECK_MEMORY=1 runs ptprof so). Rename to
test_compiled.py once the bridge installs that state in every window
(issue #25; branch compiled does it).

Compiled code (issue #25, item 1): a torch.compile'd MLP trained on the
CPU shows in ptprof's report every row torch.profiler's key_averages() has,
with the same count: the scopes torch emits only while its profiler is on
("## Call CompiledFxGraph <hash> ##", "Pregraph bytecode", "AOTDispatcher
Runtime Wrapper Prologue", the compile-time "(dynamo_timed)" scopes) included.
ptprof's Python bootstrap turns torch's flag on while a ptprof window
records (docs/bootstrap.md), without torch's profiler or Kineto.

Run twice: with a schedule whose window leaves the compile step out, and
without one (the compile step recorded). torch.profiler runs the same script
in the same test with the same schedule (torch_profile_wrapper.py ends a
step where ptprof does: at the optimizer's step). Counts, never times.

Every run uses one inductor cache that a first plain run filled, so that
each profiled run takes the same path through the compiler (a cache miss
and a hit run different (dynamo_timed) scopes), and compiles in-process
(TORCHINDUCTOR_COMPILE_THREADS=1). torch 2.x only (once registered, CMake runs it only
for torches that have torch.compile: PTPROF_TORCH2_TESTS)."""

import os
import textwrap

import ptproftest as T

STEPS = 6
SCHEDULE = dict(wait=1, warmup=1, active=3)

COMPILED_MLP = """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
compiled = torch.compile(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 16), torch.randn(8, 4)
for i in range(%d):
    loss = ((compiled(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
""" % STEPS

# What torch emits only while its profiler is on.
GATED = ("## Call CompiledFxGraph", "Pregraph bytecode", "AOTDispatcher Runtime Wrapper Prologue", "(dynamo_timed)")


def gated(name):
    return any(g in name for g in GATED)


def ptprof_counts(out):
    counts = {}
    for r in T.report_json(out)["rows"]:
        counts[r["name"]] = counts.get(r["name"], 0) + r["calls"]
    return counts


def compare(d, script, env, schedule, expect_compile_scopes):
    label = "with schedule %s" % schedule if schedule else "without a schedule"
    ref = T.torch_profile_full(script, os.path.join(d, "torch.json"), env=env,
                               **{k: str(v) for k, v in (schedule or {}).items()})
    torch_counts = ref["by_name"]
    T.check(any(n.startswith("## Call CompiledFxGraph") for n in torch_counts),
            "torch.profiler saw the compiled graphs' calls (%s): %s" % (label, sorted(torch_counts)))
    T.check(any("(dynamo_timed)" in n for n in torch_counts) == expect_compile_scopes,
            "torch.profiler's (dynamo_timed) scopes %s" % label)
    out = os.path.join(d, "out")
    flags = ["--schedule", ",".join("%s=%d" % kv for kv in schedule.items())] if schedule else []
    if os.environ.get("COMPILED_CHECK_MEMORY") == "1":
        env = dict(env, PTPROF_PROFILE_MEMORY="1")
    proc = T.run_ptprof(["run", "-o", out] + flags + ["--", T.PYTHON, script], env=env)
    T.check_eq(proc.returncode, 0, "ptprof run (%s)\n%s" % (label, T.describe(proc)))
    mine = ptprof_counts(out)
    differ = {n: (c, mine.get(n)) for n, c in torch_counts.items() if mine.get(n) != c}
    T.check(not differ, "every torch.profiler row in ptprof's report with its count (%s); name: (torch, ptprof): %s"
            % (label, differ))
    T.check(not [n for n in differ if gated(n)], "the gated scopes are all there (%s): %s"
            % (label, {n: v for n, v in differ.items() if gated(n)}))


def test_compiled_mlp_matches_torch_profiler():
    import torch

    if not hasattr(torch, "compile"):
        T.skip("torch %s has no torch.compile" % torch.__version__)
    with T.tempdir() as d:
        script = os.path.join(d, "compiled_mlp.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(COMPILED_MLP))
        env = T.clean_env(TORCHINDUCTOR_CACHE_DIR=os.path.join(d, "inductor-cache"),
                          TORCHINDUCTOR_COMPILE_THREADS=1)
        warm = T.run_python([script], env=env, timeout=1200)  # a cold inductor compile, on a shared machine
        T.check_eq(warm.returncode, 0, "the plain run that fills the cache\n" + T.describe(warm))
        with T.tempdir() as d1:
            compare(d1, script, env, SCHEDULE, expect_compile_scopes=False)
        with T.tempdir() as d2:
            compare(d2, script, env, None, expect_compile_scopes=True)


if __name__ == "__main__":
    T.main()
