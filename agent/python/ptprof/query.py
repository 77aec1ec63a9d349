"""`ptprof query DATASET`: SQL over a dataset of `ptprof export --parquet`.

    python -m ptprof.query --dataset DIR (--report | --sql QUERY...) [--format table|json]

(`ptprof query` runs this.) DuckDB reads the dataset in place: a view per
table folder, named as the folder (docs/dataset.md), with the Hive partition
columns `run` and `rank_bucket`. --report runs the SQL files beside this
module (ptprof/sql/*.sql: the operator table, steps, step-time stragglers
and collective arrivals) and prints them; with --format json under the names
and units of `ptprof report --format json` (microseconds, 3 decimals).
"""

import argparse
import json
import os
import sys

SQL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sql")
# (section, SQL file, the report's JSON key)
SECTIONS = (("Operators", "operators.sql", "rows"), ("Steps", "steps.sql", "steps"),
            ("Stragglers (step time)", "stragglers.sql", "stragglers"),
            ("Collective arrivals", "arrivals.sql", "collective_arrivals"))
# Columns in ns become the report's *_us; other columns keep their names.
RENAMED = {"self_cpu_ns": "self_cpu_us", "cpu_total_ns": "cpu_total_us", "self_cuda_ns": "self_cuda_us",
           "cuda_total_ns": "cuda_total_us", "wall_ns": "wall_us", "operators_ns": "operators_us",
           "slowest_ns": "slowest_us", "median_ns": "median_us", "lag_ns": "lag_us", "spread_ns": "spread_us"}


def fail(message, status=2):
    sys.stderr.write("ptprof query: " + message + "\n")
    sys.exit(status)


def connect(dataset):
    try:
        import duckdb
    except ImportError as e:
        fail("needs DuckDB in the Python that runs it (%s: %s): pip install 'ptprof[analysis]' (or duckdb) "
             "there, or name another interpreter with --python or PTPROF_ANALYSIS_PYTHON" % (sys.executable, e))
    con = duckdb.connect()
    for table in sorted(os.listdir(dataset)):
        folder = os.path.join(dataset, table)
        if not os.path.isdir(folder) or table.startswith("."):
            continue
        files = [os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs if f.endswith(".parquet")]
        if not files:
            continue
        if table == "runs":
            source = "read_parquet(%s)" % quote(os.path.join(folder, "*.parquet"))
        else:
            # Typed partitions: a run id of digits only stays a string.
            source = ("read_parquet(%s, hive_partitioning = true, hive_types = {'run': VARCHAR, "
                      "'rank_bucket': INTEGER})" % quote(os.path.join(folder, "**", "*.parquet")))
        con.execute("CREATE VIEW %s AS SELECT * FROM %s" % (table, source))
    return con


def quote(text):
    return "'" + text.replace("'", "''") + "'"


def run(con, sql):
    try:
        cursor = con.execute(sql)
    except Exception as e:  # DuckDB's errors name the problem; the query is the user's
        fail("the query failed: %s" % e, 1)
    columns = [d[0] for d in cursor.description]
    return columns, cursor.fetchall()


def as_report(columns, rows):
    """Rows as dicts under the report's JSON names, ns as us."""
    out = []
    for row in rows:
        d = {}
        for c, v in zip(columns, row):
            if c in RENAMED:
                d[RENAMED[c]] = None if v is None else int(v) / 1000.0
            else:
                d[c] = v
        out.append(d)
    return out


def print_table(title, columns, rows):
    if title:
        print(title)
    text = [[("" if v is None else str(v)) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in text]) for i, c in enumerate(columns)]
    # Numbers to the right, text to the left, as the report's tables.
    numeric = [all(isinstance(row[i], (int, float)) or row[i] is None for row in rows) for i in range(len(columns))]
    def line(cells):
        return "  ".join(v.rjust(w) if n else v.ljust(w) for v, w, n in zip(cells, widths, numeric)).rstrip()
    print(line(columns))
    for r in text:
        print(line(r))
    print("(%d rows)" % len(rows))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m ptprof.query", description=__doc__.split("\n\n")[0])
    parser.add_argument("--ptprof", help="the launcher that started this (unused)")
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--sql", action="append", default=[])
    parser.add_argument("--format", choices=("table", "json"), default="table")
    a = parser.parse_args(argv)
    con = connect(a.dataset)
    if a.report:
        result = {}
        for title, name, key in SECTIONS:
            with open(os.path.join(SQL_DIR, name)) as f:
                columns, rows = run(con, f.read())
            if a.format == "json":
                result[key] = as_report(columns, rows)
            else:
                print_table("%s (ptprof/sql/%s)" % (title, name), columns, rows)
                print()
        if a.format == "json":
            json.dump(result, sys.stdout, indent=1)
            print()
        return 0
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
