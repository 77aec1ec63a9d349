#!/usr/bin/env python3
"""The house rules, checked: the layering (scripts/check_layers.py, against
docs/architecture.md's map) and the names a unity build would see twice
(scripts/check_unity_names.py), then clang-format (.clang-format) and clang-tidy
(.clang-tidy) over the project's C++ sources. Exits 1 on any finding, 2 on a
usage error. Called by scripts/lint.sh (see there for the options).

clang-tidy is what costs (5-10 s a translation unit, minutes for the tree),
so a unit found clean is remembered by a key of everything its result
depends on:
  - the unit's text and the text of every project file it includes (from
    the compiler's dependency file, build/**/<unit>.o.d; a unit whose
    dependency file is missing or older than one of its inputs has no key
    and is always checked);
  - its compile command, with the source and build directories written as
    placeholders (so another checkout's identical build hits the same key);
  - .clang-tidy and clang-tidy's version.
System headers (libstdc++, spdlog, CUDA) are not in the key: a new Debian
package version that would change a finding is not noticed until one of
the unit's own inputs changes, or `--all`.

Clean keys are kept in scripts/lint-clean.txt, committed with the code they
describe, so a fresh clone (CI) re-checks only what changed since someone ran
the lint on it; `--all` ignores it. A key is a SHA-256 of the inputs above,
so an entry can only ever vouch for exactly the text it was computed from.
clang-format is fast and always runs on every file.

The project's Python (python/, bench/, scripts/, tests/, examples/) is checked by ruff,
`ruff check` and `ruff format --check` with the rules of pyproject.toml
([tool.ruff]): .venv's ruff (scripts/setup.sh installs the pinned version
there with PTPROF_SETUP_TESTS=1), else RUFF, else one on PATH. Without ruff
the Python is not checked and the stage says so; under CI that is a failure.
It needs no build and takes well under a second.
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLEAN_LIST = os.path.join(ROOT, "scripts", "lint-clean.txt")
# Sources compiled against torch (the bridge, the test's reference counter,
# the benchmark's floor) have no entry in compile_commands.json, so
# clang-tidy cannot check them: they are formatted, not tidied.
TORCH_ONLY = re.compile(r"^(agent/torch/|bench/floor/|tests/integration/rf_counter\.cpp)")
BLOCK = 1 << 16


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(BLOCK):
            h.update(chunk)
    return h.hexdigest()


def project_files():
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "*.cpp", "*.hpp", "*.h"],
        cwd=ROOT,
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    return sorted(set(out.split()))


def depfile_inputs(entry):
    """The files a unit was compiled from (its .o.d), or None when unknown
    or older than one of them (the build is stale: no key, always check)."""
    args = shlex.split(entry["command"]) if "command" in entry else entry["arguments"]
    try:
        obj = args[args.index("-o") + 1]
    except (ValueError, IndexError):
        return None
    dep = os.path.join(entry["directory"], obj + ".d")
    try:
        text = open(dep).read()
        dep_mtime = os.stat(dep).st_mtime
    except OSError:
        return None
    text = text.replace("\\\n", " ")
    _, _, deps = text.partition(":")
    # Relative to the unit's build directory when the compiler ran there with
    # relative paths (ccache's base_dir rewrites them so).
    files = [os.path.join(entry["directory"], f) for f in deps.split()]
    for f in files:
        try:
            if os.stat(f).st_mtime > dep_mtime:
                return None
        except OSError:
            return None
    return files


class Keys:
    def __init__(self, build, tidy):
        self.build = os.path.realpath(build)
        version = subprocess.run([tidy, "--version"], stdout=subprocess.PIPE, text=True).stdout
        config = open(os.path.join(ROOT, ".clang-tidy"), "rb").read()
        self.base = hashlib.sha256(version.encode() + b"\0" + config).hexdigest()
        self.file_hashes = {}

    def _hash(self, path):
        if path not in self.file_hashes:
            self.file_hashes[path] = sha256_file(path)
        return self.file_hashes[path]

    def key(self, entry):
        inputs = depfile_inputs(entry)
        if inputs is None:
            return None
        command = entry.get("command") or " ".join(entry["arguments"])
        command = command.replace(self.build, "@BUILD@").replace(ROOT, "@SRC@")
        h = hashlib.sha256()
        h.update(self.base.encode())
        h.update(command.encode())
        for f in sorted(set(os.path.realpath(os.path.join(entry["directory"], f)) for f in inputs)):
            if f.startswith(ROOT + os.sep) and not f.startswith(self.build + os.sep):
                h.update(os.path.relpath(f, ROOT).encode() + b"\0" + self._hash(f).encode())
        return h.hexdigest()


def read_clean():
    try:
        return set(line.strip() for line in open(CLEAN_LIST) if re.fullmatch(r"[0-9a-f]{64}\s*", line))
    except OSError:
        return set()


def write_clean(keys):
    header = (
        "# scripts/lint.py: keys of translation units clang-tidy found clean (see its\n"
        "# docstring). Written by scripts/lint.sh; commit it with the code.\n"
    )
    tmp = CLEAN_LIST + ".tmp"
    with open(tmp, "w") as f:
        f.write(header)
        f.writelines(k + "\n" for k in sorted(keys))
    os.replace(tmp, CLEAN_LIST)


def run_format(fmt, files):
    r = subprocess.run([fmt, "--dry-run", "--Werror"] + files, cwd=ROOT)
    return r.returncode == 0


PYTHON_DIRS = ("python", "bench", "scripts", "tests", "examples")


def find_ruff():
    """RUFF, else .venv's ruff (the version scripts/setup.sh pins), else one on PATH; None without."""
    if os.environ.get("RUFF"):
        return os.environ["RUFF"]
    venv_ruff = os.path.join(ROOT, ".venv", "bin", "ruff")
    if os.access(venv_ruff, os.X_OK):
        return venv_ruff
    return shutil.which("ruff")


def under_ci():
    # As tests/integration/ptproftest.py reads it: set, and not a "no".
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no", "off")


def run_ruff():
    """ruff check and ruff format --check over PYTHON_DIRS: True when clean
    (or when ruff is missing outside CI, which is said)."""
    ruff = find_ruff()
    if ruff is None:
        ci = under_ci()
        print(
            "lint: ruff: not found (.venv/bin/ruff, RUFF or PATH), so the Python is not checked%s: "
            "PTPROF_SETUP_TESTS=1 bash scripts/setup.sh installs it into .venv"
            % ("; under CI that is a failure" if ci else ""),
            file=sys.stderr,
            flush=True,
        )
        return not ci
    t0 = time.monotonic()
    paths = [d for d in PYTHON_DIRS if os.path.isdir(os.path.join(ROOT, d))]
    # No colours, no cache written into the checkout: the same output with or
    # without a terminal.
    env = dict(os.environ, NO_COLOR="1")
    env.pop("FORCE_COLOR", None)
    common = ["--no-cache"]
    version = subprocess.run([ruff, "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()
    checked = subprocess.run([ruff, "check", *common, "--output-format", "concise", *paths], cwd=ROOT, env=env)
    formatted = subprocess.run(
        [ruff, "format", "--check", *common, "--output-format", "concise", *paths], cwd=ROOT, env=env
    )
    ok = checked.returncode == 0 and formatted.returncode == 0
    print(
        "lint: %s: check %s, format %s over %s (%.1f s)%s"
        % (
            version or "ruff",
            "ok" if checked.returncode == 0 else "FINDINGS",
            "ok" if formatted.returncode == 0 else "FINDINGS",
            " ".join(p + "/" for p in paths),
            time.monotonic() - t0,
            "" if formatted.returncode == 0 else ": `%s format %s` rewrites the files named" % (ruff, " ".join(paths)),
        ),
        flush=True,
    )
    return ok


UNITY_INCLUDE = re.compile(r'^#include "(/[^"]+)"$', re.M)


def expand_unity(db):
    """compile_commands.json names a unity build's batch files
    (CMakeFiles/<target>.dir/Unity/unity_N_cxx.cxx), not the sources they
    include: each source gets its batch's command, with its own path for the
    batch's. Its key then depends on the batch's inputs, all of them."""
    out = []
    for e in db:
        if "/Unity/unity_" not in e["file"]:
            out.append(e)
            continue
        batch = os.path.join(e["directory"], e["file"])
        try:
            sources = UNITY_INCLUDE.findall(open(batch).read())
        except OSError:
            out.append(e)
            continue
        for src in sources:
            entry = dict(e, file=src)
            if "command" in entry:
                entry["command"] = entry["command"].replace(e["file"], src)
            else:
                entry["arguments"] = [src if a == e["file"] else a for a in entry["arguments"]]
            out.append(entry)
    return out


def tidy_one(tidy, build, path):
    t0 = time.monotonic()
    r = subprocess.run(
        [tidy, "-p", build, "--quiet", path], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    noise = re.compile(
        r"^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|"
        r"^Use -header-filter=|^$"
    )
    text = "\n".join(line for line in r.stdout.splitlines() if not noise.match(line.strip()))
    return path, r.returncode == 0, text, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(
        prog="scripts/lint.sh", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "build",
        nargs="?",
        default=os.path.join(ROOT, "build"),
        help="build directory with compile_commands.json (default: build)",
    )
    ap.add_argument("--all", action="store_true", help="check every unit, ignoring remembered clean results")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2, help="clang-tidy processes at once")
    args = ap.parse_args()

    tidy = os.environ.get("CLANG_TIDY", "clang-tidy-14")
    fmt = os.environ.get("CLANG_FORMAT", "clang-format-14")
    # The layering first: it needs no build and says in a second what would
    # otherwise surface as an odd include much later (docs/architecture.md).
    t0 = time.monotonic()
    layers = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "check_layers.py"), "--root", ROOT])
    layers_ok = layers.returncode == 0
    print("lint: check_layers: %s (%.1f s)" % ("ok" if layers_ok else "FINDINGS", time.monotonic() - t0), flush=True)
    # Types a unity build (scripts/sanitize.sh) would see twice: also no build needed.
    unity = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "check_unity_names.py")])
    layers_ok = layers_ok and unity.returncode == 0

    python_ok = run_ruff()

    db_path = os.path.join(args.build, "compile_commands.json")
    if not os.path.isfile(db_path):
        print("lint: %s is missing; configure with CMake first" % db_path, file=sys.stderr)
        return 2

    t0 = time.monotonic()
    files = project_files()
    ok = run_format(fmt, files)
    print(
        "lint: clang-format: %d files, %s (%.0f s)" % (len(files), "ok" if ok else "FINDINGS", time.monotonic() - t0),
        flush=True,
    )

    entries = {}
    db = json.load(open(db_path))
    expanded = expand_unity(db)
    for e in expanded:
        path = os.path.relpath(os.path.realpath(os.path.join(e["directory"], e["file"])), ROOT)
        entries.setdefault(path, e)  # clang-tidy -p takes the first entry too
    tidy_db = args.build
    if len(expanded) != len(db):
        # clang-tidy reads its commands from a directory: one of our own,
        # with the unity batches' sources in it.
        tidy_db = os.path.join(args.build, "lint-db")
        os.makedirs(tidy_db, exist_ok=True)
        with open(os.path.join(tidy_db, "compile_commands.json"), "w") as f:
            json.dump(expanded, f)
    units = [f for f in files if f.endswith(".cpp") and not TORCH_ONLY.match(f)]
    missing = [f for f in units if f not in entries]
    if missing:
        print("lint: not in compile_commands.json, so not tidied: %s" % " ".join(missing), file=sys.stderr)

    keys = Keys(args.build, tidy)
    known = set() if args.all else read_clean()
    unit_keys = {u: keys.key(entries[u]) for u in units if u in entries}
    todo = [u for u, k in unit_keys.items() if k is None or k not in known]
    print(
        "lint: clang-tidy: %d units, %d remembered clean, %d to check with %d jobs"
        % (len(unit_keys), len(unit_keys) - len(todo), len(todo), args.jobs),
        flush=True,
    )

    clean = {k for u, k in unit_keys.items() if k is not None and u not in todo}
    failed = []
    t1 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for n, (path, good, text, secs) in enumerate(pool.map(lambda u: tidy_one(tidy, tidy_db, u), todo), 1):
            if text:
                print(text, flush=True)
            if good and unit_keys[path] is not None:
                clean.add(unit_keys[path])
            if not good:
                failed.append(path)
            print("lint: [%d/%d] %s %s (%.0f s)" % (n, len(todo), path, "ok" if good else "FINDINGS", secs), flush=True)
    # Remember what is clean now: exactly this tree's units (stale keys go).
    write_clean(clean)
    print(
        "lint: clang-tidy: %d checked in %.0f s, %d with findings%s"
        % (len(todo), time.monotonic() - t1, len(failed), (": " + " ".join(failed)) if failed else "")
    )
    return 0 if ok and not failed and layers_ok and python_ok else 1


if __name__ == "__main__":
    sys.exit(main())
