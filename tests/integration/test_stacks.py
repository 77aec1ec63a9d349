"""Python call stacks (PTPROF_WITH_STACK, PTPROF_PYTHON_ATTRIBUTION) against
torch.profiler(with_stack=True): for every aten op of the examples, forward
and backward, the innermost frame of the user's script above it is the same
as torch's: the same function, and torch's line is that function's
definition (a set per op name, so that torch's run-to-run drift of counts
cannot matter).

Ops under a backward function: torch 1.x gives them the stack of the
forward op of its sequence number, torch 2.x the frame that runs them (the
caller of backward()); ptprof follows the torch it records.

On these machines (Python 3.11) both torches name each frame by its
function's first line (torch 1.13 reads a frame field 3.11 no longer has;
torch 2.x's Python tracer names a call by its definition), while ptprof
reports the line executing: the test maps ptprof's function to the line of
its `def` in the script (ast) to compare lines too.

torch 1.x finds an op's backward function from its events' nesting rebuilt
from microsecond-truncated times, and an op ending within 2 us of
its backward function's end may fall out of it in one run and not the
next: torch_stack_wrapper.py sets such ops' frames apart ("possible_*", the
frames any nesting could give them). For an op name, torch's frames of the
other ops must all be ptprof's, and ptprof's must be among those or the
possible ones: equality when no op of that name is ambiguous.
"""

import ast
import functools
import json
import os

import ptproftest as pt

COST_S = 145

# Examples that run in a few seconds with STEPS=2.
SCRIPTS = [
    os.path.join(pt.EXAMPLES_DIR, name) for name in ("train_mlp.py", "train_conv_bn_adam.py", "train_lstm_clip.py")
]
WRAPPER = os.path.join(pt.HERE, "torch_stack_wrapper.py")
# Ops that run only under backward, one per example at least: the
# comparison must cover them.
BACKWARD_OPS = {
    "train_mlp.py": "aten::threshold_backward",
    "train_conv_bn_adam.py": "aten::convolution_backward",
    "train_lstm_clip.py": "aten::embedding_dense_backward",
}


def functions_in_script(script):
    """Function name -> (line of its def, its last line) in the script."""
    with open(script) as f:
        tree = ast.parse(f.read())
    return {
        n.name: (n.lineno, n.end_lineno)
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def innermost_script_frame(stack, script):
    """(function, line) of the first entry of `stack` in the script."""
    for entry in stack:
        head, sep, function = entry.partition("): ")
        path, _, line = head.rpartition("(")
        if sep and os.path.abspath(path) == script and line.isdigit():
            return function, int(line)
    return None


def ptprof_frames(flag, script):
    """Op name -> {(function, line)} of the innermost script frame."""
    with pt.tempdir() as d:
        out = os.path.join(d, "out")
        proc = pt.run_ptprof(["run", flag, "-o", out, "--", pt.PYTHON, script], env=pt.clean_env(STEPS="2"))
        pt.check_eq(proc.returncode, 0, "ptprof run %s %s: %s" % (flag, script, pt.describe(proc)))
        report = pt.report_json(out, "--group-by-stack-n", "1000")
    frames = {}
    for row in report["rows"]:
        if not row["name"].startswith("aten::"):
            continue
        frame = innermost_script_frame(row.get("stack", []), script)
        if frame is not None:
            frames.setdefault(row["name"], set()).add(frame)
    return frames


# Once per script for the module: both flags compare against the same
# torch.profiler(with_stack=True) run (its slowest part on torch 2.x).
@functools.lru_cache(maxsize=None)
def torch_reference(script):
    with pt.tempdir() as d:
        out = os.path.join(d, "ref.json")
        proc = pt.run_python([WRAPPER, "--out", out, script], env=pt.clean_env(STEPS="2"))
        pt.check_eq(proc.returncode, 0, "torch reference %s: %s" % (script, pt.describe(proc)))
        with open(out) as f:
            ref = json.load(f)
    return {
        key: {k: set(v) for k, v in ref[key].items()}
        for key in ("functions", "lines", "possible_functions", "possible_lines")
    }


def check_within(got, sure, possible, what):
    """sure <= got <= sure | possible (equality when nothing is ambiguous)."""
    pt.check(
        sure <= got <= sure | possible,
        "%s: ptprof %r, torch %r (or, for ops torch nests ambiguously, %r)"
        % (what, sorted(got), sorted(sure), sorted(possible - sure)),
    )


def compare(flag):
    for script in SCRIPTS:
        ref = torch_reference(script)
        got = ptprof_frames(flag, script)
        defs = functions_in_script(script)
        names = sorted(set(got) | set(ref["functions"]) | set(ref["possible_functions"]))
        backward = BACKWARD_OPS[os.path.basename(script)]
        pt.check(backward in ref["functions"], "torch attributes %s in %s: %r" % (backward, script, names))
        for name in names:
            what = "%s %s %s" % (flag, os.path.basename(script), name)
            frames = got.get(name, set())
            check_within(
                {f for f, _ in frames},
                ref["functions"].get(name, set()),
                ref["possible_functions"].get(name, set()),
                what + ": functions of the innermost script frame",
            )
            check_within(
                {defs.get(f, (None,))[0] for f, _ in frames},
                ref["lines"].get(name, set()),
                ref["possible_lines"].get(name, set()),
                what + ": torch's lines of the innermost script frame (the def of ptprof's function)",
            )
            # ptprof's own line is the one executing: inside that function, past its def.
            for function, line in frames:
                first, last = defs.get(function, (0, 0))
                pt.check(
                    first < line <= last, "%s: line %d lies in %s (lines %d-%d)" % (what, line, function, first, last)
                )


def test_with_stack():
    compare("--with-stack")


def test_native_frames_and_flamegraph():
    """Under aten::addmm a native frame names the aten op inside libtorch,
    symbolised from the library's ELF symbols; the folded stacks hold the
    script's frames above it."""
    with pt.tempdir() as d:
        out = os.path.join(d, "out")
        proc = pt.run_ptprof(
            ["run", "--with-stack", "-o", out, "--", pt.PYTHON, SCRIPTS[0]], env=pt.clean_env(STEPS="1")
        )
        pt.check_eq(proc.returncode, 0, "ptprof run --with-stack: %s" % pt.describe(proc))
        folded = os.path.join(d, "folded.txt")
        proc = pt.run_ptprof(["flamegraph", out, "--metric", "self_cpu", "-o", folded])
        pt.check_eq(proc.returncode, 0, "ptprof flamegraph: %s" % pt.describe(proc))
        with open(folded) as f:
            lines = f.read().splitlines()
        bad = pt.run_ptprof(["flamegraph", out, "--metric", "wall"])
        pt.check_eq(bad.returncode, 2, "an unknown --metric is refused")
    addmm = [line.rpartition(" ")[0].split(";") for line in lines if line.rpartition(" ")[0].endswith(";aten::addmm")]
    pt.check(addmm, "folded stacks with aten::addmm as their leaf: %r" % lines[:5])
    for frames in addmm:
        native = [f for f in frames if f.endswith("]") and "libtorch_cpu.so" in f]
        pt.check(
            any("at::" in f and "addmm" in f for f in native),
            "a native frame names aten's addmm inside libtorch_cpu: %r" % native,
        )
        pt.check(
            any(f.startswith(SCRIPTS[0] + "(") for f in frames), "the script's frames are on the stack: %r" % frames
        )
    for line in lines:
        value = line.rpartition(" ")[2]
        pt.check(value.isdigit() and int(value) > 0, "a positive count ends each line: %r" % line)


def test_python_attribution():
    compare("--python-attribution")


def test_chrome_export_carries_call_stacks():
    """Ops recorded with a stack carry torch's "Call stack" arg: entries
    "file(line): function", innermost first, joined by ';'."""
    with pt.tempdir() as d:
        out = os.path.join(d, "out")
        proc = pt.run_ptprof(
            ["run", "--python-attribution", "-o", out, "--", pt.PYTHON, SCRIPTS[0]], env=pt.clean_env(STEPS="1")
        )
        pt.check_eq(proc.returncode, 0, "ptprof run --python-attribution: %s" % pt.describe(proc))
        chrome = os.path.join(d, "trace.json")
        proc = pt.run_ptprof(["export", out, "--chrome", chrome])
        pt.check_eq(proc.returncode, 0, "ptprof export: %s" % pt.describe(proc))
        with open(chrome) as f:
            events = json.load(f)["traceEvents"]
    linear = [e for e in events if e.get("cat") == "cpu_op" and e.get("name") == "aten::linear"]
    pt.check(linear, "aten::linear events in the export")
    for e in linear:
        stack = e.get("args", {}).get("Call stack", "")
        pt.check(
            stack.startswith(SCRIPTS[0] + "(") and stack.endswith("): forward"),
            "aten::linear's Call stack is the script's forward: %r" % stack,
        )


if __name__ == "__main__":
    pt.main()
