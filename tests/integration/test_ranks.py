"""Ranks: a 2-rank DDP training on the CPU with gloo, under one `ptprof run`.
With a torch whose torchrun runs (pip's torch 2.x) the real torchrun starts the
ranks; otherwise (Debian's 1.13: its torchrun fails on Python 3.11)
scripts/launch_ranks.py starts them with the variables torchrun sets. Then the
same with torch.multiprocessing.spawn, the rank passed to init_process_group. Each rank
gets its own file per window, named with its rank; the merged report lists
both ranks with their step times, allreduce time and a straggler table; the
exports label each process with its rank; a rank's Chrome export carries
Kineto's distributedInfo (rank, world size, backend), and Holistic Trace
Analysis (from .venv) reads a directory of the two ranks' exports as ranks 0
and 1; without HTA there the test is skipped, not passed. Last, a rank made
late to every all-reduce is named by the collective arrivals."""

import gzip
import json
import os
import re

import dataset_check as D
import export_check as X
import ptproftest as T

SCRIPTS = os.path.join(T.HERE, "scripts")
TRAIN = os.path.join(SCRIPTS, "ddp_train.py")
LAUNCH = os.path.join(SCRIPTS, "launch_ranks.py")
STEPS = 6
SCHEDULE = "wait=1,warmup=0,active=2,repeat=2"  # steps 1-2 in window 0, 4-5 in window 1
RECORDED = [1, 2, 4, 5]
ALLREDUCE = ("c10d::allreduce_", "gloo:all_reduce")
HTA_PROBE = os.path.join(T.HERE, "hta_probe.py")


def torchrun():
    """The torchrun next to PTPROF_PYTHON, else None. torch 1.x's fails on
    Python 3.11 (its elastic agent passes redirects=None), so not that one."""
    path = os.path.join(os.path.dirname(T.PYTHON), "torchrun")
    if os.environ.get("PTPROF_TORCH_VERSION", "").startswith("1."):
        return None
    return path if os.access(path, os.X_OK) else None


def launch_command():
    tr = torchrun()
    if tr:
        return [tr, "--standalone", "--nproc_per_node=2", TRAIN], "torchrun"
    return [T.PYTHON, LAUNCH, "2", TRAIN], "launch_ranks.py"


def run_ranks(out, spawn=False, **extra_env):
    cmd, how = ([T.PYTHON, TRAIN, "spawn", "2"], "torch.multiprocessing.spawn") if spawn else launch_command()
    print("ranks started by " + how, flush=True)
    env = T.clean_env(STEPS=STEPS, OMP_NUM_THREADS=1, **extra_env)
    proc = T.run_ptprof(["run", "-o", out, "--schedule", SCHEDULE, "--"] + cmd, env=env, timeout=600)
    T.check_eq(proc.returncode, 0, "ptprof run -- " + " ".join(cmd) + "\n" + T.describe(proc))
    return proc


def test_two_ranks():
    check_two_ranks(spawn=False)


def test_two_ranks_started_by_mp_spawn():
    """mp.spawn passes each rank to init_process_group; no RANK in any
    environment. Before the bootstrap told the agent the rank torch has once
    the group exists, nothing had a rank: no r<rank> files, no ranks or
    stragglers tables, no distributedInfo."""
    check_two_ranks(spawn=True)


def test_late_rank_named_by_its_collective_arrivals():
    """Rank 1 sleeps before every backward, so it reaches each step's
    all-reduce last and rank 0 waits for it inside the all-reduce: both
    ranks' steps take as long, and only when each rank *started* the
    collective names the late one. Every recorded step has one matched
    all-reduce (DDP's one gradient bucket), rank 1 last, the spread within
    20% of the sleep (the rest of a step is about a millisecond: 100 ms of
    slack for a loaded machine)."""
    sleep_s = 0.5
    with T.tempdir() as d:
        out = os.path.join(d, "out")
        run_ranks(out, SLEEP_RANK=1, SLEEP_S=sleep_s)
        rep = T.report_json(out)
        print("stragglers by step time: %s" % [(s["step"], s["slowest_rank"], s["lag_us"]) for s in rep["stragglers"]])
        rows = rep.get("collective_arrivals")
        if not T.check(rows, "the report has collective arrivals: %r" % sorted(rep)):
            return
        for r in rows:
            print("arrivals: %r" % r)
        # Step 1 also holds DDP's first-forward broadcasts (ranks arrive
        # within microseconds of each other there).
        allreduces = [r for r in rows if r["name"] in ALLREDUCE]
        T.check_eq([r["step"] for r in allreduces], RECORDED, "one matched all-reduce per recorded step")
        for r in allreduces:
            T.check_eq((r["ranks"], r["names_agree"]), (2, True), "step %d: both ranks' all-reduce matched" % r["step"])
            T.check_eq(r["last_rank"], 1, "step %d: the last to arrive" % r["step"])
            T.check(
                abs(r["spread_us"] - sleep_s * 1e6) <= 0.2 * sleep_s * 1e6,
                "step %d: spread %.0f us, slept %.0f us" % (r["step"], r["spread_us"], sleep_s * 1e6),
            )
            T.check_eq([a["rank"] for a in r["arrivals"]], [0, 1], "step %d: arrivals by rank" % r["step"])
            T.check_eq(r["arrivals"][0]["after_us"], 0.0, "step %d: rank 0 first" % r["step"])
        check_dataset_arrivals(d, out, rows)
        table = T.run_ptprof(["report", out])
        m = re.search(r"^Last to arrive, of (\d+) collectives: (.*)$", table.stdout, re.M)
        last = dict(re.findall(r"rank (\d+): (\d+)", m.group(2))) if m else {}
        T.check(
            m and int(m.group(1)) == len(rows) and int(last.get("1", 0)) >= len(RECORDED),
            "the table's arrivals section counts rank 1 last at least %d times: %r\n%s"
            % (len(RECORDED), m and m.group(0), T.describe(table)),
        )


def check_dataset_arrivals(d, out, report_rows):
    """The dataset's collectives table (ptprof export --parquet) gives the
    report's arrivals: per step and index, c10d's calls of both ranks, the
    last to arrive and the spread, equal to the report's rows."""
    if D.analysis_python() is None:
        print("no Python with pyarrow: the dataset is not checked here (test_dataset.py skips)")
        return
    data = D.export_and_read(out, os.path.join(d, "ds"), "collectives")
    groups = {}
    for c in data.get("collectives", {}).get("rows", []):
        if c["call"] == "c10d" and c["index_in_step"] is not None:
            groups.setdefault((c["step"], c["index_in_step"]), []).append((c["start_ns"], c["rank"]))
    got = {}
    for key, calls in groups.items():
        if len({rank for _, rank in calls}) < 2:
            continue
        last = max(start for start, _ in calls)
        got[key] = (
            min(rank for start, rank in calls if start == last),
            round((last - min(start for start, _ in calls)) / 1000.0, 3),
        )
    want = {(r["step"], r["index"]): (r["last_rank"], r["spread_us"]) for r in report_rows}
    T.check_eq(got, want, "(step, index) -> (last rank, spread us): the dataset's collectives against the report")
    # ptprof query --report: DuckDB over the dataset, ptprof/dataset/sql/*.sql.
    q = D.query_report(os.path.join(d, "ds"))
    rep = T.report_json(out)
    keys = ("step", "index", "ranks", "last_rank", "spread_us")
    T.check_eq(
        [[r[k] for k in keys] for r in q.get("collective_arrivals", [])],
        [[r[k] for k in keys] for r in rep["collective_arrivals"]],
        "query --report's arrivals: %s" % (keys,),
    )
    keys = ("step", "ranks", "slowest_rank", "slowest_us", "median_us", "lag_us")
    T.check_eq(
        [[r[k] for k in keys] for r in q.get("stragglers", [])],
        [[r[k] for k in keys] for r in rep["stragglers"]],
        "query --report's stragglers: %s" % (keys,),
    )
    T.check(len(rep["ranks"]) == 2, "the report's ranks: %r" % rep["ranks"])
    T.check_eq(q.get("ranks"), rep["ranks"], "query --report's ranks: every field, the collectives and steps too")


def check_two_ranks(spawn):
    with T.tempdir() as d:
        out = os.path.join(d, "out")
        run_ranks(out, spawn)
        files = sorted(f for f in os.listdir(out) if f.endswith(".bin"))
        rank_files = {}
        for f in files:
            # <host>.r<rank>.<pid>[-<exec>].<run id>.wNNN.bin
            m = re.match(r"^.+?\.r(\d+)\.(\d+)(?:-\d+)?\.[0-9a-f]{8}\.w(\d{3})\.bin$", f)
            if m:
                rank_files.setdefault(int(m.group(3)), []).append(int(m.group(1)))
        T.check_eq(
            {w: sorted(r) for w, r in rank_files.items()},
            {0: [0, 1], 1: [0, 1]},
            "one file per rank per window, named <host>.r<rank>.<pid>.<run>.wNNN.bin; files: %s" % files,
        )

        rep = T.report_json(out)
        ranks = {r["rank"]: r for r in rep["ranks"]}
        T.check_eq(sorted(ranks), [0, 1], "the merged report lists both ranks")
        for rank, r in sorted(ranks.items()):
            T.check_eq(r["world_size"], 2, "rank %d: world size" % rank)
            T.check_eq([s["step"] for s in r["steps"]], RECORDED, "rank %d: recorded steps" % rank)
            T.check(all(s["wall_us"] > 0 for s in r["steps"]), "rank %d: step times %r" % (rank, r["steps"]))
            names = {c["name"]: c for c in r["collectives"]}
            T.check(
                "c10d::allreduce_" in names or "gloo:all_reduce" in names,
                "rank %d: an allreduce among its collectives: %r" % (rank, sorted(names)),
            )
            # One allreduce per step (DDP's one gradient bucket), recorded as
            # c10d's op and gloo's work.
            for n in ALLREDUCE:
                if n in names:
                    T.check_eq(names[n]["calls"], len(RECORDED), "rank %d: %s calls" % (rank, n))
                    T.check(names[n]["time_us"] > 0, "rank %d: %s time" % (rank, n))
            T.check(r["collective_time_us"] > 0, "rank %d: collective time" % rank)
            T.check(r["ops"] > 0 and r["op_time_us"] > 0, "rank %d: op totals" % rank)
        T.check_eq([s["step"] for s in rep["stragglers"]], RECORDED, "a straggler row per recorded step")
        for s in rep["stragglers"]:
            T.check(s["slowest_rank"] in (0, 1) and s["ranks"] == 2, "straggler row %r" % s)
            T.check(s["lag_us"] >= 0 and s["slowest_us"] >= s["median_us"], "straggler lag %r" % s)
        procs = [p for p in rep["processes"] if p["rank"] >= 0]
        T.check_eq(sorted(p["rank"] for p in procs), [0, 1], "processes with a rank")
        if D.analysis_python():
            data = D.export_and_read(out, os.path.join(d, "ds"), "processes", "windows")
            T.check_eq(
                sorted((p["rank"], p["world_size"], p["rank_bucket"]) for p in data["processes"]["rows"]),
                [(0, 2, 0), (1, 2, 0)],
                "the dataset's processes: rank, world size, rank bucket",
            )
            T.check_eq(
                sorted(w["rank"] for w in data["windows"]["rows"]), [0, 0, 1, 1], "the dataset's windows: two per rank"
            )
        T.check(all(p["host"] for p in procs), "every rank's host is recorded")

        table = T.run_ptprof(["report", out])
        T.check(
            table.returncode == 0 and "Stragglers" in table.stdout and "Ranks" in table.stdout,
            "the table has Ranks and Stragglers sections\n" + T.describe(table),
        )

        # Exports: every rank's process is labelled with its rank.
        chrome = os.path.join(d, "trace.json")
        proc = T.run_ptprof(["export", out, "--chrome", chrome])
        T.check_eq(proc.returncode, 0, "export --chrome\n" + T.describe(proc))
        names = {}
        if os.path.exists(chrome):
            with open(chrome) as f:
                doc = json.load(f)
            for e in doc["traceEvents"]:
                if e.get("ph") == "M" and e.get("name") == "process_name":
                    names[e["pid"]] = e["args"]["name"]
        for p in procs:
            T.check(
                names.get(p["pid"], "").endswith("[rank %d]" % p["rank"]),
                "chrome process_name of rank %d: %r" % (p["rank"], names.get(p["pid"])),
            )
        perfetto = os.path.join(d, "trace.pftrace")
        proc = T.run_ptprof(["export", out, "--perfetto", perfetto])
        T.check_eq(proc.returncode, 0, "export --perfetto\n" + T.describe(proc))
        if os.path.exists(perfetto):
            data = open(perfetto, "rb").read()
            for p in procs:
                T.check(("[rank %d]" % p["rank"]).encode() in data, "perfetto names rank %d" % p["rank"])
        check_hta(d, out, files)


def check_hta(d, out, files):
    """Each rank's window 0 exported to a file of its own: its
    distributedInfo, then HTA's reading of the directory."""
    hta_dir = os.path.join(d, "hta")
    os.mkdir(hta_dir)
    for rank in (0, 1):
        mine = [
            os.path.join(out, f)
            for f in files
            if re.match(r"^.+?\.r%d\.\d+(?:-\d+)?\.[0-9a-f]{8}\.w000\.bin$" % rank, f)
        ]
        path = os.path.join(hta_dir, "rank%d.json.gz" % rank)
        proc = T.run_ptprof(["export"] + mine + ["--chrome", path])
        if not T.check_eq(proc.returncode, 0, "export rank %d --chrome\n%s" % (rank, T.describe(proc))):
            return
        with gzip.open(path, "rt") as f:
            doc = json.load(f)
        T.check_eq(
            doc.get("distributedInfo"),
            {"backend": "gloo", "rank": rank, "world_size": 2},
            "rank %d: distributedInfo" % rank,
        )
    proc = T.run([X.hta_python(), HTA_PROBE, hta_dir], timeout=600)  # a skip when HTA is missing
    if not T.check_eq(proc.returncode, 0, "HTA loads the ranks' exports\n" + T.describe(proc)):
        return
    view = json.loads(proc.stdout)["all"]
    T.check_eq(sorted(view), ["0", "1"], "the ranks HTA reads")
    for rank in sorted(view):
        T.check_eq(view[rank]["steps"], RECORDED[:2], "rank %s: the steps HTA finds" % rank)
        T.check(view[rank]["events"] > 0, "rank %s: HTA parsed its events" % rank)


if __name__ == "__main__":
    T.main()
