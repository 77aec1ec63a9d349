"""A dataset of `ptprof export --parquet` read by DuckDB, whole or one
partition at a time, and the two halves of a report section: the map query
over some of the dataset, the reduce query over the maps' results (the view
`partial`). query.py beside this module maps the whole dataset on this
machine; query_dask.py maps a partition per Dask task.

Only the standard library at module level (DuckDB and pyarrow are imported
where a task runs): `ptprof query --dask` sends this file to the cluster's
scheduler and workers (Client.upload_file) as the module
ptprof_dataset_tasks, so that ptprof need not be installed there.
"""

import os


def tables(dataset):
    """{table: its folder} for the dataset's tables that have files."""
    found = {}
    for table in sorted(os.listdir(dataset)):
        folder = os.path.join(dataset, table)
        if not os.path.isdir(folder) or table.startswith("."):
            continue
        if any(f.endswith(".parquet") for _, _, fs in os.walk(folder) for f in fs):
            found[table] = folder
    return found


def partitions(dataset):
    """The dataset's (run, rank bucket) partitions, as their folder names."""
    parts = set()
    for table, folder in tables(dataset).items():
        if table == "runs":
            continue
        for run in os.listdir(folder):
            if run.startswith("run=") and os.path.isdir(os.path.join(folder, run)):
                for bucket in os.listdir(os.path.join(folder, run)):
                    if bucket.startswith("rank_bucket="):
                        parts.add((run, bucket))
    return sorted(parts)


def read_source(folder, part=None):
    """DuckDB's reader of a table's files: all of them, or one partition's."""
    if part is None and os.path.basename(folder) == "runs":
        return "read_parquet(%s)" % quote(os.path.join(folder, "*.parquet"))
    pattern = os.path.join(folder, "**", "*.parquet") if part is None else os.path.join(folder, *part, "*.parquet")
    # Typed partitions: a run id of digits only stays a string.
    return "read_parquet(%s, hive_partitioning = true, hive_types = {'run': VARCHAR, 'rank_bucket': INTEGER})" % quote(
        pattern
    )


def connect(duckdb, dataset, part=None):
    """A view per table: over the whole dataset, or over one partition (a
    table without files there is an empty view of its columns)."""
    con = duckdb.connect()
    for table, folder in tables(dataset).items():
        source = read_source(folder)
        if part is not None and table != "runs":
            if os.path.isdir(os.path.join(folder, *part)):
                source = read_source(folder, part)
            else:
                source = "(SELECT * FROM %s LIMIT 0)" % source
        con.execute("CREATE VIEW %s AS SELECT * FROM %s" % (table, source))
    return con


def quote(text):
    return "'" + text.replace("'", "''") + "'"


def map_partition(dataset, part, maps):
    """A Dask task: each section's map query over one partition; {name: Arrow table}."""
    import duckdb

    con = connect(duckdb, dataset, part)
    out = {}
    for name, sql in maps.items():
        cursor = con.execute(sql)
        # DuckDB 1.x: fetch_arrow_table; 2.x: to_arrow_table
        out[name] = (getattr(cursor, "to_arrow_table", None) or cursor.fetch_arrow_table)()
    return out


def reduce_section(name, sql, *mapped):
    """A Dask task: one section's reduce query over its maps' results; (columns, rows)."""
    import duckdb
    import pyarrow as pa

    con = duckdb.connect()
    con.register("partial", pa.concat_tables([m[name] for m in mapped]))
    cursor = con.execute(sql)
    return [d[0] for d in cursor.description], cursor.fetchall()
