"""Example 1 of the torch.profiler tutorial, with the profiler code removed.

An MLP (784-128-10) trained with SGD on random MNIST-shaped data. Profile it
with no change:

    ptprof run -- python examples/train_mlp.py
    ptprof report ptprof-out/

STEPS (environment) sets the number of training steps (default 5).
"""

import os

import torch
import torch.nn as nn
import torch.optim as optim
from torch.profiler import record_function


# A simple model
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
    steps = int(os.environ.get("STEPS", "5"))
    model = SimpleModel()
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.01)
    # Random input data and targets
    inputs = torch.randn(64, 1, 28, 28)
    targets = torch.randint(0, 10, (64,))

    for _ in range(steps):
        with record_function("model_train"):
            # forward
            outputs = model(inputs)
            loss = criterion(outputs, targets)
            # backward
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    print(f"train_mlp: {steps} steps, final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
