"""A small LSTM sequence classifier with gradient clipping and AdamW.

Embedding + LSTM + Linear on random token sequences (batch 4, length 12),
with torch.nn.utils.clip_grad_norm_ before each optimizer step: recurrent
operators, clipping's norm/mul, and AdamW.

    ptprof run -- python examples/train_lstm_clip.py

STEPS (environment) sets the number of training steps (default 10).
"""

import os

import torch
import torch.nn as nn
import torch.optim as optim


class SmallLSTM(nn.Module):
    def __init__(self, vocab=50, embed=16, hidden=32, num_classes=5):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=1, batch_first=True)
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, tokens):
        x = self.embedding(tokens)
        out, _ = self.lstm(x)
        return self.head(out[:, -1, :])


def main():
    torch.manual_seed(0)
    steps = int(os.environ.get("STEPS", "10"))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = SmallLSTM().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)

    for _ in range(steps):
        tokens = torch.randint(0, 50, (4, 12), device=device)
        targets = torch.randint(0, 5, (4,), device=device)
        optimizer.zero_grad()
        loss = criterion(model(tokens), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
    print(f"train_lstm_clip: {steps} steps on {device}, final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
