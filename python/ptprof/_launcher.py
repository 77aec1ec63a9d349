"""The `ptprof` console script of the wheel: runs the launcher binary that is
installed inside this package (ptprof/bin/ptprof), with the same arguments.

The launcher finds the agent, the bridge sources and the prebuilt bridges
relative to its own path, so nothing here needs configuring; `pip install`,
`pip install --user`, a venv, pipx and uv all install the same layout."""

import os
import sys


def launcher_path():
    """The ptprof binary beside this module, or None."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = (
        os.path.join(here, "bin", "ptprof"),  # the wheel: <site-packages>/ptprof/bin/ptprof
        # The copy of this module under <prefix>/share/ptprof/python/ptprof
        # (what `ptprof run` puts on PYTHONPATH): <prefix>/bin/ptprof.
        os.path.join(here, os.pardir, os.pardir, os.pardir, os.pardir, "bin", "ptprof"),
    )
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.normpath(path)
    return None


def main():
    path = launcher_path()
    if path is None:
        sys.stderr.write(
            "ptprof: error: the ptprof launcher is not installed beside %s "
            "(reinstall the ptprof wheel)\n" % os.path.dirname(os.path.abspath(__file__))
        )
        return 2
    # `ptprof export --parquet` writes with pyarrow from this Python, where
    # `pip install 'ptprof[analysis]'` put it.
    os.environ.setdefault("PTPROF_ANALYSIS_PYTHON", sys.executable)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, ["ptprof"] + sys.argv[1:])
    return 2  # not reached


if __name__ == "__main__":
    sys.exit(main())
