"""What a run says about CUDA when it cannot record it: one line in the
run's summary and in the report, saying what is missing and why, with the CPU
profile intact. Checked with pip's CUDA torch on a machine without a GPU, the
toolkit's libcudart loaded by a C program without a driver, a driver without
CUPTI, and CUDA switched off (PTPROF_ACTIVITIES=cpu: nothing said).
Registered only for torches built with CUDA (REQUIRES)."""

import ctypes
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptproftest as pt  # noqa: E402
from ptproftest import check, check_eq  # noqa: E402

REQUIRES = ("cuda_torch",)

CUDA_DLOPEN = os.path.join(pt.BUILD_DIR, "bin", "cuda_dlopen")
CUDA_OPS = os.path.join(pt.BUILD_DIR, "bin", "cuda_ops")
FAKE_CUPTI = os.path.join(pt.BUILD_DIR, "fake-cupti", "libcupti.so")
STUB_DRIVER_DIR = os.path.join(pt.BUILD_DIR, "stub-driver")
TOOLKIT_CUDART = "/usr/local/cuda/lib64/libcudart.so"
NO_DRIVER = "ptprof: CUDA not recorded: no NVIDIA driver (libcuda.so.1 not found); CPU profiling carries on"


def have_driver():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def cuda_lines(text):
    return [line for line in text.splitlines() if line.startswith("ptprof: CUDA")]


def run_and_report(out, command, **env):
    run = pt.run_ptprof(["run", "-o", out, "--"] + command, env=pt.clean_env(**env))
    check_eq(run.returncode, 0, "ptprof run: " + pt.describe(run))
    table = pt.run_ptprof(["report", out])
    check_eq(table.returncode, 0, "ptprof report: " + pt.describe(table))
    return run, table, pt.report_json(out)


def test_pip_cuda_torch_without_gpu():
    probe = pt.run_python(
        ["-c", "import json, torch; print(json.dumps([torch.version.cuda, torch.cuda.is_available()]))"]
    )
    if probe.returncode != 0:
        raise AssertionError("torch does not import: " + probe.stderr[-300:])
    version, available = json.loads(probe.stdout.strip().splitlines()[-1])
    # Registered only for CUDA builds of torch (REQUIRES).
    if not check(version, "this torch is a CUDA build (torch.version.cuda %r)" % version):
        return
    if available:
        pt.skip("a GPU is here: scripts/gpu-check.sh covers that")
    with pt.tempdir() as out:
        run, table, js = run_and_report(out, [pt.PYTHON, os.path.join(pt.EXAMPLES_DIR, "train_mlp.py")], STEPS=2)
        lines = cuda_lines(run.stderr)
        check_eq(len(lines), 1, "one CUDA line in the summary: " + run.stderr)
        check(lines and lines[0].startswith(NO_DRIVER + " (pid "), "the summary says why: %r" % lines)
        check_eq(cuda_lines(table.stdout), [NO_DRIVER], "the report says it once")
        check_eq(js.get("gpu", {}).get("notes"), [NO_DRIVER], "the JSON report says it")
        names = {r["name"]: r for r in js["rows"]}
        check("aten::addmm" in names and names["aten::addmm"]["calls"] > 0, "the CPU profile is intact")
        check(not any(n.startswith("ptprof: CUDA") for n in names), "the note is no operator row")
        check("self_cuda_us" not in js["rows"][0], "no CUDA columns without CUDA time")


def test_toolkit_cudart_without_driver():
    if not os.path.exists(TOOLKIT_CUDART):
        pt.skip("no CUDA toolkit at /usr/local/cuda")
    if have_driver():
        pt.skip("a driver is installed here")
    with pt.tempdir() as out:
        run, table, js = run_and_report(out, [CUDA_DLOPEN, TOOLKIT_CUDART])
        check(
            "cudaGetDeviceCount: " in run.stdout and "cudaGetDeviceCount: 0 " not in run.stdout,
            "the runtime fails without a driver: " + run.stdout,
        )
        lines = cuda_lines(run.stderr)
        check_eq(len(lines), 1, "one CUDA line in the summary: " + run.stderr)
        check(lines and lines[0].startswith(NO_DRIVER), "the summary says why: %r" % lines)
        check_eq(cuda_lines(table.stdout), [NO_DRIVER], "the report says it")
        check_eq(
            [r["name"] for r in js["rows"] if r["name"] != "ProfilerStep*"],
            ["after cuda"],
            "the program's own mark is the only row besides the step",
        )


def test_driver_without_cupti():
    if not os.path.exists(TOOLKIT_CUDART):
        pt.skip("no CUDA toolkit at /usr/local/cuda")
    with pt.tempdir() as out:
        run, table, _ = run_and_report(
            out,
            [CUDA_DLOPEN, TOOLKIT_CUDART],
            LD_LIBRARY_PATH=STUB_DRIVER_DIR,
            PTPROF_CUPTI_PATH="/nonexistent/libcupti.so",
        )
        want = (
            "ptprof: CUDA not recorded: no CUPTI library (PTPROF_CUPTI_PATH=/nonexistent/libcupti.so: "
            "no such file; set PTPROF_CUPTI_PATH); CPU profiling carries on"
        )
        lines = cuda_lines(run.stderr)
        check_eq(len(lines), 1, "one CUDA line: " + run.stderr)
        check(lines and lines[0].startswith(want), "it says CUPTI is missing: %r" % lines)
        check_eq(cuda_lines(table.stdout), [want], "the report says it")


KINDS = ["10", "1", "2", "38", "5", "4", "39", "17"]  # CUpti_ActivityKind: the eight ptprof enables
# cuptiEnableCallback(domain * 1000 + cbid): the CUDA graph node callbacks
# (resource domain 3: GRAPHNODE_CREATED 13, GRAPHNODE_CLONED 20).
CALLBACKS = ["3013", "3020"]


def window_calls(begin_push):
    """What the agent asks of CUPTI for one recording window with one op."""
    return (
        ["subscribe ok", "register"]
        + ["enable " + k for k in KINDS]
        + ["callback " + c for c in CALLBACKS]
        + [
            "push %d" % begin_push,
            "pop %d" % begin_push,
            "flush 0",
            "completed",  # the step's end: buffers handed over before its boundary
            "flush 1",
            "completed",
        ]  # the window's end: forced flush, then CUPTI let go
        + ["disable " + k for k in KINDS]
        + ["unsubscribe"]
    )


def test_cupti_held_only_while_windows_record():
    """With a stand-in CUPTI that logs each call: CUPTI is taken when a
    window begins and let go when it ends; op handles are pushed and popped
    only then; a window in which another tool holds CUPTI is yielded (and
    said so), and the next window tries again."""
    if not os.path.exists(TOOLKIT_CUDART) or not os.path.exists(FAKE_CUPTI):
        pt.skip("no CUDA toolkit at /usr/local/cuda, or no CUPTI headers at build time")
    with pt.tempdir() as out:
        log = os.path.join(out, "cupti.log")
        traces = os.path.join(out, "traces")
        run = pt.run_ptprof(
            ["run", "-o", traces, "--wait", "1", "--active", "1", "--repeat", "3", "--", CUDA_OPS, TOOLKIT_CUDART, "7"],
            env=pt.clean_env(
                LD_LIBRARY_PATH=STUB_DRIVER_DIR,
                PTPROF_CUPTI_PATH=FAKE_CUPTI,
                PTPROF_STEP="manual",
                FAKE_CUPTI_LOG=log,
                FAKE_CUPTI_BUSY="2",
            ),
        )
        check_eq(run.returncode, 0, pt.describe(run))
        with open(log) as f:
            calls = f.read().split("\n")[:-1]
        # Steps 1, 3 and 5 record (wait 1, active 1); op handles are 100 + step.
        want = window_calls(101) + ["subscribe busy"] + window_calls(105)
        check_eq(calls, want, "CUPTI calls")
        lines = cuda_lines(run.stderr)
        check_eq(len(lines), 2, "the status and the yield, once each: " + run.stderr)
        check(lines[0].startswith("ptprof: CUDA recorded with CUPTI from " + FAKE_CUPTI), "%r" % lines)
        check(
            lines[1].startswith("ptprof: CUDA not recorded in some windows: CUPTI was held by another tool"),
            "%r" % lines,
        )
        files = sorted(os.listdir(traces))
        check_eq(len(files), 3, "one file per window: %r" % files)
        said = [cuda_lines(pt.run_ptprof(["report", os.path.join(traces, f)]).stdout) for f in files]
        check_eq(said[0], [], "window 0 recorded CUDA: nothing to say")
        check(
            len(said[1]) == 1 and said[1][0].startswith("ptprof: CUDA not recorded in this window: CUPTI is held"),
            "window 1 says why: %r" % said[1],
        )
        check_eq(said[2], [], "window 2 recorded CUDA again")


def test_nothing_said_without_cuda():
    with pt.tempdir() as out:
        # A library that is not CUDA, and CUDA switched off: no line either way.
        run, table, _ = run_and_report(out, [CUDA_DLOPEN, "libm.so.6"])
        check_eq(cuda_lines(run.stderr) + cuda_lines(table.stdout), [], "no CUDA, nothing said")
    if os.path.exists(TOOLKIT_CUDART):
        with pt.tempdir() as out:
            run, table, _ = run_and_report(out, [CUDA_DLOPEN, TOOLKIT_CUDART], PTPROF_ACTIVITIES="cpu")
            check_eq(cuda_lines(run.stderr) + cuda_lines(table.stdout), [], "PTPROF_ACTIVITIES=cpu: nothing said")


if __name__ == "__main__":
    pt.main()
