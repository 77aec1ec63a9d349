"""A script that starts torch's profiler itself (with memory) in one of its
steps, and keeps one torch.ones(64, 64) in each of the others.

Prints what its own profiler saw of the torch.ones(256, 256) it made.
"""

import torch


def main():
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    kept = []
    for step in range(6):
        if step == 3:
            with torch.profiler.profile(
                activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True, record_shapes=True
            ) as prof:
                x = torch.ones(256, 256)
                y = x * 2
            ones = [e for e in prof.key_averages() if e.key == "aten::ones"]
            print(
                "own profiler: aten::ones calls %d cpu_memory %d"
                % (sum(e.count for e in ones), sum(e.cpu_memory_usage for e in ones)),
                flush=True,
            )
            del x, y
        else:
            kept.append(torch.ones(64, 64))
        optimizer.step()
    print("own_profiler: %d tensors kept" % len(kept))


if __name__ == "__main__":
    main()
