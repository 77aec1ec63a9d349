"""The memory snapshot workload of scripts/gpu-check.sh (issue #26): an MLP
trained on the GPU for a few steps, with a tensor kept each step (so the
snapshot's segments hold live blocks at the end).

    python snapshot_workload.py [--steps N] [--torch-snapshot OUT.pickle]

With --torch-snapshot, torch's own recorder runs from before the first CUDA
allocation (torch.cuda.memory._record_memory_history) and its snapshot is
dumped at the end (_dump_snapshot): what ptprof's `memory --snapshot` of the
same script run under `ptprof run --profile-memory` is compared with
(snapshot_check.py).
"""

import argparse

import torch
import torch.nn as nn
import torch.optim as optim


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--torch-snapshot")
    args = ap.parse_args()
    if args.torch_snapshot:
        torch.cuda.memory._record_memory_history(max_entries=1000000)
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 10)).to(dev)
    opt = optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 512, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    kept = []
    for _ in range(args.steps):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        kept.append(torch.ones(256, 256, device=dev))
    torch.cuda.synchronize()
    if args.torch_snapshot:
        torch.cuda.memory._dump_snapshot(args.torch_snapshot)
        torch.cuda.memory._record_memory_history(enabled=None)
    print("snapshot_workload: %d steps, %d tensors kept" % (args.steps, len(kept)))


if __name__ == "__main__":
    main()
