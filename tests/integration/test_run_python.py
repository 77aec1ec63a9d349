"""`ptprof run` on Python targets: crash survival, exit status, the Python
module with nothing installed, window files and on-trace-ready."""

import os
import signal
import subprocess
import textwrap
import time

import ptproftest as T


def write_script(dir_, name, body):
    path = os.path.join(dir_, name)
    with open(path, "w") as f:
        f.write(textwrap.dedent(body))
    return path


def rows_by_name(report):
    return {r["name"]: r for r in report["rows"]}


def test_sigkill_keeps_what_was_recorded():
    with T.tempdir() as d:
        script = write_script(
            d,
            "crash.py",
            """
            import os, signal, ptprof
            for i in range(5):
                with ptprof.range("work"):
                    sum(range(1000))
            os.kill(os.getpid(), signal.SIGKILL)
        """,
        )
        out = os.path.join(d, "out")
        proc = T.run_ptprof(["run", "-o", out, "--", T.PYTHON, script])
        T.check_eq(proc.returncode, 128 + signal.SIGKILL, "exit status of a SIGKILLed target\n" + T.describe(proc))
        rows = rows_by_name(T.report_json(out))
        T.check("work" in rows, "report has the 'work' range: %s" % sorted(rows))
        if "work" in rows:
            T.check_eq(rows["work"]["calls"], 5, "calls of 'work'")


def test_os_exit_keeps_what_was_recorded():
    with T.tempdir() as d:
        script = write_script(
            d,
            "exit.py",
            """
            import os, ptprof
            for i in range(7):
                with ptprof.range("before_exit"):
                    pass
            os._exit(4)
        """,
        )
        out = os.path.join(d, "out")
        proc = T.run_ptprof(["run", "-o", out, "--", T.PYTHON, script])
        T.check_eq(proc.returncode, 4, "exit status passed through\n" + T.describe(proc))
        rows = rows_by_name(T.report_json(out))
        T.check_eq(rows.get("before_exit", {}).get("calls"), 7, "calls of 'before_exit'")


def test_python_module_works_with_nothing_installed():
    with T.tempdir() as d:
        script = write_script(
            d,
            "mod.py",
            """
            import ptprof
            print("enabled", ptprof.enabled())
            @ptprof.range("decorated")
            def f():
                ptprof.mark("inside")
            for _ in range(3):
                f()
        """,
        )
        out = os.path.join(d, "out")
        env = T.clean_env(PYTHONPATH=None)
        proc = T.run_ptprof(["run", "-o", out, "--", T.PYTHON, script], env=env)
        T.check_eq(proc.returncode, 0, "exit status\n" + T.describe(proc))
        T.check("enabled True" in proc.stdout, "ptprof.enabled() under ptprof run: " + proc.stdout)
        rows = rows_by_name(T.report_json(out))
        T.check_eq(rows.get("decorated", {}).get("calls"), 3, "calls of the decorated function")
        T.check_eq(rows.get("inside", {}).get("calls"), 3, "marks")


def test_schedule_from_environment_writes_one_file_per_window():
    # The acceptance case: 10 steps, wait=1,warmup=1,active=2,repeat=2 ->
    # 2 files, each with exactly 2 ProfilerStep spans (set by the variable alone).
    with T.tempdir() as d:
        out = os.path.join(d, "out")
        env = T.clean_env(PTPROF_SCHEDULE="wait=1,warmup=1,active=2,repeat=2")
        proc = T.run_ptprof(
            ["run", "-o", out, "--", T.PYTHON, os.path.join(T.EXAMPLES_DIR, "train_mlp_10_steps.py")], env=env
        )
        T.check_eq(proc.returncode, 0, "exit status\n" + T.describe(proc))
        files = sorted(f for f in os.listdir(out) if f.endswith(".bin"))
        T.check_eq(len(files), 2, "window files " + str(files))
        for i, f in enumerate(files):
            rep = T.report_json(os.path.join(out, f))
            T.check_eq([s["step"] for s in rep["steps"]], [2, 3] if i == 0 else [6, 7], "steps of " + f)
            rows = rows_by_name(rep)
            T.check_eq(rows.get("ProfilerStep*", {}).get("calls"), 2, "ProfilerStep spans in " + f)


def test_on_trace_ready_runs_per_complete_window():
    with T.tempdir() as d:
        out = os.path.join(d, "out")
        log = os.path.join(d, "ready.log")
        # The command checks the file is complete (info reads it) when it runs.
        cmd = "%s info {} >/dev/null && echo {} >> %s" % (T.PTPROF_BIN, log)
        proc = T.run_ptprof(
            [
                "run",
                "-o",
                out,
                "--schedule",
                "wait=0,warmup=0,active=1,repeat=3",
                "--on-trace-ready",
                cmd,
                "--",
                T.PYTHON,
                os.path.join(T.EXAMPLES_DIR, "train_mlp_10_steps.py"),
            ]
        )
        T.check_eq(proc.returncode, 0, "exit status\n" + T.describe(proc))
        lines = open(log).read().split() if os.path.exists(log) else []
        files = sorted(os.path.join(out, f) for f in os.listdir(out) if f.endswith(".bin"))
        T.check_eq(len(files), 3, "window files")
        T.check_eq(sorted(lines), files, "on-trace-ready saw every complete file")


def test_exec_registers_the_new_image():
    with T.tempdir() as d:
        after = write_script(
            d,
            "after.py",
            """
            import ptprof
            with ptprof.range("after_exec"):
                pass
        """,
        )
        script = write_script(
            d,
            "before.py",
            """
            import os, sys, ptprof
            with ptprof.range("before_exec"):
                pass
            os.execv(sys.executable, [sys.executable, %r])
        """
            % after,
        )
        out = os.path.join(d, "out")
        proc = T.run_ptprof(["run", "-o", out, "--", T.PYTHON, script])
        T.check_eq(proc.returncode, 0, "exit status\n" + T.describe(proc))
        files = sorted(f for f in os.listdir(out) if f.endswith(".bin"))
        T.check_eq(len(files), 2, "one file per image: %s" % files)
        names = [set(r["name"] for r in T.report_json(os.path.join(out, f))["rows"]) for f in files]
        T.check(
            any("before_exec" in n for n in names) and any("after_exec" in n for n in names),
            "both images recorded: %s" % names,
        )
        pids = set(f.split(".")[1].split("-")[0] for f in files)
        T.check_eq(len(pids), 1, "same pid in both names %s" % files)


def test_sigterm_to_launcher_reaches_target():
    with T.tempdir() as d:
        ready = os.path.join(d, "ready")
        script = write_script(
            d,
            "wait.py",
            """
            import signal, sys, time, ptprof
            def on_term(sig, frame):
                with ptprof.range("got_sigterm"):
                    pass
                sys.exit(7)
            signal.signal(signal.SIGTERM, on_term)
            open(%r, "w").close()
            time.sleep(60)
        """
            % ready,
        )
        out = os.path.join(d, "out")
        launcher = subprocess.Popen(
            [T.PTPROF_BIN, "run", "-o", out, "--", T.PYTHON, script],
            env=T.clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.time() + 60
        while not os.path.exists(ready) and time.time() < deadline:
            time.sleep(0.05)
        launcher.send_signal(signal.SIGTERM)
        _, err = launcher.communicate(timeout=60)
        T.check_eq(launcher.returncode, 7, "the target's own exit status after SIGTERM: " + err)
        rows = rows_by_name(T.report_json(out))
        T.check_eq(rows.get("got_sigterm", {}).get("calls"), 1, "the target's handler ran and was recorded")


def test_bad_variable_exits_2_before_starting():
    with T.tempdir() as d:
        marker = os.path.join(d, "started")
        env = T.clean_env(PTPROF_RECORD_SHAPES="maybe")
        proc = T.run_ptprof(["run", "-o", os.path.join(d, "out"), "--", "touch", marker], env=env)
        T.check_eq(proc.returncode, 2, "exit status for a bad PTPROF_RECORD_SHAPES")
        T.check(
            "PTPROF_RECORD_SHAPES" in proc.stderr and "maybe" in proc.stderr,
            "message names the variable and value: " + proc.stderr,
        )
        T.check(not os.path.exists(marker), "target not started")


if __name__ == "__main__":
    T.main()
