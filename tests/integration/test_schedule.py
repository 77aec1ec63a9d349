"""The schedule: for many skip_first/wait/warmup/active/repeat combinations the
steps ptprof records are exactly those torch.profiler.schedule marks as
recorded."""

import os
import textwrap

import ptproftest as T
from torch.profiler import ProfilerAction, schedule

STEPS = 14

COMBOS = [
    dict(wait=1, warmup=1, active=3, repeat=2),
    dict(wait=1, warmup=1, active=3, repeat=0),
    dict(wait=0, warmup=0, active=1, repeat=0),
    dict(wait=0, warmup=0, active=2, repeat=1),
    dict(wait=2, warmup=0, active=1, repeat=3),
    dict(wait=0, warmup=2, active=2, repeat=2),
    dict(wait=1, warmup=1, active=1, repeat=0, skip_first=3),
    dict(wait=3, warmup=1, active=2, repeat=1, skip_first=2),
    dict(wait=0, warmup=0, active=5, repeat=0),
    dict(wait=4, warmup=4, active=4, repeat=1),
    dict(wait=1, warmup=0, active=1, repeat=0, skip_first=1),
    dict(wait=20, warmup=1, active=1, repeat=1),
]


def expected_steps(combo, steps):
    fn = schedule(**combo)
    return [s for s in range(steps) if fn(s) in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)]


def spec(combo):
    return ",".join("%s=%d" % kv for kv in combo.items())


def recorded_steps(out):
    if not os.path.isdir(out) or not any(f.endswith(".bin") for f in os.listdir(out)):
        return []
    rep = T.report_json(out)
    return sorted(s["step"] for s in rep["steps"] if s["step"] < STEPS)


def write_loop(d, name, body):
    """A script running `body` (indented for the loop) STEPS times."""
    script = os.path.join(d, name)
    with open(script, "w") as f:
        f.write("import ptprof\nfor i in range(%d):\n%s" % (STEPS, textwrap.indent(textwrap.dedent(body), "    ")))
    return script


def run_schedule(script, out, combo, *extra):
    proc = T.run_ptprof(["run", "-o", out, "--schedule", spec(combo)] + list(extra) + ["--", T.PYTHON, script])
    T.check_eq(proc.returncode, 0, spec(combo) + "\n" + T.describe(proc))
    return recorded_steps(out)


def test_manual_steps_match_torch_schedule():
    with T.tempdir() as d:
        script = write_loop(
            d,
            "steps.py",
            """
            with ptprof.range("work"):
                pass
            ptprof.step()
        """,
        )
        for i, combo in enumerate(COMBOS):
            T.check_eq(
                run_schedule(script, os.path.join(d, "out%d" % i), combo, "--step", "manual"),
                expected_steps(combo, STEPS),
                "recorded steps for " + spec(combo),
            )


def test_optimizer_steps_match_torch_schedule():
    # The default step rule on a real training loop (steps end at Optimizer.step).
    script = os.path.join(T.EXAMPLES_DIR, "train_mlp_10_steps.py")
    with T.tempdir() as d:
        for i, combo in enumerate(
            [dict(wait=1, warmup=1, active=3, repeat=2), dict(wait=0, warmup=1, active=2, repeat=0, skip_first=1)]
        ):
            out = os.path.join(d, "out%d" % i)
            env = T.clean_env(STEPS=STEPS)
            proc = T.run_ptprof(["run", "-o", out, "--schedule", spec(combo), "--", T.PYTHON, script], env=env)
            T.check_eq(proc.returncode, 0, spec(combo) + "\n" + T.describe(proc))
            T.check_eq(recorded_steps(out), expected_steps(combo, STEPS), "recorded steps for " + spec(combo))


def test_named_scope_ends_steps():
    # PTPROF_STEP=<name>: the end of that range ends a step.
    with T.tempdir() as d:
        script = write_loop(
            d,
            "named.py",
            """
            with ptprof.range("train_step"):
                with ptprof.range("inner"):
                    pass
        """,
        )
        combo = dict(wait=1, warmup=1, active=2, repeat=2)
        out = os.path.join(d, "out")
        T.check_eq(
            run_schedule(script, out, combo, "--step", "train_step"),
            expected_steps(combo, STEPS),
            "steps ended by the named range",
        )
        rows = {r["name"]: r["calls"] for r in T.report_json(out)["rows"]}
        T.check_eq(rows.get("train_step"), 4, "one train_step range per recorded step")


def test_flags_override_schedule_keys():
    with T.tempdir() as d:
        script = os.path.join(d, "steps.py")
        with open(script, "w") as f:
            f.write("import ptprof\nfor i in range(%d):\n    ptprof.mark('m')\n    ptprof.step()\n" % STEPS)
        out = os.path.join(d, "out")
        env = T.clean_env(PTPROF_SCHEDULE="wait=5,warmup=0,active=1,repeat=1")
        proc = T.run_ptprof(["run", "-o", out, "--step", "manual", "--wait", "2", "--", T.PYTHON, script], env=env)
        T.check_eq(proc.returncode, 0, T.describe(proc))
        T.check_eq(
            recorded_steps(out),
            expected_steps(dict(wait=2, warmup=0, active=1, repeat=1), STEPS),
            "--wait overrides the wait of PTPROF_SCHEDULE",
        )


if __name__ == "__main__":
    T.main()
