"""A small convolutional network trained with Adam.

Conv2d + BatchNorm2d + ReLU + MaxPool2d + Linear on tiny random images
(batch 4, 3x16x16): a different set of operators from the MLP examples
(convolution, batch norm, pooling, Adam's foreach/elementwise updates).

    ptprof run -- python examples/train_conv_bn_adam.py

STEPS (environment) sets the number of training steps (default 10).
"""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class SmallConvNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(16 * 4 * 4, num_classes)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))  # 8 x 8 x 8
        x = self.pool(F.relu(self.bn2(self.conv2(x))))  # 16 x 4 x 4
        x = torch.flatten(x, 1)
        return self.fc(x)


def main():
    torch.manual_seed(0)
    steps = int(os.environ.get("STEPS", "10"))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = SmallConvNet().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    model.train()

    for _ in range(steps):
        inputs = torch.randn(4, 3, 16, 16, device=device)
        targets = torch.randint(0, 10, (4,), device=device)
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
    print(f"train_conv_bn_adam: {steps} steps on {device}, final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
