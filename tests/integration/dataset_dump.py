"""Prints a Parquet dataset of `ptprof export --parquet` as JSON, for tests
that run under a torch's Python without pyarrow: run by the Python that has
it (PTPROF_ANALYSIS_PYTHON).

    python dataset_dump.py DATASET [TABLE...]

{table: {"schema": [[column, type], ...], "rows": [{column: value}], "files":
[paths relative to DATASET]}}, with `run` and `rank_bucket` from the Hive
partitions (not in the schema, which is the files' own)."""

import json
import os
import sys

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

# As docs/dataset.md tells readers: a run id of decimal digits only would
# otherwise be read as a number.
PARTITIONING = ds.partitioning(pa.schema([("run", pa.string()), ("rank_bucket", pa.int32())]), flavor="hive")


def main(root, tables):
    out = {}
    for table in tables or sorted(os.listdir(root)):
        path = os.path.join(root, table)
        files = sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(path) for f in fs)
        schema = pq.read_schema(os.path.join(root, files[0])) if files else None
        data = ds.dataset(path, format="parquet", partitioning=None if table == "runs" else PARTITIONING).to_table()
        out[table] = {
            "schema": [[f.name, str(f.type)] for f in schema] if schema else [],
            "rows": data.to_pylist(),
            "files": files,
        }
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
