"""One step allocates a 256 MiB tensor (torch.zeros(64, 1024, 1024), float32)
and frees it within the step; the other steps allocate a few KiB. The peak of
torch's allocated total is 256 MiB plus what the small steps keep live.

STEPS (environment) sets the number of steps (default 4); the big tensor is
made in step BIG_STEP (default 2).
"""

import os

import torch


def main():
    steps = int(os.environ.get("STEPS", "4"))
    big_step = int(os.environ.get("BIG_STEP", "2"))
    model = torch.nn.Linear(16, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 16)
    for step in range(steps):
        loss = model(x).sum()
        if step == big_step:
            big = torch.zeros(64, 1024, 1024)
            value = float(big[0, 0, 0])  # a view and .item(): no allocation while `big` lives
            del big
            loss = loss + value
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print("mem_big_step: %d steps" % steps)


if __name__ == "__main__":
    main()
