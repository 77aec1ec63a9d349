"""On demand: `ptprof run --on-demand` records nothing until `ptprof trigger`
asks. Nothing here depends on timing: the jobs pause at known steps (they
wait for a file) while the test triggers.

- A trigger for 3 steps, made while the job waits in step 20, gives one
  window file holding exactly the 3 following steps.
- Options belong to the window a trigger asks for: in a run started without
  them, a trigger with --record-shapes gives a window whose ops carry
  shapes and has no memory events; the next, with --profile-memory, one with
  memory events and no shapes.
- A trigger by time (--duration) ends at its time, not at a step boundary:
  in a job with no steps at all, the trigger returns with the window's file
  while the job still runs (a window that waited for a step boundary would
  never end)."""

import gzip
import json
import os
import subprocess
import time

import ptproftest as T

JOB = os.path.join(T.HERE, "scripts", "on_demand_job.py")
NO_STEPS_JOB = os.path.join(T.HERE, "scripts", "no_steps_job.py")
PAUSE_AT = 20
SECOND_PAUSE = 40


def wait_for(path, proc, timeout=300):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None or time.time() > deadline:
            return False
        time.sleep(0.05)
    return True


def start_run(out, *cmd):
    return subprocess.Popen(
        [T.PTPROF_BIN, "run", "--on-demand", "-o", out, "--"] + [str(c) for c in cmd],
        env=T.clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def trigger(args, release=None):
    """Runs `ptprof trigger ARGS`; once it says the request is in the session,
    creates the file `release` (lets the job go on). Returns (exit status,
    printed paths, stderr)."""
    proc = subprocess.Popen(
        [T.PTPROF_BIN, "trigger"] + [str(a) for a in args],
        env=T.clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    first = proc.stderr.readline()  # the request is in the session
    T.check("requested" in first, "trigger says it asked: %r" % first)
    if release:
        open(release, "w").close()
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        err += "\n(trigger still waiting after 120 s: killed)"
    return proc.returncode, out.split(), first + err


def chrome_events(path, d):
    chrome = os.path.join(d, os.path.basename(path) + ".json.gz")
    proc = T.run_ptprof(["export", path, "--chrome", chrome])
    if proc.returncode != 0:
        raise AssertionError("ptprof export failed: " + T.describe(proc))
    with gzip.open(chrome, "rt") as f:
        return json.load(f)["traceEvents"]


def check_columns_fit(listing):
    """Every value of `ptprof sessions` starts where its column's header does,
    however long the output path (this test's is longer than the fixed
    widths the listing once had)."""
    lines = listing.splitlines()
    header = lines[0] if lines else ""
    starts = [i for i, c in enumerate(header) if c != " " and (i == 0 or header[i - 1] == " ")]
    T.check_eq(len(starts), 6, "six column headers: %r" % header)
    for row in lines[1:]:
        T.check(
            all(len(row) > i and row[i] != " " and (i == 0 or row[i - 1] == " ") for i in starts),
            "each value of the row starts under its header:\n%s" % listing,
        )


def test_trigger_three_steps():
    with T.tempdir() as d:
        out = os.path.join(d, "out")
        run = start_run(out, T.PYTHON, JOB, d, PAUSE_AT)
        paths = []
        try:
            if not T.check(
                wait_for(os.path.join(d, "paused.%d" % PAUSE_AT), run), "the job reaches step %d" % PAUSE_AT
            ):
                return
            pid = int(open(os.path.join(d, "paused.%d" % PAUSE_AT)).read())
            T.check(
                not os.path.exists(out) or not [f for f in os.listdir(out) if f.endswith(".bin")],
                "nothing recorded before the trigger",
            )

            sessions = T.run_ptprof(["sessions"])
            T.check_eq(sessions.returncode, 0, "ptprof sessions\n" + T.describe(sessions))
            lines = (
                [line for line in sessions.stdout.splitlines() if str(pid) in line.split()[3].split(",")]
                if sessions.returncode == 0 and len(sessions.stdout.splitlines()) > 1
                else []
            )
            T.check(
                len(lines) == 1 and " yes " in lines[0],
                "ptprof sessions lists the on-demand session with the job's pid:\n" + sessions.stdout,
            )
            check_columns_fit(sessions.stdout)

            rc, paths, err = trigger(["--pid", pid, "--steps", 3], os.path.join(d, "go.%d" % PAUSE_AT))
            T.check_eq(rc, 0, "ptprof trigger: %s" % err)
            T.check_eq(len(paths), 1, "trigger prints one window file: %r" % paths)
        finally:
            open(os.path.join(d, "go.%d" % PAUSE_AT), "w").close()
            r_out, r_err = run.communicate(timeout=300)
        T.check_eq(run.returncode, 0, "ptprof run --on-demand\n" + r_err)
        files = sorted(f for f in os.listdir(out) if f.endswith(".bin"))
        T.check_eq(len(files), 1, "one window file in all: %s" % files)
        if len(paths) == 1 and T.check(os.path.isfile(paths[0]), "%s exists" % paths[0]):
            T.check_eq(os.path.basename(paths[0]), files[0] if files else None, "the file trigger printed")
            rep = T.report_json(paths[0])
            T.check_eq(
                [s["step"] for s in rep["steps"]],
                [PAUSE_AT + 1, PAUSE_AT + 2, PAUSE_AT + 3],
                "exactly the 3 steps after the trigger",
            )
            rows = {r["name"]: r["calls"] for r in rep["rows"]}
            T.check_eq(rows.get("ProfilerStep*"), 3, "3 ProfilerStep spans")
            T.check_eq(rows.get("Optimizer.step#SGD.step"), 3, "one optimizer step per recorded step")


def shaped_rows(path):
    """(name, input shapes) of the rows of `path` that carry shapes."""
    rep = T.report_json(path, "--group-by-input-shape")
    return {
        (r["name"], r["input_shapes"])
        for r in rep["rows"]
        if isinstance(r.get("input_shapes"), str) and r["input_shapes"] not in ("", "[]")
    }


def memory_events(events):
    return [e for e in events if e.get("name") == "[memory]"]


def test_trigger_options_are_the_windows():
    with T.tempdir() as d:
        out = os.path.join(d, "out")
        run = start_run(out, T.PYTHON, JOB, d, PAUSE_AT, SECOND_PAUSE)
        shapes_paths, memory_paths = [], []
        try:
            if not T.check(
                wait_for(os.path.join(d, "paused.%d" % PAUSE_AT), run), "the job reaches step %d" % PAUSE_AT
            ):
                return
            pid = int(open(os.path.join(d, "paused.%d" % PAUSE_AT)).read())
            rc, shapes_paths, err = trigger(
                ["--pid", pid, "--steps", 3, "--record-shapes"], os.path.join(d, "go.%d" % PAUSE_AT)
            )
            T.check_eq(rc, 0, "ptprof trigger --record-shapes: %s" % err)
            if not T.check(
                wait_for(os.path.join(d, "paused.%d" % SECOND_PAUSE), run), "the job reaches step %d" % SECOND_PAUSE
            ):
                return
            rc, memory_paths, err = trigger(
                ["--pid", pid, "--steps", 3, "--profile-memory"], os.path.join(d, "go.%d" % SECOND_PAUSE)
            )
            T.check_eq(rc, 0, "ptprof trigger --profile-memory: %s" % err)
        finally:
            for s in (PAUSE_AT, SECOND_PAUSE):
                open(os.path.join(d, "go.%d" % s), "w").close()
            r_out, r_err = run.communicate(timeout=300)
        T.check_eq(run.returncode, 0, "ptprof run --on-demand\n" + r_err)
        if T.check_eq(len(shapes_paths), 1, "the shapes trigger printed one file"):
            path = shapes_paths[0]
            rep = T.report_json(path)
            T.check_eq(
                [s["step"] for s in rep["steps"]],
                [PAUSE_AT + 1, PAUSE_AT + 2, PAUSE_AT + 3],
                "the shapes window holds the 3 steps after the trigger",
            )
            shaped = shaped_rows(path)
            T.check(
                ("aten::addmm", "[[16], [8, 16], [16, 16], [], []]") in shaped
                or any(n == "aten::addmm" and "[8, 16]" in s for n, s in shaped),
                "the window's ops carry shapes (aten::addmm with the [8, 16] input): %s" % sorted(shaped)[:20],
            )
            T.check_eq(len(memory_events(chrome_events(path, d))), 0, "no memory events in the shapes window")
        if T.check_eq(len(memory_paths), 1, "the memory trigger printed one file"):
            path = memory_paths[0]
            rep = T.report_json(path)
            T.check_eq(
                [s["step"] for s in rep["steps"]],
                [SECOND_PAUSE + 1, SECOND_PAUSE + 2, SECOND_PAUSE + 3],
                "the memory window holds the 3 steps after its trigger",
            )
            T.check_eq(sorted(shaped_rows(path)), [], "no shapes in the memory window (options are per window)")
            mem = memory_events(chrome_events(path, d))
            T.check(len(mem) > 0, "memory events in the memory window")
            T.check(
                any(e["args"].get("Bytes", 0) > 0 for e in mem) and any(e["args"].get("Bytes", 0) < 0 for e in mem),
                "allocations and frees among them: %s" % [e["args"].get("Bytes") for e in mem][:20],
            )


def test_duration_ends_without_a_step():
    with T.tempdir() as d:
        out = os.path.join(d, "out")
        run = start_run(out, T.PYTHON, NO_STEPS_JOB, d)
        paths = []
        try:
            if not T.check(wait_for(os.path.join(d, "ready"), run), "the job runs"):
                return
            pid = int(open(os.path.join(d, "ready")).read())
            rc, paths, err = trigger(["--pid", pid, "--duration", "300ms"])
            T.check_eq(rc, 0, "ptprof trigger --duration in a job with no steps: %s" % err)
            T.check(run.poll() is None, "the window was written while the job still ran (it stops only when told)")
        finally:
            open(os.path.join(d, "stop"), "w").close()
            r_out, r_err = run.communicate(timeout=300)
        T.check_eq(run.returncode, 0, "ptprof run --on-demand\n" + r_err)
        if T.check_eq(len(paths), 1, "trigger prints one window file: %r" % paths) and T.check(
            os.path.isfile(paths[0]), "%s exists" % paths[0]
        ):
            rep = T.report_json(paths[0])
            rows = {r["name"]: r["calls"] for r in rep["rows"]}
            T.check(rows.get("aten::mm", 0) > 0, "the window holds the job's ops: %s" % sorted(rows)[:20])
            T.check_eq(rep["steps"], [], "no steps: no ProfilerStep spans")


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
