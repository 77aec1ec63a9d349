"""A block allocated before the window and freed inside it: step 0 keeps a
torch.ones(256, 1024) (1 MiB of float32), step FREE_STEP (default 3) frees it
inside a record_function scope "drop_keep"; each step trains a small model
(allocations of its own in every step), and its optimizer step ends the step
for ptprof and torch.profiler's wrapper alike.

STEPS (environment) sets the number of steps (default 6).
"""

import os

import torch


def main():
    steps = int(os.environ.get("STEPS", "6"))
    free_step = int(os.environ.get("FREE_STEP", "3"))
    model = torch.nn.Linear(16, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 16)
    keep = None
    for step in range(steps):
        if step == 0:
            keep = torch.ones(256, 1024)
        if step == free_step:
            with torch.autograd.profiler.record_function("drop_keep"):
                del keep
        loss = model(x).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print("mem_free_before_window: %d steps, the kept block freed in step %d" % (steps, free_step))


if __name__ == "__main__":
    main()
