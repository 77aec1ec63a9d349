"""`ptprof export --parquet` for the integration tests: the export, and the
dataset read back as JSON by the Python that has pyarrow (the venv's,
PTPROF_ANALYSIS_PYTHON as CMake sets it), whichever torch's Python the test
runs under."""

import functools
import json
import os
import subprocess

import ptproftest as T

DUMP = os.path.join(T.HERE, "dataset_dump.py")
HIVE = ("run", "rank_bucket")


@functools.lru_cache(maxsize=None)
def analysis_python():
    """The interpreter that writes and queries datasets, or None without one
    that imports pyarrow and duckdb."""
    py = os.environ.get("PTPROF_ANALYSIS_PYTHON", "")
    if not py or not os.access(py, os.X_OK):
        return None
    probe = subprocess.run(
        [py, "-c", "import pyarrow.parquet, duckdb"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return py if probe.returncode == 0 else None


def need_pyarrow():
    if analysis_python() is None:
        T.skip(
            "no Python with pyarrow and duckdb (PTPROF_ANALYSIS_PYTHON=%r; scripts/setup.sh puts them in .venv)"
            % os.environ.get("PTPROF_ANALYSIS_PYTHON", "")
        )


def export(paths, out):
    """`ptprof export PATHS --parquet OUT`: the finished process."""
    if isinstance(paths, str):
        paths = [paths]
    return T.run_ptprof(["export"] + list(paths) + ["--parquet", out, "--python", analysis_python()])


def read(out, *tables):
    """{table: {"schema": [[column, type]], "rows": [{...}], "files": [...]}}."""
    proc = subprocess.run(
        [analysis_python(), DUMP, out] + list(tables),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0:
        raise AssertionError("reading the dataset failed: " + proc.stderr)
    return json.loads(proc.stdout)


def export_and_read(paths, out, *tables):
    proc = export(paths, out)
    T.check_eq(proc.returncode, 0, "ptprof export --parquet\n" + T.describe(proc))
    return read(out, *tables) if proc.returncode == 0 else {}


def query(out, *args):
    """`ptprof query OUT ARGS...`: the finished process."""
    return T.run_ptprof(["query", out] + list(args) + ["--python", analysis_python()])


def query_report(out):
    """`ptprof query OUT --report --format json`, parsed."""
    proc = query(out, "--report", "--format", "json")
    T.check_eq(proc.returncode, 0, "ptprof query --report\n" + T.describe(proc))
    return json.loads(proc.stdout) if proc.returncode == 0 else {}


def sql_rows(out, sql):
    """A --sql query's rows, parsed."""
    proc = query(out, "--sql", sql, "--format", "json")
    T.check_eq(proc.returncode, 0, "ptprof query --sql\n" + T.describe(proc))
    return json.loads(proc.stdout) if proc.returncode == 0 else None


SUMMED = (
    "dur_ns",
    "self_ns",
    "cuda_total_ns",
    "self_cuda_ns",
    "cpu_memory_bytes",
    "self_cpu_memory_bytes",
    "cuda_memory_bytes",
    "self_cuda_memory_bytes",
)


def check_rollups(out):
    """What the export sums for the report's SQL (op_totals, steps.operators_ns)
    equals the same sums over the ops rows, and the collectives not nested are
    the calls (an index in their step, or outside every step)."""
    sums = ", ".join("sum(%s)::BIGINT AS %s" % (c, c) for c in SUMMED)
    by_sql = sql_rows(
        out,
        "SELECT rank, pid, kind, key, folded, count(*)::BIGINT AS calls, %s, "
        "(count(*) FILTER (WHERE outermost_op))::BIGINT AS outermost_calls, "
        "coalesce(sum(dur_ns) FILTER (WHERE outermost_op), 0)::BIGINT AS outermost_ns "
        "FROM ops GROUP BY ALL ORDER BY ALL" % sums,
    )
    written = sql_rows(
        out,
        "SELECT rank, pid, kind, key, folded, calls, %s, outermost_calls, outermost_ns "
        "FROM op_totals ORDER BY ALL" % ", ".join(SUMMED),
    )
    T.check(by_sql and any(r["outermost_calls"] for r in by_sql), "ops to sum, outermost ones among them")
    T.check(
        written == by_sql,
        "op_totals equals the ops rows summed (first difference: %r)"
        % (next((p for p in zip(written or [], by_sql or []) if p[0] != p[1]), None),),
    )
    steps = sql_rows(
        out,
        "SELECT s.id, s.operators_ns AS written, coalesce(sum(o.dur_ns), 0)::BIGINT AS by_sql "
        "FROM steps s LEFT JOIN ops o ON o.run = s.run AND o.parent_id = s.id "
        "AND o.kind IN ('op', 'range') GROUP BY ALL ORDER BY s.id",
    )
    T.check(steps and any(s["written"] > 0 for s in steps), "steps with ops in them: %r" % (steps or [])[:3])
    T.check_eq(
        [s for s in steps or [] if s["written"] != s["by_sql"]],
        [],
        "steps.operators_ns against the ops rows whose parent is the step",
    )
    calls = sql_rows(
        out,
        "SELECT count(*) FILTER (WHERE nested AND index_in_step IS NOT NULL) AS nested_with_index, "
        "count(*) FILTER (WHERE NOT nested AND step IS NOT NULL AND index_in_step IS NULL) "
        "AS calls_without_index FROM collectives",
    )
    T.check_eq(calls, [{"nested_with_index": 0, "calls_without_index": 0}], "collectives: only calls are indexed")
