"""Device properties from the driver into `ptprof export --chrome`, through
the real agent, launcher and export: the stand-in driver
(tests/programs/cuda/stub_cuda_driver.cpp, <build>/tests/stub-cuda/driver)
answers the agent's device questions, the stand-in CUPTI (FAKE_CUPTI_OPS=1)
gives each op a kernel (grid 4, block 128). Each window's export has the
header's deviceProperties and Kineto's occupancy args on its kernels; a
driver the program has not initialised gives none, silently; with a GPU
replay's plan the stand-in driver answers with the plan's devices."""

import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptproftest as pt  # noqa: E402
from ptproftest import check, check_eq  # noqa: E402

REQUIRES = ("no_torch",)

CUDA_OPS = os.path.join(pt.BUILD_DIR, "bin", "cuda_ops")
FAKE_CUPTI = os.path.join(pt.BUILD_DIR, "fake-cupti", "libcupti.so")
STUB_DRIVER_DIR = os.path.join(pt.BUILD_DIR, "tests", "stub-cuda", "driver")
TOOLKIT_CUDART = "/usr/local/cuda/lib64/libcudart.so"
KERNEL = "fake_gemm(float*)"
DEVICE_MARK = "ptprof: CUDA device "
# The stand-in driver's own device (no plan): an A100's figures.
STUB_DEVICE = {
    "id": 0,
    "name": "ptprof stub GPU",
    "totalGlobalMem": 85899345920,
    "computeMajor": 8,
    "computeMinor": 0,
    "maxThreadsPerBlock": 1024,
    "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536,
    "regsPerMultiprocessor": 65536,
    "warpSize": 32,
    "sharedMemPerBlock": 49152,
    "sharedMemPerMultiprocessor": 167936,
    "numSms": 108,
    "sharedMemPerBlockOptin": 166912,
    "reservedSharedMemPerBlock": 1024,
}
KINETO_KEYS = [k for k in STUB_DEVICE if k != "reservedSharedMemPerBlock"]


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def needs_stand_ins():
    for path in (TOOLKIT_CUDART, FAKE_CUPTI, os.path.join(STUB_DRIVER_DIR, "libcuda.so.1")):
        if not os.path.exists(path):
            pt.skip("%s missing (no CUDA toolkit, or no CUPTI headers at build time)" % path)


def run_ops(out, windows, **env):
    traces = os.path.join(out, "traces")
    run = pt.run_ptprof(
        ["run", "-o", traces, "--wait", "0", "--active", "2", "--repeat", str(windows), "--"]
        + [CUDA_OPS, TOOLKIT_CUDART, str(2 * windows)],
        env=pt.clean_env(
            LD_LIBRARY_PATH=STUB_DRIVER_DIR,
            PTPROF_CUPTI_PATH=FAKE_CUPTI,
            PTPROF_STEP="manual",
            FAKE_CUPTI_OPS="1",
            **env,
        ),
    )
    check_eq(run.returncode, 0, pt.describe(run))
    files = sorted(os.path.join(traces, f) for f in os.listdir(traces)) if os.path.isdir(traces) else []
    check_eq(len(files), windows, "one trace file a window: %r" % files)
    return run, files


def export(trace, out):
    proc = pt.run_ptprof(["export", trace, "--chrome", out])
    check_eq(proc.returncode, 0, pt.describe(proc))
    with open(out) as f:
        return json.load(f)


def test_each_window_has_the_device_and_kernels_their_occupancy():
    needs_stand_ins()
    with pt.tempdir() as out:
        run, files = run_ops(out, 2)
        check(DEVICE_MARK not in run.stderr and "device propert" not in run.stderr, "nothing said: " + run.stderr)
        for i, trace in enumerate(files):
            doc = export(trace, os.path.join(out, "w%d.json" % i))
            check_eq(doc.get("deviceProperties"), [STUB_DEVICE], "window %d: the driver's device" % i)
            if doc.get("deviceProperties"):
                check_eq(
                    list(doc["deviceProperties"][0])[: len(KINETO_KEYS)], KINETO_KEYS, "Kineto's keys, in its order"
                )
            kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
            check_eq([e["name"] for e in kernels], [KERNEL, KERNEL], "window %d: its ops' kernels" % i)
            for k in kernels:
                a = k["args"]
                # Kineto's arithmetic: 4 blocks over 108 SMs, 128 threads a block,
                # in float; 16 blocks could be active, 0.037 are: 0 %.
                check_eq(f32(a.get("blocks per SM", -1)), f32(f32(4.0) / f32(108.0)), "blocks per SM: %r" % a)
                check_eq(f32(a.get("warps per SM", -1)), f32(f32(f32(4.0) / f32(108.0)) * 128 / 32), "warps per SM")
                check_eq(a.get("est. achieved occupancy %"), 0, "occupancy %r" % a)
            check(
                not any(e.get("name", "").startswith(DEVICE_MARK) for e in doc["traceEvents"]),
                "window %d: the device marks are not events of the program" % i,
            )
            report = pt.report_json(trace)
            notes = (report.get("gpu") or {}).get("notes", [])
            check(not any(n.startswith(DEVICE_MARK) for n in notes), "no device mark among the notes: %r" % notes)
            check(
                not any(r["name"].startswith(DEVICE_MARK) for r in report["rows"]),
                "no device mark among the rows",
            )
            page = os.path.join(out, "w%d.html" % i)
            html = pt.run_ptprof(["report", trace, "--html", page])
            check_eq(html.returncode, 0, pt.describe(html))
            with open(page, encoding="utf-8") as f:
                check(DEVICE_MARK not in f.read(), "window %d: no device mark on the page's timeline" % i)


def test_a_driver_not_initialised_says_nothing():
    """Without cuInit the driver answers CUDA_ERROR_NOT_INITIALIZED: no
    device properties, no occupancy, nothing on stderr, the run unharmed."""
    needs_stand_ins()
    with pt.tempdir() as out:
        run, files = run_ops(out, 1, STUB_CUDA_NEEDS_INIT="1")
        check("device" not in run.stderr.lower(), "nothing said: " + run.stderr)
        if files:
            doc = export(files[0], os.path.join(out, "w.json"))
            check_eq(doc.get("deviceProperties"), [], "no device described")
            kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
            check_eq(len(kernels), 2, "the kernels are there all the same")
            check(all("blocks per SM" not in k["args"] for k in kernels), "no occupancy without the device")


def test_a_replay_plan_names_the_devices():
    """With $PTPROF_REPLAY_PLAN the stand-in driver is the recorded run's
    GPUs: the export's deviceProperties are the trace's (the reserved shared
    memory, which Kineto's header lacks, as the driver gives it)."""
    needs_stand_ins()
    with pt.tempdir() as out:
        recorded = [
            dict(STUB_DEVICE, id=0, name="NVIDIA A100-PG509-200", totalGlobalMem=42297524224),
            dict(STUB_DEVICE, id=1, name="NVIDIA A100-PG509-200", totalGlobalMem=42297524224),
        ]
        plan = os.path.join(out, "plan.tsv")
        with open(plan, "w") as f:
            f.write("ptprof-replay-plan\t1\n")
            for d in recorded:
                entry = {k: v for k, v in d.items() if k != "reservedSharedMemPerBlock"}
                f.write("device\t%d\t%s\n" % (d["id"], json.dumps(entry)))
        run, files = run_ops(out, 1, PTPROF_REPLAY_PLAN=plan)
        if files:
            doc = export(files[0], os.path.join(out, "w.json"))
            check_eq(doc.get("deviceProperties"), recorded, "the plan's devices")


if __name__ == "__main__":
    pt.main()
