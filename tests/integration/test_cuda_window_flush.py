"""GPU work still running when a window's CPU side ends lands in that window,
through the real agent, launcher and report: the stand-in CUPTI (built by
the tests; FAKE_CUPTI_OPS=1) gives each op one kernel and one HtoD copy, and
keeps the kernel of the window's last op running until the forced flush the
agent makes after the window's end (after a 500 ms wait, the device
synchronization's stand-in). The launcher must hold the window for the
agent's GpuFlushed: the kernel is then in the window, attributed to its op,
and nothing is late."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptproftest as pt  # noqa: E402
from ptproftest import check, check_eq  # noqa: E402

REQUIRES = ("no_torch",)

CUDA_OPS = os.path.join(pt.BUILD_DIR, "bin", "cuda_ops")
FAKE_CUPTI = os.path.join(pt.BUILD_DIR, "fake-cupti", "libcupti.so")
STUB_DRIVER_DIR = os.path.join(pt.BUILD_DIR, "stub-driver")
TOOLKIT_CUDART = "/usr/local/cuda/lib64/libcudart.so"
KERNEL = "fake_gemm(float*)"


def test_running_kernel_lands_in_its_window():
    if not os.path.exists(TOOLKIT_CUDART) or not os.path.exists(FAKE_CUPTI):
        pt.skip("no CUDA toolkit at /usr/local/cuda, or no CUPTI headers at build time")
    with pt.tempdir() as out:
        traces = os.path.join(out, "traces")
        # Step 0 waits, steps 1 and 2 record (op handles 101 and 102); the
        # kernel of op 102 is still running when step 2 ends the window.
        run = pt.run_ptprof(
            ["run", "-o", traces, "--wait", "1", "--active", "2", "--repeat", "1", "--", CUDA_OPS, TOOLKIT_CUDART, "4"],
            env=pt.clean_env(
                LD_LIBRARY_PATH=STUB_DRIVER_DIR,
                PTPROF_CUPTI_PATH=FAKE_CUPTI,
                PTPROF_STEP="manual",
                FAKE_CUPTI_OPS="1",
                FAKE_CUPTI_PENDING="102",
                FAKE_CUPTI_FORCED_DELAY_MS="500",
            ),
        )
        check_eq(run.returncode, 0, pt.describe(run))
        files = sorted(os.listdir(traces))
        check_eq(len(files), 1, "one window: %r" % files)
        trace = os.path.join(traces, files[0])

        info = pt.run_ptprof(["info", trace])
        check_eq(info.returncode, 0, pt.describe(info))

        late = re.search(r"late_events (\d+)", info.stdout)
        check(late is not None and late.group(1) == "0", "no late events: " + info.stdout)

        report = pt.report_json(trace)
        check_eq(report["losses"].get("late_events"), 0, "no late events in the report: %r" % report["losses"])
        gpu = report.get("gpu") or {}
        check_eq(
            (gpu.get("matched"), gpu.get("unmatched_kernels"), gpu.get("unmatched_memory_ops")),
            (4, 0, 0),
            "two kernels and two copies, each joined to its op by correlation",
        )
        kernels = gpu.get("kernels", [])
        check_eq([k["name"] for k in kernels], [KERNEL], "the kernel summary")
        if kernels:
            k = kernels[0]
            check_eq((k["grid"], k["block"], k["time_ns"]["count"]), ([4, 1, 1], [128, 1, 1], 2), "grid, block, count")
            # GPU times go through the CUPTI -> session clock fit: a few ns of rounding.
            check(abs(k["time_ns"]["min"] - 5000) <= 5, "the finished kernel's 5 us: %r" % k)
            check(k["time_ns"]["max"] >= 500_000_000, "the kernel that ran past the window's end: %r" % k)
            check_eq(gpu["kernel_total_ns"], k["time_ns"]["total"], "kernel time total")
        copies = gpu.get("memory_ops", [])
        check_eq(
            [m["name"] for m in copies], ["Memcpy HtoD (Pageable -> Device)"], "the memcpy summary (Kineto's name)"
        )
        if copies:
            m = copies[0]
            check_eq((m["time_ns"]["count"], m["bytes"]["total"]), (2, 8192), "copies and bytes")
            check(abs(m["time_ns"]["total"] - 4000) <= 5, "2 us each: %r" % m)
        rows = {r["name"]: r for r in report["rows"]}
        op = rows.get("aten::fake")
        check(op is not None and op["calls"] == 2, "both ops recorded: %r" % sorted(rows))
        if op and kernels and copies:
            # torch's semantics: an op's CUDA time is its kernels' and copies' GPU time.
            want_us = (kernels[0]["time_ns"]["total"] + copies[0]["time_ns"]["total"]) / 1000.0
            check(
                abs(op["self_cuda_us"] - want_us) < 0.01,
                "the op's Self CUDA %r, want %r" % (op["self_cuda_us"], want_us),
            )
            check(abs(op["cuda_total_us"] - want_us) < 0.01, "the op's CUDA total %r" % op["cuda_total_us"])


def test_back_to_back_windows():
    """Window 1 begins at the step that ends window 0, so CUPTI stays on
    across the boundary: the kernel still running at window 0's end is
    window 0's, window 1's work is window 1's, each joined to its op."""
    if not os.path.exists(TOOLKIT_CUDART) or not os.path.exists(FAKE_CUPTI):
        pt.skip("no CUDA toolkit at /usr/local/cuda, or no CUPTI headers at build time")
    with pt.tempdir() as out:
        traces = os.path.join(out, "traces")
        run = pt.run_ptprof(
            ["run", "-o", traces, "--wait", "0", "--active", "1", "--repeat", "2", "--", CUDA_OPS, TOOLKIT_CUDART, "2"],
            env=pt.clean_env(
                LD_LIBRARY_PATH=STUB_DRIVER_DIR,
                PTPROF_CUPTI_PATH=FAKE_CUPTI,
                PTPROF_STEP="manual",
                FAKE_CUPTI_OPS="1",
                FAKE_CUPTI_PENDING="100",
                FAKE_CUPTI_FORCED_DELAY_MS="500",
            ),
        )
        check_eq(run.returncode, 0, pt.describe(run))
        files = sorted(os.listdir(traces))
        check_eq(len(files), 2, "two windows: %r" % files)
        for i, f in enumerate(files):
            report = pt.report_json(os.path.join(traces, f))
            check_eq(report["losses"].get("late_events"), 0, "window %d: no late events" % i)
            gpu = report.get("gpu") or {}
            check_eq(
                (gpu.get("matched"), gpu.get("unmatched_kernels")), (2, 0), "window %d: kernel and copy joined" % i
            )
            kernels = gpu.get("kernels", [])
            check_eq([(k["name"], k["time_ns"]["count"]) for k in kernels], [(KERNEL, 1)], "window %d's kernel" % i)
            if kernels and i == 0:
                check(kernels[0]["time_ns"]["min"] >= 500_000_000, "window 0 has the kernel that ran past its end")
            if kernels and i == 1:
                check(abs(kernels[0]["time_ns"]["min"] - 5000) <= 5, "window 1 has its own 5 us kernel")


def test_capture_range_records_kernels_and_memory():
    """PTPROF_STEP=cudaProfilerApi, CUDA loaded before the first range:
    each cudaProfilerStart..Stop range is a window in which CUPTI collects
    (the op's kernel and copy, joined to it) and torch's memory events are
    recorded; the op before the first range is in no window."""
    if not os.path.exists(TOOLKIT_CUDART) or not os.path.exists(FAKE_CUPTI):
        pt.skip("no CUDA toolkit at /usr/local/cuda, or no CUPTI headers at build time")
    with pt.tempdir() as out:
        traces = os.path.join(out, "traces")
        log = os.path.join(out, "cupti.log")
        # Op 100 runs before any range; ops 101 and 102 each in a range of their own.
        run = pt.run_ptprof(
            ["run", "-o", traces, "--profile-memory", "--", CUDA_OPS, TOOLKIT_CUDART, "3", "capture"],
            env=pt.clean_env(
                LD_LIBRARY_PATH=STUB_DRIVER_DIR,
                PTPROF_CUPTI_PATH=FAKE_CUPTI,
                PTPROF_STEP="cudaProfilerApi",
                FAKE_CUPTI_OPS="1",
                FAKE_CUPTI_LOG=log,
            ),
        )
        check_eq(run.returncode, 0, pt.describe(run))
        calls = open(log).read().split("\n")[:-1] if os.path.exists(log) else []
        check_eq(
            [c for c in calls if c.startswith("push")],
            ["push 101", "push 102"],
            "the ops inside ranges, and only they, are correlated: %r" % calls,
        )
        check_eq(calls.count("subscribe ok"), 2, "CUPTI taken for each range: %r" % calls)
        files = sorted(os.listdir(traces))
        check_eq(len(files), 2, "one window per range: %r" % files)
        for i, f in enumerate(files):
            report = pt.report_json(os.path.join(traces, f))
            gpu = report.get("gpu") or {}
            check_eq(
                (gpu.get("matched"), gpu.get("unmatched_kernels")),
                (2, 0),
                "window %d: its op's kernel and copy, joined" % i,
            )
            kernels = gpu.get("kernels", [])
            check_eq([(k["name"], k["time_ns"]["count"]) for k in kernels], [(KERNEL, 1)], "window %d's kernel" % i)
            rows = {r["name"]: r for r in report["rows"]}
            op = rows.get("aten::fake")
            check(op is not None and op["calls"] == 1, "window %d: its op: %r" % (i, sorted(rows)))
            check_eq(op and op.get("cuda_memory_bytes"), 4096, "window %d: the op's CUDA allocation: %r" % (i, op))


if __name__ == "__main__":
    pt.main()
