"""Inductor's generated CPU kernels as rows of their own, named with the aten
ops they were fused from (issue #25 item 3; docs/bootstrap.md, "Inductor
kernels"). Imported by ``_boot.py`` under ``ptprof run`` only.

torch's profiler shows no row for a ``cpp_fused_*`` kernel: the Python
wrapper inductor generates calls it as a plain function (only
``TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE=1`` compiles a RecordFunction into
it, which changes the code and costs in every call). Triton kernels need
nothing here: torch opens a RecordFunction named after the kernel around each
launch while its profiler flag is on, which ptprof's windows set.

Two parts:

- Provenance, at compile time. For a Triton kernel inductor writes, above its
  call in the generated wrapper, ``# Topologically Sorted Source Nodes:
  [...], Original ATen: [...]`` (``torch._inductor.utils.get_kernel_metadata``).
  torch 2.15 writes it for no C++ kernel (``CppScheduling.codegen_comment``
  only writes a provenance debug handle, and only when
  ``config.trace.provenance_tracking_level`` is set). ``add_cpp_origins``
  makes the C++ scheduling write the same line, from the same function, as
  the Triton scheduling does: a comment, so the code that runs is unchanged,
  and it stays in the FX graph cache with the code. Wrapped once, when
  ``torch.compile`` is first called (inductor's codegen is imported then).
- Rows, while a window records. The wrapper's ``call`` looks each kernel up
  in its module's globals at every call, so at a window's start each loaded
  module's ``cpp_*`` kernels are replaced by a function that opens a ptprof
  range (``ptprof_range_push``) named ``<kernel> [<aten ops>]`` around the
  call, and the originals are put back when it stops: outside windows the
  kernels are inductor's own objects and nothing of ptprof runs. Modules
  loaded while a window records (a compile in the window, a cache load) are
  patched as ``PyCodeCache.load_by_key_path`` returns them, a wrap that also
  lasts only as long as the window (installed when it starts, or when
  ``torch.compile`` returns if inductor was not imported then).
"""

import re
import sys

# One kernel's call in the wrapper's code, as inductor writes it: the C++
# kernels called by name, Triton kernels through .run.
_CALL = re.compile(r"^\s*((?:cpp|triton)_\w+)(?:\.run)?\(")
# What get_kernel_metadata writes (with the wrapper's comment marker).
_ORIGINS = re.compile(
    r"^\s*(?:#|//) (?:Topologically Sorted|Unsorted) Source Nodes: \[(.*?)\], Original ATen: \[(.*?)\]\s*$"
)
# A line that runs something else (an extern kernel, a fallback to an aten
# op): the comment above it is that call's, not the next kernel's.
_OTHER_CALL = re.compile(r"(?:\bextern_kernels\.\w+|\btorch\.ops\.|\baten\.\w+)")


def _split(listed):
    return [x.strip() for x in listed.split(",") if x.strip()]


def parse_provenance(source):
    """{kernel: {"aten": [...], "nodes": [...]}} from a generated wrapper's
    source: for each kernel called in it, the ``Original ATen`` and
    ``Source Nodes`` of the comment inductor wrote above its call (the last
    such comment above it with no other kernel called in between). A kernel
    called at several places gets the union, in order of appearance."""
    found = {}
    pending = None
    for line in source.splitlines():
        m = _ORIGINS.match(line)
        if m:
            pending = (_split(m.group(1)), _split(m.group(2)))
            continue
        call = _CALL.match(line)
        if call:
            name = call.group(1)
            entry = found.setdefault(name, {"aten": [], "nodes": []})
            if pending is not None:
                for key, values in (("nodes", pending[0]), ("aten", pending[1])):
                    entry[key].extend(v for v in values if v not in entry[key])
            pending = None
        elif _OTHER_CALL.search(line):
            pending = None
    return found


def row_name(kernel, provenance):
    """The kernel's row: ``cpp_fused_relu_0 [aten.relu]``, or the bare name
    when inductor left no provenance (a module compiled without ptprof)."""
    aten = (provenance or {}).get("aten") or []
    return "%s [%s]" % (kernel, ", ".join(aten)) if aten else kernel


def add_cpp_origins(torch):
    """Makes inductor's C++ scheduling write, above each kernel's call, the
    ``Source Nodes / Original ATen`` comment it writes for Triton kernels.
    Returns True once it is in place (or torch writes it already)."""
    cpp = sys.modules.get("torch._inductor.codegen.cpp")
    scheduling = getattr(cpp, "CppScheduling", None)
    original = getattr(scheduling, "codegen_comment", None)
    if original is None:
        return False
    if getattr(original, "_ptprof_wrapped", False):
        return True
    if "get_kernel_metadata" in getattr(getattr(original, "__code__", None), "co_names", ()):
        return True  # a torch that writes the line itself (as torch 2.15 does for Triton kernels)
    try:
        from torch._inductor.utils import get_kernel_metadata
        from torch._inductor.virtualized import V
    except ImportError:
        return False
    import functools

    @functools.wraps(original)
    def codegen_comment(self, node_schedule, *args, **kwargs):
        try:
            wrapper = V.graph.wrapper_code
            origins, _ = get_kernel_metadata(node_schedule, wrapper)
            if origins:
                wrapper.make_comment(origins)
        except Exception:  # a comment: never the compile's failure
            pass
        return original(self, node_schedule, *args, **kwargs)

    codegen_comment._ptprof_wrapped = True
    scheduling.codegen_comment = codegen_comment
    return True


class KernelRows:
    """The window-long wrapping of the generated modules' C++ kernels."""

    def __init__(self, push, pop):
        self.push = push  # ptprof_range_push(bytes)
        self.pop = pop  # ptprof_range_pop()
        self.recording = False
        self.provenance = {}  # id(module) -> (module, {kernel: row name as bytes})
        self.patched = []  # (module dict, kernel, original) while a window records
        self.loader = None  # (PyCodeCache, its own load_by_key_path) while wrapped
        self.origins = False  # add_cpp_origins done

    def compiled(self, torch):
        """torch.compile returned: inductor is imported now. Its C++ kernels'
        provenance from now on, and, in a window that opened before inductor
        was imported (a run without a schedule), its modules' loads followed."""
        try:
            if not self.origins:
                self.origins = add_cpp_origins(torch)
            if self.recording and self.loader is None:
                self.start()
        except Exception:  # never the program's failure
            pass

    def follow(self, recording):
        recording = bool(recording)
        if recording == self.recording:
            return
        self.recording = recording
        try:
            if recording:
                self.start()
            else:
                self.stop()
        except Exception:  # runs between two of the program's bytecodes
            pass

    def start(self):
        codecache = sys.modules.get("torch._inductor.codecache")
        cache = getattr(codecache, "PyCodeCache", None)
        if cache is None:
            return
        for module in list(getattr(cache, "modules", ())):
            self.patch(module)
        load = cache.__dict__.get("load_by_key_path")
        if isinstance(load, classmethod) and self.loader is None:
            rows = self
            original = load.__func__

            def load_by_key_path(cls, *args, **kwargs):
                module = original(cls, *args, **kwargs)
                if rows.recording:
                    try:
                        rows.patch(module)
                    except Exception:
                        pass
                return module

            cache.load_by_key_path = classmethod(load_by_key_path)
            self.loader = (cache, load)

    def stop(self):
        if self.loader is not None:
            cache, load = self.loader
            self.loader = None
            cache.load_by_key_path = load
        patched, self.patched = self.patched, []
        for namespace, kernel, original in patched:
            namespace[kernel] = original

    def kernels_of(self, module):
        """{kernel: row name} of a generated wrapper module, read once."""
        known = self.provenance.get(id(module))
        if known is not None and known[0] is module:
            return known[1]
        rows = {}
        namespace = getattr(module, "__dict__", {})
        if callable(namespace.get("call")):
            source = None
            try:
                with open(module.__file__, encoding="utf-8") as f:
                    source = f.read()
            except (OSError, TypeError, AttributeError):
                pass
            found = parse_provenance(source) if source else {}
            for kernel in found:
                if kernel.startswith("cpp_") and callable(namespace.get(kernel)):
                    rows[kernel] = row_name(kernel, found[kernel]).encode("utf-8", "replace")
        self.provenance[id(module)] = (module, rows)
        return rows

    def patch(self, module):
        namespace = getattr(module, "__dict__", None)
        if namespace is None:
            return
        for kernel, name in self.kernels_of(module).items():
            original = namespace.get(kernel)
            if original is None or getattr(original, "_ptprof_kernel", False):
                continue
            namespace[kernel] = self.wrap(original, name)
            self.patched.append((namespace, kernel, original))

    def wrap(self, kernel, name):
        push, pop = self.push, self.pop

        def recorded(*args, **kwargs):
            push(name)
            try:
                return kernel(*args, **kwargs)
            finally:
                pop()

        recorded._ptprof_kernel = True
        return recorded
