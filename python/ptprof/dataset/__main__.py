"""`ptprof export --parquet OUT`: ptprof's traces as a Parquet dataset.

    python -m ptprof.dataset --ptprof PTPROF --out OUT -- TRACE_FILES...

(`ptprof export --parquet` runs this; docs/dataset.md has the layout and
every column.) The C++ side (`ptprof export --columns DIR --paced`) decodes
each trace file into a columnar hand-off: raw little-endian column files and
a manifest. Here pyarrow maps those into Arrow arrays without parsing, and
writes them as Parquet (zstd), one folder per table:

    OUT/<table>/run=<run>/rank_bucket=<rank // 64>/part-0.parquet

Hive partitions, so DuckDB (hive_partitioning), pyarrow.dataset, Dask and
Spark see `run` and `rank_bucket` as columns. Each (table, run, rank bucket)
is one file, a row group per trace file: 64 ranks share a file, so thousands
of ranks do not make millions of tiny files. The decoding of the next trace
(C++) overlaps the writing of this one (here).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from ptprof.dataset import PtprofError

SCHEMA_VERSION = 4
RANKS_PER_BUCKET = 64
# <host>[.r<rank>].<pid>[-K].<run>.wNNN.bin (DESIGN.md): the run's random id,
# 8 hex digits after the pid. A file named otherwise is of run "unknown".
RUN_IN_NAME = re.compile(r"\.\d+(?:-\d+)?\.([0-9a-f]{8})\.w\d+\.bin(\.tmp)?$")


def import_pyarrow():
    try:
        import pyarrow  # noqa: F401
        import pyarrow.compute  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError as e:
        raise PtprofError(
            "--parquet needs pyarrow in the Python that writes the dataset (%s: %s): pip install "
            "'ptprof[analysis]' (or pyarrow) there, or name another interpreter with --python or "
            "PTPROF_ANALYSIS_PYTHON" % (sys.executable, e)
        ) from None
    import pyarrow as pa

    return pa


class HandOff:
    """One trace file's tables, as the C++ side wrote them."""

    def __init__(self, pa, directory):
        self.pa = pa
        self.dir = directory
        with open(os.path.join(directory, "manifest.json")) as f:
            self.manifest = json.load(f)
        if self.manifest.get("schema") != SCHEMA_VERSION:
            raise PtprofError(
                "the launcher wrote dataset schema %s, this ptprof.dataset reads %d: the two come "
                "from different ptprof versions" % (self.manifest.get("schema"), SCHEMA_VERSION),
                1,
            )
        offsets = self.buffer("strings.offsets")
        data = self.buffer("strings.data")
        n = self.manifest["strings"]
        self.strings = pa.Array.from_buffers(pa.large_string(), n, [None, offsets, data])

    def buffer(self, name):
        # Mapped, not copied; a mapping outlives the file's removal.
        path = os.path.join(self.dir, name)
        if os.path.getsize(path) == 0:
            return self.pa.py_buffer(b"")
        with self.pa.memory_map(path) as f:
            return f.read_buffer()

    def string(self, index):
        return self.strings[index].as_py()

    def column(self, table, name, kind, nullable, rows):
        pa = self.pa
        pc = pa.compute
        buf = self.buffer(table + "." + name)
        width = {"int64": pa.int64(), "int32": pa.int32(), "int8": pa.int8(), "bool": pa.int8(), "string": pa.int32()}[
            kind
        ]
        values = pa.Array.from_buffers(width, rows, [None, buf])
        if nullable:
            null = {"int64": -(2**63), "int32": -(2**31), "int8": -(2**7), "string": -(2**31)}[kind]
            mask = pc.equal(values, pa.scalar(null, width))
            values = pc.if_else(mask, pa.scalar(None, width), values)
        if kind == "bool":
            return pc.not_equal(values, pa.scalar(0, pa.int8()))
        if kind == "string":
            return pc.take(self.strings, values).cast(pa.string())
        return values

    def tables(self):
        pa = self.pa
        for t in self.manifest["tables"]:
            rows = t["rows"]
            arrays = [self.column(t["name"], c[0], c[1], c[2], rows) for c in t["columns"]]
            yield t["name"], pa.Table.from_arrays(arrays, names=[c[0] for c in t["columns"]])


def scratch_parent(out):
    """Where the hand-off goes: memory (/dev/shm) when it has room, as at
    most two trace files' columns wait there at once (writing them to a disk
    cost three times the decoding); else the dataset's own directory."""
    shm = "/dev/shm"
    try:
        st = os.statvfs(shm)
        if os.access(shm, os.W_OK) and st.f_bavail * st.f_frsize >= 2 << 30:
            return shm
    except OSError:
        pass
    return out


def run_of(path):
    m = RUN_IN_NAME.search(os.path.basename(path))
    return m.group(1) if m else "unknown"


class Writers:
    """One Parquet file per (table, run, rank bucket), a row group per trace."""

    def __init__(self, pa, out):
        self.pa = pa
        self.out = out
        self.open = {}
        self.rows = {}

    def write(self, table, run, rank, data):
        import pyarrow.parquet as pq

        bucket = rank // RANKS_PER_BUCKET if rank is not None and rank >= 0 else -1
        key = (table, run, bucket)
        writer = self.open.get(key)
        if writer is None:
            directory = os.path.join(self.out, table, "run=%s" % run, "rank_bucket=%d" % bucket)
            os.makedirs(directory, exist_ok=True)
            writer = pq.ParquetWriter(
                os.path.join(directory, "part-0.parquet"), data.schema, compression="zstd", metadata_collector=None
            )
            self.open[key] = writer
        if data.num_rows:
            writer.write_table(data, row_group_size=1 << 20)
        self.rows[table] = self.rows.get(table, 0) + data.num_rows

    def close(self):
        for w in self.open.values():
            w.close()
        self.open.clear()


def windows_table(pa, handoff, run, source):
    m = handoff.manifest
    row = {
        "rank": m["rank"],
        "pid": m["pid"],
        "window": m["window"],
        "file": source,
        "host": handoff.string(m["host"]),
        "window_start_ns": m["window_start_ns"],
        "window_end_ns": m["window_end_ns"],
        "events": m["events"],
        "dropped": m["dropped"],
    }
    for k, v in m["losses"].items():
        row["lost_" + k] = v
    types = {"rank": pa.int32(), "pid": pa.int32(), "window": pa.int32(), "file": pa.string(), "host": pa.string()}
    return pa.Table.from_pylist([row], schema=pa.schema([(k, types.get(k, pa.int64())) for k in row]))


def runs_table(pa, runs):
    rows = [
        {
            "run": run,
            "ptprof_version": r["version"],
            "schedule": r["schedule"],
            "hosts": len(r["hosts"]),
            "processes": len(r["processes"]),
            "files": r["files"],
            "ranks": len([x for x in r["ranks"] if x is not None]),
            "start_ns": r["start"],
            "end_ns": r["end"],
            "schema_version": SCHEMA_VERSION,
        }
        for run, r in sorted(runs.items())
    ]
    schema = pa.schema(
        [
            ("run", pa.string()),
            ("ptprof_version", pa.string()),
            ("schedule", pa.string()),
            ("hosts", pa.int32()),
            ("processes", pa.int32()),
            ("files", pa.int32()),
            ("ranks", pa.int32()),
            ("start_ns", pa.int64()),
            ("end_ns", pa.int64()),
            ("schema_version", pa.int32()),
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m ptprof.dataset", description=__doc__.split("\n\n")[0])
    parser.add_argument("--ptprof", required=True, help="the ptprof launcher that decodes the traces")
    parser.add_argument("--out", required=True, help="the dataset's directory (new, or empty)")
    parser.add_argument("files", nargs="+", help="trace files (ptprof export expands directories)")
    a = parser.parse_args(argv)
    try:
        return export(a)
    except PtprofError as e:
        sys.stderr.write("ptprof export: %s\n" % e)
        return e.status


def export(a):
    """The dataset of the trace files `a.files` in `a.out` (the parsed command line)."""
    pa = import_pyarrow()
    import pyarrow.parquet as pq

    started = time.monotonic()
    os.makedirs(a.out, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=".ptprof-handoff-", dir=scratch_parent(a.out))
    writers = Writers(pa, a.out)
    runs = {}
    seen_processes = set()
    done = 0
    try:
        decoder = subprocess.Popen(
            [a.ptprof, "export", "--columns", os.path.join(scratch, "c"), "--paced", "--"] + a.files,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for line in decoder.stdout:
            directory = line.strip()
            handoff = HandOff(pa, directory)
            m = handoff.manifest
            source = handoff.string(m["source"])
            run = run_of(source)
            rank = m["rank"]
            r = runs.setdefault(
                run,
                {
                    "version": handoff.string(m["ptprof_version"]),
                    "schedule": handoff.string(m["schedule"]),
                    "hosts": set(),
                    "processes": set(),
                    "ranks": set(),
                    "files": 0,
                    "start": m["window_start_ns"],
                    "end": m["window_end_ns"],
                },
            )
            r["files"] += 1
            r["hosts"].add(handoff.string(m["host"]))
            r["ranks"].add(rank)
            r["start"] = min(r["start"], m["window_start_ns"])
            r["end"] = max(r["end"], m["window_end_ns"])
            for name, data in handoff.tables():
                if name == "processes":
                    # A process writes a file per window: one row for it.
                    keep = []
                    for i, (host, pid, start) in enumerate(
                        zip(
                            data.column("host").to_pylist(),
                            data.column("pid").to_pylist(),
                            data.column("start_ns").to_pylist(),
                        )
                    ):
                        r["processes"].add((host, pid, start))
                        if (run, host, pid, start) not in seen_processes:
                            seen_processes.add((run, host, pid, start))
                            keep.append(i)
                    data = data.take(pa.array(keep, pa.int64()))
                writers.write(name, run, rank, data)
            writers.write("windows", run, rank, windows_table(pa, handoff, run, source))
            shutil.rmtree(directory)
            try:
                decoder.stdin.write("\n")  # done: the decoder may go on
                decoder.stdin.flush()
            except BrokenPipeError:
                pass  # it finished the last file and exited
            done += 1
            if sys.stderr.isatty() or done == len(a.files) or done % 64 == 0:
                sys.stderr.write(
                    "ptprof export: %d of %d trace files in the dataset (%.1f s)\n"
                    % (done, len(a.files), time.monotonic() - started)
                )
        try:
            decoder.stdin.close()
        except BrokenPipeError:
            pass
        status = decoder.wait()
        if status != 0:
            raise PtprofError("decoding the traces failed (above); the dataset in %s is incomplete" % a.out, 1)
        writers.close()
        runs_dir = os.path.join(a.out, "runs")
        os.makedirs(runs_dir, exist_ok=True)
        pq.write_table(runs_table(pa, runs), os.path.join(runs_dir, "runs.parquet"), compression="zstd")
    finally:
        writers.close()
        shutil.rmtree(scratch, ignore_errors=True)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(a.out) for f in fs)
    tables = ", ".join("%s %d" % (k, v) for k, v in sorted(writers.rows.items()) if k != "windows")
    sys.stderr.write(
        "ptprof export: wrote %s: %d trace files, %d runs, %.1f MB in %.1f s (rows: %s)\n"
        % (a.out, done, len(runs), size / 1e6, time.monotonic() - started, tables)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
