"""A 60-step training job for on-demand capture. After PAUSE_AT optimizer
steps (in step PAUSE_AT) it writes its pid to DIR/paused and waits for
DIR/go, so that a test triggers at a known step rather than at a time."""
import os
import sys
import time

import torch

STEPS = 60
PAUSE_AT = 20


def main():
    d = sys.argv[1]
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(8, 16)
    for step in range(STEPS):
        if step == PAUSE_AT:
            with open(os.path.join(d, "paused.tmp"), "w") as f:
                f.write(str(os.getpid()))
            os.rename(os.path.join(d, "paused.tmp"), os.path.join(d, "paused"))
            deadline = time.time() + 300
            while not os.path.exists(os.path.join(d, "go")) and time.time() < deadline:
                time.sleep(0.01)
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
    print("done")


if __name__ == "__main__":
    main()
