"""The case where torch.profiler's own counts drift between runs.

Each step runs `t.div_(2.0)` and `t.mean()` 100 times, then the optimizer step
of a trivial model (no training: no gradients, so SGD changes nothing), which
is what ends a step for ptprof and for the test's wrappers.

`t.div_(2.0)` records aten::div_ with one child, aten::div_ (the tensor
overload), which torch.profiler and ptprof merge into one event (an event
whose only child has its own name). torch.profiler finds that parent link
from timestamps, and with a coarse clock it sometimes misses it, so its
aten::div_ count changes from run to run; nesting does not.

STEPS (environment) sets the number of steps (default 6).
"""

import os

import torch


def main():
    steps = int(os.environ.get("STEPS", "6"))
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    t = torch.ones(8)
    for _ in range(steps):
        for _ in range(100):
            t.div_(2.0)
            t.mean()
        optimizer.step()
    print("div_mean: %d steps" % steps)


if __name__ == "__main__":
    main()
