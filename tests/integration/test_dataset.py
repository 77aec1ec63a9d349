"""`ptprof export --parquet`: the MLP example recorded with memory, shapes
and stacks, exported as a Parquet dataset (pyarrow from the venv, whichever
torch recorded it). The ops table grouped by its `key` (folded rows left
out) equals the report's operator table row for row: calls, Self CPU, CPU
total and the memory columns, to the nanosecond and byte; each step of the
report is a row of the steps table; the tree is whole (every parent exists,
depth is the parent's + 1) and every stack id is in the stacks table; the
layout is one file per table, run and rank bucket; every table's columns
and types are docs/dataset.md's, in its order. Bad input exits with status 2
and says why: a directory that holds something, an interpreter without
pyarrow, --python without --parquet."""

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dataset_check as D  # noqa: E402
import ptproftest as T  # noqa: E402
from ptproftest import check, check_eq  # noqa: E402

TABLES = [
    "runs",
    "windows",
    "processes",
    "threads",
    "steps",
    "ops",
    "op_totals",
    "gpu",
    "cuda_api",
    "memory",
    "memory_categories",
    "collectives",
    "stacks",
]
DOC = os.path.join(T.SOURCE_DIR, "docs", "dataset.md")


@functools.lru_cache(maxsize=None)
def recorded():
    """(trace directory, report JSON, dataset as JSON), once per test file."""
    d = tempfile.mkdtemp(prefix="ptprof-test-")  # removed at the end of the file's tests
    traces = os.path.join(d, "traces")
    run = T.run_ptprof(
        [
            "run",
            "-o",
            traces,
            "--profile-memory",
            "--record-shapes",
            "--with-stack",
            "--",
            T.PYTHON,
            os.path.join(T.EXAMPLES_DIR, "train_mlp.py"),
        ],
        timeout=600,
    )
    check_eq(run.returncode, 0, T.describe(run))
    report = T.report_json(traces)
    data = D.export_and_read(traces, os.path.join(d, "ds"))
    return d, traces, report, data


def test_ops_sum_to_the_report_rows():
    D.need_pyarrow()
    _, _, report, data = recorded()
    sums = {}
    for op in data["ops"]["rows"]:
        if op["folded"]:
            continue
        s = sums.setdefault(op["key"], [0, 0, 0, 0, 0])
        s[0] += 1
        s[1] += op["self_ns"]
        s[2] += op["dur_ns"]
        s[3] += op["cpu_memory_bytes"]
        s[4] += op["self_cpu_memory_bytes"]
    # [memory]: the memory records the report counts that no op holds.
    outside = [m for m in data["memory"]["rows"] if m["in_report"] and not m["in_op"]]
    s = sums.setdefault("[memory]", [0, 0, 0, 0, 0])
    s[0] += len(outside)
    s[3] += sum(m["bytes"] for m in outside if m["device_type"] == 0)
    s[4] += sum(m["bytes"] for m in outside if m["device_type"] == 0)
    rows = report["rows"]
    check(len(rows) > 20, "the report has the example's rows: %d" % len(rows))
    for r in rows:
        s = sums.pop(r["name"], None)
        got = None if s is None else (s[0], round(s[1] / 1000.0, 3), round(s[2] / 1000.0, 3), s[3], s[4])
        check_eq(
            got,
            (r["calls"], r["self_cpu_us"], r["cpu_total_us"], r["cpu_memory_bytes"], r["self_cpu_memory_bytes"]),
            "row %s: calls, self, total (us), memory, self memory" % r["name"],
        )
    check_eq(sorted(sums), [], "keys of the ops table that the report has no row for")
    check(any(op["shapes"] for op in data["ops"]["rows"]), "shapes recorded")
    memory = data["memory"]["rows"]
    check(len(memory) > 0 and all(m["bytes"] != 0 for m in memory), "memory events: %d" % len(memory))


def test_memory_categories_are_ptprof_memorys():
    D.need_pyarrow()
    d, traces, _, data = recorded()
    path = os.path.join(d, "categories.json")
    proc = T.run_ptprof(["memory", traces, "--categories", path])
    check_eq(proc.returncode, 0, T.describe(proc))
    with open(path) as f:
        timelines = json.load(f)
    names = [
        "parameter",
        "optimizer_state",
        "input",
        "temporary",
        "activation",
        "gradient",
        "autograd_detail",
        "unknown",
    ]
    rows = sorted(data["memory_categories"]["rows"], key=lambda r: r["ts_ns"])
    expected = [sizes[1:] for tl in timelines for sizes in tl["timeline"][1]]
    check_eq([[r[n] for n in names] for r in rows], expected, "the dataset's rows, ptprof memory's timeline")
    steps = sorted({r["step"] for r in rows if r["step"] is not None})
    check(
        any(r["parameter"] > 0 for r in rows) and steps == list(range(5)),
        "parameters named, rows in the example's 5 steps: %s" % steps,
    )


def test_steps_and_tree_and_stacks_are_whole():
    D.need_pyarrow()
    _, _, report, data = recorded()
    steps = [s for s in data["steps"]["rows"] if s["role"] == "step"]
    check_eq(sorted(s["step"] for s in steps), sorted(s["step"] for s in report["steps"]), "the report's steps")
    for s in steps:
        phases = sum(
            s[k] for k in ("forward_ns", "backward_ns", "optimizer_ns", "data_loading_ns", "compile_ns", "other_ns")
        )
        check_eq(phases, s["dur_ns"], "step %d: the phases sum to its wall time" % s["step"])
    ops = {op["id"]: op for op in data["ops"]["rows"]}
    check_eq(len(ops), len(data["ops"]["rows"]), "op ids are unique")
    orphans = [op for op in ops.values() if op["parent_id"] is not None and op["parent_id"] not in ops]
    check_eq(orphans[:3], [], "ops whose parent is missing")
    wrong = [
        op
        for op in ops.values()
        if op["parent_id"] is not None and not op["folded"] and op["depth"] != ops[op["parent_id"]]["depth"] + 1
    ]
    check_eq(wrong[:3], [], "ops whose depth is not their parent's + 1")
    in_steps = [op for op in ops.values() if op["kind"] == "op" and op["step"] is not None]
    check(len(in_steps) > len(ops) // 2, "most ops are in a step: %d of %d" % (len(in_steps), len(ops)))
    stacks = {f["stack_id"] for f in data["stacks"]["rows"]}
    used = {op["stack_id"] for op in ops.values() if op["stack_id"] is not None}
    check(len(used) > 0, "--with-stack: ops carry stacks")
    check_eq(sorted(used - stacks), [], "stack ids of ops missing from the stacks table")
    frames = [f for f in data["stacks"]["rows"] if f["kind"] == "python"]
    check(
        any(f["file"].endswith("train_mlp.py") and f["line"] > 0 for f in frames),
        "a Python frame of the example: %r" % frames[:3],
    )
    procs = data["processes"]["rows"]
    check_eq([(p["role"], p["rank"]) for p in procs], [("trainer", None)], "one process, no rank")
    check_eq(len(data["runs"]["rows"]), 1, "one run")
    run = data["runs"]["rows"][0]
    check_eq((run["files"], run["processes"], run["schema_version"]), (1, 1, 4), "the run's counts")


def test_layout_is_one_file_per_table_run_and_rank_bucket():
    D.need_pyarrow()
    _, traces, _, data = recorded()
    run = re.search(r"\.([0-9a-f]{8})\.w000\.bin$", sorted(os.listdir(traces))[0]).group(1)
    check_eq(sorted(data), sorted(TABLES), "the tables")
    for table, t in sorted(data.items()):
        want = ["runs/runs.parquet"] if table == "runs" else ["%s/run=%s/rank_bucket=-1/part-0.parquet" % (table, run)]
        check_eq(t["files"], want, table + ": its files")
        if table != "runs":
            wrong = [(r["run"], r["rank_bucket"]) for r in t["rows"] if (r["run"], r["rank_bucket"]) != (run, -1)]
            check_eq(wrong[:3], [], table + ": run and rank_bucket from the partitions, other than %r" % run)


def documented_schema():
    """{table: [(column, type)]} from docs/dataset.md's "### table" sections."""
    tables, current = {}, None
    with open(DOC) as f:
        for line in f:
            m = re.match(r"^### (\w+)$", line)
            if m:
                current = tables.setdefault(m.group(1), [])
                continue
            m = re.match(r"^- `(\w+)` \((\w+)\): ", line)
            if m and current is not None:
                current.append((m.group(1), m.group(2)))
    return tables


def test_columns_are_the_documented_ones():
    D.need_pyarrow()
    _, _, _, data = recorded()
    doc = documented_schema()
    check_eq(sorted(doc), sorted(TABLES), "docs/dataset.md documents every table")
    arrow_name = {"int64": "int64", "int32": "int32", "int8": "int8", "bool": "bool", "string": "string"}
    for table in TABLES:
        got = [(c, t) for c, t in data[table]["schema"] if table == "runs" or c not in D.HIVE]
        want = [(c, arrow_name.get(t, t)) for c, t in doc.get(table, [])]
        check_eq(got, want, table + ": the files' columns and types against docs/dataset.md")


def test_bad_input_exits_2_and_says_why():
    D.need_pyarrow()
    d, traces, _, _ = recorded()
    full = os.path.join(d, "full")
    os.makedirs(full)
    open(os.path.join(full, "notes.txt"), "w").close()
    proc = D.export(traces, full)
    check_eq(proc.returncode, 2, T.describe(proc))
    check("exists and is not an empty directory" in proc.stderr, proc.stderr)
    proc = T.run_ptprof(["export", traces, "--chrome", os.path.join(d, "t.json"), "--python", sys.executable])
    check_eq(proc.returncode, 2, T.describe(proc))
    check("--python names the interpreter that writes --parquet" in proc.stderr, proc.stderr)
    # An interpreter without pyarrow: Debian's, where it has none.
    bare = "/usr/bin/python3"
    has = subprocess.run([bare, "-c", "import pyarrow"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if has.returncode == 0:
        print("%s imports pyarrow: the missing-pyarrow message is not checked" % bare)
        return
    out = os.path.join(d, "bare")
    proc = T.run_ptprof(["export", traces, "--parquet", out, "--python", bare])
    check_eq(proc.returncode, 2, T.describe(proc))
    check(
        "--parquet needs pyarrow in the Python that writes the dataset" in proc.stderr
        and "ptprof[analysis]" in proc.stderr,
        proc.stderr,
    )


def test_query_report_equals_the_report():
    """`ptprof query --report`: the operator table and the steps computed by
    DuckDB from ptprof/dataset/sql/*.sql equal `ptprof report`'s, value for value."""
    D.need_pyarrow()
    d, _, report, _ = recorded()
    got = D.query_report(os.path.join(d, "ds"))
    if not got:
        return
    mine = {r["name"]: r for r in got["rows"]}
    rows = report["rows"]
    check("[memory]" in [r["name"] for r in rows], "the example's report has a [memory] row")
    for r in rows:
        m = mine.pop(r["name"], None)
        keys = [
            k
            for k in (
                "calls",
                "self_cpu_us",
                "cpu_total_us",
                "self_cuda_us",
                "cuda_total_us",
                "cpu_memory_bytes",
                "self_cpu_memory_bytes",
                "cuda_memory_bytes",
                "self_cuda_memory_bytes",
            )
            if k in r
        ]
        check_eq(m and [m[k] for k in keys], [r[k] for k in keys], "row %s: %s" % (r["name"], keys))
    check_eq(sorted(mine), [], "rows only the query has")
    keys = ("step", "pid", "tid", "wall_us", "operators_us")
    check_eq(
        [[s[k] for k in keys] for s in got["steps"]],
        [[s[k] for k in keys] for s in report["steps"]],
        "the steps: %s" % (keys,),
    )
    check_eq((got["stragglers"], got["collective_arrivals"]), ([], []), "one process: no stragglers or arrivals")
    D.check_rollups(os.path.join(d, "ds"))


def test_query_sql_and_its_errors():
    D.need_pyarrow()
    d, _, _, data = recorded()
    ds = os.path.join(d, "ds")
    proc = D.query(ds, "--sql", "SELECT count(*) AS n, count(DISTINCT run) AS runs FROM ops", "--format", "json")
    check_eq(proc.returncode, 0, T.describe(proc))
    if proc.returncode == 0:
        import json

        check_eq(json.loads(proc.stdout), [{"n": len(data["ops"]["rows"]), "runs": 1}], "a query on the ops view")
    proc = D.query(ds, "--sql", "SELECT name, count(*) AS calls FROM ops GROUP BY name ORDER BY calls DESC LIMIT 3")
    check(proc.returncode == 0 and "(3 rows)" in proc.stdout and "calls" in proc.stdout, T.describe(proc))
    proc = D.query(ds, "--sql", "SELECT nope FROM ops")
    check_eq(proc.returncode, 1, T.describe(proc))
    check("the query failed" in proc.stderr and "nope" in proc.stderr, proc.stderr)
    proc = D.query(d, "--report")
    check_eq(proc.returncode, 2, T.describe(proc))
    check("is not a dataset (no runs/runs.parquet in it)" in proc.stderr, proc.stderr)
    proc = D.query(ds)
    check_eq(proc.returncode, 2, T.describe(proc))
    check("give --report" in proc.stderr, proc.stderr)


if __name__ == "__main__":
    try:
        T.main()
    finally:
        if recorded.cache_info().currsize:
            if os.environ.get("PTPROF_KEEP_TEMP") != "1":
                shutil.rmtree(recorded()[0], ignore_errors=True)
