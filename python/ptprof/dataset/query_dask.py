"""`ptprof query DATASET --report --dask SCHEDULER_ADDRESS`: the report's
sections as a Dask job.

The dataset's partitions (a run's rank bucket: 64 ranks, docs/dataset.md)
are the tasks. Each task opens DuckDB on one partition's files and runs every
section's map query (ptprof/dataset/sql/NAME.map.sql, sections.py); one task
per section takes the maps' results (small: sums per name, a time per rank
and step, a start per collective call) and runs its reduce query
(NAME.reduce.sql). The client gets the reduced tables only. The one-machine `ptprof query` runs the same
queries, mapping the whole dataset at once, so both give the same tables.

The tasks' code is ptprof/dataset/tasks.py, sent to the scheduler and the
workers with Client.upload_file as the module ptprof_dataset_tasks: ptprof
need not be installed there. The workers need DuckDB and pyarrow, and must
see the dataset at the path the client names (a shared filesystem).
"""

import importlib.util
import os
import shutil
import sys
import tempfile

from ptprof.dataset import PtprofError
from ptprof.dataset.sections import SECTIONS, section_sql

TASKS_MODULE = "ptprof_dataset_tasks"


def load_tasks(scratch):
    """tasks.py copied as TASKS_MODULE.py and imported under that name
    here too, so that the tasks' functions are named as the cluster imports them."""
    path = os.path.join(scratch, TASKS_MODULE + ".py")
    shutil.copyfile(os.path.join(os.path.dirname(os.path.abspath(__file__)), "tasks.py"), path)
    spec = importlib.util.spec_from_file_location(TASKS_MODULE, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[TASKS_MODULE] = module
    return path, module


def report_sections(dataset, address):
    """{section name: (columns, rows)}, computed on the cluster at `address`."""
    try:
        import distributed
    except ImportError as e:
        raise PtprofError(
            "--dask needs Dask's distributed scheduler client in the Python that runs it (%s: %s): "
            "pip install 'dask[distributed]' there" % (sys.executable, e)
        ) from None
    dataset = os.path.abspath(dataset)
    with tempfile.TemporaryDirectory(prefix="ptprof-query-") as scratch:
        path, tasks = load_tasks(scratch)
        parts = tasks.partitions(dataset)
        if not parts:
            raise PtprofError("%s has no partitions (run=*/rank_bucket=* folders) to give the workers" % dataset)
        try:
            client = distributed.Client(address, timeout=10)
        except (OSError, TimeoutError, ValueError) as e:
            raise PtprofError("could not reach the Dask scheduler at %s: %s" % (address, e), 1) from None
        sections = {name: section_sql(name) for _, name, _ in SECTIONS}
        maps = {name: sql[0] for name, sql in sections.items()}
        try:
            workers = len(client.scheduler_info()["workers"])
            sys.stderr.write(
                "ptprof query: %d partitions of %s on %s (%d workers)\n" % (len(parts), dataset, address, workers)
            )
            client.upload_file(path)
            mapped = client.map(tasks.map_partition, [dataset] * len(parts), parts, [maps] * len(parts), pure=False)
            reduced = {
                name: client.submit(tasks.reduce_section, name, sql[1], *mapped, pure=False)
                for name, sql in sections.items()
            }
            return {name: future.result() for name, future in reduced.items()}
        except Exception as e:  # a worker's error (DuckDB's message, a path it cannot see) is the answer
            raise PtprofError("the Dask job failed: %s: %s" % (type(e).__name__, e), 1) from None
        finally:
            client.close()
