"""The CUDA graph workload of scripts/gpu-check.sh: an MLP's forward pass
captured with torch.cuda.graph at step --capture-step (after a warm-up on a
side stream, as torch's documentation does it), then replayed once a step.
Each step ends with an optimizer step (ptprof's default step rule).

    python graphs_workload.py [--steps N] [--capture-step K] [--torch-profiler OUT.json]

With --torch-profiler it captures at step 0, outside the profiler, and runs
the replays under torch.profiler (CPU and CUDA activity), then writes
{"replays": n, "kernels": k}: every kernel it recorded is a replay's, so
k / n is what ptprof's "kernels per replay" must be.
"""

import argparse
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.optim as optim


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--capture-step", type=int, default=1)
    ap.add_argument("--torch-profiler")
    args = ap.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)).to(dev)
    static_x = torch.randn(64, 256, device=dev)
    # A parameter for the step-ending optimizer step; the graph is forward only.
    dummy = torch.zeros(1, device=dev, requires_grad=True)
    dummy.grad = torch.zeros_like(dummy)
    opt = optim.SGD([dummy], lr=0.0)
    capture_step = 0 if args.torch_profiler else args.capture_step
    graph = None
    replays = 0
    prof = None
    with torch.no_grad():
        for step in range(args.steps):
            if step == capture_step:
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):
                        model(static_x)
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    model(static_x)
                torch.cuda.synchronize()
                if args.torch_profiler:
                    prof = torch.profiler.profile(
                        activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
                    )
                    prof.__enter__()
                    opt.step()
                    continue
            if graph is not None:
                static_x.normal_()
                graph.replay()
                replays += 1
            opt.step()
    torch.cuda.synchronize()
    if prof is not None:
        prof.__exit__(None, None, None)
        # Kernels as workload.py counts them: the Chrome trace's "kernel" events.
        with tempfile.TemporaryDirectory() as tmp:
            trace = os.path.join(tmp, "trace.json")
            prof.export_chrome_trace(trace)
            with open(trace) as f:
                kernels = sum(1 for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel")
        with open(args.torch_profiler, "w") as f:
            json.dump({"replays": replays, "kernels": kernels}, f)
    print("graph replays: %d" % replays)


if __name__ == "__main__":
    main()
