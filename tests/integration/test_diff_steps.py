"""`ptprof diff` of two runs of the same script that recorded different
numbers of steps compares per-step averages (and says so on its first line),
so that no operator shows as changed: every operator's calls per step are
equal on both sides (counts, which cannot drift; times are not compared).
The schedules differ, and so does what was recorded in the second pair: the
diff warns, on stdout's first lines and on stderr."""

import json
import os

import ptproftest as pt

SCRIPT = os.path.join(pt.EXAMPLES_DIR, "train_mlp.py")


def record(d, name, active, *extra):
    """Steps 3 .. 2+active of a run of train_mlp.py (one wait step, one
    warmup step before them): only whole training steps in the window."""
    out = os.path.join(d, name)
    proc = pt.run_ptprof(
        ["run", "--schedule", "wait=1,warmup=1,active=%d" % active, "-o", out]
        + list(extra)
        + ["--", pt.PYTHON, SCRIPT],
        env=pt.clean_env(STEPS=str(active + 2)),
    )
    pt.check_eq(proc.returncode, 0, "ptprof run (active=%d): %s" % (active, pt.describe(proc)))
    return out


def diff(a, b, *extra):
    proc = pt.run_ptprof(["diff", a, b, "--row-limit", "0"] + list(extra))
    pt.check_eq(proc.returncode, 0, "ptprof diff: %s" % pt.describe(proc))
    return proc


def test_three_and_five_steps_compare_per_step():
    with pt.tempdir() as d:
        three, five = record(d, "three", 3), record(d, "five", 5)
        table = diff(three, five)
        doc = json.loads(diff(three, five, "--format", "json").stdout)
    first = table.stdout.splitlines()[0] if table.stdout else ""
    pt.check(
        first.startswith("Per-step averages: A recorded 3 steps, B 5"),
        "the first line says the values are per-step averages: %r" % first,
    )
    pt.check(
        "schedules differ" in table.stdout and "schedules differ" in table.stderr,
        "the different schedules are warned about on stdout and stderr:\n%s\n%s" % (table.stdout, table.stderr),
    )
    pt.check_eq((doc["steps"], doc["per_step"]), ({"a": 3, "b": 5}, True), "the JSON's steps")
    rows = doc["rows"]
    pt.check(len(rows) > 10 and any(r["name"] == "aten::addmm" for r in rows), "operators compared: %r" % rows[:3])
    changed = [(r["name"], r["calls_a"], r["calls_b"]) for r in rows if r["calls_a"] != r["calls_b"]]
    pt.check(not changed, "no operator's calls per step changed: %r" % changed)
    step = [r for r in rows if r["name"] == "ProfilerStep*"]
    pt.check(step and step[0]["calls_a"] == step[0]["calls_b"] == 1, "one ProfilerStep* per step: %r" % step)


def test_equal_steps_compare_totals_and_warn_of_options():
    with pt.tempdir() as d:
        plain, shapes = record(d, "plain", 2), record(d, "shapes", 2, "--record-shapes")
        table = diff(plain, shapes)
        doc = json.loads(diff(plain, shapes, "--format", "json").stdout)
    pt.check(not table.stdout.startswith("Per-step"), "equal step counts: totals, as before:\n" + table.stdout)
    pt.check_eq(doc["per_step"], False, "per_step with 2 steps each side")
    pt.check(
        any("input shapes" in w and w.startswith("only B") for w in doc["warnings"]),
        "a warning that only B recorded input shapes: %r" % doc["warnings"],
    )
    pt.check(
        not any("schedules" in w for w in doc["warnings"]), "same schedule: no warning about it: %r" % doc["warnings"]
    )


if __name__ == "__main__":
    pt.main()
