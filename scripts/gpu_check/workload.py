"""The CUDA training loops scripts/gpu-check.sh profiles: the MLP of
examples/train_mlp.py and a small conv net, on `cuda`.

    python workload.py --model mlp|conv [--steps N] [--torch-profiler OUT.json]

Plain, it just trains (run it under `ptprof run --profile-memory`). With
--torch-profiler it trains under torch.profiler (CPU and CUDA activity,
profile_memory=True, the whole run) and writes what gpu-check compares, as JSON:
    {"kernels": {name: {"count": n, "total_us": t}}, "kernel_total_us": t,
     "top_ops": [[name, cuda_total_us], ...10], "memcpy": {kind: {"count": n, "bytes": b}},
     "cuda_memory": {op name: {"self": Self CUDA Mem, "total": CUDA Mem}}  (ops with either non-zero)}
profile_memory adds only host-side work at each allocation and free (CUPTI
times the kernels on the GPU), so the kernel counts and times compared
alongside are not skewed by it and no separate run is needed.
"""
import argparse
import gzip
import json
import os
import sys
import tempfile

import torch
import torch.nn as nn
import torch.optim as optim

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def train(model_name, steps):
    torch.manual_seed(0)
    dev = torch.device("cuda")
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
    for _ in range(steps):
        x, y = inputs.to(dev), targets.to(dev)  # host-to-device copies every step
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    torch.cuda.synchronize()
    return loss.item()


def summarize(prof, trace_path):
    opener = gzip.open if trace_path.endswith(".gz") else open
    with opener(trace_path, "rt") as f:
        events = json.load(f)["traceEvents"]
    kernels, memcpy = {}, {}
    for e in events:
        cat = e.get("cat", "")
        if cat == "kernel":
            k = kernels.setdefault(e["name"], {"count": 0, "total_us": 0.0})
            k["count"] += 1
            k["total_us"] += float(e.get("dur", 0))
        elif cat == "gpu_memcpy":
            kind = " ".join(e["name"].split()[:2])  # "Memcpy HtoD (Pageable -> Device)" -> "Memcpy HtoD"
            m = memcpy.setdefault(kind, {"count": 0, "bytes": 0})
            m["count"] += 1
            m["bytes"] += int(e.get("args", {}).get("bytes", 0))
    cpu_names = {x.name for x in prof.events() if x.device_type.name == "CPU"}
    ops = [(e.key, e.device_time_total) for e in prof.key_averages()
           if e.device_time_total > 0 and e.key in cpu_names]
    ops.sort(key=lambda kv: -kv[1])
    return {"kernels": kernels, "kernel_total_us": sum(k["total_us"] for k in kernels.values()),
            "top_ops": [[k, v] for k, v in ops[:10]], "memcpy": memcpy, "cuda_memory": cuda_memory(prof)}


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["mlp", "conv"], required=True)
    ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "5")))
    ap.add_argument("--torch-profiler", metavar="OUT_JSON")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("workload: torch.cuda.is_available() is false")
    if not a.torch_profiler:
        print("workload %s: final loss %.4f" % (a.model, train(a.model, a.steps)))
        return
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True) as prof:
        train(a.model, a.steps)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        summary = summarize(prof, path)
    with open(a.torch_profiler, "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
