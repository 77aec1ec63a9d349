"""No output of a --with-stack run shows the recording's own frames: the
torch bridge's callbacks (ptprof::torch_bridge::op_start<...>,
begin_with_shapes, anything in a libptprof* module) and RecordFunction's
callback machinery that called them (c10::Dispatcher::runRecordFunction,
at::RecordFunction::runStartCallbacks...). Before they were cut, every
folded line ended in them, just above the op. The folded stacks, the HTML
page, the memory report and the Chrome and Perfetto exports are searched
for them; and the folded stacks still hold the program's native frames (the
aten op's own, inside libtorch_cpu), so that the test cannot pass by losing
every native frame."""

import os

import ptproftest as pt

SCRIPT = os.path.join(pt.EXAMPLES_DIR, "train_mlp.py")
# What the recording's frames look like once symbolised, and the module of
# ptprof's own code.
OWN = (
    "ptprof::",
    "torch_bridge",
    "begin_with_shapes",
    "runRecordFunction",
    "RecordFunction::runStartCallbacks",
    "RecordFunction::runEndCallbacks",
    "RecordFunction::before",
    "libptprof",
)


def own_frames_in(text):
    return [marker for marker in OWN if marker in text]


def run(cmd, what):
    proc = pt.run_ptprof(cmd)
    pt.check_eq(proc.returncode, 0, "%s: %s" % (what, pt.describe(proc)))
    return proc


def test_no_output_shows_the_recording_frames():
    with pt.tempdir() as d:
        out = os.path.join(d, "out")
        proc = pt.run_ptprof(
            ["run", "--with-stack", "--record-shapes", "--profile-memory", "-o", out, "--", pt.PYTHON, SCRIPT],
            env=pt.clean_env(STEPS="1"),
        )
        pt.check_eq(proc.returncode, 0, "ptprof run --with-stack: %s" % pt.describe(proc))
        outputs = {}
        for metric in ("self_cpu", "alloc_bytes"):
            folded = os.path.join(d, metric + ".folded")
            run(["flamegraph", out, "--metric", metric, "-o", folded], "ptprof flamegraph --metric " + metric)
            outputs[folded] = None
        page = os.path.join(d, "page.html")
        run(["report", out, "--html", page], "ptprof report --html")
        outputs[page] = None
        chrome, perfetto = os.path.join(d, "trace.json"), os.path.join(d, "trace.pftrace")
        run(["export", out, "--chrome", chrome, "--perfetto", perfetto], "ptprof export")
        outputs[chrome] = outputs[perfetto] = None
        outputs["ptprof memory"] = run(["memory", out], "ptprof memory").stdout
        grouped = run(["report", out, "--group-by-stack-n", "100"], "ptprof report")
        outputs["ptprof report --group-by-stack-n 100"] = grouped.stdout
        pt.check("--group-by-stack-n" not in grouped.stderr, "no warning with stacks: %r" % grouped.stderr)
        for name in outputs:
            if outputs[name] is None:
                with open(name, "rb") as f:
                    outputs[name] = f.read().decode("utf-8", "replace")
        with open(os.path.join(d, "self_cpu.folded")) as f:
            lines = f.read().splitlines()
    for name, text in outputs.items():
        pt.check(not own_frames_in(text), "%s shows the recording's frames %r" % (name, own_frames_in(text)))
    addmm = [line.rpartition(" ")[0].split(";") for line in lines if line.rpartition(" ")[0].endswith(";aten::addmm")]
    pt.check(addmm, "folded stacks with aten::addmm as their leaf: %r" % lines[:5])
    for frames in addmm:
        native = [f for f in frames if f.endswith("]")]
        # Innermost the dispatcher's call of the op (its name is in the
        # template arguments only on some torches), then aten's addmm.
        pt.check(
            any("libtorch_cpu.so" in f and "addmm" in f for f in native[-2:]),
            "the innermost native frames, just above the op, are aten's addmm in libtorch_cpu: %r" % native[-3:],
        )
    # Debian's torch names it libtorch_cpu.so.1.13.
    with_native = [line for line in lines if "libtorch_cpu.so" in line]
    pt.check(
        len(with_native) > len(lines) // 2,
        "most folded lines hold libtorch's frames: %d of %d" % (len(with_native), len(lines)),
    )


def test_group_by_stack_n_without_stacks_warns():
    """--group-by-stack-n on traces without stacks is not silently ignored:
    one warning on stderr, the table on stdout as without the option."""
    with pt.tempdir() as d:
        out = os.path.join(d, "out")
        proc = pt.run_ptprof(["run", "-o", out, "--", pt.PYTHON, SCRIPT], env=pt.clean_env(STEPS="1"))
        pt.check_eq(proc.returncode, 0, "ptprof run: %s" % pt.describe(proc))
        grouped = run(["report", out, "--group-by-stack-n", "5"], "ptprof report --group-by-stack-n 5")
        plain = run(["report", out], "ptprof report")
    warnings = [line for line in grouped.stderr.splitlines() if "--group-by-stack-n" in line]
    pt.check_eq(len(warnings), 1, "one warning about --group-by-stack-n on stderr: %r" % grouped.stderr)
    pt.check(
        warnings and "no call stacks" in warnings[0] and "--with-stack" in warnings[0],
        "the warning says why and what records stacks: %r" % warnings,
    )
    pt.check(
        "Source Location" not in grouped.stdout and "aten::addmm" in grouped.stdout,
        "the table is there, without a Source Location column:\n" + grouped.stdout[:2000],
    )
    pt.check("--group-by-stack-n" not in plain.stderr, "no warning without the option: %r" % plain.stderr)


if __name__ == "__main__":
    pt.main()
