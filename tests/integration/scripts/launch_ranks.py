"""Starts NPROC ranks of a script on this host as torchrun would set them up
(MASTER_ADDR, MASTER_PORT, RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE),
for a torch whose torchrun cannot run: launch_ranks.py NPROC script [args...].
Exits non-zero when a rank does."""

import os
import socket
import subprocess
import sys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    n = int(sys.argv[1])
    port = free_port()
    procs = []
    for rank in range(n):
        env = dict(
            os.environ,
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
            RANK=str(rank),
            LOCAL_RANK=str(rank),
            WORLD_SIZE=str(n),
            LOCAL_WORLD_SIZE=str(n),
        )
        procs.append(subprocess.Popen([sys.executable] + sys.argv[2:], env=env))
    codes = [p.wait() for p in procs]
    sys.exit(max(codes))


if __name__ == "__main__":
    main()
