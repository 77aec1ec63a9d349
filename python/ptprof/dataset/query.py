"""`ptprof query DATASET`: SQL over a dataset of `ptprof export --parquet`.

    python -m ptprof.dataset.query --dataset DIR (--report | --sql QUERY...) [--format table|json]
                                   [--dask SCHEDULER_ADDRESS]

(`ptprof query` runs this.) DuckDB reads the dataset in place: a view per
table folder, named as the folder (docs/dataset.md), with the Hive partition
columns `run` and `rank_bucket`. --report runs the SQL files of the report's
sections (ptprof/dataset/sql/, sections.py: the operator table, steps, ranks,
step-time stragglers and collective arrivals) and prints them; with --format
json under the names and units of `ptprof report --format json`
(microseconds, 3 decimals).

Each section is two queries: NAME.map.sql over the tables of some part of
the dataset, and NAME.reduce.sql over the union of the map's results (the
view `partial`). Here the map's part is the whole dataset; with --dask
(ptprof/dataset/query_dask.py) each Dask task maps one partition (a run's rank
bucket) and one task reduces, so both give the same tables.
"""

import argparse
import json
import signal
import sys

from ptprof.dataset import PtprofError, tasks
from ptprof.dataset.sections import SECTIONS, section_sql

# Columns in ns become the report's *_us; other columns keep their names.
RENAMED = {
    "self_cpu_ns": "self_cpu_us",
    "cpu_total_ns": "cpu_total_us",
    "self_cuda_ns": "self_cuda_us",
    "cuda_total_ns": "cuda_total_us",
    "wall_ns": "wall_us",
    "operators_ns": "operators_us",
    "slowest_ns": "slowest_us",
    "median_ns": "median_us",
    "lag_ns": "lag_us",
    "spread_ns": "spread_us",
    "op_time_ns": "op_time_us",
    "collective_time_ns": "collective_time_us",
    "time_ns": "time_us",
    "after_ns": "after_us",
}


def import_duckdb():
    try:
        import duckdb
    except ImportError as e:
        raise PtprofError(
            "needs DuckDB in the Python that runs it (%s: %s): pip install 'ptprof[analysis]' (or "
            "duckdb) there, or name another interpreter with --python or PTPROF_ANALYSIS_PYTHON" % (sys.executable, e)
        ) from None
    return duckdb


def connect(dataset, part=None):
    """DuckDB with a view per table of the dataset (tasks.connect)."""
    return tasks.connect(import_duckdb(), dataset, part)


def run(con, sql):
    try:
        cursor = con.execute(sql)
    except Exception as e:  # DuckDB's errors name the problem; the query is the user's
        raise PtprofError("the query failed: %s" % e, 1) from None
    columns = [d[0] for d in cursor.description]
    return columns, cursor.fetchall()


def report_sections(con):
    """{section name: (columns, rows)}, each map then reduce on one connection."""
    out = {}
    for _, name, _ in SECTIONS:
        map_sql, reduce_sql = section_sql(name)
        run(con, "CREATE OR REPLACE TEMP TABLE partial AS " + map_sql)
        out[name] = run(con, reduce_sql)
    return out


def as_report(columns, rows):
    """Rows as dicts under the report's JSON names, ns as us (in nested lists too)."""
    return [report_value(dict(zip(columns, row))) for row in rows]


def report_value(v):
    if isinstance(v, dict):
        out = {}
        for c, x in v.items():
            if c in RENAMED:
                out[RENAMED[c]] = None if x is None else int(x) / 1000.0
            else:
                out[c] = report_value(x)
        return out
    if isinstance(v, list):
        return [report_value(x) for x in v]
    return v


def dump_sections(result, out):
    """{section: [row, ...]} as JSON, a row per line: json's C encoder writes
    each row (indent= would take its pure-Python path, five times slower on
    256 ranks' 25,600 steps)."""
    out.write("{\n")
    for i, (key, rows) in enumerate(result.items()):
        out.write(" %s: [" % json.dumps(key))
        out.write(",".join("\n  " + json.dumps(row) for row in rows))
        out.write("\n ]" if rows else "]")
        out.write(",\n" if i + 1 < len(result) else "\n")
    out.write("}\n")


def cell(v):
    """A table cell: a list (a rank's steps, its collectives) as its length."""
    if v is None:
        return ""
    if isinstance(v, list):
        return "[%d]" % len(v)
    return str(v)


def print_table(title, columns, rows):
    if title:
        print(title)
    text = [[cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in text]) for i, c in enumerate(columns)]
    # Numbers to the right, text to the left, as the report's tables.
    numeric = [all(isinstance(row[i], (int, float)) or row[i] is None for row in rows) for i in range(len(columns))]

    def line(cells):
        return "  ".join(v.rjust(w) if n else v.ljust(w) for v, w, n in zip(cells, widths, numeric)).rstrip()

    print(line(columns))
    for r in text:
        print(line(r))
    lists = any(isinstance(v, list) for row in rows for v in row)
    print("(%d rows%s)" % (len(rows), "; [N]: a list of N entries, which --format json gives" if lists else ""))


def main(argv=None):
    # Piped into head: end quietly, as a shell tool does.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    parser = argparse.ArgumentParser(prog="python -m ptprof.dataset.query", description=__doc__.split("\n\n")[0])
    parser.add_argument("--ptprof", help="the launcher that started this (unused)")
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--sql", action="append", default=[])
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--dask", metavar="SCHEDULER_ADDRESS")
    a = parser.parse_args(argv)
    try:
        return query(a)
    except PtprofError as e:
        sys.stderr.write("ptprof query: %s\n" % e)
        return e.status


def query(a):
    """What the command line `a` (parsed) asks, printed."""
    if a.dask:
        if not a.report:
            raise PtprofError("--dask computes the report's sections (--report); --sql runs on this machine")
        from ptprof.dataset import query_dask

        sections = query_dask.report_sections(a.dataset, a.dask)
    elif a.report:
        sections = report_sections(connect(a.dataset))
    if a.report:
        result = {}
        for title, name, key in SECTIONS:
            columns, rows = sections[name]
            if a.format == "json":
                result[key] = as_report(columns, rows)
            else:
                print_table("%s (ptprof/dataset/sql/%s.{map,reduce}.sql)" % (title, name), columns, rows)
                print()
        if a.format == "json":
            dump_sections(result, sys.stdout)
        return 0
    con = connect(a.dataset)
    results = []
    for sql in a.sql:
        columns, rows = run(con, sql)
        if a.format == "json":
            results.append([dict(zip(columns, r)) for r in rows])
        else:
            print_table(None, columns, rows)
    if a.format == "json":
        json.dump(results[0] if len(results) == 1 else results, sys.stdout, indent=1, default=str)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
