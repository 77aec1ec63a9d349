"""Compile time as its own phase (issue #25 item 2; docs/report.md,
"Compile"): a torch.compile'd MLP trained for 6 steps on the CPU, whose
batch grows from 8 to 16 rows in step 3 (Dynamo recompiles the model for the
new size), with a compiled loss scaling that has a graph break
(torch._dynamo.graph_break(), compiled in step 0 only: the loss's shape
never changes). One cold compile, in-process (TORCHINDUCTOR_COMPILE_THREADS=1,
a fresh inductor cache), recorded without a schedule.

- The compile phase exists and is structured: in every step, the phase's
  compile time (phases) equals the compile section's, which is the sum of its
  kinds; the total is the sum over the steps plus the time outside them.
- Acceptance: the compile phase's total is within 10% of the compiling
  steps' excess over a warm step (the median of the steps that did not
  compile, from the same run), and step 0's compile time within 10% of step
  0's excess.
- Exactly one recompile, in step 3, with torch's reason naming the changed
  size (expected 8, actual 16); one graph break, in step 0, with torch's
  reason; none in the other steps.
- The bootstrap's notes make no rows of the operator table; the text
  report and the page have the compile section; `ptprof run`'s summary has
  a line with the compile time, the recompiles and the graph breaks.

torch's compile-time scopes are opened only while a profiler state sits in
the thread's PROFILER_STATE slot (_RecordFunctionFast checks it in C++):
until the torch bridge installs its state in every window (#25 item 1), the
run profiles memory, whose reporter is such a state. torch 2.x only
(REQUIRES)."""

import os
import re
import statistics
import textwrap

import ptproftest as T

REQUIRES = ("torch2",)

SCRIPT = """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
compiled = torch.compile(model)

@torch.compile(backend="eager")
def scaled(loss):
    loss = loss * 0.5
    torch._dynamo.graph_break()
    return loss * 2

opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(6):
    n = 16 if i == 3 else 8
    x, y = torch.randn(n, 16), torch.randn(n, 4)
    loss = scaled(((compiled(x) - y) ** 2).mean())
    opt.zero_grad()
    loss.backward()
    opt.step()
"""

KINDS = ("dynamo_us", "aot_autograd_us", "inductor_us", "autotuning_us", "cache_us", "other_us")


def close(a, b, slack=0.01):
    """Equal up to the JSON's rounding (3 decimals of us each)."""
    return abs(a - b) <= slack


def record(d, *flags):
    script = os.path.join(d, "compiled_mlp.py")
    with open(script, "w") as f:
        f.write(textwrap.dedent(SCRIPT))
    env = T.clean_env(
        TORCHINDUCTOR_CACHE_DIR=os.path.join(d, "inductor-cache"),
        TORCHINDUCTOR_COMPILE_THREADS=1,
        PTPROF_PROFILE_MEMORY=1,
    )
    out = os.path.join(d, "out")
    proc = T.run_ptprof(
        ["run", "-o", out] + list(flags) + ["--", T.PYTHON, script], env=env, timeout=1200
    )  # a cold compile
    T.check_eq(proc.returncode, 0, "ptprof run\n" + T.describe(proc))
    return out, proc


def test_compile_phase_of_a_compiled_mlp():
    import torch

    if not hasattr(torch, "compile"):
        T.skip("torch %s has no torch.compile" % torch.__version__)
    with T.tempdir() as d:
        out, run = record(d)
        report = T.report_json(out)
        T.check("compile" in report, "the report has a compile section: %s" % sorted(report))
        comp = report["compile"]
        phases = {s["step"]: s for s in report["phases"]["steps"]}
        steps = {s["step"]: s for s in comp["steps"]}
        walls = {s["step"]: s["wall_us"] for s in report["steps"]}
        T.check_eq(sorted(phases), list(range(6)), "six steps with phases")
        T.check_eq(sorted(steps), list(range(6)), "six steps in the compile section")

        # Structure: the phase is the section's time, the kinds sum to it.
        T.check(close(comp["total_us"], sum(comp[k] for k in KINDS)), "the kinds sum to the total: %r" % comp)
        T.check(
            close(comp["total_us"], sum(s["compile_us"] for s in comp["steps"]) + comp["outside_steps_us"], 0.05),
            "the total is the steps' plus the outside's: %r" % comp,
        )
        for n, s in steps.items():
            T.check(close(s["compile_us"], phases[n]["compile_us"]), "step %d: phase and section agree" % n)
            T.check(close(s["compile_us"], sum(s[k] for k in KINDS)), "step %d: kinds sum to the phase: %r" % (n, s))
        T.check(steps[0]["compile_us"] > 0 and steps[3]["compile_us"] > 0, "steps 0 and 3 compile: %r" % steps)
        T.check(steps[0]["dynamo_us"] > 0 and steps[0]["inductor_us"] > 0, "Dynamo and Inductor time: %r" % steps[0])
        for n in (1, 2, 4, 5):
            T.check_eq(steps[n]["compile_us"], 0.0, "step %d compiles nothing" % n)
        T.check(comp["cache_misses"] > 0, "a fresh cache misses: %r" % comp)

        # Acceptance: within 10% of the compiling steps' excess over a warm step.
        warm = statistics.median(walls[n] for n in (1, 2, 4, 5))
        excess0 = walls[0] - warm
        excess = excess0 + walls[3] - warm
        T.check(
            abs(steps[0]["compile_us"] - excess0) <= 0.1 * excess0,
            "step 0's compile time %.0f us within 10%% of its excess over a warm step %.0f us (warm %.0f us)"
            % (steps[0]["compile_us"], excess0, warm),
        )
        T.check(
            abs(comp["total_us"] - excess) <= 0.1 * excess,
            "the compile phase's total %.0f us within 10%% of the compiling steps' excess %.0f us"
            % (comp["total_us"], excess),
        )

        # Recompiles and graph breaks, per step, with torch's reason.
        T.check_eq(comp["recompiles"], 1, "one recompile: %r" % comp["events"])
        T.check_eq([s["recompiles"] for _, s in sorted(steps.items())], [0, 0, 0, 1, 0, 0], "the recompile's step")
        recompile = [e for e in comp["events"] if e["kind"] == "recompile"]
        T.check(len(recompile) == 1 and recompile[0]["step"] == 3, "the recompile in step 3: %r" % recompile)
        reason = recompile[0]["reason"] if recompile else ""
        T.check(
            "size mismatch" in reason and "expected 8, actual 16" in reason,
            "the reason names the changed size: %r" % reason,
        )
        T.check_eq(comp["graph_breaks"], 1, "one graph break: %r" % comp["events"])
        T.check_eq([s["graph_breaks"] for _, s in sorted(steps.items())], [1, 0, 0, 0, 0, 0], "the graph break's step")
        breaks = [e for e in comp["events"] if e["kind"] == "graph_break"]
        T.check(breaks and "graph_break()" in breaks[0]["reason"], "torch's reason for the graph break: %r" % breaks)

        # The run's summary says it too, with the report's total.
        line = re.search(r"ptprof: torch\.compile: ([0-9.]+) (s|ms) compiling, 1 recompile, 1 graph break ", run.stderr)
        T.check(line, "the run's summary line on torch.compile:\n" + run.stderr[-3000:])
        if line:
            said_us = float(line.group(1)) * (1e6 if line.group(2) == "s" else 1e3)
            T.check(
                abs(said_us - comp["total_us"]) <= 0.01 * comp["total_us"] + 10000,
                "the summary's compile time %s %s, the report's %.0f us"
                % (line.group(1), line.group(2), comp["total_us"]),
            )

        # The notes are no rows; the text report and the page show the section.
        T.check(
            not [r["name"] for r in report["rows"] if r["name"].startswith("torch.compile: ")],
            "no operator rows for the bootstrap's notes",
        )
        text = T.run_ptprof(["report", out])
        T.check_eq(text.returncode, 0, "ptprof report\n" + T.describe(text))
        T.check(
            "torch.compile (the compile phase" in text.stdout and "expected 8, actual 16" in text.stdout,
            "the text report's compile section:\n" + text.stdout[-3000:],
        )
        page = os.path.join(d, "report.html")
        html = T.run_ptprof(["report", out, "--html", page])
        T.check_eq(html.returncode, 0, "ptprof report --html\n" + T.describe(html))
        with open(page, encoding="utf-8") as f:
            content = f.read()
        T.check('id="compile"' in content and "expected 8, actual 16" in content, "the page's compile section")


def test_only_the_windows_compiles():
    """A schedule that records step 3 only: Dynamo was imported and compiled
    step 0 long before the window opened, so the bootstrap registers its
    compile callbacks when the window starts; the recompile of step 3 is
    counted with its reason, and nothing of step 0's compile (its time, its
    graph break, its cache misses) is there."""
    import torch

    if not hasattr(torch, "compile"):
        T.skip("torch %s has no torch.compile" % torch.__version__)
    with T.tempdir() as d:
        out, _ = record(d, "--schedule", "wait=2,warmup=1,active=1,repeat=1")
        report = T.report_json(out)
        T.check_eq([s["step"] for s in report["steps"]], [3], "step 3 recorded")
        comp = report.get("compile", {})
        T.check_eq((comp.get("recompiles"), comp.get("graph_breaks")), (1, 0), "step 3's recompile only: %r" % comp)
        steps = comp.get("steps", [])
        T.check(
            len(steps) == 1 and steps[0]["step"] == 3 and steps[0]["recompiles"] == 1 and steps[0]["compile_us"] > 0,
            "step 3 compiles: %r" % steps,
        )
        T.check(
            steps and close(comp["total_us"], steps[0]["compile_us"] + comp["outside_steps_us"]),
            "all the compile time recorded is step 3's: %r" % comp,
        )
        reasons = [e["reason"] for e in comp.get("events", [])]
        T.check(len(reasons) == 1 and "expected 8, actual 16" in reasons[0], "the reason: %r" % reasons)


if __name__ == "__main__":
    T.main()
