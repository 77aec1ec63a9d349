"""On demand: `ptprof run --on-demand` records nothing until `ptprof trigger`
asks; a trigger for 3 steps, made while the job waits in step 20 (it pauses
for a file, so nothing depends on timing), gives one window file holding
exactly the 3 following steps."""

import os
import subprocess
import time

import ptproftest as T

JOB = os.path.join(T.HERE, "scripts", "on_demand_job.py")
PAUSE_AT = 20


def wait_for(path, proc, timeout=300):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None or time.time() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_trigger_three_steps():
    with T.tempdir() as d:
        out = os.path.join(d, "out")
        run = subprocess.Popen([T.PTPROF_BIN, "run", "--on-demand", "-o", out, "--", T.PYTHON, JOB, d],
                               env=T.clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            if not T.check(wait_for(os.path.join(d, "paused"), run), "the job reaches step %d" % PAUSE_AT):
                return
            pid = int(open(os.path.join(d, "paused")).read())
            T.check(not os.path.exists(out) or not [f for f in os.listdir(out) if f.endswith(".bin")],
                    "nothing recorded before the trigger")

            sessions = T.run_ptprof(["sessions"])
            T.check_eq(sessions.returncode, 0, "ptprof sessions\n" + T.describe(sessions))
            lines = [l for l in sessions.stdout.splitlines() if str(pid) in l.split()[3].split(",")] \
                if sessions.returncode == 0 and len(sessions.stdout.splitlines()) > 1 else []
            T.check(len(lines) == 1 and " yes " in lines[0],
                    "ptprof sessions lists the on-demand session with the job's pid:\n" + sessions.stdout)

            trigger = subprocess.Popen([T.PTPROF_BIN, "trigger", "--pid", str(pid), "--steps", "3"],
                                       env=T.clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            first = trigger.stderr.readline()  # the request is in the session
            T.check("requested" in first, "trigger says it asked: %r" % first)
            open(os.path.join(d, "go"), "w").close()
            t_out, t_err = trigger.communicate(timeout=300)
            T.check_eq(trigger.returncode, 0, "ptprof trigger: %s%s" % (first, t_err))
            paths = t_out.split()
            T.check_eq(len(paths), 1, "trigger prints one window file: %r" % t_out)
        finally:
            open(os.path.join(d, "go"), "w").close()
            r_out, r_err = run.communicate(timeout=300)
        T.check_eq(run.returncode, 0, "ptprof run --on-demand\n" + r_err)
        files = sorted(f for f in os.listdir(out) if f.endswith(".bin"))
        T.check_eq(len(files), 1, "one window file in all: %s" % files)
        if len(paths) == 1 and T.check(os.path.isfile(paths[0]), "%s exists" % paths[0]):
            T.check_eq(os.path.basename(paths[0]), files[0] if files else None, "the file trigger printed")
            rep = T.report_json(paths[0])
            T.check_eq([s["step"] for s in rep["steps"]], [PAUSE_AT + 1, PAUSE_AT + 2, PAUSE_AT + 3],
                       "exactly the 3 steps after the trigger")
            rows = {r["name"]: r["calls"] for r in rep["rows"]}
            T.check_eq(rows.get("ProfilerStep*"), 3, "3 ProfilerStep spans")
            T.check_eq(rows.get("Optimizer.step#SGD.step"), 3, "one optimizer step per recorded step")


def test_trigger_refuses_bad_requests():
    proc = T.run_ptprof(["trigger", "--steps", "3", "--duration", "1s"])
    T.check_eq(proc.returncode, 2, "both --steps and --duration\n" + T.describe(proc))
    proc = T.run_ptprof(["trigger", "--pid", "1", "--steps", "3"])
    T.check_eq(proc.returncode, 2, "a pid in no session of ours\n" + T.describe(proc))
    T.check("no running session" in proc.stderr, "says why: " + proc.stderr)
    proc = T.run_ptprof(["trigger", "--session", "ptprof-0000", "--duration", "x"])
    T.check_eq(proc.returncode, 2, "a malformed duration\n" + T.describe(proc))
    proc = T.run_ptprof(["run", "--on-demand", "--schedule", "active=1", "--", "true"])
    T.check_eq(proc.returncode, 2, "--on-demand with a schedule\n" + T.describe(proc))


if __name__ == "__main__":
    T.main()
