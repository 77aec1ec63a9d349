"""Compiled code (issue #25, item 1): a torch.compile'd MLP trained on the
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
(TORCHINDUCTOR_COMPILE_THREADS=1). torch 2.x only (REQUIRES: CMake runs
it only for torches that have torch.compile)."""

import os
import textwrap

import ptproftest as T

REQUIRES = ("torch2",)
COST_S = 200
TIMEOUT_S = 3600  # compiles a model cold on the CPU: minutes on a loaded machine

STEPS = 6
SCHEDULE = dict(wait=1, warmup=1, active=3)

COMPILED_MLP = (
    """
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
"""
    % STEPS
)

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
    ref = T.torch_profile_full(
        script, os.path.join(d, "torch.json"), env=env, **{k: str(v) for k, v in (schedule or {}).items()}
    )
    torch_counts = ref["by_name"]
    T.check(
        any(n.startswith("## Call CompiledFxGraph") for n in torch_counts),
        "torch.profiler saw the compiled graphs' calls (%s): %s" % (label, sorted(torch_counts)),
    )
    T.check(
        any("(dynamo_timed)" in n for n in torch_counts) == expect_compile_scopes,
        "torch.profiler's (dynamo_timed) scopes %s" % label,
    )
    out = os.path.join(d, "out")
    flags = ["--schedule", ",".join("%s=%d" % kv for kv in schedule.items())] if schedule else []
    if os.environ.get("COMPILED_CHECK_MEMORY") == "1":
        env = dict(env, PTPROF_PROFILE_MEMORY="1")
    proc = T.run_ptprof(["run", "-o", out] + flags + ["--", T.PYTHON, script], env=env)
    T.check_eq(proc.returncode, 0, "ptprof run (%s)\n%s" % (label, T.describe(proc)))
    mine = ptprof_counts(out)
    differ = {n: (c, mine.get(n)) for n, c in torch_counts.items() if mine.get(n) != c}
    T.check(
        not differ,
        "every torch.profiler row in ptprof's report with its count (%s); name: (torch, ptprof): %s" % (label, differ),
    )
    T.check(
        not [n for n in differ if gated(n)],
        "the gated scopes are all there (%s): %s" % (label, {n: v for n, v in differ.items() if gated(n)}),
    )


# The first thing in each step is a _RecordFunctionFast scope, before any
# operator: the thread must hold the profiler state as soon as its window
# opens, not from its first operator on.
FAST_SCOPE_PER_STEP = """
import torch, ptprof
x = torch.ones(4)
for i in range(6):
    with torch._C._profiler._RecordFunctionFast("fast_scope"):
        torch.relu(x)
    ptprof.step()
"""


def test_fast_scopes_only_in_windows():
    """torch's _RecordFunctionFast (the C++ gate of the compiled graphs'
    scopes) is recorded in the recorded steps without --profile-memory, and
    not in the warmup or outside windows. Seconds, no compile."""
    import torch

    if not hasattr(torch._C._profiler, "_RecordFunctionFast"):
        T.skip("torch %s has no _RecordFunctionFast" % torch.__version__)
    with T.tempdir() as d:
        script = os.path.join(d, "fast.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(FAST_SCOPE_PER_STEP))
        out = os.path.join(d, "out")
        proc = T.run_ptprof(
            ["run", "-o", out, "--step", "manual", "--schedule", "wait=1,warmup=1,active=2", "--", T.PYTHON, script],
            env=T.clean_env(),
        )
        T.check_eq(proc.returncode, 0, "ptprof run\n" + T.describe(proc))
        counts = ptprof_counts(out)
        T.check_eq(counts.get("aten::relu"), 2, "relu in the 2 recorded steps: %s" % counts)
        T.check_eq(counts.get("fast_scope"), 2, "the _RecordFunctionFast scope in the 2 recorded steps: %s" % counts)


def test_compiled_mlp_matches_torch_profiler():
    import torch

    if not hasattr(torch, "compile"):
        T.skip("torch %s has no torch.compile" % torch.__version__)
    with T.tempdir() as d:
        script = os.path.join(d, "compiled_mlp.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(COMPILED_MLP))
        env = T.clean_env(TORCHINDUCTOR_CACHE_DIR=os.path.join(d, "inductor-cache"), TORCHINDUCTOR_COMPILE_THREADS=1)
        warm = T.run_python([script], env=env, timeout=1200)  # a cold inductor compile, on a shared machine
        T.check_eq(warm.returncode, 0, "the plain run that fills the cache\n" + T.describe(warm))
        with T.tempdir() as d1:
            compare(d1, script, env, SCHEDULE, expect_compile_scopes=False)
        with T.tempdir() as d2:
            compare(d2, script, env, None, expect_compile_scopes=True)


if __name__ == "__main__":
    T.main()
