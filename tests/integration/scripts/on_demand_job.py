"""A 60-step training job for on-demand capture. At each pause step S given
on the command line (default 20), after S optimizer steps, it writes its pid
to DIR/paused.S and waits for DIR/go.S, so that a test triggers at a known
step rather than at a time.

    on_demand_job.py DIR [S...]
"""

import os
import sys
import time

import torch

STEPS = 60


def pause(d, step):
    with open(os.path.join(d, "paused.tmp"), "w") as f:
        f.write(str(os.getpid()))
    os.rename(os.path.join(d, "paused.tmp"), os.path.join(d, "paused.%d" % step))
    deadline = time.time() + 300
    while not os.path.exists(os.path.join(d, "go.%d" % step)) and time.time() < deadline:
        time.sleep(0.01)


def main():
    d = sys.argv[1]
    pauses = {int(s) for s in sys.argv[2:]} or {20}
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(8, 16)
    for step in range(STEPS):
        if step in pauses:
            pause(d, step)
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
    print("done")


if __name__ == "__main__":
    main()
