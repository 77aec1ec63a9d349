"""Builds a C++ source into a shared library against the torch that the
running interpreter imports, and caches it.

    import torch_cxx
    so = torch_cxx.build("rf_counter.cpp", cache_dir)   # a path to the .so
    lib = ctypes.CDLL(so)                                # after `import torch`

    python torch_cxx.py SRC OUT_DIR    # prints the .so's path

The library is compiled with $CXX (default c++) and
    -std=c++20 -O2 -DNDEBUG -fPIC -shared -D_GLIBCXX_USE_CXX11_ABI=<torch's>
    -I<torch.utils.cpp_extension.include_paths()>
and linked to the libtorch_cpu and libc10 that this process has loaded, by
full path (Debian's are versioned, libtorch_cpu.so.1.13.0 in
/usr/lib/x86_64-linux-gnu; pip's are torch/lib/libtorch_cpu.so), with an rpath
to their directory. So one source builds for Debian's torch 1.13 and pip's
torch 2.x alike, each from the interpreter that imports it.

The output is cached in `cache_dir` under a name derived from the source's
bytes, the extra flags, the compiler, torch's version and torch's location: a
second build of the same thing for the same torch returns at once, and each
torch gets its own library.

C++20, not 17: torch 2.x's headers (ivalue_inl.h) use std::construct_at, and
torch 1.13's headers build as C++20 too (ptprof's own bridge does). An exclusive file lock (cache_dir/.lock) makes two
processes building at once take turns; the library is written under a
temporary name and renamed into place, so a reader never sees half of one.
"""

import fcntl
import hashlib
import os
import shlex
import subprocess
import sys
import tempfile


class BuildError(RuntimeError):
    """The compiler failed; the message holds its command and output."""


def _loaded_library(stem):
    """The path of the loaded shared object whose file name starts with
    `stem` + ".so" (libtorch_cpu.so, libtorch_cpu.so.1.13.0), from
    /proc/self/maps; None when none is loaded."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 6:
                    continue
                path = parts[5]
                name = os.path.basename(path)
                if name == stem + ".so" or name.startswith(stem + ".so."):
                    return os.path.realpath(path)
    except OSError:
        pass
    return None


def torch_libraries():
    """(libtorch_cpu path, libc10 path) of the torch this process imports."""
    import torch

    lib_dir = os.path.join(os.path.dirname(torch.__file__), "lib")
    found = []
    for stem in ("libtorch_cpu", "libc10"):
        path = _loaded_library(stem)
        if path is None:
            candidate = os.path.join(lib_dir, stem + ".so")
            if not os.path.exists(candidate):
                raise BuildError("cannot find %s for torch %s at %s" % (stem, torch.__version__, torch.__file__))
            path = os.path.realpath(candidate)
        found.append(path)
    return tuple(found)


def torch_identity():
    """(version, location) of the imported torch: part of the cache key."""
    import torch

    return torch.__version__, os.path.dirname(os.path.realpath(torch.__file__))


def compile_command(src, out, extra_flags=()):
    """The compiler command line that builds `src` into `out`."""
    import torch
    import torch.utils.cpp_extension as cpp_extension

    torch_cpu, c10 = torch_libraries()
    lib_dirs = sorted({os.path.dirname(torch_cpu), os.path.dirname(c10)})
    cxx = shlex.split(os.environ.get("CXX") or "c++")
    cmd = cxx + [
        "-std=c++20",
        "-O2",
        "-DNDEBUG",
        "-fPIC",
        "-shared",
        "-D_GLIBCXX_USE_CXX11_ABI=%d" % int(bool(torch._C._GLIBCXX_USE_CXX11_ABI)),
    ]
    for inc in cpp_extension.include_paths():
        if os.path.isdir(inc):
            cmd.append("-isystem" + inc)
    cmd += list(extra_flags)
    cmd += [src, "-o", out, torch_cpu, c10]
    cmd += ["-Wl,-rpath," + d for d in lib_dirs]
    return cmd


def cache_key(src, extra_flags=()):
    h = hashlib.sha256()
    with open(src, "rb") as f:
        h.update(f.read())
    version, location = torch_identity()
    for part in (
        version,
        location,
        os.environ.get("CXX") or "c++",
        "\0".join(extra_flags),
        "v2",
    ):  # bump when compile_command changes
        h.update(b"\0" + part.encode())
    return h.hexdigest()[:20]


def build(src, cache_dir, extra_flags=(), quiet=True):
    """Returns the path of `src` built for this interpreter's torch, compiling
    it into `cache_dir` unless an identical build is there already. Raises
    BuildError with the compiler's output when compiling fails."""
    src = os.path.abspath(src)
    extra_flags = tuple(extra_flags)
    os.makedirs(cache_dir, exist_ok=True)
    stem = os.path.splitext(os.path.basename(src))[0]
    version, _ = torch_identity()
    out = os.path.join(cache_dir, "%s-torch%s-%s.so" % (stem, version.replace("+", "_"), cache_key(src, extra_flags)))
    if os.path.exists(out):
        return out
    with open(os.path.join(cache_dir, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if os.path.exists(out):  # built by whoever held the lock before us
                return out
            fd, tmp = tempfile.mkstemp(prefix="." + stem + "-", suffix=".so.tmp", dir=cache_dir)
            os.close(fd)
            try:
                cmd = compile_command(src, tmp, extra_flags)
                if not quiet:
                    print(" ".join(shlex.quote(c) for c in cmd), file=sys.stderr)
                proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                if proc.returncode != 0:
                    raise BuildError(
                        "compiling %s for torch %s failed (exit %d):\n%s\n%s"
                        % (src, version, proc.returncode, " ".join(shlex.quote(c) for c in cmd), proc.stdout[-8000:])
                    )
                os.chmod(tmp, 0o755)
                os.replace(tmp, out)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return out


def main(argv):
    if len(argv) != 3 or argv[1].startswith("-"):
        print("usage: %s SRC OUT_DIR   (prints the built library's path)" % os.path.basename(argv[0]), file=sys.stderr)
        return 2
    try:
        print(build(argv[1], argv[2], quiet=False))
    except BuildError as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
