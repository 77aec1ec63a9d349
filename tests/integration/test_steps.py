"""Steps as users mean them (issue #23): the rules that end a step (the
optimizer, the DataLoader's batches, any record_function or operator name,
auto), the time before the first step and after the last kept apart from
the steps, the summary's reason when few or no steps were recorded, a step
cut short by a kill shown with the part that ran, and child processes that
never invent steps.

References that cannot drift: the script's own loop counts (batches,
iterations, optimizer steps) and torch.profiler.schedule's recorded steps;
never timing."""

import os
import signal
import subprocess
import textwrap
import time

import ptproftest as T
from torch.profiler import ProfilerAction, schedule

COST_S = 115

SCHEDULE = dict(wait=1, warmup=1, active=3)

MODEL = """
import os, sys, torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
"""

# 5 batches: the DataLoader's __next__ ends 6 times (the last raises
# StopIteration), so 6 steps end under --step dataloader.
INFER_DATALOADER = (
    MODEL
    + """
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(40, 16)), batch_size=8)
with torch.no_grad():
    for (x,) in loader:
        model(x)
"""
)

# 4 optimizer steps; in step 2 (0-based) the script says so in READY and
# runs ops until Ctrl-C (SIGINT) ends it, which it lets end the script
# (Python's default) or catches (CATCH=1) to exit cleanly.
TRAIN_UNTIL_INTERRUPTED = (
    MODEL
    + """
import time
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 16), torch.randn(8, 4)
try:
    for i in range(4):
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        if i == 2:
            open(os.environ["READY"], "w").close()
            while True:
                model(x)
                time.sleep(0.01)
        opt.step()
except KeyboardInterrupt:
    if os.environ.get("CATCH") != "1":
        raise
    print("interrupted")
"""
)

# No DataLoader, no optimizer: a model called in a loop, 6 times.
INFER_LOOP = (
    MODEL
    + """
x = torch.randn(8, 16)
with torch.no_grad():
    for i in range(6):
        model(x)
"""
)

TRAIN = (
    MODEL
    + """
steps = int(os.environ.get("STEPS", "4"))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 16), torch.randn(8, 4)
for i in range(steps):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    if os.environ.get("KILL_AT") == str(i):
        import signal
        os.kill(os.getpid(), signal.SIGKILL)
    opt.step()
sys.exit(int(os.environ.get("EXIT", "0")))
"""
)

# A training loop whose loss is a module too: two modules are called outside
# any other each iteration, and only the model's forward ends a step.
TRAIN_LOSS_MODULE = (
    MODEL
    + """
opt = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.MSELoss()
x, y = torch.randn(8, 16), torch.randn(8, 4)
for i in range(4):
    loss = criterion(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
)

# 2 DataLoader workers feeding a training loop of 4 batches.
TRAIN_WORKERS = (
    MODEL
    + """
from torch.utils.data import DataLoader, TensorDataset
if __name__ == "__main__":
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ds = TensorDataset(torch.randn(32, 16), torch.randn(32, 4))
    for x, y in DataLoader(ds, batch_size=8, num_workers=2):
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""
)

# The script runs torch.profiler itself, with prof.step() after each of its
# 3 optimizer steps.
TRAIN_OWN_PROFILER = (
    MODEL
    + """
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 16), torch.randn(8, 4)
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                            schedule=torch.profiler.schedule(wait=0, warmup=0, active=3, repeat=1)) as prof:
    for i in range(3):
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        prof.step()
"""
)


def write(d, name, text):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))
    return path


def spec(combo):
    return ",".join("%s=%d" % kv for kv in combo.items())


def torch_recorded(combo, steps):
    """The steps torch.profiler.schedule records out of `steps`."""
    fn = schedule(**combo)
    return [s for s in range(steps) if fn(s) in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)]


def run(d, script, *flags, env=None, expect=0):
    out = os.path.join(d, "out")
    proc = T.run_ptprof(["run", "-o", out] + list(flags) + ["--", T.PYTHON, script], env=env)
    if expect is not None:
        T.check_eq(proc.returncode, expect, "ptprof run's exit status is the target's\n" + T.describe(proc))
    return proc, out


def report(out):
    if not os.path.isdir(out) or not any(f.endswith(".bin") for f in os.listdir(out)):
        return {"steps": [], "outside_steps": [], "rows": []}
    return T.report_json(out)


def steps_of(rep):
    return [s["step"] for s in rep["steps"]]


def test_inference_over_a_dataloader():
    with T.tempdir() as d:
        script = write(d, "infer_dl.py", INFER_DATALOADER)
        # The default rule: no optimizer steps, so nothing is recorded and
        # the summary says why and suggests the DataLoader.
        proc, out = run(d, script, "--schedule", spec(SCHEDULE))
        T.check("steps: 0 ended" in proc.stderr, "the summary says no step ended\n" + T.describe(proc))
        T.check(
            "--step dataloader: this program took 6 batches" in proc.stderr,
            "the summary suggests the DataLoader rule\n" + T.describe(proc),
        )
        T.check_eq(steps_of(report(out)), [], "steps recorded by the optimizer rule")
        for rule, says in (("dataloader", "rule: dataloader"), ("auto", "auto, which used the DataLoader")):
            with T.tempdir() as d2:
                proc, out = run(d2, script, "--schedule", spec(SCHEDULE), "--step", rule)
                T.check_eq(steps_of(report(out)), torch_recorded(SCHEDULE, 6), "steps recorded with --step " + rule)
                T.check(
                    "steps: 6 ended" in proc.stderr and says in proc.stderr,
                    "the summary names the rule used\n" + T.describe(proc),
                )


def test_inference_loop_without_a_dataloader():
    with T.tempdir() as d:
        script = write(d, "infer_loop.py", INFER_LOOP)
        proc, out = run(d, script, "--schedule", spec(SCHEDULE))
        T.check("--step NAME" in proc.stderr, "the summary suggests naming what ends a step\n" + T.describe(proc))
        T.check(
            "--step forward (or --step auto)" in proc.stderr,
            "the summary suggests the model's forward\n" + T.describe(proc),
        )
        # The model's outermost forward ends a step (the Python bootstrap's
        # module hooks), under --step forward and under auto.
        for rule, says in (("forward", "rule: forward"), ("auto", "auto, which used the model's forward")):
            with T.tempdir() as d2:
                proc, out = run(d2, script, "--schedule", spec(SCHEDULE), "--step", rule)
                rep = report(out)
                T.check_eq(steps_of(rep), torch_recorded(SCHEDULE, 6), "steps recorded with --step " + rule)
                calls = {r["name"]: r["calls"] for r in rep["rows"]}
                T.check_eq(
                    (calls.get("aten::relu"), calls.get("aten::linear")),
                    (3, 6),
                    "one forward (a relu, two linears) per recorded step with --step " + rule,
                )
                T.check(
                    "steps: 6 ended" in proc.stderr and says in proc.stderr,
                    "the summary counts the steps and names the rule used\n" + T.describe(proc),
                )
        # An operator's name ends a step: the loop runs aten::relu once per iteration.
        with T.tempdir() as d2:
            proc, out = run(d2, script, "--schedule", spec(SCHEDULE), "--step", "aten::relu")
            rep = report(out)
            T.check_eq(steps_of(rep), torch_recorded(SCHEDULE, 6), "steps recorded with --step aten::relu")
            relu = [r for r in rep["rows"] if r["name"] == "aten::relu"]
            T.check(relu and relu[0]["calls"] == 3, "one aten::relu per recorded step: %s" % relu)
            T.check("steps: 6 ended" in proc.stderr, "the summary counts the steps\n" + T.describe(proc))


def test_forward_rule_counts_the_model_not_the_loss():
    """The loss module is called outside any other module too: a step is the
    model's forward (the first module called outside any other) returning,
    once per iteration; under auto the optimizer takes over once it steps."""
    with T.tempdir() as d:
        script = write(d, "train_loss_module.py", TRAIN_LOSS_MODULE)
        proc, out = run(d, script, "--step", "forward")
        T.check("steps: 4 ended" in proc.stderr, "one step per iteration, not per module\n" + T.describe(proc))
        T.check_eq(len(steps_of(report(out))), 4, "steps in the report")
        with T.tempdir() as d2:
            proc, out = run(d2, script, "--step", "auto")
            T.check("auto, which used the optimizer" in proc.stderr, "auto: the optimizer wins\n" + T.describe(proc))


def test_setup_and_tail_apart():
    with T.tempdir() as d:
        proc, out = run(d, os.path.join(T.EXAMPLES_DIR, "train_mlp.py"), env=T.clean_env(STEPS=5))
        rep = report(out)
        T.check_eq(steps_of(rep), [0, 1, 2, 3, 4], "the step table holds the script's 5 steps")
        roles = [s.get("role") for s in rep["outside_steps"]]
        T.check_eq(roles, ["before step 1", "after the last step"], "the time outside the steps")
        T.check(
            rep["rows"] and not rep["rows"][0]["name"].startswith(("before step", "after the last")),
            "the first operator row is not the setup: %s" % rep["rows"][:1],
        )
        names = {r["name"]: r for r in rep["rows"]}
        T.check("before step 1" not in names and "after the last step" not in names, "no operator row for them")
        T.check_eq(names.get("ProfilerStep*", {}).get("calls"), 5, "ProfilerStep* calls")
        text = T.run_ptprof(["report", out]).stdout
        lines = text.splitlines()
        at = [i for i, line in enumerate(lines) if line.strip().startswith(("before step 1", "after the last step"))]
        T.check(
            len(at) == 2 and all(lines[i + 1].startswith("---") for i in at),
            "the text report shows both apart, each closed by a separator:\n" + text[-2000:],
        )


def test_short_job_says_why():
    with T.tempdir() as d:
        script = write(d, "train.py", TRAIN)
        proc, out = run(d, script, "--schedule", spec(SCHEDULE), env=T.clean_env(STEPS=1, EXIT=3), expect=3)
        T.check("steps: 1 ended" in proc.stderr, "how many steps ended\n" + T.describe(proc))
        T.check("the schedule records from step 2" in proc.stderr, "why nothing was recorded\n" + T.describe(proc))
        T.check(
            "a shorter schedule: --schedule wait=0,warmup=0,active=1" in proc.stderr, "what to try\n" + T.describe(proc)
        )


def test_step_name_that_never_occurs():
    with T.tempdir() as d:
        script = write(d, "train.py", TRAIN)
        proc, out = run(d, script, "--schedule", spec(SCHEDULE), "--step", "no_such_scope")
        T.check(
            "--step 'no_such_scope' (PTPROF_STEP) never occurred" in proc.stderr,
            "the name that never occurred is named\n" + T.describe(proc),
        )
        T.check(
            "--step optimizer: an optimizer stepped 4 times" in proc.stderr,
            "the rule that would have worked is suggested\n" + T.describe(proc),
        )


def test_killed_step_shows_its_partial_time():
    with T.tempdir() as d:
        script = write(d, "train.py", TRAIN)
        proc, out = run(d, script, env=T.clean_env(STEPS=4, KILL_AT=2), expect=None)
        rep = report(out)
        T.check_eq(steps_of(rep), [0, 1, 2], "the steps, the killed one last")
        last = rep["steps"][-1] if rep["steps"] else {}
        T.check(
            last.get("partial") is True and last.get("wall_us", 0) > 0,
            "the killed step shows the time that ran, marked partial: %s" % last,
        )
        T.check(all(not s.get("partial") for s in rep["steps"][:-1]), "only the last step is partial")
        T.check_eq([s.get("role") for s in rep["outside_steps"]], ["before step 1"], "no tail after a kill")
        text = T.run_ptprof(["report", out]).stdout
        T.check("2 (partial)" in text and "nan" not in text.lower(), "the text report: \n" + text[-1500:])


def test_interrupted_step_shows_its_partial_time():
    """Ctrl-C (SIGINT to ptprof, which passes it on) in step 2: the step that
    ran shows its partial time, as after a kill, whether the script lets the
    KeyboardInterrupt end it or catches it and exits cleanly."""
    for catch in ("0", "1"):
        with T.tempdir() as d:
            script = write(d, "train.py", TRAIN_UNTIL_INTERRUPTED)
            out = os.path.join(d, "out")
            ready = os.path.join(d, "ready")
            proc = subprocess.Popen(
                [T.PTPROF_BIN, "run", "-o", out, "--", T.PYTHON, script],
                env=T.clean_env(READY=ready, CATCH=catch),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            deadline = time.monotonic() + T.DEFAULT_TIMEOUT
            while not os.path.exists(ready) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            stdout, stderr = proc.communicate(timeout=T.DEFAULT_TIMEOUT)
            what = "CATCH=%s: exit %s\n%s" % (catch, proc.returncode, stderr[-3000:])
            rep = report(out)
            T.check_eq(steps_of(rep), [0, 1, 2], "the steps, the interrupted one last; " + what)
            last = rep["steps"][-1] if rep["steps"] else {}
            T.check(
                last.get("partial") is True and last.get("wall_us", 0) > 0,
                "the interrupted step shows the time that ran, marked partial: %s; %s" % (last, what),
            )
            T.check_eq(
                [s.get("role") for s in rep["outside_steps"]],
                ["before step 1"],
                "no 'after the last step' after an interrupt; " + what,
            )


def test_dataloader_workers_never_invent_steps():
    with T.tempdir() as d:
        script = write(d, "train_workers.py", TRAIN_WORKERS)
        proc, out = run(d, script)
        rep = report(out)
        pids = {s["pid"] for s in rep["steps"]}
        T.check_eq(steps_of(rep), [0, 1, 2, 3], "the steps are the main process's 4 optimizer steps")
        T.check_eq(len(pids), 1, "steps from one process only")
        T.check(all(s["pid"] in pids for s in rep["outside_steps"]), "no time outside steps for the workers either")


def test_own_torch_profiler_steps_do_not_merge():
    """torch 1.13 records torch.profiler's ProfilerStep#N record_functions as
    user scopes: they must not add to ptprof's ProfilerStep* (3 steps)."""
    with T.tempdir() as d:
        script = write(d, "own_profiler_steps.py", TRAIN_OWN_PROFILER)
        proc, out = run(d, script)
        rep = report(out)
        T.check_eq(steps_of(rep), [0, 1, 2], "ptprof's steps")
        names = {r["name"]: r for r in rep["rows"]}
        T.check_eq(names.get("ProfilerStep*", {}).get("calls"), 3, "ProfilerStep* calls: ptprof's steps only")
        T.check(not any(n.startswith("ProfilerStep#") for n in names), "no row for torch's own step annotations")


if __name__ == "__main__":
    T.main()
