"""ptprof's in-target bootstrap entry (docs/bootstrap.md).

``ptprof run`` puts this file's directory first on PYTHONPATH (it holds the
``ptprof`` package too), so Python's ``site`` imports this module at start-up
in the target and in every Python process the target starts. It:

1. does nothing at all unless the process runs under ``ptprof run`` (the
   launcher's PTPROF_SESSION in the environment);
2. adds one import hook that waits for ``import torch`` to finish and then
   hands torch to ``ptprof._boot`` (which installs only what the run's
   options need); a Python process that never imports torch is otherwise
   untouched;
3. imports the ``sitecustomize`` that this one hides (the user's own, or the
   distribution's, next on sys.path), as ddtrace-run and
   opentelemetry-instrument do, so that it runs exactly as without ptprof.

Nothing here may break the program: any error is reported on stderr once and
the program goes on without the bootstrap.
"""

import os
import sys


def _chain_to_next_sitecustomize():
    """Imports the sitecustomize that would have run without ptprof's."""
    here = os.path.dirname(os.path.abspath(__file__))
    ours = sys.modules.pop("sitecustomize", None)
    hidden = [(i, p) for i, p in enumerate(sys.path) if os.path.abspath(p or os.curdir) == here]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    try:
        import sitecustomize  # noqa: F401  (the next one on sys.path, if any)
    except ImportError as e:
        if getattr(e, "name", None) != "sitecustomize":
            raise
        if ours is not None:
            sys.modules["sitecustomize"] = ours
    finally:
        # Back where it was (`import ptprof` must still work in the program),
        # with whatever the other sitecustomize did to sys.path kept.
        for i, p in hidden:
            sys.path.insert(i, p)


class _AfterTorchImport:
    """A sys.meta_path finder that finds nothing itself: when ``torch`` is
    imported it asks the other finders, and runs the bootstrap once torch's
    own module has finished executing (the post-import hook pattern of
    wrapt and the tracers)."""

    def __init__(self):
        self._busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" or self._busy:
            return None
        import importlib.util

        self._busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy = False
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run_module = loader.exec_module
        finder = self

        def exec_module(module):
            run_module(module)
            try:
                sys.meta_path.remove(finder)
            except ValueError:
                pass
            _boot_torch(module)

        loader.exec_module = exec_module
        return spec


def _boot_torch(torch):
    try:
        from ptprof import _boot

        _boot.torch_imported(torch)
    except Exception as e:  # never the program's failure
        sys.stderr.write("ptprof: warning: the Python bootstrap failed, the program goes on without it: %r\n" % (e,))


def _install():
    if not os.environ.get("PTPROF_SESSION"):
        return
    if "torch" in sys.modules:
        _boot_torch(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _AfterTorchImport())


try:
    _install()
except Exception as _e:  # never the program's failure
    sys.stderr.write("ptprof: warning: the Python bootstrap failed, the program goes on without it: %r\n" % (_e,))
_chain_to_next_sitecustomize()
