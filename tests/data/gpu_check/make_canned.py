"""Writes the canned GPU outputs of scripts/gpu-check.sh --dry-run: what
the MLP of examples/train_mlp.py (20 steps, batch 64) would give on a GPU
under torch.profiler and under ptprof. The numbers are made up (no GPU run
has made them) but agree as compare.py requires: the same kernel instance
counts, total kernel time 2.3% apart, the same Self CUDA Mem per op.

    python make_canned.py SKELETON_REPORT.json [OUT_DIR]

SKELETON_REPORT.json: a `ptprof report --format json` of a real run (the
dry run's build-gpu-check/out/mlp.ptprof.json): its keys, its columns and
the order of both are kept, so that the canned report has the format
ptprof writes; only the rows, the CUDA columns and the gpu section are
filled in here. Run it again when the dry run says a format drifted.
"""

import copy
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 20
GEMM = "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize64x64x32_cublas"
RELU = "void at::native::vectorized_elementwise_kernel<4, at::native::clamp_min_scalar_kernel_cuda>"
RELU_BW = "void at::native::vectorized_elementwise_kernel<4, at::native::threshold_kernel_impl<float>>"
SOFTMAX = "void at::native::cunn_SoftMaxForward<4, float, float, float, LogSoftMaxForwardEpilogue>"
SOFTMAX_BW = "void at::native::cunn_SoftMaxBackward<4, float, float, float, LogSoftMaxBackwardEpilogue>"
NLL = "void at::native::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>"
NLL_BW = "void at::native::nll_loss_backward_reduce_cuda_kernel_2d<float, long>"
SUM = "void at::native::reduce_kernel<128, 4, at::native::ReduceOp<float, sum_functor<float, float, float>>>"
SGD = "void at::native::multi_tensor_apply_kernel<TensorListMetadata<2>, BinaryOpListAlphaFunctor<float, 2, 2, 0>>"

# kernel: (instances, torch's total us, ptprof's total us, grid, block)
KERNELS = {
    GEMM: (100, 412.0, 420.5, [2, 1, 1], [128, 1, 1]),
    RELU: (20, 38.2, 39.0, [64, 1, 1], [128, 1, 1]),
    RELU_BW: (20, 41.6, 42.1, [64, 1, 1], [128, 1, 1]),
    SOFTMAX: (20, 36.0, 36.9, [64, 1, 1], [32, 1, 1]),
    SOFTMAX_BW: (20, 35.1, 35.8, [64, 1, 1], [32, 1, 1]),
    NLL: (20, 44.3, 45.0, [1, 1, 1], [32, 1, 1]),
    NLL_BW: (20, 30.5, 31.2, [1, 1, 1], [32, 1, 1]),
    SUM: (40, 88.8, 91.0, [1, 1, 1], [128, 1, 1]),
    SGD: (20, 61.4, 62.7, [4, 1, 1], [512, 1, 1]),
}
# copy (Kineto's name): (copies, bytes, torch's total us, ptprof's total us): x and y every step
# (from pageable host tensors), the loss at the end (.item(), into pageable memory)
MEMCPY = {
    "Memcpy HtoD (Pageable -> Device)": (2 * STEPS, STEPS * (64 * 784 * 4 + 64 * 8), 251.0, 252.4),
    "Memcpy DtoH (Device -> Pageable)": (1, 4, 2.1, 2.2),
}
# op: (calls, CUDA total us (ptprof), Self CUDA Mem, CUDA Mem)
X_BYTES, Y_BYTES, HIDDEN, OUT = 64 * 784 * 4, 512, 64 * 128 * 4, 64 * 10 * 4
OPS = {
    "aten::linear": (2 * STEPS, 176.0, 0, STEPS * (HIDDEN + OUT)),
    "aten::addmm": (2 * STEPS, 176.0, STEPS * (HIDDEN + OUT), STEPS * (HIDDEN + OUT)),
    "aten::mm": (
        3 * STEPS,
        244.5,
        STEPS * (HIDDEN + 128 * 10 * 4 + 784 * 128 * 4),
        STEPS * (HIDDEN + 128 * 10 * 4 + 784 * 128 * 4),
    ),
    "aten::relu": (STEPS, 39.0, 0, STEPS * HIDDEN),
    "aten::clamp_min": (STEPS, 39.0, STEPS * HIDDEN, STEPS * HIDDEN),
    "aten::threshold_backward": (STEPS, 42.1, STEPS * HIDDEN, STEPS * HIDDEN),
    "aten::cross_entropy_loss": (STEPS, 81.9, 0, STEPS * (OUT + 512)),
    "aten::_log_softmax": (STEPS, 36.9, STEPS * OUT, STEPS * OUT),
    "aten::nll_loss_forward": (STEPS, 45.0, STEPS * 512, STEPS * 512),
    "aten::sum": (2 * STEPS, 91.0, STEPS * 1024, STEPS * 1024),
    "aten::_foreach_add_": (STEPS, 62.7, 0, 0),
    "aten::to": (2 * STEPS + 1, 254.6, 0, STEPS * (X_BYTES + Y_BYTES)),
    "aten::_to_copy": (2 * STEPS + 1, 254.6, 0, STEPS * (X_BYTES + Y_BYTES)),
    "aten::empty_strided": (2 * STEPS + 1, 0.0, STEPS * (X_BYTES + Y_BYTES), STEPS * (X_BYTES + Y_BYTES)),
    "[memory]": (
        0,
        0.0,
        -STEPS * (X_BYTES + Y_BYTES + 2 * HIDDEN + OUT),
        -STEPS * (X_BYTES + Y_BYTES + 2 * HIDDEN + OUT),
    ),
}
TORCH_TOP = [
    ["aten::to", 253.1],
    ["aten::_to_copy", 253.1],
    ["aten::mm", 240.2],
    ["aten::linear", 172.4],
    ["aten::addmm", 172.4],
    ["aten::sum", 88.8],
    ["aten::cross_entropy_loss", 80.3],
    ["aten::_foreach_add_", 61.4],
    ["aten::nll_loss_forward", 44.3],
    ["aten::threshold_backward", 41.6],
]


def torch_summary():
    return {
        "kernels": {k: {"count": n, "total_us": t} for k, (n, t, _, _, _) in KERNELS.items()},
        "kernel_total_us": round(sum(t for _, t, _, _, _ in KERNELS.values()), 3),
        "top_ops": TORCH_TOP,
        "memcpy": {k: {"count": n, "bytes": b} for k, (n, b, _, _) in MEMCPY.items()},
        "cuda_memory": {op: {"self": s, "total": t} for op, (_, _, s, t) in OPS.items() if s or t},
        "overheads": {"Activity Buffer Request": {"count": 1, "total_us": 402.0}},
    }


def dist(values_total, count):
    avg = values_total / count if count else 0.0
    return {
        "count": count,
        "total": int(values_total),
        "avg": round(avg, 3),
        "med": round(avg, 3),
        "min": int(avg * 0.9),
        "max": int(avg * 1.2),
        "stddev": round(avg * 0.05, 3),
    }


def cuda_columns(columns):
    """The skeleton's columns with the CUDA ones where ptprof puts them
    (analysis/src/report/report_columns.cpp)."""
    keys = [c["key"] for c in columns]
    cuda_time = [
        {"title": "Self CUDA", "key": "self_cuda_us"},
        {"title": "Self CUDA %", "key": "self_cuda_pct"},
        {"title": "CUDA total", "key": "cuda_total_us"},
        {"title": "CUDA time avg", "key": "cuda_time_avg_us"},
    ]
    cuda_mem = [
        {"title": "CUDA Mem", "key": "cuda_memory_bytes"},
        {"title": "Self CUDA Mem", "key": "self_cuda_memory_bytes"},
    ]
    out = columns[: keys.index("cpu_time_avg_us") + 1] + cuda_time
    out += columns[keys.index("cpu_time_avg_us") + 1 : keys.index("self_cpu_memory_bytes") + 1] + cuda_mem
    return out + columns[keys.index("self_cpu_memory_bytes") + 1 :]


def rows(columns, self_cuda_total_us):
    def row(name, calls, cuda_us, self_cuda_us, self_mem, mem):
        v = {
            "name": name,
            "self_cpu_pct": 1.0,
            "self_cpu_us": 10.0 * max(calls, 1),
            "cpu_total_pct": 2.0,
            "cpu_total_us": 25.0 * max(calls, 1),
            "cpu_time_avg_us": 25.0,
            "self_cuda_us": self_cuda_us,
            "self_cuda_pct": round(100.0 * self_cuda_us / self_cuda_total_us, 2),
            "cuda_total_us": cuda_us,
            "cuda_time_avg_us": round(cuda_us / calls, 3) if calls else 0.0,
            "cpu_memory_bytes": 0,
            "self_cpu_memory_bytes": 0,
            "cuda_memory_bytes": mem,
            "self_cuda_memory_bytes": self_mem,
            "calls": calls,
        }
        return {c["key"]: v[c["key"]] for c in columns}

    out = [row(op, n, us, 0.0, s, t) for op, (n, us, s, t) in OPS.items()]
    # The GPU work as rows of its own, as torch's table has them (compare.py leaves them out of the top ops).
    out += [row(k, n, p, p, 0, 0) for k, (n, _, p, _, _) in KERNELS.items()]
    out += [row(k, n, p, p, 0, 0) for k, (n, _, _, p) in MEMCPY.items()]
    return sorted(out, key=lambda r: -r["cpu_total_us"])


def ptprof_report(skeleton):
    report = copy.deepcopy(skeleton)
    kernel_ns = sum(int(p * 1000) for _, _, p, _, _ in KERNELS.values())
    self_cuda_total_us = (kernel_ns + sum(int(p * 1000) for _, _, _, p in MEMCPY.values())) / 1000.0
    report["files"] = ["ptprof-out/gpu.1234.0a1b2c3d.w000.bin"]
    report["drops"] = []
    for p in report.get("processes", []):
        p.update(host="gpu", pid=1234, ppid=1233, cmdline="python scripts/gpu_check/workload.py --model mlp")
    report["steps"] = [
        {"step": s, "pid": 1234, "tid": 1234, "wall_us": 450.0, "operators_us": 310.0} for s in range(STEPS)
    ]
    report["phases"]["steps"] = []
    report["ptprof_cost"].update(
        added_ms=0.152,
        share=0.0169,
        recorded_ms=9.0,
        ops=800,
        op_ns=190.0,
        records=60,
        record_ns=17.0,
        uncalibrated_events=0,
    )
    columns = cuda_columns(skeleton["columns"])
    ordered = {}
    for key, value in report.items():  # self_cuda_time_total_us follows self_cpu_time_total_us, as ptprof writes it
        ordered[key] = value
        if key == "self_cpu_time_total_us":
            ordered["self_cuda_time_total_us"] = self_cuda_total_us
    ordered["columns"] = columns
    ordered["rows"] = rows(columns, self_cuda_total_us)
    gpu = ordered["gpu"]
    gpu.update(
        notes=[],
        kernel_total_ns=kernel_ns,
        matched=sum(v[0] for v in KERNELS.values()) + 41,
        unmatched_kernels=0,
        unmatched_kernel_ns=0,
        unmatched_memory_ops=0,
        graph_nodes=[],
        graph_work=0,
        graph_work_outside=0,
        graphs=[],
        devices=[{"pid": 1234, "device": 0, "busy_ns": kernel_ns + 254600, "span_ns": 9000000}],
        steps=[],
    )
    gpu["kernels"] = [
        {"name": k, "grid": g, "block": b, "time_ns": dist(p * 1000, n)} for k, (n, _, p, g, b) in KERNELS.items()
    ]
    gpu["memory_ops"] = [
        {"name": k, "time_ns": dist(p * 1000, n), "bytes": dist(b, n)} for k, (n, b, _, p) in MEMCPY.items()
    ]
    gpu["overheads"] = [{"name": "Overhead activity buffer request", "time_ns": dist(388000, 1)}]
    return ordered


def main(argv):
    if len(argv) not in (2, 3):
        sys.stderr.write(__doc__)
        return 2
    out_dir = argv[2] if len(argv) == 3 else HERE
    with open(argv[1]) as f:
        skeleton = json.load(f)
    timing = {
        "none": {"steps": STEPS, "warmup": 3, "step_ms": 0.4213},
        "torch.profiler": {"steps": STEPS, "warmup": 3, "step_ms": 0.9587},
        "ptprof": {"steps": STEPS, "warmup": 3, "step_ms": 0.4795},
    }
    for name, data in (
        ("mlp.torch.json", torch_summary()),
        ("mlp.ptprof.json", ptprof_report(skeleton)),
        ("mlp.timing.json", timing),
    ):
        with open(os.path.join(out_dir, name), "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
