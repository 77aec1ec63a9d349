"""scripts/gpu-check.sh's comparison (scripts/gpu_check/compare.py) on canned
summaries: equal kernel counts and times within 10% pass, a count that
differs or a total time more than 10% apart fails; CUDA memory per op equal
to the byte passes, one op's Self CUDA Mem one caching-allocator block (512 B)
apart fails with the op named, no CUDA memory on torch's side fails;
unreadable input is an error; CUPTI's overhead and the step time each
profiler adds are shown (against the run without one), not judged; and the
script itself, on a machine without a GPU, stops at once and says why
(--dry-run is what runs there: scripts/test.sh); and the canned GPU report
(tests/data/gpu_check) has the keys a report written now has."""

import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptproftest as pt  # noqa: E402
from ptproftest import check, check_eq  # noqa: E402

REQUIRES = ("no_torch",)

SCRIPTS = os.path.join(pt.SOURCE_DIR, "scripts")
COMPARE = os.path.join(SCRIPTS, "gpu_check", "compare.py")
CUDA_OPS = os.path.join(pt.BUILD_DIR, "bin", "cuda_ops")
FAKE_CUPTI = os.path.join(pt.BUILD_DIR, "fake-cupti", "libcupti.so")
STUB_DRIVER_DIR = os.path.join(pt.BUILD_DIR, "stub-driver")
TOOLKIT_CUDART = "/usr/local/cuda/lib64/libcudart.so"

TORCH = {
    "kernels": {"gemm": {"count": 10, "total_us": 100.0}, "relu": {"count": 5, "total_us": 20.0}},
    "kernel_total_us": 120.0,
    "top_ops": [["aten::addmm", 100.0], ["aten::relu", 20.0]],
    "memcpy": {"Memcpy HtoD (Pageable -> Device)": {"count": 10, "bytes": 40960}},
    # Self CUDA Mem, CUDA Mem per op (workload.py's cuda_memory); aten::linear
    # allocates only through its child aten::addmm, [memory] is the frees
    # inside no op.
    "cuda_memory": {
        "aten::addmm": {"self": 1048576, "total": 1048576},
        "aten::linear": {"self": 0, "total": 1048576},
        "aten::relu": {"self": 512, "total": 512},
        "[memory]": {"self": -1049088, "total": -1049088},
    },
}

BLOCK = 512  # the caching allocator's smallest block


def ptprof_report(gemm_count=10, gemm_ns=100000, relu_self_mem=512):
    """A `ptprof report --format json` with what compare.py reads."""
    relu_ns = 20000
    mem = {"cpu_memory_bytes": 0, "self_cpu_memory_bytes": 0}
    return {
        "rows": [
            dict(
                mem,
                name="aten::linear",
                cuda_total_us=gemm_ns / 1000.0,
                cuda_memory_bytes=1048576,
                self_cuda_memory_bytes=0,
            ),
            dict(
                mem,
                name="aten::addmm",
                cuda_total_us=gemm_ns / 1000.0,
                cuda_memory_bytes=1048576,
                self_cuda_memory_bytes=1048576,
            ),
            dict(
                mem,
                name="aten::relu",
                cuda_total_us=20.0,
                cuda_memory_bytes=relu_self_mem,
                self_cuda_memory_bytes=relu_self_mem,
            ),
            dict(mem, name="aten::zero_", cuda_total_us=0.0, cuda_memory_bytes=0, self_cuda_memory_bytes=0),
            dict(mem, name="[memory]", cuda_total_us=0.0, cuda_memory_bytes=-1049088, self_cuda_memory_bytes=-1049088),
            dict(mem, name="gemm", cuda_total_us=gemm_ns / 1000.0, cuda_memory_bytes=0, self_cuda_memory_bytes=0),
            # Copies and sets are rows of their own too (Kineto's names): no op.
            dict(
                mem,
                name="Memcpy HtoD (Pageable -> Device)",
                cuda_total_us=5.0,
                cuda_memory_bytes=0,
                self_cuda_memory_bytes=0,
            ),
            dict(mem, name="Memset (Device)", cuda_total_us=0.01, cuda_memory_bytes=0, self_cuda_memory_bytes=0),
        ],
        "gpu": {
            "kernel_total_ns": gemm_ns + relu_ns,
            # gemm in two (grid, block) shapes: merged by name
            "kernels": [
                {"name": "gemm", "time_ns": {"count": gemm_count - 4, "total": gemm_ns - 40000}},
                {"name": "gemm", "time_ns": {"count": 4, "total": 40000}},
                {"name": "relu", "time_ns": {"count": 5, "total": relu_ns}},
            ],
            "memory_ops": [
                {
                    "name": "Memcpy HtoD (Pageable -> Device)",
                    "time_ns": {"count": 10, "total": 5000},
                    "bytes": {"count": 10, "total": 40960},
                },
                {"name": "Memset (Device)", "time_ns": {"count": 1, "total": 10}, "bytes": {"count": 1, "total": 4}},
            ],
        },
    }


def compare(tmp, report, torch_summary=None, timing=None):
    t = os.path.join(tmp, "torch.json")
    p = os.path.join(tmp, "ptprof.json")
    with open(t, "w") as f:
        json.dump(TORCH if torch_summary is None else torch_summary, f)
    with open(p, "w") as f:
        json.dump(report, f)
    args = [sys.executable, COMPARE, "mlp", t, p]
    if timing is not None:
        args.append(os.path.join(tmp, "timing.json"))
        with open(args[-1], "w") as f:
            json.dump(timing, f)
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def test_equal_runs_pass():
    with pt.tempdir() as tmp:
        r = compare(tmp, ptprof_report())
        check_eq(r.returncode, 0, "equal counts and times: " + r.stdout + r.stderr)
        check("MISMATCH" not in r.stdout, r.stdout)
        check(
            any(line.startswith("gemm") and line.split()[1:3] == ["10", "10"] for line in r.stdout.splitlines()),
            "kernels side by side: " + r.stdout,
        )
        check("total kernel time: torch 120.0 us, ptprof 120.0 us (0.0% apart)" in r.stdout, r.stdout)
        check(
            "Memcpy HtoD (Pageable -> Device) torch     10        40960 | ptprof     10        40960" in r.stdout,
            r.stdout,
        )
        check("aten::addmm" in r.stdout, "top ops listed")
        check("| Memcpy" not in r.stdout and "Memset" not in r.stdout, "copies and sets are no top ops: " + r.stdout)


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


def test_cuda_memory_equal_to_the_byte_passes():
    with pt.tempdir() as tmp:
        r = compare(tmp, ptprof_report())
        check_eq(r.returncode, 0, r.stdout + r.stderr)
        check(
            "== mlp: CUDA memory per op (Self CUDA Mem, CUDA Mem; bytes; top 10 by absolute bytes)" in r.stdout,
            r.stdout,
        )
        section = r.stdout.split("CUDA memory per op", 1)[-1].splitlines()
        rows = {line.split()[0]: line.split()[1:] for line in section if line.startswith(("aten::", "[memory]"))}
        check_eq(rows.get("[memory]"), ["-1049088"] * 4, "frees inside no op: " + r.stdout)
        check_eq(rows.get("aten::linear"), ["0", "0", "1048576", "1048576"], "CUDA Mem with children: " + r.stdout)
        check_eq(rows.get("aten::relu"), ["512"] * 4, r.stdout)
        check("aten::zero_" not in rows, "ops without CUDA memory are left out: " + r.stdout)
        # the largest first: [memory] (1049088 B) before addmm and linear (1048576 B) before relu
        check_eq(list(rows), ["[memory]", "aten::addmm", "aten::linear", "aten::relu"], r.stdout)
        check("total Self CUDA Mem over 4 ops: torch 0 B, ptprof 0 B" in r.stdout, r.stdout)


def test_cuda_memory_one_block_apart_fails_naming_the_op():
    with pt.tempdir() as tmp:
        r = compare(tmp, ptprof_report(relu_self_mem=512 + BLOCK))
        check_eq(r.returncode, 1, r.stdout)
        check(
            "MISMATCH: mlp: op 'aten::relu': Self CUDA Mem 512 B under torch.profiler, 1024 B under ptprof "
            "(must be equal)" in r.stdout,
            r.stdout,
        )
        check(
            any(
                line.startswith("aten::relu") and line.endswith("<-- Self CUDA Mem differs")
                for line in r.stdout.splitlines()
            ),
            r.stdout,
        )
        check_eq(sum(line.startswith("MISMATCH") for line in r.stdout.splitlines()), 1, "only relu: " + r.stdout)


def test_cuda_memory_missing_on_one_side_fails():
    with pt.tempdir() as tmp:
        # ptprof recorded no CUDA memory (the report has no CUDA Mem columns): every op differs
        report = ptprof_report()
        for row in report["rows"]:
            del row["cuda_memory_bytes"], row["self_cuda_memory_bytes"]
        r = compare(tmp, report)
        check_eq(r.returncode, 1, r.stdout)
        check(
            "MISMATCH: mlp: op 'aten::addmm': Self CUDA Mem 1048576 B under torch.profiler, 0 B under ptprof"
            in r.stdout,
            r.stdout,
        )
        # torch.profiler recorded none: the check cannot pass on nothing
        r = compare(tmp, ptprof_report(), dict(TORCH, cuda_memory={}))
        check_eq(r.returncode, 1, r.stdout)
        check("MISMATCH: mlp: torch.profiler recorded no CUDA memory" in r.stdout, r.stdout)


def test_overhead_and_step_time_are_shown_not_judged():
    with pt.tempdir() as tmp:
        report = ptprof_report()
        report["gpu"]["overheads"] = [{"name": "Overhead CUPTI buffer flush", "time_ns": {"count": 2, "total": 30000}}]
        report["ptprof_cost"] = {"added_ms": 0.5, "ops": 1000, "op_ns": 400.0, "records": 100, "record_ns": 1000.0}
        timing = {
            "none": {"steps": 20, "warmup": 3, "step_ms": 2.0},
            "torch.profiler": {"steps": 20, "warmup": 3, "step_ms": 5.0},
            "ptprof": {"steps": 20, "warmup": 3, "step_ms": 2.5},
        }
        r = compare(tmp, report, timing=timing)
        check_eq(r.returncode, 0, r.stdout + r.stderr)
        lines = r.stdout.splitlines()
        check("torch   none recorded" in lines, "torch recorded no overhead: " + r.stdout)
        check("ptprof  30.0 us in 2 records (Overhead CUPTI buffer flush 2/30.0)" in lines, r.stdout)
        check(
            any(line.startswith("torch.profiler") and line.endswith("added +3.000 ms (+150.0%)") for line in lines),
            "torch.profiler's added step time: " + r.stdout,
        )
        check(
            any(line.startswith("ptprof ") and line.endswith("added +0.500 ms (+25.0%)") for line in lines),
            "ptprof's added step time: " + r.stdout,
        )
        check(
            "ptprof's own estimate of its cost: 0.500 ms over the run (1000 ops x 400.0 ns, 100 records x 1000.0 "
            "ns), 0.0250 ms a step" in lines,
            r.stdout,
        )
        # Far slower under ptprof: shown, still no mismatch (no timing threshold).
        r = compare(tmp, report, timing=dict(timing, ptprof={"steps": 20, "warmup": 3, "step_ms": 20.0}))
        check_eq(r.returncode, 0, r.stdout)
        r = compare(tmp, report)
        check("not measured (no timing file)" in r.stdout, "without a timing file: " + r.stdout)


def test_unreadable_input_is_an_error():
    with pt.tempdir() as tmp:
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w") as f:
            f.write("{not json")
        r = subprocess.run(
            [sys.executable, COMPARE, "mlp", bad, bad],
            capture_output=True,
            text=True,
            timeout=60,
        )
        check_eq(r.returncode, 2, r.stderr)
        check("cannot read the inputs" in r.stderr, r.stderr)


def test_canned_report_has_the_format_ptprof_writes():
    """The dry run (scripts/test.sh, after the wheel) fails when the canned
    GPU report's keys drift from what `ptprof report --format json` writes;
    this finds it in the suite: a report of a real run through the agent,
    launcher and stand-in CUPTI (no torch) must have the canned report's
    top-level keys, and its rows only columns the canned report has."""
    if not os.path.exists(TOOLKIT_CUDART) or not os.path.exists(FAKE_CUPTI):
        pt.skip("no CUDA toolkit at /usr/local/cuda, or no CUPTI headers at build time")
    with open(os.path.join(pt.SOURCE_DIR, "tests", "data", "gpu_check", "mlp.ptprof.json")) as f:
        canned = json.load(f)
    with pt.tempdir() as out:
        traces = os.path.join(out, "traces")
        run = pt.run_ptprof(
            ["run", "-o", traces, "--", CUDA_OPS, TOOLKIT_CUDART, "2"],
            env=pt.clean_env(
                LD_LIBRARY_PATH=STUB_DRIVER_DIR, PTPROF_CUPTI_PATH=FAKE_CUPTI, PTPROF_STEP="manual", FAKE_CUPTI_OPS="1"
            ),
        )
        check_eq(run.returncode, 0, pt.describe(run))
        real = pt.report_json(traces)
    check("gpu" in real, "the stand-in CUPTI's kernels are in the report: %r" % sorted(real))
    # A report without CUDA activity lacks only dry_run.CUDA_ONLY_KEYS; this one has them.
    check_eq(
        sorted(set(real) ^ set(canned)),
        [],
        "top-level keys only one of the real and the canned report has (if the change is meant: "
        "python3 tests/data/gpu_check/make_canned.py build-gpu-check/out/mlp.ptprof.json)",
    )
    canned_cols = {c["key"] for c in canned["columns"]}
    real_cols = {c["key"] for c in real["columns"]}
    check_eq(sorted(real_cols - canned_cols), [], "columns the canned report lacks")
    check_eq(sorted(set(real["gpu"]) ^ set(canned["gpu"])), [], "gpu keys only one of the two has")


def test_script_stops_early_without_gpu():
    if shutil.which("nvidia-smi"):
        pt.skip("nvidia-smi is here: the script would run for real")
    r = subprocess.run(
        ["bash", os.path.join(SCRIPTS, "gpu-check.sh")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    check(r.returncode != 0, "fails without a GPU")
    check("gpu-check: no NVIDIA GPU: nvidia-smi/libcuda not found" in r.stderr, r.stderr)
    check("installing" not in r.stdout and "building" not in r.stdout, "stops before installing: " + r.stdout)


if __name__ == "__main__":
    pt.main()
