"""Forks while other threads run operators (issue #28): each child runs an
operator and exits; a child that does not exit within CHILD_TIMEOUT seconds
is stuck (a lock another thread held at the fork) and is killed.
Prints "forks=N hangs=H" and exits 1 when a child hung.
    fork_from_threads.py [forks] [threads]
"""

import os
import signal
import sys
import threading
import time

import torch

CHILD_TIMEOUT = 10.0


def worker(stop):
    x = torch.ones(256)
    while not stop.is_set():
        y = (x + 1) * 2
        torch.mm(x.view(16, 16), x.view(16, 16)).sum()  # not randn: torch's generator lock is not fork-safe
        del y


def wait_child(pid):
    deadline = time.monotonic() + CHILD_TIMEOUT
    while time.monotonic() < deadline:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return True
        time.sleep(0.005)
    if os.environ.get("PTPROF_FORK_GDB"):  # a file: the stuck child's threads, for whoever debugs a hang
        import subprocess

        with open(os.environ["PTPROF_FORK_GDB"], "a") as out:
            subprocess.run(
                ["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt"],
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=120,
            )
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return False


def main():
    forks = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    nthreads = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    stop = threading.Event()
    threads = [threading.Thread(target=worker, args=(stop,)) for _ in range(nthreads)]
    for t in threads:
        t.start()
    hangs = 0
    for _ in range(forks):
        time.sleep(0.002)
        pid = os.fork()
        if pid == 0:
            (torch.ones(64) + 1).sum()
            torch.zeros(128).add_(1)
            os._exit(0)
        if not wait_child(pid):
            hangs += 1
    stop.set()
    for t in threads:
        t.join()
    print("forks=%d hangs=%d" % (forks, hangs), flush=True)
    sys.exit(1 if hangs else 0)


if __name__ == "__main__":
    main()
