"""The README's commands work and print what it shows.

Runs the commands of the example blocks (`<!-- example: NAME -->`,
scripts/doc_examples.py) of README.md and docs/*.md against this build, with
the torch under test in place of the documented /usr/bin/python3, and
compares the shape of their output with the documented one: exit status 0,
the same titles and columns, the same number of table rows, the same step
numbers, the summary and cost lines (on another torch, whose ops differ: the
exit status, titles, columns, step numbers and cost lines). Then runs every
`build/bin/ptprof ...` line of the README's other command blocks in order
(placeholders such as `python train.py` replaced by an example), each of
which must exit 0 and print what its kind prints.

A README example that stops working, or whose output changes shape, fails
here; scripts/doc-examples.sh rewrites the outputs from the current build.
"""

import glob
import json
import os
import re
import shlex
import shutil
import sys

import ptproftest as t

sys.path.insert(0, os.path.join(t.SOURCE_DIR, "scripts"))
import doc_examples  # noqa: E402

COST_S = 120

README = os.path.join(t.SOURCE_DIR, "README.md")
COST_RE = re.compile(r"^ptprof(: this run's|'s own) cost: about ")  # the run's summary, the report's
# The examples were made with Debian's torch; another torch runs other ops.
DOCUMENTED_TORCH = os.path.abspath(t.PYTHON) == doc_examples.DOCUMENTED_PYTHON  # not resolved: a venv links it
TITLE_RE = re.compile(r"^\s*Name\s+Self CPU %\s+Self CPU\s+CPU total %\s+CPU total\s+CPU time avg\s")


def readme_text():
    with open(README) as f:
        return f.read()


def env():
    # `export --parquet` writes with the venv's pyarrow, as a user's
    # `pip install 'ptprof[analysis]'` would have it (tests/CMakeLists.txt).
    return t.clean_env(LC_ALL="C", PTPROF_ANALYSIS_PYTHON=os.environ.get("PTPROF_ANALYSIS_PYTHON") or None)


def is_table_report(argv):
    return len(argv) > 1 and argv[1] == "report" and "--format" not in argv and "--html" not in argv


def check_kind(where, argv, lines):
    """What every output of its kind holds, documented or not."""
    if len(argv) > 1 and argv[1] == "run":
        t.check(any(COST_RE.match(line) for line in lines), "%s: no cost line in:\n%s" % (where, "\n".join(lines)))
    if is_table_report(argv):
        t.check(any(TITLE_RE.match(line) for line in lines), "%s: no column titles in:\n%s" % (where, "\n".join(lines)))
        t.check(any(COST_RE.match(line) for line in lines), "%s: no cost line in:\n%s" % (where, "\n".join(lines)))


def doc_blocks():
    """(file, block) of every example block of README.md and docs/*.md."""
    docs = os.path.join(t.SOURCE_DIR, "docs")
    for path in [README] + sorted(glob.glob(os.path.join(docs, "*.md"))):
        with open(path) as f:
            for block in doc_examples.find_blocks(f.read()):
                yield os.path.relpath(path, t.SOURCE_DIR), block


def test_examples_print_what_the_docs_show():
    blocks = list(doc_blocks())
    in_readme = [b for f, b in blocks if f == "README.md"]
    t.check(len(in_readme) >= 3, "README.md has %d example blocks, expected its 3 examples" % len(in_readme))
    for path, block in blocks:
        results = doc_examples.run_block(block, t.PTPROF_BIN, t.PYTHON, t.SOURCE_DIR, env())
        for (cmd, documented), (_, status, lines) in zip(block.steps, results):
            where = "%s, example %s, `%s`" % (path, block.name, cmd)
            print("$ " + cmd, flush=True)
            if not t.check_eq(status, 0, where + " exit status; output:\n" + "\n".join(lines)):
                continue
            argv = shlex.split(cmd)
            check_kind(where + " (documented)", argv, documented)
            check_kind(where, argv, lines)
            for problem in doc_examples.differences(cmd, documented, lines, same_torch=DOCUMENTED_TORCH):
                t.check(False, "%s: %s\n--- output ---\n%s" % (where, problem, "\n".join(lines)))


PLACEHOLDERS = [
    ("python train.py", doc_examples.DOCUMENTED_PYTHON + " examples/train_mlp.py"),
    ("before/ after/", "ptprof-out/ ptprof-out/"),
]


def command_lines(text):
    """The `build/bin/ptprof ...` lines of the README's indented command
    blocks, continuations joined, comments dropped, placeholders filled."""
    commands, pending = [], None
    for line in text.splitlines():
        if pending is not None:
            pending += " " + line.strip()
        elif line.startswith("    build/bin/ptprof "):
            pending = line.strip()
        else:
            continue
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        cmd = re.split(r"\s{2,}#", pending)[0].strip()
        for placeholder, value in PLACEHOLDERS:
            cmd = cmd.replace(placeholder, value)
        commands.append(cmd.replace(".venv/bin/python", doc_examples.DOCUMENTED_PYTHON))
        pending = None
    return commands


def test_readme_commands_run():
    commands = command_lines(readme_text())
    t.check(len(commands) >= 10, "found %d build/bin/ptprof lines in README.md" % len(commands))
    d = doc_examples.example_dir(t.SOURCE_DIR)
    runs = set()
    try:
        for cmd in commands:
            argv = doc_examples.argv_of(cmd, t.PTPROF_BIN, t.PYTHON)
            if argv[1] == "run" and tuple(argv) in runs:
                continue  # one torch stands for both of the README's: the same run again shows nothing new
            runs.add(tuple(argv))
            print("$ " + cmd, flush=True)
            proc = t.run(argv, env=env(), cwd=d)
            where = "`%s`" % cmd
            if not t.check_eq(proc.returncode, 0, where + " exit status: " + t.describe(proc)):
                continue
            lines = (proc.stdout + proc.stderr).splitlines()
            check_kind(where, argv, lines)
            if "--format" in argv and argv[argv.index("--format") + 1] == "json":
                t.check(json.loads(proc.stdout).get("rows"), where + ": no rows in its JSON")
            for flag in ("--chrome", "--perfetto", "--timeline", "--parquet"):
                if flag in argv:
                    out = argv[argv.index(flag) + 1]
                    t.check(os.path.exists(os.path.join(d, out)), "%s: wrote no %s" % (where, out))
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    t.main()
