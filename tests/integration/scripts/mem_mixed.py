"""Allocation patterns for the per-op memory comparison with torch.profiler:
in-place and out-of-place ops, views (no allocation), concatenation, a
temporary freed inside its producer's caller, a tensor kept across steps and
freed two steps later, and a record_function scope around some of it.

STEPS (environment) sets the number of steps (default 6).
"""

import os

import torch
from torch.profiler import record_function


def main():
    steps = int(os.environ.get("STEPS", "6"))
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 8))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(16, 32)
    history = []
    for step in range(steps):
        with record_function("prepare"):
            y = torch.cat([x, x * 2.0], dim=0)
            z = y.view(-1, 32)[:16].clone()
            z.add_(1.0)
            history.append(torch.empty(100, 37).fill_(float(step)))
            if len(history) > 2:
                history.pop(0)  # the block of two steps ago is freed here
        loss = model(z).pow(2).mean() + history[-1].sum() * 0.0
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print("mem_mixed: %d steps" % steps)


if __name__ == "__main__":
    main()
