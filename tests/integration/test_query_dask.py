"""`ptprof query DATASET --report --dask SCHEDULER_ADDRESS` (#22 item 3): the
report's sections as a Dask job on a local cluster of two worker processes
equal the one-machine DuckDB ones, table for table, on a dataset of several
partitions (130 synthetic ranks: three rank buckets of one run).

The cluster is started here as a user's would be (a scheduler and two
worker processes, distributed.LocalCluster) in an interpreter that cannot
import ptprof: the workers get ptprof's map and reduce functions by value.
Needs the analysis Python with pyarrow, duckdb and dask[distributed]
(scripts/setup.sh puts them in .venv).
"""

import json
import os
import subprocess

import dataset_check as D
import ptproftest as T

REQUIRES = ("no_torch",)

RANKS = 130  # rank buckets of 64: 0, 1 and 2
EVENTS_PER_RANK = 5000

# Starts the cluster, prints its address and its workers' pids, and keeps it
# until its standard input closes.
CLUSTER = r"""
import os, sys
from distributed import Client, LocalCluster
try:
    import ptprof
    sys.exit("ptprof is importable here: the test would not see the functions sent by value")
except ImportError:
    pass
cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
client = Client(cluster)
client.wait_for_workers(2)
pids = sorted(client.run(os.getpid).values())
print(cluster.scheduler_address, *pids, flush=True)
sys.stdin.read()
client.close()
cluster.close()
"""


def need_dask():
    D.need_pyarrow()
    probe = subprocess.run(
        [D.analysis_python(), "-c", "import distributed, cloudpickle"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if probe.returncode != 0:
        T.skip("no dask[distributed] in %s (scripts/setup.sh puts it in .venv)" % D.analysis_python())


def synthetic_dataset(d):
    traces = os.path.join(d, "traces")
    os.makedirs(traces)
    gen = os.path.join(os.environ["PTPROF_BUILD_DIR"], "bin", "rank_trace_gen")
    T.check_eq(T.run([gen, traces, str(RANKS), str(EVENTS_PER_RANK), "--numbered"]).returncode, 0, "rank_trace_gen")
    ds = os.path.join(d, "ds")
    proc = D.export(traces, ds)
    T.check_eq(proc.returncode, 0, "ptprof export --parquet\n" + T.describe(proc))
    buckets = sorted(os.listdir(os.path.join(ds, "ops", "run=unknown")))
    T.check_eq(buckets, ["rank_bucket=0", "rank_bucket=1", "rank_bucket=2"], "the dataset's partitions")
    return ds


def start_cluster(d):
    env = T.clean_env(PYTHONPATH=None)
    proc = subprocess.Popen(
        [D.analysis_python(), "-c", CLUSTER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=open(os.path.join(d, "cluster.log"), "w"),
        text=True,
        env=env,
        cwd=d,
    )
    line = proc.stdout.readline().split()
    if len(line) != 3:
        proc.kill()
        proc.wait()
        with open(os.path.join(d, "cluster.log")) as f:
            raise AssertionError("the local Dask cluster did not start:\n" + f.read()[-4000:])
    return proc, line[0], [int(p) for p in line[1:]]


def test_dask_report_equals_duckdb_and_errors_say_why():
    need_dask()
    with T.tempdir() as d:
        ds = synthetic_dataset(d)
        local = D.query_report(ds)
        T.check(
            len(local.get("rows", [])) > 0
            and len(local.get("stragglers", [])) > 0
            and len(local.get("collective_arrivals", [])) > 0,
            "DuckDB's sections are not empty: %r" % {k: len(v) for k, v in local.items()},
        )
        # DuckDB's sections are the report's, on these ranks too (the ranks'
        # processes, op and collective totals, steps; every field).
        rep = T.report_json(os.path.join(d, "traces"))
        for key in ("steps", "ranks", "stragglers", "collective_arrivals"):
            T.check(
                local.get(key) == rep[key],
                "%s: DuckDB's rows equal the report's (first difference: %r)"
                % (key, next((p for p in zip(local.get(key, []), rep[key]) if p[0] != p[1]), None)),
            )
        # What the SQL reads instead of the 650,000 op rows is their sums.
        D.check_rollups(ds)
        cluster, address, pids = start_cluster(d)
        try:
            T.check(
                len(set(pids)) == 2 and os.getpid() not in pids and cluster.pid not in pids,
                "two worker processes of their own: %r" % pids,
            )
            proc = D.query(ds, "--report", "--format", "json", "--dask", address)
            T.check_eq(proc.returncode, 0, "ptprof query --dask\n" + T.describe(proc))
            T.check(
                "3 partitions" in proc.stderr and "(2 workers)" in proc.stderr,
                "it says what it gave the cluster: %r" % proc.stderr,
            )
            on_dask = json.loads(proc.stdout) if proc.returncode == 0 else {}
            for key in ("rows", "steps", "ranks", "stragglers", "collective_arrivals"):
                T.check_eq(len(on_dask.get(key, [])), len(local[key]), "%s: rows on Dask and on DuckDB" % key)
                T.check(
                    on_dask.get(key) == local[key],
                    "%s: Dask's rows equal DuckDB's (first difference: %r)"
                    % (key, next((p for p in zip(on_dask.get(key, []), local[key]) if p[0] != p[1]), None)),
                )
            # A table the same either way.
            proc = D.query(ds, "--report", "--dask", address)
            T.check_eq(proc.returncode, 0, "ptprof query --dask (table)\n" + T.describe(proc))
            T.check("Operators (ptprof/dataset/sql/operators.{map,reduce}.sql)" in proc.stdout, proc.stdout[:2000])
        finally:
            cluster.stdin.close()
            cluster.wait(timeout=120)
        check_errors(ds)


def check_errors(ds):
    proc = D.query(ds, "--sql", "SELECT 1", "--dask", "tcp://127.0.0.1:9")
    T.check_eq(proc.returncode, 2, "--dask with --sql: a usage error\n" + T.describe(proc))
    T.check("--report" in proc.stderr, proc.stderr)
    proc = D.query(ds, "--report", "--dask", "tcp://127.0.0.1:9")  # nothing listens on the discard port
    T.check_eq(proc.returncode, 1, "an unreachable scheduler\n" + T.describe(proc))
    T.check("could not reach the Dask scheduler at tcp://127.0.0.1:9" in proc.stderr, proc.stderr)


if __name__ == "__main__":
    T.main()
