"""Outside its windows ptprof registers no RecordFunction callback
(issue #27): torch takes its no-callback fast path only when none at
all is registered, and even a disabled one or a user-scope watcher cost every
operator (bench/registered_callbacks.py). The steps that end at the
optimizer's or the DataLoader's scopes are then seen from Python
(python/ptprof/_step_scopes.py: a wrapper of the optimizer classes'
step, the DataLoader iterator's), and come out as before.

References that cannot drift: torch's own answer to "is any global callback
registered?" (at::hasGlobalCallbacks, asked by the script at each step),
torch.profiler.schedule's recorded steps and the script's loop counts."""

import json
import os
import re
import textwrap

import ptproftest as T
from torch.profiler import ProfilerAction, schedule

HAS_CALLBACKS_CPP = """
#include <ATen/record_function.h>
extern "C" __attribute__((visibility("default"))) int ptprof_test_has_global_callbacks() {
  return at::hasGlobalCallbacks() ? 1 : 0;
}
"""

# $STEPS batches (10 unless set) from a DataLoader, an SGD step each (and a
# ptprof.step() after it when $MANUAL_STEPS is set); the script notes at the
# start of each step whether torch has any global callback, and writes the
# list to $SEEN.
TRAIN = """
import ctypes, json, os, sys, torch, torch.nn as nn
sys.path.insert(0, os.environ["TESTS_DIR"])
import torch_cxx
lib = ctypes.CDLL(torch_cxx.build(os.environ["HAS_CALLBACKS"], os.environ["CXX_CACHE"]))
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
from torch.utils.data import DataLoader, TensorDataset
seen = []
steps = int(os.environ.get("STEPS", "10"))
loader = DataLoader(TensorDataset(torch.randn(8 * steps, 16), torch.randn(8 * steps, 4)), batch_size=8)
for x, y in loader:
    seen.append(lib.ptprof_test_has_global_callbacks())
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if os.environ.get("MANUAL_STEPS"):
        import ptprof
        ptprof.step()
with open(os.environ["SEEN"], "w") as f:
    json.dump(seen, f)
"""

SCHEDULE = dict(wait=2, warmup=0, active=2, repeat=2)


def torch_recorded(steps, plan=SCHEDULE):
    fn = schedule(**plan)
    return [s for s in range(steps) if fn(s) in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)]


def run(d, *flags, step=None, steps=10, manual_steps=False):
    src = os.path.join(d, "has_callbacks.cpp")
    with open(src, "w") as f:
        f.write(textwrap.dedent(HAS_CALLBACKS_CPP))
    script = os.path.join(d, "train.py")
    with open(script, "w") as f:
        f.write(textwrap.dedent(TRAIN))
    seen, out = os.path.join(d, "seen.json"), os.path.join(d, "out")
    env = T.clean_env(
        TESTS_DIR=T.HERE, HAS_CALLBACKS=src, CXX_CACHE=os.path.join(d, "cxx"), SEEN=seen, STEPS=str(steps)
    )
    if step:
        env["PTPROF_STEP"] = step
    if manual_steps:
        env["MANUAL_STEPS"] = "1"
    proc = T.run_ptprof(["run", "-o", out] + list(flags) + ["--", T.PYTHON, script], env=env)
    T.check_eq(proc.returncode, 0, "the script runs under ptprof\n" + T.describe(proc))
    with open(seen) as f:
        return json.load(f), proc, out


def recorded_steps(out):
    return [s["step"] for s in T.report_json(out)["steps"]]


def test_no_callback_in_steps_outside_windows():
    """A schedule's wait steps: torch has no global callback there; in the
    recorded steps it has ptprof's."""
    with T.tempdir() as d:
        seen, proc, out = run(d, "--schedule", ",".join("%s=%d" % kv for kv in SCHEDULE.items()))
        recorded = torch_recorded(10)
        T.check_eq(
            [i for i, s in enumerate(seen) if s],
            recorded,
            "the steps in which torch has a global callback\n" + T.describe(proc),
        )
        T.check_eq(recorded_steps(out), recorded, "the steps recorded")
        T.check("steps: 10 ended" in proc.stderr, "every optimizer step ends a step\n" + T.describe(proc))
        rows = {r["name"]: r["calls"] for r in T.report_json(out)["rows"]}
        T.check_eq(
            rows.get("Optimizer.step#SGD.step"), len(recorded), "one optimizer step per recorded step, whole: %s" % rows
        )


def test_long_waits_fold_and_count_every_step():
    """Wait steps longer than the agent lets the bootstrap fold at once (32,
    agent/src/runtime/python_step_folding.cpp): the recorded steps are still
    torch.profiler.schedule's, every step is counted (the ends held in
    Python at exit too), and the cost meter has its unrecorded steps right
    before each window. The bootstrap folds the wait steps, so the meter sees
    few of them: under half (it saw every one before)."""
    plan = dict(wait=75, warmup=1, active=2, repeat=2)
    steps = 199  # 52 after the second window: a fold still held at exit
    with T.tempdir() as d:
        _, proc, out = run(d, "--schedule", ",".join("%s=%d" % kv for kv in plan.items()), steps=steps)
        T.check_eq(recorded_steps(out), torch_recorded(steps, plan), "the steps recorded\n" + T.describe(proc))
        T.check("steps: %d ended" % steps in proc.stderr, "every optimizer step ends a step\n" + T.describe(proc))
        meter = re.search(r"measured on its own steps .*: (\d+) steady recorded steps, .* of (\d+)\)", proc.stderr)
        if T.check(meter, "the run measures its own steps\n" + T.describe(proc)):
            pairs, unrecorded = int(meter.group(1)), int(meter.group(2))
            T.check(pairs >= 2, "recorded steps paired with the unrecorded step before them: %d" % pairs)
            waits = steps - 2 * (plan["warmup"] + plan["active"])
            T.check(unrecorded < waits // 2, "unrecorded steps the agent measured: %d of %d" % (unrecorded, waits))


# A subclass whose step calls its base class's, both classes wrapped by torch
# (an instance of each), and an exception in a step: 30 outermost steps.
NESTED = """
import torch
model = torch.nn.Linear(4, 4)
base = torch.optim.SGD(model.parameters(), lr=0.01)
class Mine(torch.optim.SGD):
    def step(self, closure=None):
        return super().step(closure)
class Failing(torch.optim.SGD):
    def step(self, closure=None):
        super().step(closure)
        raise RuntimeError("this step fails")
opt = Mine(model.parameters(), lr=0.01)
for i in range(20):
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
try:
    Failing(model.parameters(), lr=0.01).step()
except RuntimeError:
    pass
for i in range(10):
    base.step()
"""


def test_nested_steps_end_one_step():
    """A step that calls another optimizer's wrapped step ends one step, as
    the nested scopes do; a step that raises ends none, and the count goes
    on right after it."""
    plan = dict(wait=3, warmup=0, active=2, repeat=3)
    with T.tempdir() as d:
        script = os.path.join(d, "nested.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(NESTED))
        out = os.path.join(d, "out")
        proc = T.run_ptprof(
            ["run", "-o", out, "--schedule", ",".join("%s=%d" % kv for kv in plan.items()), "--", T.PYTHON, script],
            env=T.clean_env(),
        )
        T.check_eq(proc.returncode, 0, "the script runs under ptprof\n" + T.describe(proc))
        T.check("steps: 30 ended" in proc.stderr, "one step per outermost step\n" + T.describe(proc))
        T.check_eq(recorded_steps(out), torch_recorded(30, plan), "the steps recorded")


def test_on_demand_never_triggered_registers_nothing():
    with T.tempdir() as d:
        seen, proc, _ = run(d, "--on-demand")
        T.check_eq(seen, [0] * 10, "torch's global callbacks at each step\n" + T.describe(proc))
        T.check(", 0 events, 0 dropped" in proc.stderr, "nothing recorded\n" + T.describe(proc))


def test_dataloader_rule_from_python():
    """--step dataloader: the batches end the steps (11 __next__ calls, the
    last raising StopIteration), seen from Python with torch 2.x. Batch i is
    taken in step i and ends it, so the script's i-th look is in step i + 1."""
    with T.tempdir() as d:
        seen, proc, out = run(d, "--schedule", ",".join("%s=%d" % kv for kv in SCHEDULE.items()), step="dataloader")
        T.check("steps: 11 ended" in proc.stderr, "one step per batch and one for the end\n" + T.describe(proc))
        recorded = torch_recorded(11)
        T.check_eq(
            [i + 1 for i, s in enumerate(seen) if s],
            [s for s in recorded if s <= 10],
            "the steps in which torch has a global callback\n" + T.describe(proc),
        )
        T.check_eq(recorded_steps(out), recorded, "the steps recorded")


def test_manual_steps_register_nothing_outside_windows():
    """--step manual: only ptprof.step() ends a step, so no user scope needs
    watching and torch has no global callback in the wait steps, as with the
    optimizer's steps seen from Python; the recorded steps are the schedule's."""
    with T.tempdir() as d:
        seen, proc, out = run(
            d, "--schedule", ",".join("%s=%d" % kv for kv in SCHEDULE.items()), step="manual", manual_steps=True
        )
        recorded = torch_recorded(10)
        T.check_eq(
            [i for i, s in enumerate(seen) if s],
            recorded,
            "the steps in which torch has a global callback\n" + T.describe(proc),
        )
        T.check("steps: 10 ended" in proc.stderr, "each ptprof.step() ends a step\n" + T.describe(proc))
        T.check_eq(recorded_steps(out), recorded, "the steps recorded")


def test_a_named_scope_keeps_the_watcher():
    """--step NAME of a user scope: only the bridge sees it end, so its
    watcher stays registered outside windows."""
    with T.tempdir() as d:
        seen, proc, out = run(
            d, "--schedule", ",".join("%s=%d" % kv for kv in SCHEDULE.items()), step="Optimizer.zero_grad#SGD.zero_grad"
        )
        T.check_eq(seen, [1] * 10, "the watcher stays\n" + T.describe(proc))
        T.check("steps: 10 ended" in proc.stderr, "each zero_grad ends a step\n" + T.describe(proc))
        T.check_eq(recorded_steps(out), torch_recorded(10), "the steps recorded")


if __name__ == "__main__":
    T.main()
