"""What the export tests share: tracing an example, exporting it, and the
structural checks every Chrome trace export must pass (docs/export.md)."""

import collections
import gzip
import json
import os
import re

import ptproftest as T

STEP = re.compile(r"^ProfilerStep#(\d+)$")
# Holistic Trace Analysis lives in the project's virtual environment
# (scripts/setup.sh installs it with PTPROF_SETUP_TESTS=1, as scripts/test.sh does).
VENV_PYTHON = os.path.join(T.SOURCE_DIR, ".venv", "bin", "python")


def hta_python():
    """The interpreter with HTA, or skip() saying why there is none."""
    if not os.path.exists(VENV_PYTHON):
        T.skip("no virtual environment at %s (scripts/setup.sh makes it)" % VENV_PYTHON)
    proc = T.run([VENV_PYTHON, "-c", "import hta.trace_analysis"])
    if proc.returncode != 0:
        T.skip(
            "HolisticTraceAnalysis is not importable with %s: %s"
            % (VENV_PYTHON, proc.stderr.strip().splitlines()[-1:] or "?")
        )
    return VENV_PYTHON


def trace_example(d, script, *extra_run_args, env=None):
    """`ptprof run --record-shapes` of examples/SCRIPT into d/trace; returns that dir."""
    out = os.path.join(d, "trace")
    proc = T.run_ptprof(
        ["run", "-o", out, "--record-shapes"]
        + list(extra_run_args)
        + ["--", T.PYTHON, os.path.join(T.EXAMPLES_DIR, script)],
        env=env,
    )
    if proc.returncode != 0:
        raise AssertionError("ptprof run %s failed: %s" % (script, T.describe(proc)))
    return out


def export(paths, *args):
    """`ptprof export PATHS ARGS`; raises with the output when it fails."""
    if isinstance(paths, str):
        paths = [paths]
    proc = T.run_ptprof(["export"] + list(paths) + list(args))
    if proc.returncode != 0:
        raise AssertionError("ptprof export failed: " + T.describe(proc))
    return proc


def load_chrome(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def report_counts(report):
    """The report's calls per row name (ProfilerStep#N rows are ProfilerStep*)."""
    return {r["name"]: r["calls"] for r in report["rows"]}


# The time before the first step and after the last: spans in an export,
# no rows in a report (its per-step table shows them apart).
OUTSIDE_STEPS = ("before step 1", "after the last step")


def as_report_names(counts):
    """Counts per event name folded as the report keys them."""
    out = collections.Counter()
    for name, n in counts.items():
        if name not in OUTSIDE_STEPS:
            out["ProfilerStep*" if STEP.match(name) else name] += n
    return dict(out)


def fwdbwd_links(doc):
    """(forward op, backward op) -> fwdbwd flows between them. A flow end
    binds to the innermost op of its thread that starts at its time."""
    starts = collections.defaultdict(list)
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op":
            starts[(e["pid"], e["tid"], e["ts"])].append(e)
    ends = collections.defaultdict(dict)
    for e in doc["traceEvents"]:
        if e.get("cat") == "fwdbwd" and e.get("ph") in ("s", "f"):
            ops = sorted(starts.get((e["pid"], e["tid"], e["ts"]), []), key=lambda o: o.get("dur", 0))
            ends[e["id"]][e["ph"]] = ops[0]["name"] if ops else None
    pairs = collections.Counter((v.get("s"), v.get("f")) for v in ends.values())
    return pairs


def check_chrome(doc, what):
    """The structural promises; returns the X and i events per name."""
    T.check_eq(doc.get("schemaVersion"), 1, what + ": schemaVersion")
    events = doc.get("traceEvents", [])
    names = collections.Counter()
    flows = collections.defaultdict(set)
    per_thread = collections.defaultdict(list)
    steps = collections.defaultdict(list)
    bad = []
    for e in events:
        ph = e.get("ph")
        if ph in ("s", "f"):
            flows[(e.get("cat"), e.get("id"))].add(ph)
        if ph not in ("X", "i"):
            continue
        names[e["name"]] += 1
        if not isinstance(e.get("ts"), (int, float)):
            bad.append(("ts", e))
        if ph != "X":
            continue
        if not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
            bad.append(("dur", e))
            continue
        key = (e["pid"], e["tid"])
        span = (e["ts"], e["ts"] + e["dur"])
        per_thread[key].append(span)
        if STEP.match(e["name"]):
            steps[key].append(span)
    T.check(not bad, what + ": events with a bad ts/dur: %r" % bad[:3])
    T.check(
        all(v == {"s", "f"} for v in flows.values()),
        what + ": flows without both ends: %r" % [k for k, v in flows.items() if v != {"s", "f"}][:5],
    )
    for key, spans in per_thread.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        open_ends, crossing = [], []
        for start, end in spans:
            # ts + dur is rounded: adjacent events may overlap by an ulp.
            while open_ends and open_ends[-1] <= start + 1e-6:
                open_ends.pop()
            if open_ends and end > open_ends[-1] + 1e-6:
                crossing.append((start, end, open_ends[-1]))
            open_ends.append(end)
        T.check_eq(crossing, [], what + ": events of thread %r crossing the end of their parent" % (key,))
        outside = [
            (s, start, end)
            for s in steps[key]
            for start, end in spans
            if s[0] <= start < s[1] - 1e-6 and end > s[1] + 1e-6
        ]
        T.check_eq(outside, [], what + ": events starting in a ProfilerStep but ending after it")
    return names
