"""ptprof's offline part: the Parquet dataset of ``ptprof export --parquet``
and the SQL of ``ptprof query`` over it (docs/dataset.md). Run by the
launcher in a Python of the user's choice (one with pyarrow, DuckDB, Dask),
never loaded into a profiled program:

- ``python -m ptprof.dataset`` (``__main__.py``): writes the dataset from
  the launcher's columnar hand-off;
- ``python -m ptprof.dataset.query`` (``query.py``): SQL over it with
  DuckDB, on this machine or (``query_dask.py``) as a Dask job;
- ``sections.py``: the report's sections as SQL files (``sql/``), a map and
  a reduce query each;
- ``tasks.py``: what runs where the data is (standard library only: sent to
  a Dask cluster as a file of its own).
"""


class PtprofError(Exception):
    """What the user is told when a command cannot go on: the message, which
    the command's ``main()`` prints after its name ("ptprof export: ..."),
    and the exit status it returns (2, a usage error, unless said; 1 when the
    work itself failed)."""

    def __init__(self, message, status=2):
        super().__init__(message)
        self.status = status
