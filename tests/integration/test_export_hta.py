"""`ptprof export --chrome` read by Holistic Trace Analysis' own reader
(TraceAnalysis(trace_dir=...)): the events HTA parses, per name and per
category, are what `ptprof report` counts; the rank is the recorded one (0:
traces carry no rank yet); the steps are the recorded ProfilerStep#N.

HTA lives in the project's virtual environment (.venv, see scripts/setup.sh);
the PyTorch program runs under the torch being tested, HTA under .venv's
interpreter. Skipped only when HTA is not importable there."""

import collections
import json
import os

import export_check as X
import ptproftest as T

PROBE = os.path.join(T.HERE, "hta_probe.py")


def hta_view(python, trace_dir):
    proc = T.run([python, PROBE, trace_dir], timeout=600)
    if proc.returncode != 0:
        raise AssertionError("HTA could not load %s: %s" % (trace_dir, T.describe(proc)))
    return json.loads(proc.stdout)


def check_example(python, script, steps_env):
    with T.tempdir() as d:
        trace = X.trace_example(d, script, env=T.clean_env(STEPS=steps_env))
        hta_dir = os.path.join(d, "hta")
        os.mkdir(hta_dir)
        out = os.path.join(hta_dir, "trace.json.gz")
        X.export(trace, "--chrome", out)
        report = T.report_json(trace)
        doc = X.load_chrome(out)
        view = hta_view(python, hta_dir)

        what = script + ": "
        T.check_eq(sorted(view["all"]), ["0"], what + "ranks HTA reads")
        got = view["all"].get("0")
        if got is None:
            return
        T.check_eq(
            X.as_report_names(got["by_name"]), X.report_counts(report), what + "events per name, HTA vs ptprof report"
        )
        T.check_eq(got["events"], report["events"], what + "events HTA parsed vs ptprof report")
        exported_cats = collections.Counter(e["cat"] for e in doc["traceEvents"] if e.get("ph") == "X")
        T.check_eq(got["by_category"], dict(exported_cats), what + "events per category")
        T.check(
            set(got["by_category"]) <= {"cpu_op", "user_annotation"},
            what + "categories: %s" % sorted(got["by_category"]),
        )
        recorded_steps = sorted({s["step"] for s in report["steps"]})
        T.check(len(recorded_steps) >= 2, what + "steps recorded: %s" % recorded_steps)
        T.check_eq(got["steps"], recorded_steps, what + "steps HTA finds")
        # HTA's default load leaves out the last step, as it does for a
        # torch.profiler trace: the step and what starts in it are gone.
        default = view["default"]["0"]
        T.check_eq(default["steps"], recorded_steps[:-1], what + "steps of HTA's default load")
        T.check(
            0 < default["events"] < got["events"],
            what + "HTA's default load keeps %d of %d events" % (default["events"], got["events"]),
        )


def test_hta_reads_the_mlp_example():
    check_example(X.hta_python(), "train_mlp.py", 4)


def test_hta_reads_the_ranges_example():
    check_example(X.hta_python(), "train_mlp_ranges.py", 3)


if __name__ == "__main__":
    T.main()
