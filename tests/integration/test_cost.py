"""Every run states its own cost: the run summary's cost line and the
report's ptprof_cost, from the per-event costs the agent measures at
start-up. Checks presence and arithmetic only, never a timing threshold."""

import json
import os
import re
import textwrap

import ptproftest as T

COST_LINE = re.compile(r"ptprof: this run's cost: about ([0-9.]+) (ms|us), ([0-9.]+)% of the recorded time \((.*)\)")


def write_script(dir_, name, body):
    path = os.path.join(dir_, name)
    with open(path, "w") as f:
        f.write(textwrap.dedent(body))
    return path


def run_program(dir_, name, program, ptprof_args=()):
    """`ptprof run [ptprof_args] -- python <program>`, which must succeed: (output dir, process)."""
    script = write_script(dir_, name, program)
    out = os.path.join(dir_, "out")
    proc = T.run_ptprof(["run", "-o", out] + list(ptprof_args) + ["--", T.PYTHON, script])
    T.check_eq(proc.returncode, 0, "exit status\n" + T.describe(proc))
    return out, proc


def check_arithmetic(cost, what):
    expected_ms = (cost["ops"] * cost["op_ns"] + cost["records"] * cost["record_ns"]) / 1e6
    T.check(
        abs(cost["added_ms"] - expected_ms) <= 0.002 + 0.001 * expected_ms,
        "%s: added_ms %r = ops x op_ns + records x record_ns (%r)" % (what, cost["added_ms"], expected_ms),
    )
    T.check(cost["recorded_ms"] > 0, "%s: a recorded time: %r" % (what, cost))
    if cost["recorded_ms"] > 0:
        T.check(
            abs(cost["share"] - cost["added_ms"] / cost["recorded_ms"]) <= 1e-4 + 0.01 * cost["share"],
            "%s: share = added / recorded: %r" % (what, cost),
        )


def test_torch_run_states_its_cost():
    with T.tempdir() as d:
        script = write_script(
            d,
            "loop.py",
            """
            import torch, ptprof
            model = torch.nn.Linear(16, 16)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            x = torch.randn(4, 16)
            for i in range(5):
                with ptprof.range("step_body"):
                    opt.zero_grad()
                    model(x).sum().backward()
                    ptprof.mark("before_step")
                    opt.step()
        """,
        )
        out = os.path.join(d, "out")
        proc = T.run_ptprof(["run", "-o", out, "--", T.PYTHON, script])
        T.check_eq(proc.returncode, 0, "exit status\n" + T.describe(proc))
        m = COST_LINE.search(proc.stderr)
        T.check(m is not None, "the summary states the run's cost\n" + T.describe(proc))
        cost = T.report_json(out)["ptprof_cost"]
        T.check(cost["ops"] > 0 and cost["op_ns"] > 0, "operators charged at a measured cost: %r" % cost)
        # 5 ranges (a push and a pop each) and 5 marks.
        T.check_eq(cost["records"], 15, "records charged")
        T.check(cost["record_ns"] > 0, "a measured record cost: %r" % cost)
        T.check_eq(cost["uncalibrated_events"], 0, "events without a measured cost")
        check_arithmetic(cost, "report")
        if m:
            T.check(
                "%d ops x " % cost["ops"] in m.group(4),
                "summary and report charge the same ops: %s vs %r" % (m.group(0), cost),
            )
            T.check("15 records x " in m.group(4), "summary charges the records: " + m.group(0))
            summary_ms = float(m.group(1)) / (1000.0 if m.group(2) == "us" else 1.0)
            T.check(
                abs(summary_ms - cost["added_ms"]) <= 0.051 + 0.01 * cost["added_ms"],
                "summary's %s %s and the report's %r ms agree" % (m.group(1), m.group(2), cost["added_ms"]),
            )


# Four steps of matrix products, torch imported in the first.
MM_PROGRAM = """
import torch, ptprof
a = torch.randn(4, 4)
for i in range(4):
    torch.mm(a, a)
    ptprof.step()
"""
# What the agent's cost calibration runs when torch is loaded
# (agent/torch/calibrate_ops.hpp, TinyTrainingStep), written in Python: a
# program that runs it has every name calibration_name() looks for.
CALIBRATION_IN_PYTHON = """
import torch
import torch.nn.functional as F
x, y = torch.full((8, 64), 0.5), torch.full((8, 64), 0.25)
w1, b1, w2, b2 = (torch.full(s, 0.01).requires_grad_(True) for s in ((64, 64), (8, 64), (64, 64), (8, 64)))
F.mse_loss(F.linear(torch.relu(F.linear(x, w1, b1)), w2, b2), y).backward()
with torch.no_grad():
    for p in (w1, b1, w2, b2):
        p.add_(p.grad, alpha=-0.01)
        p.grad = None
"""
CALIBRATION_OPS = (
    "aten::full",
    "aten::linear",
    "aten::addmm",
    "aten::relu",
    "aten::mse_loss",
    "aten::ones_like",
    "aten::add_",
)
BACKWARD_PREFIX = "autograd::engine::evaluate_function: "


def calibration_name(name):
    return name in CALIBRATION_OPS or name.startswith(BACKWARD_PREFIX) or name.endswith("Backward0")


def recorded_names(d, name, program):
    """The operator names `ptprof run` records of `program`, with no
    schedule: one window from the start, torch's import included."""
    script = write_script(d, name, program)
    out = os.path.join(d, name + ".out")
    proc = T.run_ptprof(["run", "-o", out, "--", T.PYTHON, script])
    T.check_eq(proc.returncode, 0, "%s: exit status\n%s" % (name, T.describe(proc)))
    report = T.report_json(out)
    return {r["name"] for r in report["rows"]}, report


def test_calibration_events_never_reach_the_trace():
    # The operator cost is measured when torch is loaded, here while the
    # run's one window records: none of the calibration's operators may be in
    # the trace, whose program only multiplies matrices.
    with T.tempdir() as d:
        names, report = recorded_names(d, "mm.py", MM_PROGRAM)
        T.check("aten::mm" in names, "the program's operators are recorded: %s" % sorted(names))
        T.check_eq(sorted(n for n in names if calibration_name(n)), [], "the calibration's operators in the trace")
        cost = report["ptprof_cost"]
        T.check(cost["op_ns"] > 0, "the operator cost was measured: %r" % cost)
        # The names looked for are the calibration's, on this torch: a program
        # that runs the calibration itself is recorded with each of them.
        control, _ = recorded_names(d, "calibration.py", CALIBRATION_IN_PYTHON)
        for op in CALIBRATION_OPS:
            T.check(op in control, "%s is recorded when the program runs the calibration: %s" % (op, sorted(control)))
        T.check(any(n.startswith(BACKWARD_PREFIX) for n in control), "backward's nodes: %s" % sorted(control))


def test_cost_measured_when_torch_loads_in_a_wait_step():
    # torch is imported, and the operator cost measured, in a wait step,
    # which is not written: the cost is still measured and charged.
    with T.tempdir() as d:
        out, _ = run_program(d, "mm.py", MM_PROGRAM, ["--schedule", "wait=1,warmup=0,active=2,repeat=1"])
        report = T.report_json(out)
        T.check("aten::mm" in {r["name"] for r in report["rows"]}, "the program's operators are recorded")
        cost = report["ptprof_cost"]
        T.check(cost["op_ns"] > 0, "the operator cost was measured in a wait step: %r" % cost)
        check_arithmetic(cost, "wait-step import")


# The threads of the process right after `import torch` (names from /proc),
# and torch's intra-op thread count.
THREADS_AFTER_IMPORT = """
import os, json, torch
names = []
for tid in sorted(os.listdir("/proc/self/task")):
    with open("/proc/self/task/%s/comm" % tid) as f:
        names.append(f.read().strip())
print("THREADS " + json.dumps({"threads": len(names), "intra_op": torch.get_num_threads()}))
torch.mm(torch.ones(2, 2), torch.ones(2, 2))  # an operator in the trace, which carries the cost
"""


def test_calibration_runs_on_one_thread():
    # The operator cost is measured on the thread that loads torch alone: an
    # intra-op pool (MKL's gemm with OpenMP) would charge that thread with its
    # spin at each parallel region's end, which on a loaded machine drowned
    # the callback's cost (the median came out <= 0: no operator cost). So
    # the calibration starts no pool thread, and leaves torch's intra-op
    # thread count as the program would have found it.
    with T.tempdir() as d:
        script = write_script(d, "threads.py", THREADS_AFTER_IMPORT)
        env = T.clean_env(OMP_NUM_THREADS=2)  # a pool of two even on a one-core machine

        def threads(proc, what):
            T.check_eq(proc.returncode, 0, "%s: exit status\n%s" % (what, T.describe(proc)))
            m = re.search(r"^THREADS (.*)$", proc.stdout, re.M)
            T.check(m is not None, "%s: the program printed its threads\n%s" % (what, T.describe(proc)))
            return json.loads(m.group(1)) if m else {}

        plain = threads(T.run_python([script], env=env), "without ptprof")
        out = os.path.join(d, "out")
        profiled = threads(T.run_ptprof(["run", "-o", out, "--", T.PYTHON, script], env=env), "under ptprof")
        T.check_eq(profiled.get("intra_op"), plain.get("intra_op"), "torch's intra-op thread count")
        T.check_eq(profiled.get("threads"), plain.get("threads"), "threads after import torch (none started by ptprof)")
        T.check(T.report_json(out)["ptprof_cost"]["op_ns"] > 0, "the operator cost was measured")


def test_busy_machine_still_measures_an_operator_cost():
    # On a machine too busy to separate the callback's cost from a training
    # step's noise (it happened once in CI: "this run's cost: not measured"),
    # the agent times an empty operator instead, says so, and still charges
    # every operator. PTPROF_TEST_CALIBRATION_BUSY=1 stands in for the busy
    # machine: the training step's timing is skipped as if it had failed.
    with T.tempdir() as d:
        script = write_script(d, "mm.py", MM_PROGRAM)
        out = os.path.join(d, "out")
        proc = T.run_ptprof(
            ["run", "-o", out, "--", T.PYTHON, script], env=T.clean_env(PTPROF_TEST_CALIBRATION_BUSY="1")
        )
        T.check_eq(proc.returncode, 0, "exit status\n" + T.describe(proc))
        T.check(
            "too busy at start-up to time a real operator's cost" in proc.stderr,
            "the run says its operator cost is a lower bound\n" + T.describe(proc),
        )
        T.check(COST_LINE.search(proc.stderr) is not None, "the summary states the cost\n" + T.describe(proc))
        cost = T.report_json(out)["ptprof_cost"]
        T.check(cost["ops"] > 0 and cost["op_ns"] > 0, "operators charged at a measured cost: %r" % cost)
        T.check_eq(cost["uncalibrated_events"], 0, "events without a measured cost")
        check_arithmetic(cost, "busy machine")


def test_run_without_torch_charges_records_only():
    with T.tempdir() as d:
        script = write_script(
            d,
            "ranges.py",
            """
            import ptprof
            for i in range(20):
                with ptprof.range("r"):
                    pass
        """,
        )
        out = os.path.join(d, "out")
        proc = T.run_ptprof(["run", "-o", out, "--", T.PYTHON, script])
        T.check_eq(proc.returncode, 0, "exit status\n" + T.describe(proc))
        T.check(COST_LINE.search(proc.stderr) is not None, "the summary states the cost\n" + T.describe(proc))
        cost = T.report_json(out)["ptprof_cost"]
        T.check_eq(cost["ops"], 0, "no operators")
        T.check_eq(cost["records"], 40, "20 ranges: a push and a pop each")
        check_arithmetic(cost, "ranges")


# A training loop whose steps are alike, for the cost measured on its own steps.
TRAINING_STEPS = """
import torch
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(8, 32), torch.randn(8, 32)
for i in range(40):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
"""
OWN_STEPS_LINE = re.compile(
    r"ptprof: measured on its own steps \(process [0-9]+, the stepping thread's CPU time: "
    r"([0-9]+) steady recorded steps, each against the steady unrecorded step before it, "
    r"of ([0-9]+)\): (.*)"
)


def test_cost_measured_on_own_steps():
    # A schedule leaves steps unrecorded: the summary compares the program's
    # steady recorded steps with its unrecorded ones. The counts are checked,
    # not the times (a busy machine may hide the difference: the line then
    # says so).
    with T.tempdir() as d:
        out, proc = run_program(d, "train.py", TRAINING_STEPS, ["--schedule", "wait=2,warmup=0,active=3,repeat=0"])
        m = OWN_STEPS_LINE.search(proc.stderr)
        T.check(m is not None, "the summary states the cost measured on the program's steps\n" + T.describe(proc))
        if not m:
            return
        # 40 steps, windows of steps 2-4, 7-9, ...: the 2nd and 3rd of each of
        # 8 windows are steady, and the 2nd wait step of each cycle but the
        # first (steps 0 and 1 are never steady), so the first window's have
        # no unrecorded step before them.
        T.check_eq((int(m.group(1)), int(m.group(2))), (14, 7), "steady steps (recorded in pairs, unrecorded)")
        cost = T.report_json(out)["ptprof_cost"]
        per_step = re.search(r"([0-9]+) ops per step", m.group(3))
        T.check(per_step is not None, "operators per recorded step: " + m.group(0))
        # Every recorded step runs the same operators: 24 recorded steps.
        if per_step:
            T.check_eq(int(per_step.group(1)) * 24, cost["ops"], "ops per step x recorded steps = ops charged")
        T.check("start-up estimate" in m.group(3) or "no slower" in m.group(3), m.group(0))


def test_no_cost_measured_on_own_steps_without_unrecorded_steps():
    with T.tempdir() as d:
        _, proc = run_program(d, "train.py", TRAINING_STEPS)
        T.check(COST_LINE.search(proc.stderr) is not None, "the start-up estimate\n" + T.describe(proc))
        T.check("measured on its own steps" not in proc.stderr, "no steps were left unrecorded\n" + T.describe(proc))


if __name__ == "__main__":
    T.main()
