"""Memory by category (issue #26 item 2): `ptprof memory` with torch's
categories (parameter, optimizer state, input, temporary, activation,
gradient, autograd detail, unknown) and torch's rules, against torch's own
export_memory_timeline of the same script (torch_memory_timeline.py runs it
under torch.profiler with record_shapes, profile_memory and with_stack).

Three examples: an MLP with SGD (no optimizer state), a conv net with batch
norm and Adam (optimizer state; batch norm's running statistics), an LSTM
with gradient clipping. At the end of every step (the end of the optimizer's
step, the same rule on both sides) and at the timeline's peak, every
category's bytes equal torch's. The categories depend only on the data flow
and the sizes, never on timing, so both sides are the same every run.

Also: `--categories` on a trace recorded without --record-shapes is refused
(exit 2) saying what to record. torch 2.x only (torch 1.13 has no memory
timeline to compare with).
"""

import bisect
import json
import os
import re

import ptproftest as T

REQUIRES = ("torch2",)

EXAMPLES = ["train_mlp.py", "train_conv_bn_adam.py", "train_lstm_clip.py"]
CATEGORIES = [
    "parameter",
    "optimizer state",
    "input",
    "temporary",
    "activation",
    "gradient",
    "autograd detail",
    "unknown",
]
REFERENCE = os.path.join(T.HERE, "torch_memory_timeline.py")


def at(timeline, t):
    times, sizes = timeline
    i = bisect.bisect_right(times, t) - 1
    return sizes[i][1:] if i >= 0 else [0] * len(CATEGORIES)


def peak(timeline):
    return max(timeline[1], key=sum)[1:]


def compare(example):
    script = os.path.join(T.EXAMPLES_DIR, example)
    with T.tempdir() as d:
        ref_path = os.path.join(d, "torch.json")
        proc = T.run_python([REFERENCE, "--out", ref_path, "--", script])
        T.check(proc.returncode == 0, "%s: torch's timeline: %s" % (example, T.describe(proc)))
        if proc.returncode != 0:
            return
        with open(ref_path) as f:
            ref = json.load(f)
        out = os.path.join(d, "out")
        proc = T.run_ptprof(["run", "--profile-memory", "--record-shapes", "-o", out, "--", T.PYTHON, script])
        T.check_eq(proc.returncode, 0, "%s: ptprof run: %s" % (example, T.describe(proc)))
        ours_path = os.path.join(d, "categories.json")
        proc = T.run_ptprof(["memory", out, "--bytes", "--categories", ours_path])
        T.check_eq(proc.returncode, 0, "%s: ptprof memory: %s" % (example, T.describe(proc)))
        if proc.returncode != 0:
            return
        T.check("Memory by category" in proc.stdout, "%s: no category table in\n%s" % (example, proc.stdout))
        with open(ours_path) as f:
            ours = [o for o in json.load(f) if o["device"] == "CPU"]
        T.check_eq(len(ours), 1, "%s: CPU timelines" % example)
        if len(ours) != 1:
            return
        ours = ours[0]
        ref_ends = ref["step_ends_us"]
        our_ends = [end for _, end in ours["step_ends_us"]]
        T.check_eq(len(our_ends), len(ref_ends), "%s: steps" % example)
        for step, (r, o) in enumerate(zip(ref_ends, our_ends)):
            T.check_eq(
                dict(zip(CATEGORIES, at(ours["timeline"], o))),
                dict(zip(CATEGORIES, at(ref["timeline"], r))),
                "%s: bytes per category at the end of step %d" % (example, step),
            )
        T.check_eq(
            dict(zip(CATEGORIES, peak(ours["timeline"]))),
            dict(zip(CATEGORIES, peak(ref["timeline"]))),
            "%s: bytes per category at the peak" % example,
        )
        # The text table's step rows say the same as the JSON.
        last = at(ours["timeline"], our_ends[-1])
        row = [line for line in proc.stdout.splitlines() if line.split()[2:4] == ["step", str(len(our_ends) - 1)]]
        T.check(
            row and [int(v) for v in row[-1].split()[4:12]] == last,
            "%s: the table's last step row %r, the JSON %r" % (example, row, last),
        )
        # The page's table: its last step row, byte for byte.
        page = os.path.join(d, "page.html")
        proc = T.run_ptprof(["report", out, "--html", page])
        T.check_eq(proc.returncode, 0, "%s: report --html: %s" % (example, T.describe(proc)))
        with open(page) as f:
            html = f.read()
        table = re.search(r'id="memory-categories".*?</table>', html, re.S)
        rows = (
            re.findall(r"<tr><td>\d+</td><td>CPU</td><td>end of step (\d+)</td>(.*?)</tr>", table.group(0))
            if table
            else []
        )
        T.check(
            rows
            and int(rows[-1][0]) == len(our_ends) - 1
            and [int(v) for v in re.findall(r'data-v="(-?\d+)"', rows[-1][1])][:8] == last,
            "%s: the page's last step row %r, the JSON %r" % (example, rows[-1:] if rows else None, last),
        )


def test_mlp_sgd():
    compare(EXAMPLES[0])


def test_conv_bn_adam():
    compare(EXAMPLES[1])


def test_lstm_clip():
    compare(EXAMPLES[2])


def test_needs_record_shapes():
    with T.tempdir() as d:
        out = os.path.join(d, "out")
        proc = T.run_ptprof(
            ["run", "--profile-memory", "-o", out, "--", T.PYTHON, os.path.join(T.EXAMPLES_DIR, EXAMPLES[0])]
        )
        T.check_eq(proc.returncode, 0, "ptprof run: " + T.describe(proc))
        proc = T.run_ptprof(["memory", out, "--categories", os.path.join(d, "c.json")])
        T.check_eq(proc.returncode, 2, "--categories without tensor identity: exit status\n" + T.describe(proc))
        T.check("--record-shapes" in proc.stderr, "the error names what to record: " + proc.stderr)


if __name__ == "__main__":
    T.main()
