"""Compiles the GPU replay's helper library (replay_scopes.cpp) against the
torch of the interpreter that runs this script: `python build_scopes.py OUT.so`.

Why per torch: the helper opens at::RecordFunction scopes, a C++ class whose
layout and ABI belong to one libtorch, and the replay must record them as that
torch's own ops. Why plain g++ and not torch.utils.cpp_extension.load: no
ninja here, and one compiler line is all it takes. The headers and libraries
are torch.utils.cpp_extension's include_paths()/library_paths() where those
hold them (pip's torch), else Debian's layout (/usr/include,
/usr/lib/x86_64-linux-gnu); the C++ ABI flag is the torch's own
(torch._C._GLIBCXX_USE_CXX11_ABI). C++20, not 17: torch 2.x's recent headers
need it (std::construct_at, operator<=>), and torch 1.13's build as C++20 too
(as in tests/integration/torch_cxx.py). Set CXX to use another compiler.

Exit status: 0 built; 1 the compiler failed (the command is printed); 2 bad
usage or no torch in this interpreter.
"""

import argparse
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "replay_scopes.cpp")
DEBIAN_INCLUDE = "/usr/include"
DEBIAN_LIB = "/usr/lib/x86_64-linux-gnu"


def torch_paths():
    """(include dirs, library dirs, cxx11 abi flag) of the importable torch."""
    import torch  # noqa: F401  (the torch under test; its C++ paths follow)
    import torch.utils.cpp_extension as ext

    includes = [p for p in ext.include_paths() if os.path.isdir(p)]
    if not any(os.path.exists(os.path.join(p, "ATen", "record_function.h")) for p in includes):
        includes.append(DEBIAN_INCLUDE)
    libs = [p for p in ext.library_paths() if os.path.exists(os.path.join(p, "libtorch_cpu.so"))]
    if not libs:
        libs = [DEBIAN_LIB]
    return includes, libs, int(torch._C._GLIBCXX_USE_CXX11_ABI)


def command(out, includes, libs, abi):
    cxx = shlex.split(os.environ.get("CXX") or "g++")
    cmd = cxx + ["-O1", "-shared", "-fPIC", "-std=c++20", "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi]
    for p in includes:
        cmd += ["-isystem", p]
    cmd += [SOURCE, "-o", out]
    for p in libs:
        cmd += ["-L" + p, "-Wl,-rpath," + p]
    cmd += ["-lc10", "-ltorch_cpu", "-ldl"]
    return cmd


def main(argv=None):
    p = argparse.ArgumentParser(prog="build_scopes.py", description="Builds replay_scopes.cpp against this torch.")
    p.add_argument("output", help="the shared library to write (OUT.so)")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        includes, libs, abi = torch_paths()
    except ImportError as e:
        print("build_scopes.py: no torch in %s: %s" % (sys.executable, e), file=sys.stderr)
        return 2
    cmd = command(os.path.abspath(args.output), includes, libs, abi)
    shown = " ".join(shlex.quote(c) for c in cmd)
    try:
        run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as e:
        print("build_scopes.py: cannot run the compiler: %s\n  %s" % (e, shown), file=sys.stderr)
        return 1
    if run.returncode != 0:
        sys.stderr.write(run.stdout)
        print("build_scopes.py: the compile failed:\n  %s" % shown, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
