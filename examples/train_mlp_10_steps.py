"""Example 2 of the torch.profiler tutorial, with the profiler code removed.

The same MLP as train_mlp.py, trained for 10 steps. The tutorial drove it with
schedule(wait=1, warmup=1, active=3, repeat=2); with ptprof the schedule is a
setting, not code:

    ptprof run --schedule wait=1,warmup=1,active=3,repeat=2 -- python examples/train_mlp_10_steps.py
    # or: PTPROF_SCHEDULE=wait=1,warmup=1,active=3,repeat=2 ptprof run -- python ...

records steps 3-5 and 8-10 (counting from 1) into two windows.

STEPS (environment) sets the number of training steps (default 10).
"""

import os

import torch
import torch.nn as nn
import torch.optim as optim
from torch.profiler import record_function


class SimpleModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = nn.Linear(784, 128)
        self.relu = nn.ReLU()
        self.linear2 = nn.Linear(128, 10)

    def forward(self, x):
        x = x.view(x.size(0), -1)  # flatten
        x = self.linear1(x)
        x = self.relu(x)
        x = self.linear2(x)
        return x


def main():
    torch.manual_seed(0)
    steps = int(os.environ.get("STEPS", "10"))
    model = SimpleModel()
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.01)
    inputs = torch.randn(64, 1, 28, 28)
    targets = torch.randint(0, 10, (64,))

    for step in range(steps):  # train 10 steps
        with record_function("model_train_step"):
            # forward
            outputs = model(inputs)
            loss = criterion(outputs, targets)
            # backward
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"Step {step + 1} done")


if __name__ == "__main__":
    main()
