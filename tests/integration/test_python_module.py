"""The Python module `ptprof` (python/ptprof): its warn-once and no-op
behaviour without the agent (the module put on PYTHONPATH here; a program
run outside `ptprof run` as users run it, installed from the wheel, is tests/install/test_wheel.py),
and what a no-op call does (no lookup, no work beyond the call); the calls it
makes into an agent (checked against a stand-in agent built here); and the
module under `ptprof run`."""

import json
import os
import shutil
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptproftest as pt  # noqa: E402
from ptproftest import check, check_eq  # noqa: E402

REQUIRES = ("no_torch",)


def module_env(**overrides):
    return pt.clean_env(PYTHONPATH=pt.PYTHON_MODULE_DIR, **overrides)


def run_snippet(code, env=None):
    """Runs `code` in a fresh interpreter; it prints one JSON line last."""
    proc = pt.run_python(["-c", textwrap.dedent(code)], env=env or module_env())
    if proc.returncode != 0:
        raise AssertionError("snippet failed: " + pt.describe(proc))
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc


# Exercises every entry point; used with and without an agent.
EXERCISE = r'''
import json, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import ptprof
    result = {"file": ptprof.__file__}
    result["recording_first"] = ptprof.recording()
    result["enabled_first"] = ptprof.enabled()
    result["warnings_after_enabled"] = len(caught)
    ptprof.step()
    ptprof.step()
    ptprof.mark("mark-1")
    with ptprof.range("outer"):
        with ptprof.range("inner \u00e9\u6f22"):
            pass
    r = ptprof.range("reused")
    with r:
        pass
    with r:
        pass

    raised = None
    try:
        with ptprof.range("raises"):
            raise ValueError("boom")
    except ValueError as e:
        raised = str(e)
    result["raised"] = raised

    @ptprof.range("decorated")
    def add(a, b=1):
        """Adds."""
        return a + b

    result["decorated_value"] = add(2, b=3)
    result["decorated_name"] = add.__name__
    result["decorated_doc"] = add.__doc__

    @ptprof.range("decorated_raises")
    def fail():
        raise KeyError("k")

    try:
        fail()
    except KeyError:
        result["decorated_raised"] = True
    result["bytes_name"] = repr(ptprof.range(b"bytes-name"))
    with ptprof.range(b"bytes-name"):
        pass
    for i in range(3):
        ptprof.step()
    result["enabled_last"] = ptprof.enabled()
    result["warnings"] = [(w.category.__name__, str(w.message), w.filename) for w in caught]
print(json.dumps(result))
'''


def test_import_without_agent():
    result, _ = run_snippet(EXERCISE)
    check(
        result["file"].startswith(pt.PYTHON_MODULE_DIR),
        "imported ptprof from %s, not from %s" % (result["file"], pt.PYTHON_MODULE_DIR),
    )
    check_eq(result["enabled_first"], False, "ptprof.enabled() without the agent")
    check_eq(result["recording_first"], False, "ptprof.recording() without the agent (and no warning: counted below)")
    check_eq(result["enabled_last"], False, "ptprof.enabled() at the end without the agent")
    check_eq(result["warnings_after_enabled"], 0, "warnings from ptprof.enabled() alone")
    warns = result["warnings"]
    check_eq(len(warns), 1, "warnings without the agent (exactly one expected): %r" % (warns,))
    if warns:
        category, message, filename = warns[0]
        check_eq(category, "RuntimeWarning", "warning category")
        check("ptprof run" in message, "the warning says how to load the agent: %r" % message)
        check(filename == "<string>", "the warning points at the caller, not at ptprof itself: %r" % filename)
    check_eq(result["raised"], "boom", "exception from a range body propagates")
    check_eq(result["decorated_value"], 5, "decorated function's return value")
    check_eq(result["decorated_name"], "add", "decorator keeps __name__")
    check_eq(result["decorated_doc"], "Adds.", "decorator keeps __doc__")
    check_eq(result.get("decorated_raised"), True, "exception from a decorated function propagates")


def test_warns_once_across_entry_points():
    # The first use may be any entry point; still one warning in all.
    for first in (
        "ptprof.mark('m')",
        "ptprof.range('r').__enter__()",
        "ptprof.range('d')(lambda: 1)()",
        "ptprof.step()",
    ):
        code = (
            r"""
        import json, warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import ptprof
            %s
            for _ in range(5):
                ptprof.step(); ptprof.mark("x")
                with ptprof.range("y"):
                    pass
        print(json.dumps([[str(w.message), w.filename] for w in caught]))
        """
            % first
        )
        warns, _ = run_snippet(code)
        check_eq(len(warns), 1, "warnings when the first call is %s" % first)
        if warns:
            check_eq(warns[0][1], "<string>", "the warning points at the caller when the first call is %s" % first)


def test_noop_calls_do_no_lookup():
    """Without the agent, once the first call has looked it up (and warned),
    a call is the module's own function and nothing else: no ctypes lookup,
    no warnings machinery, no C function at all. Counted with a profile
    hook (each Python and C call), not timed."""
    code = r"""
    import collections, json, os, sys, warnings
    warnings.simplefilter("ignore")
    import ptprof
    ptprof.step()  # the first use: the lookup and the warning
    module = os.path.realpath(ptprof.__file__)
    r = ptprof.range("r")
    calls = collections.Counter()
    def profile(frame, event, arg):
        if event == "call":
            where = "ptprof" if os.path.realpath(frame.f_code.co_filename) == module else frame.f_code.co_filename
            calls["%s.%s" % (where, frame.f_code.co_name)] += 1
        elif event == "c_call" and arg is not sys.setprofile:
            calls["C %s" % getattr(arg, "__qualname__", repr(arg))] += 1
    n = 1000
    sys.setprofile(profile)
    for _ in range(n):
        ptprof.step()
        ptprof.mark("m")
        with r:
            pass
    sys.setprofile(None)
    print(json.dumps({"n": n, "calls": calls}))
    """
    result, _ = run_snippet(code)
    n = result["n"]
    expected = {"ptprof.step": n, "ptprof.mark": n, "ptprof.__enter__": n, "ptprof._push": n, "ptprof.__exit__": n}
    check_eq(result["calls"], expected, "the calls %d no-op step(), mark() and range make" % n)


# A stand-in agent: the four C entry points, logging each call to a file.
FAKE_AGENT_C = r"""
#include <stdio.h>
#include <stdlib.h>
/* Opened once at load: two threads opening it lazily could each truncate
   the file and write over each other's lines. */
static FILE* f;
__attribute__((constructor)) static void open_log(void) {
  f = fopen(getenv("FAKE_AGENT_LOG"), "w");
  setvbuf(f, NULL, _IOLBF, 0);
}
static FILE* out(void) { return f; }
void ptprof_step(void) { fprintf(out(), "step\n"); }
void ptprof_range_push(const char* name) { fprintf(out(), "push %s\n", name); }
void ptprof_range_pop(void) { fprintf(out(), "pop\n"); }
void ptprof_mark(const char* name) { fprintf(out(), "mark %s\n", name); }
"""


def build_fake_agent(tmp):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        pt.skip("no C compiler to build the stand-in agent")
    src = os.path.join(tmp, "fake_agent.c")
    lib = os.path.join(tmp, "libfake_agent.so")
    with open(src, "w") as f:
        f.write(FAKE_AGENT_C)
    proc = pt.run([cc, "-shared", "-fPIC", "-O1", "-o", lib, src])
    if proc.returncode != 0:
        raise AssertionError("building the stand-in agent failed: " + pt.describe(proc))
    return lib


def test_calls_reach_the_agent():
    with pt.tempdir() as tmp:
        lib = build_fake_agent(tmp)
        log = os.path.join(tmp, "calls.log")
        result, _ = run_snippet(EXERCISE, env=module_env(LD_PRELOAD=lib, FAKE_AGENT_LOG=log))
        check_eq(result["enabled_first"], True, "ptprof.enabled() with the agent")
        check_eq(result["warnings"], [], "warnings with the agent")
        check_eq(result["raised"], "boom", "exception from a range body propagates")
        check_eq(result["decorated_value"], 5, "decorated function's return value")
        with open(log, encoding="utf-8") as f:
            calls = f.read().splitlines()
        expected = [
            "step",
            "step",
            "mark mark-1",
            "push outer",
            "push inner \u00e9\u6f22",
            "pop",
            "pop",
            "push reused",
            "pop",
            "push reused",
            "pop",
            "push raises",
            "pop",
            "push decorated",
            "pop",
            "push decorated_raises",
            "pop",
            "push bytes-name",
            "pop",
            "step",
            "step",
            "step",
        ]
        check_eq(calls, expected, "calls the agent received")


def test_threads_and_many_names():
    with pt.tempdir() as tmp:
        lib = build_fake_agent(tmp)
        log = os.path.join(tmp, "calls.log")
        code = r"""
        import json, threading
        import ptprof
        def work():
            for i in range(3000):   # more names than the module caches
                with ptprof.range("name-%d" % i):
                    pass
        ts = [threading.Thread(target=work) for _ in range(2)]
        for t in ts: t.start()
        for t in ts: t.join()
        print(json.dumps({"ok": True}))
        """
        run_snippet(code, env=module_env(LD_PRELOAD=lib, FAKE_AGENT_LOG=log))
        with open(log) as f:
            calls = f.read().splitlines()
        pushes = [c for c in calls if c.startswith("push ")]
        check_eq(len(pushes), 6000, "pushes from two threads")
        check_eq(calls.count("pop"), 6000, "pops from two threads")
        check_eq(len(set(pushes)), 3000, "distinct names pushed")


def test_under_ptprof_run():
    if not pt.have_ptprof():
        raise AssertionError("ptprof binary not found at %s" % pt.PTPROF_BIN)
    script = textwrap.dedent(r"""
        import sys
        import ptprof
        if not ptprof.enabled():
            print("ptprof.enabled() is False under ptprof run", file=sys.stderr)
            sys.exit(3)
        for i in range(3):
            with ptprof.range("ptprof_module_test_range"):
                sum(range(1000))
            ptprof.mark("ptprof_module_test_mark")
            ptprof.step()
        """)
    with pt.tempdir() as tmp:
        path = os.path.join(tmp, "annotated.py")
        with open(path, "w") as f:
            f.write(script)
        out = os.path.join(tmp, "out")
        env = pt.clean_env(PTPROF_OUTPUT=out, PTPROF_STEP="manual", PYTHONPATH=None)
        proc = pt.run_ptprof(["run", "--", pt.PYTHON, path], env=env, cwd=tmp)
        if not check_eq(proc.returncode, 0, "ptprof run exit status; " + pt.describe(proc)):
            return
        report = pt.report_json([out])
        rows = {r["name"]: r for r in report["rows"]}
        check_eq(rows.get("ptprof_module_test_range", {}).get("calls"), 3, "calls of the range, in the report")
        check_eq(rows.get("ptprof_module_test_mark", {}).get("calls"), 3, "calls of the mark, in the report")


def test_recording_follows_the_schedule():
    """ptprof.recording() says whether this process records now: by the
    schedule's steps (wait, active, then nothing), and the ops of a step where
    it said True are in the report, those of the others not."""
    script = textwrap.dedent(r"""
        import json, sys
        import ptprof
        seen = []
        for i in range(4):
            seen.append(ptprof.recording())
            with ptprof.range("ptprof_recording_step_%d" % i):
                pass
            ptprof.step()
        print(json.dumps(seen))
        """)
    with pt.tempdir() as tmp:
        path = os.path.join(tmp, "asks.py")
        with open(path, "w") as f:
            f.write(script)
        out = os.path.join(tmp, "out")
        env = pt.clean_env(PTPROF_STEP="manual", PYTHONPATH=None)
        proc = pt.run_ptprof(
            ["run", "-o", out, "--schedule", "wait=1,warmup=1,active=1,repeat=1", "--", pt.PYTHON, path],
            env=env,
            cwd=tmp,
        )
        if not check_eq(proc.returncode, 0, "ptprof run exit status; " + pt.describe(proc)):
            return
        seen = json.loads(proc.stdout.strip().splitlines()[-1])
        # Warmup records too (its events are not kept): as torch.profiler's.
        check_eq(seen, [False, True, True, False], "ptprof.recording() in steps 0 to 3")
        rows = {r["name"] for r in pt.report_json([out])["rows"]}
        check_eq(
            sorted(n for n in rows if n.startswith("ptprof_recording_step_")),
            ["ptprof_recording_step_2"],
            "the ranges recorded",
        )


if __name__ == "__main__":
    pt.main()
