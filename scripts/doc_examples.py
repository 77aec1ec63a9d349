"""The example outputs of README.md and docs/*.md: run, rewrite, compare.

A documented example is a fenced block between two markers:

    <!-- example: NAME -->
    ```
    $ ptprof run -- /usr/bin/python3 examples/train_mlp.py
    ...what it printed...
    ```
    <!-- /example -->

Lines starting with "$ " are commands, the lines after each are what it
printed (stdout and stderr as a terminal shows them). Each block runs in a
fresh directory holding a link to examples/ (and tests/ for docs that use its
scripts), so its `ptprof-out/` starts empty.

    python3 scripts/doc_examples.py --build build FILE...    # rewrites FILE's blocks

(scripts/doc-examples.sh is the usual way in.) tests/integration/test_readme.py
imports this module to run the same commands against a build and compare the
*shape* of what they print with the documented output (see `shape`): titles,
column layout, the summary and cost lines, the step numbers.

A `<!-- example-machine -->...<!-- /example-machine -->` span in a file says
where its outputs were made; the rewrite fills it.
"""

import argparse
import datetime
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

BLOCK_RE = re.compile(r"<!-- example: (?P<name>[\w.-]+) -->\n```\n(?P<body>.*?)```\n<!-- /example -->", re.S)
MACHINE_RE = re.compile(r"<!-- example-machine -->.*?<!-- /example-machine -->", re.S)
DOCUMENTED_PYTHON = "/usr/bin/python3"
TIMEOUT_S = 300


class Block:
    def __init__(self, name, body, span):
        self.name = name
        self.span = span  # (start, end) of the body in the file's text
        self.steps = parse_transcript(body)  # [(command, [output lines])]


def parse_transcript(body):
    steps = []
    for line in body.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:].strip(), []))
        elif steps:
            steps[-1][1].append(line)
    return steps


def find_blocks(text):
    return [Block(m.group("name"), m.group("body"), m.span("body")) for m in BLOCK_RE.finditer(text)]


# ---- running a command as documented ----------------------------------------------------------


def argv_of(command, ptprof_bin, python):
    """The documented command as an argv: `ptprof` (or `build/bin/ptprof`) is
    the build's binary and Debian's interpreter is `python` (the one under
    test)."""
    argv = shlex.split(command)
    if argv and argv[0] in ("ptprof", "build/bin/ptprof"):
        argv[0] = ptprof_bin
    return [python if a == DOCUMENTED_PYTHON else a for a in argv]


def run_command(command, ptprof_bin, python, cwd, env):
    """(exit status, output lines): stdout and stderr in one stream, in the
    order a terminal would show them."""
    proc = subprocess.run(
        argv_of(command, ptprof_bin, python),
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT_S,
    )
    return proc.returncode, proc.stdout.rstrip("\n").split("\n") if proc.stdout.strip() else []


def example_dir(source_dir):
    """A fresh working directory with links to the tree's examples/ and tests/."""
    d = tempfile.mkdtemp(prefix="ptprof-doc-example-")
    for sub in ("examples", "tests"):
        os.symlink(os.path.join(source_dir, sub), os.path.join(d, sub))
    return d


def run_block(block, ptprof_bin, python, source_dir, env):
    """[(command, exit status, output lines)] of the block's commands, run in
    order in one fresh directory."""
    d = example_dir(source_dir)
    try:
        return [(cmd,) + run_command(cmd, ptprof_bin, python, d, env) for cmd, _ in block.steps]
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---- the shape of an output -----------------------------------------------------------------

TRACE_FILE_RE = re.compile(r"[^\s/]+?\.(?:r\d+\.)?\d+(?:-\d+)?\.[0-9a-f]{8}\.(w\d{3})(?:-\d+)?\.bin")
NUMBER = r"-?\d+(?:[.,]\d+)*"
QUANTITY_RE = re.compile(NUMBER + r"(?: ?(?:ns|us|ms|s|%|b|Kb|Mb|Gb|B|KiB|MiB|GiB)\b|%)?")
CELL_QUANTITY_RE = re.compile("^" + QUANTITY_RE.pattern + "$")
SEPARATOR_RE = re.compile(r"^-+( +-+)*$")
NUMBER_MARK = "<n>"
CUDA_NOTE_RE = re.compile(r"^ptprof: CUDA ")


def shape(line):
    """What must stay the same when the numbers change: a dashed separator is
    its number of columns; a table row (cells apart by two spaces or more, one
    of them a number) is its cells' kinds, `<n>` for a number or time and `T`
    for text (names, shapes), so rows of any operators compare equal; any
    other line is its text with every number or quantity as `<n>` and trace
    file names as `<file>.wNNN.bin`."""
    line = TRACE_FILE_RE.sub(r"<file>.\1.bin", line.strip())
    if SEPARATOR_RE.match(line):
        return "separator of %d columns" % len(line.split())
    cells = re.split(r"\s{2,}", line)
    kinds = [NUMBER_MARK if CELL_QUANTITY_RE.match(c) else "T" for c in cells]
    if len(cells) >= 2 and NUMBER_MARK in kinds:
        return "row: " + " ".join(kinds)
    return " ".join(QUANTITY_RE.sub(NUMBER_MARK, line).split())


def step_numbers(lines):
    """The first column of the per-step table(s), in order: the step numbers,
    and the rows apart from them ("before step 1", "after the last step")."""
    steps, in_table = [], False
    for line in lines:
        s = line.strip()
        if s.startswith("Step ") and "Wall time" in s:
            in_table = True
        elif in_table and not s:
            in_table = False  # the table ends at the blank line after it
        elif in_table and not SEPARATOR_RE.match(s):
            steps.append(re.split(r"\s{2,}", s)[0])
    return steps


def is_run(command):
    argv = shlex.split(command)
    return len(argv) > 1 and argv[0] == "ptprof" and argv[1] == "run"


def missing_in_order(want, got):
    """The first of `want` not found in `got` after the ones before it, or None."""
    i = 0
    for w in want:
        while i < len(got) and got[i] != w:
            i += 1
        if i == len(got):
            return w
        i += 1
    return None


def differences(command, documented, actual, same_torch=True):
    """What in `actual` (a command's output lines) does not have the shape of
    `documented`; [] when it does. A `ptprof run` may print more than was
    documented (the target's warnings): its documented lines must come in
    order among its output. Any other command's output must have the
    documented shape line for line, but for ptprof's notes on CUDA, which
    depend on the torch and the machine (a CUDA torch without a GPU). On
    another torch than the documented one (`same_torch` false) the ops differ,
    so only the lines without numbers (titles, column titles, separators) must
    come in order. The per-step tables must number the same steps."""
    want = [shape(line) for line in documented if line.strip()]
    got = [shape(line) for line in actual if line.strip()]
    if not any(CUDA_NOTE_RE.match(line) for line in documented):
        got = [g for g, line in zip(got, [line for line in actual if line.strip()]) if not CUDA_NOTE_RE.match(line)]
    problems = []
    if is_run(command) or not same_torch:
        if not same_torch:
            want = [w for w in want if NUMBER_MARK not in w]
        missing = missing_in_order(want, got)
        if missing is not None:
            problems.append("missing line of shape %r" % missing)
    elif want != got:
        problems.append("shape differs:\n" + shape_diff(want, got))
    if step_numbers(documented) != step_numbers(actual):
        problems.append("steps %s, documented %s" % (step_numbers(actual), step_numbers(documented)))
    return problems


def shape_diff(want, got):
    import difflib

    return "\n".join(difflib.unified_diff(want, got, "documented", "actual", lineterm="", n=1))


# ---- rewriting a file -----------------------------------------------------------------------


def render(results):
    out = []
    for cmd, _, lines in results:
        out.append("$ " + cmd)
        out.extend(line.rstrip() for line in lines)
    return "\n".join(out) + "\n"


def machine_line(python):
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    torch = (
        subprocess.run(
            [python, "-c", "import torch; print(torch.__version__)"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        ).stdout.strip()
        or "(none)"
    )
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    load = os.getloadavg()[0]
    return (
        "<!-- example-machine -->made %s on %s (%d cores, load average %.1f), torch %s "
        "(`%s`)<!-- /example-machine -->" % (when, cpu, os.cpu_count(), load, torch, python)
    )


def rewrite(path, ptprof_bin, python, source_dir, env):
    with open(path) as f:
        text = f.read()
    blocks = find_blocks(text)
    if not blocks:
        return 0
    for block in reversed(blocks):  # from the end, so earlier spans stay valid
        results = run_block(block, ptprof_bin, python, source_dir, env)
        for cmd, status, lines in results:
            if status != 0:
                sys.exit("%s, example %s: `%s` exited %d:\n%s" % (path, block.name, cmd, status, "\n".join(lines)))
        text = text[: block.span[0]] + render(results) + text[block.span[1] :]
    text = MACHINE_RE.sub(lambda m: machine_line(python), text)
    with open(path, "w") as f:
        f.write(text)
    return len(blocks)


def main():
    p = argparse.ArgumentParser(description="Rerun the documented examples and rewrite their outputs.")
    p.add_argument("--build", default="build")
    p.add_argument("files", nargs="+")
    a = p.parse_args()
    source_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build = os.path.abspath(a.build)
    ptprof_bin = os.path.join(build, "bin", "ptprof")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PTPROF_") and k != "LD_PRELOAD"}
    env["PTPROF_BRIDGE_CACHE"] = os.path.join(build, "bridge-cache")
    env["LC_ALL"] = "C"
    for path in a.files:
        n = rewrite(path, ptprof_bin, DOCUMENTED_PYTHON, source_dir, env)
        print("%s: %d example(s) rewritten" % (path, n))


if __name__ == "__main__":
    main()
