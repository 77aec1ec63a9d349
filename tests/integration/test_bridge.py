"""The torch bridge, built per torch on demand (ptprof bridge build, the
agent's request from inside `import torch`) and cached per user. Runs once per
torch (CTest sets PTPROF_PYTHON). Each test uses caches of its own, so the
first run of a torch really builds, as on a machine that never saw it."""

import os
import textwrap

import ptproftest as T

COST_S = 230

BUILDING = "building the torch bridge for torch"
CANNOT = "cannot build the torch bridge"


def lines_with(text, needle):
    return [line for line in text.splitlines() if needle in line]


def op_rows(out):
    return {r["name"]: r["calls"] for r in T.report_json(out)["rows"] if not r["name"].startswith("ProfilerStep")}


def write(path, code):
    with open(path, "w") as f:
        f.write(textwrap.dedent(code))
    return path


def fixture_library():
    """This torch's bridge as the CTest fixture built it (bridge.<label>)."""
    fixture = T.run_ptprof(["bridge", "build", "--python", T.PYTHON], env=T.clean_env())
    T.check_eq(fixture.returncode, 0, "the fixture's bridge\n" + T.describe(fixture))
    return fixture.stdout.strip()


def copying_compiler(d, before=""):
    """A stand-in C++ compiler that runs the shell commands `before`, then
    "builds" by copying the fixture's bridge to where the builder asked: the
    builder's locking, cache and messages without a real compile each time.
    The real compiler runs in test_first_run_builds_then_cache_is_used and in
    the fixture."""
    path = os.path.join(d, "copying-c++")
    with open(path, "w") as f:
        f.write(
            "#!/bin/sh\n"
            + textwrap.dedent(before)
            + textwrap.dedent(
                """\
            while [ $# -gt 0 ]; do
              if [ "$1" = -o ]; then out=$2; fi
              shift
            done
            exec cp %s "$out"
        """
                % fixture_library()
            )
        )
    os.chmod(path, 0o755)
    return path


def test_first_run_builds_then_cache_is_used():
    script = os.path.join(T.EXAMPLES_DIR, "train_mlp.py")
    with T.tempdir() as d:
        env = T.clean_env(PTPROF_BRIDGE_CACHE=os.path.join(d, "cache"), STEPS=6)
        runs = []
        for i in range(2):
            out = os.path.join(d, "out%d" % i)
            proc = T.run_ptprof(
                ["run", "-o", out, "--schedule", "wait=1,warmup=1,active=3", "--", T.PYTHON, script], env=env
            )
            T.check_eq(proc.returncode, 0, "run %d\n%s" % (i, T.describe(proc)))
            runs.append((proc, op_rows(out)))
        first, second = runs
        built = lines_with(first[0].stderr, BUILDING)
        T.check_eq(len(built), 1, "the first run says once that it builds:\n" + first[0].stderr)
        T.check(
            built and " done in " in built[0] and " s (" in built[0], "the same line says how long it took: %r" % built
        )
        T.check_eq(lines_with(second[0].stderr, BUILDING), [], "the second run builds nothing")
        T.check(first[1].get("aten::addmm", 0) > 0, "operators recorded on the first run: %r" % sorted(first[1]))
        T.check_eq(second[1], first[1], "both runs record the same operators and counts")

        # The same operator names as torch.profiler on this torch (the counts
        # are test_equivalence.py's business).
        ref = T.torch_profile_full(script, os.path.join(d, "torch.json"), wait=1, warmup=1, active=3, env=env)
        torch_names = {n for n in ref["by_name"] if not n.startswith(("ProfilerStep", "profiler::"))}
        ours = {n for n in first[1] if not n.startswith("profiler::")}
        T.check_eq(sorted(ours - torch_names), [], "operators ptprof has and torch.profiler has not")
        T.check_eq(sorted(torch_names - ours), [], "operators torch.profiler has and ptprof has not")

        listing = T.run_ptprof(["bridge", "list"], env=env)
        T.check_eq(listing.returncode, 0, "bridge list\n" + T.describe(listing))
        version = os.environ.get("PTPROF_TORCH_VERSION", "")
        mm = ".".join(version.split(".")[:2])
        T.check(
            any(line.split()[0].startswith(mm) and " ok " in line for line in listing.stdout.splitlines()[2:]),
            "bridge list shows this torch (%s), in use:\n%s" % (mm, listing.stdout),
        )


def check_fallback(env, d, needle):
    """A target that imports torch and records ranges, exiting 3: with no
    bridge to be had it still runs, keeps its status, and its ranges are
    recorded; one line says why there are no operators."""
    script = write(
        os.path.join(d, "ranges.py"),
        """
        import sys, subprocess, ptprof, torch
        for _ in range(3):
            with ptprof.range("still_recorded"):
                torch.ones(4).sum()
        # A second process of the same run: the failure is not retried or repeated.
        subprocess.run([sys.executable, "-c", "import torch; torch.ones(1)"], check=True)
        sys.exit(3)
    """,
    )
    out = os.path.join(d, "out")
    proc = T.run_ptprof(["run", "-o", out, "--", T.PYTHON, script], env=env)
    T.check_eq(proc.returncode, 3, "the target's exit status\n" + T.describe(proc))
    said = lines_with(proc.stderr, needle)
    T.check_eq(len(said), 1, "one line about it:\n" + proc.stderr)
    T.check(said and "operator events are off" in said[0], "the line says what it means: %r" % said)
    rows = op_rows(out)
    T.check_eq(rows.get("still_recorded"), 3, "ranges are still recorded")
    T.check_eq([n for n in rows if n.startswith("aten::")], [], "no operators without a bridge")
    return said


def test_no_compiler_one_line_target_unharmed():
    with T.tempdir() as d:
        env = T.clean_env(PTPROF_BRIDGE_CACHE=os.path.join(d, "cache"), CXX="/nonexistent")
        said = check_fallback(env, d, CANNOT)
        T.check(
            said and "CXX=/nonexistent" in said[0] and "ptprof bridge build --libtorch" in said[0],
            "the line names the compiler and what to run: %r" % said,
        )


def test_no_compiler_on_path():
    with T.tempdir() as d:
        empty = os.path.join(d, "empty-bin")
        os.mkdir(empty)
        env = T.clean_env(PTPROF_BRIDGE_CACHE=os.path.join(d, "cache"), CXX=None, PATH=empty)
        said = check_fallback(env, d, CANNOT)
        T.check(said and "no C++ compiler" in said[0], "the line says no compiler was found: %r" % said)


def test_on_demand_build_can_be_turned_off():
    with T.tempdir() as d:
        env = T.clean_env(PTPROF_BRIDGE_CACHE=os.path.join(d, "cache"), PTPROF_BRIDGE_BUILD="0")
        said = check_fallback(env, d, "PTPROF_BRIDGE_BUILD=0")
        T.check(
            not os.path.exists(os.path.join(d, "cache"))
            or not any(n.startswith("torch-") for n in os.listdir(os.path.join(d, "cache"))),
            "nothing was built",
        )
        T.check(said and "ptprof bridge build" in said[0], "the line says how to build one: %r" % said)


def test_no_cache_directory_one_line_per_run():
    """No PTPROF_BRIDGE_CACHE, XDG_CACHE_HOME or HOME: there is no cache to
    remember the failure in, yet the run says it once, not once per process
    (issue 28 defect 9; it was said by each of the two processes)."""
    with T.tempdir() as d:
        env = T.clean_env(PTPROF_BRIDGE_CACHE=None, XDG_CACHE_HOME=None, HOME=None)
        said = check_fallback(env, d, "no bridge cache directory")
        T.check(said and "PTPROF_BRIDGE_CACHE" in said[0], "the line says what to set: %r" % said)


def test_unwritable_cache_one_line_per_run():
    """A cache that cannot be created (its parent is a file: it fails for
    root too, unlike a read-only directory): the builder cannot write its
    failure marker there, yet the run says the failure once (issue 28
    defect 9; it was said by each of the two processes)."""
    with T.tempdir() as d:
        blocker = os.path.join(d, "not-a-directory")
        with open(blocker, "w") as f:
            f.write("a file where the cache's parent should be\n")
        env = T.clean_env(PTPROF_BRIDGE_CACHE=os.path.join(blocker, "cache"))
        said = check_fallback(env, d, CANNOT)
        T.check(said and "not-a-directory" in said[0], "the line names the cache: %r" % said)


def test_other_python_threads_run_during_the_build():
    """The importing thread holds the GIL while the bridge is built; the
    agent releases it while it waits, so the target's other Python threads
    run (issue 28 defect 6: a heartbeat thread stopped for the whole build).
    The compiler here is a stand-in that waits for a file which only another
    Python thread of the target writes, once it sees the build started, and
    then "compiles": it copies this torch's bridge from the fixture's cache
    to where the builder asked (no second real compile). With the GIL held
    that thread never runs, the stand-in gives up and the build fails (no
    operators, one failure line)."""
    with T.tempdir() as d:
        started = os.path.join(d, "compiler-started")
        answered = os.path.join(d, "thread-answered")
        compiler = copying_compiler(
            d,
            """\
            : > %s
            i=0
            while [ ! -e %s ]; do
              i=$((i + 1))
              if [ $i -gt 600 ]; then echo "error: no Python thread of the target ran during the build" >&2; exit 1; fi
              sleep 0.05
            done
        """
            % (started, answered),
        )
        script = write(
            os.path.join(d, "threads.py"),
            """
            import os, threading, time
            def answer():
                while not os.path.exists(%r):
                    time.sleep(0.01)
                open(%r, "w").close()
            threading.Thread(target=answer, daemon=True).start()
            import torch
            for _ in range(3):
                torch.ones(4).add_(1)
        """
            % (started, answered),
        )
        env = T.clean_env(PTPROF_BRIDGE_CACHE=os.path.join(d, "cache"), CXX=compiler)
        out = os.path.join(d, "out")
        proc = T.run_ptprof(["run", "-o", out, "--", T.PYTHON, script], env=env)
        T.check_eq(proc.returncode, 0, "run\n" + T.describe(proc))
        T.check_eq(
            lines_with(proc.stderr, CANNOT) + lines_with(proc.stderr, "failed:"),
            [],
            "the build succeeded:\n" + proc.stderr,
        )
        T.check_eq(op_rows(out).get("aten::add_"), 3, "operators recorded with the bridge built meanwhile")


def test_two_processes_build_once():
    """Two processes meeting the same new torch at once (two ranks): one
    builds, the other waits for it, both record operators. The build takes
    3 s (a stand-in compiler), so the second meets the first's lock."""
    with T.tempdir() as d:
        compiler = copying_compiler(d, "sleep 3\n")
        env = T.clean_env(PTPROF_BRIDGE_CACHE=os.path.join(d, "cache"), CXX=compiler)
        child = write(
            os.path.join(d, "child.py"),
            """
            import torch
            for _ in range(5):
                torch.ones(3).add_(1)
        """,
        )
        parent = write(
            os.path.join(d, "parent.py"),
            """
            import subprocess, sys
            procs = [subprocess.Popen([sys.executable, %r]) for _ in range(2)]
            sys.exit(max(p.wait() for p in procs))
        """
            % child,
        )
        out = os.path.join(d, "out")
        proc = T.run_ptprof(["run", "-o", out, "--", T.PYTHON, parent], env=env)
        T.check_eq(proc.returncode, 0, "run\n" + T.describe(proc))
        T.check_eq(len(lines_with(proc.stderr, BUILDING)), 1, "built once:\n" + proc.stderr)
        rep = T.report_json(out)
        calls = {r["name"]: r["calls"] for r in rep["rows"]}
        T.check_eq(calls.get("aten::add_"), 10, "both processes recorded their operators")


def test_bridge_build_command():
    with T.tempdir() as d:
        compiler = copying_compiler(d)
        env = T.clean_env(PTPROF_BRIDGE_CACHE=os.path.join(d, "cache"), CXX=compiler)
        first = T.run_ptprof(["bridge", "build", "--python", T.PYTHON], env=env)
        T.check_eq(first.returncode, 0, "bridge build\n" + T.describe(first))
        path = first.stdout.strip()
        T.check(
            os.path.isfile(path) and path.startswith(os.path.join(d, "cache")),
            "prints the bridge's path, in the cache: %r" % path,
        )
        T.check_eq(len(lines_with(first.stderr, BUILDING)), 1, "says it builds:\n" + first.stderr)
        again = T.run_ptprof(["bridge", "build", "--python", T.PYTHON], env=env)
        T.check_eq(again.returncode, 0, "bridge build again\n" + T.describe(again))
        T.check_eq(again.stdout.strip(), path, "the same bridge")
        T.check("is cached" in again.stderr and BUILDING not in again.stderr, "nothing rebuilt:\n" + again.stderr)

        # A run with that cache builds nothing.
        out = os.path.join(d, "out")
        proc = T.run_ptprof(["run", "-o", out, "--", T.PYTHON, "-c", "import torch; torch.ones(2).add_(1)"], env=env)
        T.check_eq(proc.returncode, 0, "run\n" + T.describe(proc))
        T.check_eq(lines_with(proc.stderr, BUILDING), [], "the run used the bridge built ahead")
        T.check_eq(op_rows(out).get("aten::add_"), 1, "and recorded operators")


def test_bridge_build_bad_input():
    env = T.clean_env()
    cases = [
        (["bridge", "build"], "exactly one of --python PY or --libtorch PATH"),
        (["bridge", "build", "--python", T.PYTHON, "--libtorch", "/x"], "exactly one of"),
        (["bridge", "build", "--python", "/nonexistent/python"], "no such interpreter"),
        (["bridge", "build", "--python", "/bin/true"], "cannot import torch"),
        (["bridge", "build", "--libtorch", "/nonexistent/libtorch_cpu.so"], "no such file"),
        (["bridge"], "subcommand"),
    ]
    for args, needle in cases:
        proc = T.run_ptprof(args, env=env)
        T.check_eq(proc.returncode, 2, " ".join(args) + "\n" + T.describe(proc))
        T.check(needle in proc.stderr, "%s: the message says %r:\n%s" % (" ".join(args), needle, proc.stderr))


if __name__ == "__main__":
    T.main()
