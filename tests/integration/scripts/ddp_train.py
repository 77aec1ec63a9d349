"""A tiny DistributedDataParallel training on the CPU with gloo. STEPS
(default 6) optimizer steps of a small MLP; every step's backward
all-reduces the gradients.

    ddp_train.py             one rank, configured by the environment as
                             torchrun configures it (RANK, WORLD_SIZE,
                             MASTER_ADDR, MASTER_PORT)
    ddp_train.py spawn N     N ranks started by torch.multiprocessing.spawn,
                             each passing its rank to init_process_group (no
                             RANK in any environment)

SLEEP_RANK and SLEEP_S make that rank sleep SLEEP_S seconds before each
backward: it reaches every step's all-reduce last, while the all-reduce
evens out the ranks' step times."""

import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def train(steps):
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(8, 16)
    y = torch.randn(8, 4)
    late = str(dist.get_rank()) == os.environ.get("SLEEP_RANK")
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        if late:
            time.sleep(float(os.environ["SLEEP_S"]))
        loss.backward()
        optimizer.step()
    dist.barrier()
    dist.destroy_process_group()


def finish(rank):
    print("rank %s done" % rank, flush=True)
    # Skip the interpreter's teardown: gloo's threads, destroyed there, can
    # abort a rank that has finished ("terminate called without an active
    # exception", seen once in a loaded run; pytorch/pytorch#190489). ptprof
    # loses nothing at os._exit (test_fault_injection).
    os._exit(0)


def spawned_rank(rank, world_size, port, steps):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=world_size)
    train(steps)
    finish(rank)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    steps = int(os.environ.get("STEPS", "6"))
    if sys.argv[1:2] == ["spawn"]:
        import torch.multiprocessing as mp

        world_size = int(sys.argv[2])
        mp.spawn(spawned_rank, args=(world_size, free_port(), steps), nprocs=world_size)
        return
    dist.init_process_group("gloo")
    train(steps)
    finish(os.environ["RANK"])


if __name__ == "__main__":
    main()
