"""No leak: each step allocates a torch.ones(512, 512) (1 MiB of float32),
uses it and drops it, then takes an optimizer step of a trivial model (what
ends a step). The same memory is allocated and freed in every step.

STEPS (environment) sets the number of steps (default 12).
"""

import os

import torch


def main():
    steps = int(os.environ.get("STEPS", "12"))
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    total = 0.0
    for _ in range(steps):
        scratch = torch.ones(512, 512)
        total += float(scratch.sum())
        del scratch
        optimizer.step()
    print("mem_same_each_step: %d steps, total %.0f" % (steps, total))


if __name__ == "__main__":
    main()
