"""Helpers for ptprof's Python integration tests.

An integration test is a plain script, tests/integration/test_*.py, that CTest
runs with the interpreter that imports torch (PTPROF_PYTHON) and this
environment:

    PTPROF_BIN         the ptprof binary
    PTPROF_PYTHON      the interpreter that imports torch
    PTPROF_SOURCE_DIR  the source tree
    PTPROF_BUILD_DIR   the build tree
    PTPROF_TORCH_VERSION  the version of PTPROF_PYTHON's torch (printed first)
    PTPROF_BRIDGE_CACHE   where torch bridges are cached (the build tree's)

A test module defines functions named test_* and ends with::

    if __name__ == "__main__":
        ptproftest.main()

main() runs them in the order they are defined, counts every check() and
every test that raises, prints "N passed, N failed, N skipped" and exits
non-zero when anything failed. A test that calls skip(reason) stops there,
says why and is counted as skipped, never as passed: a file where a test
skipped and none failed exits with SKIP_EXIT_CODE, which tests/CMakeLists.txt
declares as the tests' SKIP_RETURN_CODE, so CTest reports the file as
skipped (Not Run), not passed. With CI set (CI=true; anything but empty, 0,
false, no, off), where the test command has installed everything the suite
needs, a skip is a failure: the file exits 1 and says which tests skipped
and why.

A test file says what it needs in its own lines, after its imports, each
written on one line as here:

    REQUIRES = ("torch2",)
    COST_S = 200
    TIMEOUT_S = 3600

tests/CMakeLists.txt reads them at configure time (cmake/TestDeclarations.cmake;
an edit re-configures) and fails the configure, naming the file, on a word
it does not know or a line that begins like one of these and is not one.
REQUIRES holds words of REQUIREMENTS; a file without it runs on every torch:

    no_torch    runs no real torch: registered once, under the first torch
                of the matrix, not once per torch (never with another word)
    cuda_torch  needs a build of torch with CUDA (pip's wheel; no GPU):
                registered only for such torches, where it cannot skip
    torch2      needs torch 2.x (what only torch 2.x writes, torch.compile):
                registered only for a torch 2.x

COST_S is the file's seconds on an idle 2-core machine with pip's torch
(halved for a torch 1.x: no CUDA libraries to load, simpler programs), a
rough guide and never a limit: CTest starts the costliest first, so that a
fresh build (no CTestCostData.txt yet) does not end with one long test
running alone while the other cores wait. Only the slowest files give one.
TIMEOUT_S replaces CTest's limit of 900 s for a file that needs longer.
main() checks the same lines again when the file runs: a word it does not
know is a failure there too.

This is not pytest because not every torch interpreter of the matrix has
it: Debian's /usr/bin/python3 with its torch 1.13 (python3-torch) has no
pytest, and the venv's comes only as a dependency of HolisticTraceAnalysis.
"""

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("PTPROF_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
BUILD_DIR = os.environ.get("PTPROF_BUILD_DIR") or os.path.join(SOURCE_DIR, "build")
PTPROF_BIN = os.environ.get("PTPROF_BIN") or os.path.join(BUILD_DIR, "bin", "ptprof")
PYTHON = os.environ.get("PTPROF_PYTHON") or sys.executable
EXAMPLES_DIR = os.path.join(SOURCE_DIR, "examples")
PYTHON_MODULE_DIR = os.path.join(SOURCE_DIR, "python")
AGENT_LIB = os.path.join(BUILD_DIR, "lib", "libptprof_agent.so")
TORCH_PROFILE_WRAPPER = os.path.join(HERE, "torch_profile_wrapper.py")

DEFAULT_TIMEOUT = 300
# CTest's SKIP_RETURN_CODE for these files (tests/CMakeLists.txt); automake's.
SKIP_EXIT_CODE = 77

# The words a test file's REQUIRES may hold (the module docstring says what
# each means). cmake/TestDeclarations.cmake reads this line and fails the
# configure if its words are not the ones tests/CMakeLists.txt has rules for.
REQUIREMENTS = ("no_torch", "cuda_torch", "torch2")

_passed = 0
_failed = 0
_skipped = 0
_failures = []
_skips = []
_current_test = None


class Skip(Exception):
    """Raised by skip(): the rest of the current test does not run."""


def skip(reason):
    raise Skip(reason)


def skips_fail():
    """True under CI: there a skip is a failure (the C++ side:
    tests/unit/test_skip.hpp)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no", "off")


def check(cond, msg):
    """Records one check; a false `cond` is a failure described by `msg`."""
    global _passed, _failed
    if cond:
        _passed += 1
        return True
    _failed += 1
    where = "%s: " % _current_test if _current_test else ""
    _failures.append(where + str(msg))
    print("FAIL: %s%s" % (where, msg), flush=True)
    return False


def check_eq(actual, expected, msg):
    return check(actual == expected, "%s: expected %r, got %r" % (msg, expected, actual))


def clean_env(**overrides):
    """os.environ without PTPROF_* settings of the caller (but keeping where
    the binaries are) and without LD_PRELOAD; then `overrides` (None removes)."""
    keep = {
        "PTPROF_BIN",
        "PTPROF_PYTHON",
        "PTPROF_SOURCE_DIR",
        "PTPROF_BUILD_DIR",
        "PTPROF_BRIDGE_CACHE",
        "PTPROF_TORCH_VERSION",
    }
    env = {k: v for k, v in os.environ.items() if (not k.startswith("PTPROF_") or k in keep) and k != "LD_PRELOAD"}
    for k, v in overrides.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = str(v)
    return env


def run(cmd, env=None, cwd=None, timeout=DEFAULT_TIMEOUT, input=None):
    """Runs `cmd` (a list), capturing text stdout and stderr."""
    return subprocess.run(
        cmd,
        env=env if env is not None else clean_env(),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input,
    )


def run_ptprof(args, env=None, cwd=None, timeout=DEFAULT_TIMEOUT):
    """Runs `ptprof <args...>` and returns the CompletedProcess (text
    stdout/stderr captured). `env` defaults to clean_env()."""
    return run([PTPROF_BIN] + [str(a) for a in args], env=env, cwd=cwd, timeout=timeout)


def run_python(args, env=None, cwd=None, timeout=DEFAULT_TIMEOUT):
    """Runs the interpreter that imports torch."""
    return run([PYTHON] + [str(a) for a in args], env=env, cwd=cwd, timeout=timeout)


def describe(proc):
    """A CompletedProcess as text for a failure message."""
    return "exit %s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (
        proc.returncode,
        proc.stdout[-4000:],
        proc.stderr[-4000:],
    )


def report_json(paths, *extra, env=None, cwd=None):
    """`ptprof report --format json <paths...> <extra...>`, parsed. Raises
    AssertionError with the output when the command fails or prints no JSON."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    proc = run_ptprof(["report", "--format", "json"] + [str(p) for p in paths] + list(extra), env=env, cwd=cwd)
    if proc.returncode != 0:
        raise AssertionError("ptprof report failed: " + describe(proc))
    try:
        return json.loads(proc.stdout)
    except ValueError as e:
        raise AssertionError("ptprof report printed no valid JSON (%s): %s" % (e, describe(proc))) from e


def torch_profile_full(
    script,
    out_json,
    wait=None,
    warmup=None,
    active=None,
    repeat=None,
    skip_first=None,
    env=None,
    timeout=DEFAULT_TIMEOUT,
):
    """Runs `script` under torch.profiler (torch_profile_wrapper.py) and
    returns everything it wrote: {"rows": [...], "by_name": {name: count},
    "windows": [[row, ...], ...], "steps": N, "schedule": ...} (see the
    wrapper's docstring). No schedule unless some of wait/warmup/active/
    repeat/skip_first are given; then, as in torch.profiler.schedule and
    PTPROF_SCHEDULE, active defaults to 1 and the others to 0."""
    cmd = [TORCH_PROFILE_WRAPPER, "--quiet", "--out", out_json]
    for flag, value in (
        ("--wait", wait),
        ("--warmup", warmup),
        ("--active", active),
        ("--repeat", repeat),
        ("--skip-first", skip_first),
    ):
        if value is not None:
            cmd += [flag, value]
    proc = run_python(cmd + ["--", script], env=env, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError("torch_profile_wrapper failed: " + describe(proc))
    with open(out_json) as f:
        return json.load(f)


def torch_profile(script, out_json, **kwargs):
    """torch_profile_full()'s rows, summed over windows:
    [{"name", "count", "input_shapes", "self_cpu_us", "cpu_total_us"}, ...]
    as key_averages(group_by_input_shape=True) gives them."""
    return torch_profile_full(script, out_json, **kwargs)["rows"]


def find_strings(obj):
    """Every string anywhere in a parsed JSON value (keys and values)."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from find_strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from find_strings(v)


@contextlib.contextmanager
def tempdir(prefix="ptprof-test-"):
    """A fresh directory, removed afterwards unless PTPROF_KEEP_TEMP=1."""
    path = tempfile.mkdtemp(prefix=prefix)
    try:
        yield path
    finally:
        if os.environ.get("PTPROF_KEEP_TEMP") == "1":
            print("kept temporary directory %s" % path)
        else:
            shutil.rmtree(path, ignore_errors=True)


def have_ptprof():
    return os.path.isfile(PTPROF_BIN) and os.access(PTPROF_BIN, os.X_OK)


def declaration_errors(module):
    """What is wrong with `module`'s REQUIRES, COST_S and TIMEOUT_S (the module
    docstring says what they may be), one message each; empty when nothing is."""
    errors = []
    requires = getattr(module, "REQUIRES", ())
    if not isinstance(requires, tuple) or not all(isinstance(w, str) for w in requires):
        errors.append("REQUIRES is %r, not a tuple of words" % (requires,))
        requires = ()
    for word in requires:
        if word not in REQUIREMENTS:
            errors.append("REQUIRES names %r, not one of %s" % (word, ", ".join(REQUIREMENTS)))
    if "no_torch" in requires and len(requires) > 1:
        errors.append("REQUIRES %r: no_torch runs no torch, so it cannot need one" % (requires,))
    for name in ("COST_S", "TIMEOUT_S"):
        value = getattr(module, name, None)
        if value is not None and (type(value) is not int or value <= 0):
            errors.append("%s is %r, not a whole number of seconds above 0" % (name, value))
    return errors


def main(tests=None):
    """Runs `tests` (default: the test_* functions of __main__, in the order
    they are defined), prints 'N passed, N failed' and exits."""
    global _current_test, _skipped
    print("torch %s at %s" % (os.environ.get("PTPROF_TORCH_VERSION", "(version not given)"), PYTHON), flush=True)
    if tests is None:
        module = sys.modules["__main__"]
        tests = [v for k, v in vars(module).items() if k.startswith("test_") and callable(v)]
        tests.sort(key=lambda f: getattr(getattr(f, "__code__", None), "co_firstlineno", 0))
        for error in declaration_errors(module):
            check(False, "%s: %s" % (os.path.basename(getattr(module, "__file__", "?")), error))
    only = os.environ.get("PTPROF_TEST_ONLY")  # run a subset: comma-separated names
    if only:
        names = set(only.split(","))
        tests = [t for t in tests if t.__name__ in names]
    for t in tests:
        _current_test = t.__name__
        print("=== %s" % t.__name__, flush=True)
        started = time.monotonic()
        try:
            t()
        except Skip as e:
            print("--- skipped: %s" % e, flush=True)
            _skipped += 1
            _skips.append("%s: %s" % (t.__name__, e))
        except Exception:  # a test that raises is one failure
            check(False, "raised:\n" + traceback.format_exc())
        # Where a slow suite spends its time (not a check: no timing is asserted).
        print("--- %s: %.1f s" % (t.__name__, time.monotonic() - started), flush=True)
        _current_test = None
    print()
    if _failures:
        print("failures:")
        for f in _failures:
            print("  - " + f.replace("\n", "\n    "))
    print("%d passed, %d failed, %d skipped" % (_passed, _failed, _skipped), flush=True)
    sys.exit(exit_status())


def exit_status():
    """1 when a check failed (or, under CI, a test skipped); SKIP_EXIT_CODE
    when a test skipped; else 0."""
    if _failed:
        return 1
    if not _skips:
        return 0
    if skips_fail():
        print(
            "CI=%s: a skipped test is a failure here (the test command installs what the suite needs):"
            % os.environ.get("CI")
        )
        for s in _skips:
            print("  - " + s)
        return 1
    return SKIP_EXIT_CODE


def read_roles(path):
    """{role: pid} from a file a test's script wrote, one "role pid" line per process."""
    roles = {}
    with open(path) as f:
        for line in f:
            role, pid = line.split()
            roles[role] = int(pid)
    return roles
