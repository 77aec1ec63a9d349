"""A tiny DistributedDataParallel training on the CPU with gloo: one rank of
it, configured by the environment as torchrun configures it (RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT). STEPS (default 6) optimizer steps of a
small MLP; every step's backward all-reduces the gradients."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    steps = int(os.environ.get("STEPS", "6"))
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(8, 16)
    y = torch.randn(8, 4)
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    dist.barrier()
    dist.destroy_process_group()
    print("rank %s done" % os.environ["RANK"], flush=True)
    # Skip the interpreter's teardown: gloo's threads, destroyed there, can
    # abort a rank that has finished ("terminate called without an active
    # exception", seen once in a loaded run; pytorch/pytorch#190489). ptprof
    # loses nothing at os._exit (test_fault_injection).
    os._exit(0)


if __name__ == "__main__":
    main()
