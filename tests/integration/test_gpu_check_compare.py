"""scripts/gpu-check.sh's comparison (scripts/gpu_check/compare.py) on canned
summaries: equal kernel counts and times within 10% pass, a count that
differs or a total time more than 10% apart fails, unreadable input is an
error; and the script itself, on a machine without a GPU, stops at once and
says why."""

import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptproftest as pt  # noqa: E402
from ptproftest import check, check_eq  # noqa: E402

SCRIPTS = os.path.join(pt.SOURCE_DIR, "scripts")
COMPARE = os.path.join(SCRIPTS, "gpu_check", "compare.py")

TORCH = {
    "kernels": {"gemm": {"count": 10, "total_us": 100.0}, "relu": {"count": 5, "total_us": 20.0}},
    "kernel_total_us": 120.0,
    "top_ops": [["aten::addmm", 100.0], ["aten::relu", 20.0]],
    "memcpy": {"Memcpy HtoD": {"count": 10, "bytes": 40960}},
}


def ptprof_report(gemm_count=10, gemm_ns=100000):
    """A `ptprof report --format json` with what compare.py reads."""
    relu_ns = 20000
    return {
        "rows": [{"name": "aten::addmm", "cuda_total_us": gemm_ns / 1000.0},
                 {"name": "aten::relu", "cuda_total_us": 20.0},
                 {"name": "gemm", "cuda_total_us": gemm_ns / 1000.0}],
        "gpu": {
            "kernel_total_ns": gemm_ns + relu_ns,
            # gemm in two (grid, block) shapes: merged by name
            "kernels": [{"name": "gemm", "time_ns": {"count": gemm_count - 4, "total": gemm_ns - 40000}},
                        {"name": "gemm", "time_ns": {"count": 4, "total": 40000}},
                        {"name": "relu", "time_ns": {"count": 5, "total": relu_ns}}],
            "memory_ops": [{"name": "Memcpy HtoD", "time_ns": {"count": 10, "total": 5000},
                            "bytes": {"count": 10, "total": 40960}},
                           {"name": "Memset", "time_ns": {"count": 1, "total": 10}, "bytes": {"count": 1, "total": 4}}],
        },
    }


def compare(tmp, report):
    t = os.path.join(tmp, "torch.json")
    p = os.path.join(tmp, "ptprof.json")
    with open(t, "w") as f:
        json.dump(TORCH, f)
    with open(p, "w") as f:
        json.dump(report, f)
    return subprocess.run([sys.executable, COMPARE, "mlp", t, p], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=60)


def test_equal_runs_pass():
    with pt.tempdir() as tmp:
        r = compare(tmp, ptprof_report())
        check_eq(r.returncode, 0, "equal counts and times: " + r.stdout + r.stderr)
        check("MISMATCH" not in r.stdout, r.stdout)
        check(any(line.startswith("gemm") and line.split()[1:3] == ["10", "10"] for line in r.stdout.splitlines()),
              "kernels side by side: " + r.stdout)
        check("total kernel time: torch 120.0 us, ptprof 120.0 us (0.0% apart)" in r.stdout, r.stdout)
        check("Memcpy HtoD          torch     10        40960 | ptprof     10        40960" in r.stdout, r.stdout)
        check("aten::addmm" in r.stdout, "top ops listed")


def test_count_difference_fails():
    with pt.tempdir() as tmp:
        r = compare(tmp, ptprof_report(gemm_count=9))
        check_eq(r.returncode, 1, r.stdout)
        check("MISMATCH: mlp: kernel 'gemm': 10 instances under torch.profiler, 9 under ptprof" in r.stdout, r.stdout)


def test_time_tolerance_is_ten_percent():
    with pt.tempdir() as tmp:
        r = compare(tmp, ptprof_report(gemm_ns=108000))  # 128 us against 120: 6.7% apart
        check_eq(r.returncode, 0, "within 10%: " + r.stdout)
        r = compare(tmp, ptprof_report(gemm_ns=114000))  # 134 us against 120: 11.7% apart
        check_eq(r.returncode, 1, "beyond 10%: " + r.stdout)
        check("more than 10% apart" in r.stdout, r.stdout)


def test_unreadable_input_is_an_error():
    with pt.tempdir() as tmp:
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w") as f:
            f.write("{not json")
        r = subprocess.run([sys.executable, COMPARE, "mlp", bad, bad], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60)
        check_eq(r.returncode, 2, r.stderr)
        check("cannot read the inputs" in r.stderr, r.stderr)


def test_script_stops_early_without_gpu():
    if shutil.which("nvidia-smi"):
        pt.skip("nvidia-smi is here: the script would run for real")
    r = subprocess.run(["bash", os.path.join(SCRIPTS, "gpu-check.sh")], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    check(r.returncode != 0, "fails without a GPU")
    check("gpu-check: no NVIDIA GPU: nvidia-smi/libcuda not found" in r.stderr, r.stderr)
    check("building" not in r.stdout, "stops before building: " + r.stdout)


if __name__ == "__main__":
    pt.main()
