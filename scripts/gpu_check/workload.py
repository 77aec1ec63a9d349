"""The training loops scripts/gpu-check.sh profiles: the MLP of
examples/train_mlp.py and a small conv net, on `cuda` (`cpu` for the dry run).

    python workload.py --model mlp|conv [--device cuda|cpu] [--steps N]
                       [--torch-profiler OUT.json] [--timing FILE --run NAME]

Plain, it just trains (run it under `ptprof run --profile-memory`). With
--torch-profiler it trains under torch.profiler (CPU activity, and CUDA's on
`cuda`; profile_memory=True, the whole run) and writes what gpu-check
compares, as JSON:
    {"kernels": {name: {"count": n, "total_us": t}}, "kernel_total_us": t,
     "top_ops": [[name, cuda_total_us], ...10], "memcpy": {kind: {"count": n, "bytes": b}},
     "cuda_memory": {op name: {"self": Self CUDA Mem, "total": CUDA Mem}}  (ops with either non-zero),
     "overheads": {CUPTI overhead kind: {"count": n, "total_us": t}}  (empty when torch records none)}
profile_memory adds only host-side work at each allocation and free (CUPTI
times the kernels on the GPU), so the kernel counts and times compared
alongside are not skewed by it and no separate run is needed.

With --timing, the mean wall time of a step after the first `warmup` steps
(the device synchronized before and after them) is added to FILE under
NAME: {NAME: {"steps": n, "warmup": w, "step_ms": t}}, so that one file
holds the run without a profiler and those under each profiler.
"""

import argparse
import gzip
import json
import os
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.optim as optim

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def train(model_name, device, steps, warmup):
    """Trains; returns (final loss, mean ms of a step after `warmup` steps)."""
    torch.manual_seed(0)
    dev = torch.device(device)
    if model_name == "mlp":
        from train_mlp import SimpleModel

        model = SimpleModel().to(dev)
        inputs = torch.randn(64, 1, 28, 28)
    else:
        model = ConvNet().to(dev)
        inputs = torch.randn(32, 3, 32, 32)
    targets = torch.randint(0, 10, (inputs.shape[0],))
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.01)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    start = None
    for step in range(steps):
        if step == warmup:
            sync()
            start = time.perf_counter()
        x, y = inputs.to(dev), targets.to(dev)  # host-to-device copies every step
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    sync()
    measured = steps - warmup
    return loss.item(), (time.perf_counter() - start) * 1000.0 / measured


def summarize(prof, trace_path):
    opener = gzip.open if trace_path.endswith(".gz") else open
    with opener(trace_path, "rt") as f:
        events = json.load(f)["traceEvents"]
    kernels, memcpy, overheads = {}, {}, {}
    for e in events:
        cat = e.get("cat", "")
        if cat.lower() == "overhead":  # CUPTI's own time (kineto's OVERHEAD activity), when recorded
            o = overheads.setdefault(e["name"], {"count": 0, "total_us": 0.0})
            o["count"] += 1
            o["total_us"] += float(e.get("dur", 0))
        elif cat == "kernel":
            k = kernels.setdefault(e["name"], {"count": 0, "total_us": 0.0})
            k["count"] += 1
            k["total_us"] += float(e.get("dur", 0))
        elif cat == "gpu_memcpy":
            # By Kineto's full name, "Memcpy HtoD (Pageable -> Device)": ptprof names copies alike.
            m = memcpy.setdefault(e["name"], {"count": 0, "bytes": 0})
            m["count"] += 1
            m["bytes"] += int(e.get("args", {}).get("bytes", 0))
    cpu_names = {x.name for x in prof.events() if x.device_type.name == "CPU"}
    ops = [(e.key, e.device_time_total) for e in prof.key_averages() if e.device_time_total > 0 and e.key in cpu_names]
    ops.sort(key=lambda kv: -kv[1])
    return {
        "kernels": kernels,
        "kernel_total_us": sum(k["total_us"] for k in kernels.values()),
        "top_ops": [[k, v] for k, v in ops[:10]],
        "memcpy": memcpy,
        "cuda_memory": cuda_memory(prof),
        "overheads": overheads,
    }


def cuda_memory(prof):
    """Self CUDA Mem and CUDA Mem per op name, as key_averages() has them:
    torch 2.x names them (self_)device_memory_usage, 1.x (self_)cuda_memory_usage."""
    out = {}
    for e in prof.key_averages():
        self_b = getattr(e, "self_device_memory_usage", None)
        if self_b is None:
            self_b = e.self_cuda_memory_usage
        total_b = getattr(e, "device_memory_usage", None)
        if total_b is None:
            total_b = e.cuda_memory_usage
        if self_b or total_b:
            out[e.key] = {"self": int(self_b), "total": int(total_b)}
    return out


def record_timing(path, run, steps, warmup, step_ms):
    timing = {}
    if os.path.exists(path):
        with open(path) as f:
            timing = json.load(f)
    timing[run] = {"steps": steps, "warmup": warmup, "step_ms": round(step_ms, 4)}
    with open(path, "w") as f:
        json.dump(timing, f, indent=1, sort_keys=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["mlp", "conv"], required=True)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "20")))
    ap.add_argument("--warmup", type=int, default=None, help="steps not timed (default: 5, fewer for short runs)")
    ap.add_argument("--torch-profiler", metavar="OUT_JSON")
    ap.add_argument("--timing", metavar="FILE", help="add this run's mean step time to FILE (JSON)")
    ap.add_argument("--run", default="none", help="its name in FILE: none, torch.profiler, ptprof")
    a = ap.parse_args()
    warmup = a.warmup if a.warmup is not None else min(5, a.steps - 1)
    if a.steps < 1 or not 0 <= warmup < a.steps:
        sys.exit("workload: need 0 <= warmup < steps (got %d, %d)" % (warmup, a.steps))
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("workload: torch.cuda.is_available() is false")
    if not a.torch_profiler:
        loss, step_ms = train(a.model, a.device, a.steps, warmup)
    else:
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if a.device == "cuda" else [])
        with profile(activities=activities, profile_memory=True) as prof:
            loss, step_ms = train(a.model, a.device, a.steps, warmup)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "trace.json")
            prof.export_chrome_trace(path)
            summary = summarize(prof, path)
        with open(a.torch_profiler, "w") as f:
            json.dump(summary, f, indent=1)
    if a.timing:
        record_timing(a.timing, a.run, a.steps, warmup, step_ms)
    print(
        "workload %s on %s: %d steps, final loss %.4f, %.3f ms a step after %d warm-up steps"
        % (a.model, a.device, a.steps, loss, step_ms, warmup)
    )


if __name__ == "__main__":
    main()
