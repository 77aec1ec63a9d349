"""A process whose torch has no bridge and cannot get one (here: a fake pip
torch 2.11 with no C++ headers): ptprof says so once, in one line naming that
torch and what is missing, and carries on without operator events (it must
not dlopen a bridge built for another torch, which would pull a second
libtorch into the process)."""

import os
import subprocess
import textwrap

import ptproftest as T

REQUIRES = ("no_torch",)


def make_fake_pip_torch(root, version):
    """torch/lib/libtorch_cpu.so (an empty library) and torch/version.py, as a
    pip wheel lays them out."""
    lib = os.path.join(root, "torch", "lib")
    os.makedirs(lib)
    src = os.path.join(root, "empty.c")
    with open(src, "w") as f:
        f.write("int ptprof_fake_torch_marker(void) { return 0; }\n")
    so = os.path.join(lib, "libtorch_cpu.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", so, src], check=True)
    with open(os.path.join(root, "torch", "version.py"), "w") as f:
        f.write("__version__ = '%s'\n" % version)
    return so


def test_torch_without_headers_is_reported_once():
    with T.tempdir() as d:
        so = make_fake_pip_torch(d, "2.11.0+cu130")
        script = os.path.join(d, "load.py")
        with open(script, "w") as f:
            f.write(
                textwrap.dedent(
                    """
                import ctypes, ptprof
                ctypes.CDLL(%r)
                ctypes.CDLL(%r)   # a second load must not warn again
                for _ in range(3):
                    with ptprof.range("still_recorded"):
                        pass
                print("ran to the end")
            """
                    % (so, so)
                )
            )
        out = os.path.join(d, "out")
        env = T.clean_env(PTPROF_BRIDGE_CACHE=os.path.join(d, "cache"))
        proc = T.run_ptprof(["run", "-o", out, "--", T.PYTHON, script], env=env)
        T.check_eq(proc.returncode, 0, "exit status\n" + T.describe(proc))
        T.check("ran to the end" in proc.stdout, "the program ran on: " + proc.stdout)
        warnings = [line for line in proc.stderr.splitlines() if "2.11.0+cu130" in line]
        T.check_eq(len(warnings), 1, "one warning naming the process's torch version:\n" + proc.stderr)
        T.check(
            any(
                "cannot build the torch bridge" in line
                and "no C++ headers" in line
                and "operator events are off" in line
                for line in warnings
            ),
            "the line says what is missing and what happens: %r" % warnings,
        )
        rows = {r["name"]: r for r in T.report_json(out)["rows"]}
        T.check_eq(rows.get("still_recorded", {}).get("calls"), 3, "ranges are still recorded")


if __name__ == "__main__":
    T.main()
