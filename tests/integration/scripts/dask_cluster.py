"""A local Dask cluster as a user would start one: a scheduler and two worker
processes (distributed.LocalCluster). Prints the scheduler's address and the
workers' pids on one line, and keeps the cluster until standard input closes.
Refuses to run where ptprof can be imported: the test that starts it checks
that the workers get ptprof's functions by value."""

import os
import sys


def main():
    from distributed import Client, LocalCluster

    try:
        import ptprof  # noqa: F401

        sys.exit("ptprof is importable here: the test would not see the functions sent by value")
    except ImportError:
        pass
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    client = Client(cluster)
    client.wait_for_workers(2)
    print(cluster.scheduler_address, *sorted(client.run(os.getpid).values()), flush=True)
    sys.stdin.read()
    client.close()
    cluster.close()


if __name__ == "__main__":  # the workers are processes started by spawn, which imports this file
    main()
