"""Example 3 of the torch.profiler tutorial, with the profiler code removed.

The MLP of train_mlp.py with each phase of a step marked by
torch.profiler.record_function. record_function is an annotation, not
profiler set-up: it costs almost nothing when nothing profiles, and ptprof
records its ranges as torch.profiler does (user_annotation):

    ptprof run -- python examples/train_mlp_ranges.py
    ptprof report ptprof-out/

STEPS (environment) sets the number of training steps (default 5).
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
    steps = int(os.environ.get("STEPS", "5"))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = SimpleModel().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.01)

    for _ in range(steps):
        with record_function("data_loading"):  # stands in for loading a batch
            inputs = torch.randn(64, 1, 28, 28).to(device)
            targets = torch.randint(0, 10, (64,)).to(device)
        with record_function("forward_pass"):
            outputs = model(inputs)
        with record_function("loss_calculation"):
            loss = criterion(outputs, targets)
        with record_function("backward_pass"):
            optimizer.zero_grad()
            loss.backward()
        with record_function("optimizer_step"):
            optimizer.step()
    print(f"train_mlp_ranges: {steps} steps on {device}, final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
