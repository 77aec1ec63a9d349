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
    probe = subprocess.run([py, "-c", "import pyarrow.parquet, duckdb"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return py if probe.returncode == 0 else None


def need_pyarrow():
    if analysis_python() is None:
        T.skip("no Python with pyarrow and duckdb (PTPROF_ANALYSIS_PYTHON=%r; scripts/setup.sh puts them in .venv)" %
               os.environ.get("PTPROF_ANALYSIS_PYTHON", ""))


def export(paths, out):
    """`ptprof export PATHS --parquet OUT`: the finished process."""
    if isinstance(paths, str):
        paths = [paths]
    return T.run_ptprof(["export"] + list(paths) + ["--parquet", out, "--python", analysis_python()])


def read(out, *tables):
    """{table: {"schema": [[column, type]], "rows": [{...}], "files": [...]}}."""
    proc = subprocess.run([analysis_python(), DUMP, out] + list(tables), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=300)
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
