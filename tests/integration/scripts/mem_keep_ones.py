"""A leak: each step keeps one torch.ones(512, 512) (1 MiB of float32) in a
list that is never cleared, then takes an optimizer step of a trivial model
(what ends a step for ptprof and torch.profiler's wrapper alike).

STEPS (environment) sets the number of steps (default 12).
"""

import os

import torch


def main():
    steps = int(os.environ.get("STEPS", "12"))
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    kept = []
    for _ in range(steps):
        kept.append(torch.ones(512, 512))
        optimizer.step()
    print("mem_keep_ones: %d steps, %d tensors kept" % (steps, len(kept)))


if __name__ == "__main__":
    main()
