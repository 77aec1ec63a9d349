#!/usr/bin/env python3
"""ptprof as users install it: from the wheel, into fresh virtual
environments, with nothing of the checkout or its build on any path.

    python3 tests/install/test_wheel.py WHEEL

(scripts/test.sh builds WHEEL with scripts/wheel.sh, with a bridge prebuilt
for pip's torch only, so that Debian's torch exercises the on-demand build.)

1. A fresh venv with pip's torch and the wheel. The torch is .venv's (the
   one scripts/setup.sh installed), seen through a .pth file in the fresh
   venv: no second 3 GB download and no 6 GB copy, and the venv is still
   one of its own (its own site-packages, bin/ and pip) where the wheel
   installs as it would for a user. With no compiler reachable (PATH holds only the
   venv's bin/, CXX unset): `ptprof run` records operators with the prebuilt
   bridge and builds nothing, `ptprof report` prints the table, `ptprof
   export` writes a Chrome trace, `ptprof export --parquet` a dataset that
   `ptprof query --report` reads (.venv's pyarrow and DuckDB, through the
   same .pth file), `ptprof bridge list` names the prebuilt
   bridge; `import ptprof` outside a run warns once and does nothing (the
   README's annotated program); `python -m ptprof run` records it.
2. A fresh venv over Debian's torch 1.13 (--system-site-packages), which has
   no prebuilt bridge in the wheel: the first run builds one on demand and
   says so in one line.
3. `pip uninstall ptprof` leaves nothing of ptprof in either venv; the bridge
   cache stays where docs/bridges.md says.

Prints one line per check; exits 1 if any failed (no check is ever skipped).
"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "train_mlp.py")
DEBIAN_PYTHON = "/usr/bin/python3"
VENV_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")

ANNOTATED = r"""
import ptprof

@ptprof.range("evaluate")
def evaluate():
    return 42

for i in range(3):
    with ptprof.range("data"):
        x = i * 2
    ptprof.step()
ptprof.mark("done")
print("result", evaluate(), ptprof.enabled())
"""

failures = []


def check(cond, what, detail=""):
    print("%s: %s" % ("ok  " if cond else "FAIL", what), flush=True)
    if not cond:
        failures.append(what)
        if detail:
            print("      " + detail.replace("\n", "\n      ")[-3000:], flush=True)
    return cond


def run(cmd, env, cwd, timeout=600):
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def describe(p):
    return "exit %s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (p.returncode, p.stdout[-2000:], p.stderr[-2000:])


def user_env(venv, cache, compiler_visible):
    """What a user's shell would have: the venv's bin/ first, no build tree,
    no PYTHONPATH, no PTPROF_* settings, and (unless compiler_visible) no
    compiler anywhere on PATH."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PTPROF_") and k not in ("PYTHONPATH", "LD_PRELOAD", "CXX", "CC", "VIRTUAL_ENV")
    }
    path = os.path.join(venv, "bin")
    env["PATH"] = path + (":/usr/local/bin:/usr/bin:/bin" if compiler_visible else "")
    env["PTPROF_BRIDGE_CACHE"] = cache
    env["VIRTUAL_ENV"] = venv
    return env


def make_venv(path, system_site_packages=False):
    cmd = [DEBIAN_PYTHON, "-m", "venv", path]
    if system_site_packages:
        cmd.insert(3, "--system-site-packages")
    subprocess.run(cmd, check=True)
    return os.path.join(path, "bin", "python")


def pip(python, *args):
    p = subprocess.run(
        [python, "-m", "pip", "--disable-pip-version-check", "-q"] + list(args),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if p.returncode != 0:
        print(p.stdout[-3000:])
    return p.returncode == 0


def leftovers(venv):
    """What of ptprof is still in the venv."""
    found = glob.glob(os.path.join(venv, "lib", "python*", "site-packages", "ptprof*"))
    found += glob.glob(os.path.join(venv, "bin", "ptprof*"))
    return found


def check_pip_torch_env(wheel, work):
    venv = os.path.join(work, "env-pip")
    cache = os.path.join(work, "cache-pip")
    os.makedirs(cache)
    version, site = subprocess.run(
        [
            VENV_PYTHON,
            "-c",
            "import torch, os; print(torch.__version__.split('+')[0]); "
            "print(os.path.dirname(os.path.dirname(torch.__file__)))",
        ],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    ).stdout.split()
    python = make_venv(venv)
    own_site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    ).stdout.strip()
    with open(os.path.join(own_site, "pip_torch.pth"), "w") as f:
        f.write(site + "\n")
    p = run([python, "-c", "import torch; print(torch.__version__)"], dict(os.environ), work)
    check(p.returncode == 0 and p.stdout.startswith(version), "pip's torch %s in a fresh venv" % version, describe(p))
    if not check(pip(python, "install", wheel), "pip install %s" % os.path.basename(wheel)):
        return
    env = user_env(venv, cache, compiler_visible=False)
    check(
        shutil.which("c++", path=env["PATH"]) is None and shutil.which("g++", path=env["PATH"]) is None,
        "no compiler on the users' PATH (%s)" % env["PATH"],
    )

    # The in-target bootstrap (docs/bootstrap.md): its sitecustomize.py is in
    # the directory `ptprof run` puts on PYTHONPATH, never in site-packages
    # (where it would run in every Python of the venv, and hide another).
    check(not os.path.exists(os.path.join(own_site, "sitecustomize.py")), "no sitecustomize.py in site-packages")
    check(
        os.path.isfile(os.path.join(own_site, "ptprof", "share", "ptprof", "python", "sitecustomize.py")),
        "sitecustomize.py in the package's python directory (the run's PYTHONPATH)",
    )
    p = run(
        [
            "ptprof",
            "run",
            "-o",
            os.path.join(work, "out-boot"),
            "--",
            python,
            "-c",
            "import sys, torch; print('booted', 'ptprof._boot' in sys.modules)",
        ],
        env,
        work,
    )
    check(
        p.returncode == 0 and "booted True" in p.stdout,
        "the bootstrap runs in the target under ptprof run",
        describe(p),
    )
    p = run([python, "-c", "import sys, torch; print('booted', 'ptprof._boot' in sys.modules)"], env, work)
    check(p.returncode == 0 and "booted False" in p.stdout, "and not in the venv's Python otherwise", describe(p))

    out = os.path.join(work, "out-pip")
    p = run(["ptprof", "run", "-o", out, "--", python, EXAMPLE], env, work)
    check(p.returncode == 0, "ptprof run -- python examples/train_mlp.py (pip's torch)", describe(p))
    check("building the torch bridge" not in p.stderr, "no bridge build during the run", p.stderr)
    check(
        os.listdir(cache) == [], "the bridge cache stays empty (the prebuilt bridge was used)", str(os.listdir(cache))
    )
    p = run(["ptprof", "report", out], env, work)
    check(
        p.returncode == 0 and "aten::linear" in p.stdout and "Self CPU %" in p.stdout,
        "ptprof report: the operator table with aten::linear",
        describe(p),
    )
    p = run(["ptprof", "export", out, "--chrome", os.path.join(work, "trace.json.gz")], env, work)
    check(
        p.returncode == 0 and os.path.getsize(os.path.join(work, "trace.json.gz")) > 0,
        "ptprof export --chrome",
        describe(p),
    )
    # The offline subpackage (ptprof.dataset), run by the venv's Python (the
    # console script's PTPROF_ANALYSIS_PYTHON), which sees .venv's pyarrow
    # and DuckDB through the .pth file.
    dataset = os.path.join(work, "dataset")
    p = run(["ptprof", "export", out, "--parquet", dataset], env, work)
    check(
        p.returncode == 0 and os.path.isfile(os.path.join(dataset, "runs", "runs.parquet")),
        "ptprof export --parquet (the wheel's ptprof.dataset)",
        describe(p),
    )
    p = run(["ptprof", "query", dataset, "--report"], env, work)
    check(
        p.returncode == 0
        and "Operators (ptprof/dataset/sql/operators.{map,reduce}.sql)" in p.stdout
        and "aten::linear" in p.stdout,
        "ptprof query --report (the wheel's SQL files)",
        describe(p),
    )
    p = run(["ptprof", "bridge", "list"], env, work)
    check(
        p.returncode == 0 and "prebuilt" in p.stdout and version in p.stdout,
        "ptprof bridge list names the wheel's prebuilt bridge",
        describe(p),
    )
    p = run([python, "-m", "ptprof", "--version"], env, work)
    check(p.returncode == 0 and p.stdout.startswith("ptprof "), "python -m ptprof --version", describe(p))

    p = run([python, "-c", "import ptprof; ptprof.step(); ptprof.step(); print(ptprof.enabled())"], env, work)
    warned = [line for line in p.stderr.splitlines() if "RuntimeWarning" in line]
    check(
        p.returncode == 0 and p.stdout.strip() == "False" and len(warned) == 1,
        "import ptprof outside a run: one warning, calls do nothing",
        describe(p),
    )
    script = os.path.join(work, "annotated.py")
    with open(script, "w") as f:
        f.write(ANNOTATED)
    p = run([python, script], env, work)
    warned = [line for line in p.stderr.splitlines() if "RuntimeWarning" in line]
    check(
        p.returncode == 0 and p.stdout.strip() == "result 42 False" and len(warned) == 1,
        "the README's annotated program outside ptprof run",
        describe(p),
    )
    out = os.path.join(work, "out-annotated")
    p = run([python, "-m", "ptprof", "run", "-o", out, "--step", "manual", "--", python, script], env, work)
    r = run(["ptprof", "report", out, "--format", "csv"], env, work)
    check(
        p.returncode == 0 and "result 42 True" in p.stdout and "evaluate" in r.stdout and "data" in r.stdout,
        "python -m ptprof run -- the annotated program: its ranges recorded",
        describe(p) + "\n" + describe(r),
    )

    check(pip(python, "uninstall", "-y", "ptprof"), "pip uninstall ptprof")
    check(leftovers(venv) == [], "nothing of ptprof left in the venv", str(leftovers(venv)))
    check(os.path.isdir(cache), "the bridge cache is left alone")


def check_debian_torch_env(wheel, work):
    venv = os.path.join(work, "env-debian")
    cache = os.path.join(work, "cache-debian")
    python = make_venv(venv, system_site_packages=True)
    if not check(pip(python, "install", wheel), "pip install the wheel into a venv over Debian's torch"):
        return
    env = user_env(venv, cache, compiler_visible=True)
    out = os.path.join(work, "out-debian")
    p = run(["ptprof", "run", "-o", out, "--", python, EXAMPLE], env, work)
    building = [line for line in p.stderr.splitlines() if "building the torch bridge" in line]
    check(
        p.returncode == 0 and len(building) == 1 and "done in" in building[0],
        "Debian's torch (no prebuilt bridge): built on demand, one line says so",
        describe(p),
    )
    p = run(["ptprof", "report", out], env, work)
    check(p.returncode == 0 and "aten::linear" in p.stdout, "ptprof report (Debian's torch)", describe(p))
    built = os.listdir(cache) if os.path.isdir(cache) else []
    check(any(e.startswith("torch-1.13") for e in built), "the built bridge is in the cache", str(built))
    check(pip(python, "uninstall", "-y", "ptprof"), "pip uninstall ptprof (Debian's torch)")
    check(leftovers(venv) == [], "nothing of ptprof left in the venv", str(leftovers(venv)))
    check(any(e.startswith("torch-1.13") for e in os.listdir(cache)), "the bridge cache stays after uninstall")


def main():
    if len(sys.argv) != 2 or not os.path.isfile(sys.argv[1]):
        print("usage: test_wheel.py WHEEL (scripts/wheel.sh builds it)", file=sys.stderr)
        return 2
    wheel = os.path.abspath(sys.argv[1])
    for python in (DEBIAN_PYTHON, VENV_PYTHON):
        if not os.path.exists(python):
            print("test_wheel.py: %s is missing (scripts/setup.sh makes it)" % python, file=sys.stderr)
            return 1
    with tempfile.TemporaryDirectory(prefix="ptprof-wheel-") as work:
        check_pip_torch_env(wheel, work)
        check_debian_torch_env(wheel, work)
    print("test_wheel.py: %d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
