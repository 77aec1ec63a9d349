"""A job with no steps at all (no optimizer, no ptprof.step()): it runs aten
ops until DIR/stop exists, having written its pid to DIR/ready after its
first ops. Under --on-demand only a trigger by time can record it, and only
a window that ends at its time, not at a step boundary, ever ends."""

import os
import sys
import time

import torch


def main():
    d = sys.argv[1]
    a = torch.randn(32, 32)
    b = torch.randn(32, 32)
    first = True
    deadline = time.time() + 300
    while not os.path.exists(os.path.join(d, "stop")) and time.time() < deadline:
        a = torch.tanh(torch.mm(a, b))
        if first:
            with open(os.path.join(d, "ready.tmp"), "w") as f:
                f.write(str(os.getpid()))
            os.rename(os.path.join(d, "ready.tmp"), os.path.join(d, "ready"))
            first = False
        time.sleep(0.001)
    print("done")


if __name__ == "__main__":
    main()
