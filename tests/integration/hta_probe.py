"""Loads a directory of Chrome trace exports with Holistic Trace Analysis'
own reader and prints, as JSON, what HTA made of them: per rank, the events
it parsed per name and per category, the ProfilerStep#N steps it found, and
how many events its default load (which leaves out the last step) keeps.

Run by test_export_hta.py with the interpreter that has HTA:
    python hta_probe.py TRACE_DIR
Exit status 3 when HTA is not importable (the caller skips then).
"""

import collections
import json
import logging
import re
import sys

try:
    from hta.trace_analysis import TraceAnalysis
except ImportError as e:
    print("HolisticTraceAnalysis is not importable: %s" % e, file=sys.stderr)
    sys.exit(3)

STEP = re.compile(r"^ProfilerStep#(\d+)$")


def describe(trace_dir, include_last):
    logging.disable(logging.WARNING)  # HTA logs every parse at WARNING
    analysis = TraceAnalysis(trace_dir=trace_dir, include_last_profiler_step=include_last)
    t = analysis.t
    names = t.symbol_table.sym_table
    out = {}
    for rank in sorted(t.get_ranks()):
        df = t.get_trace(rank)
        by_name = collections.Counter(names[i] for i in df["name"])
        by_cat = collections.Counter(names[i] for i in df["cat"])
        steps = sorted(int(m.group(1)) for n in by_name for m in [STEP.match(n)] if m)
        out[str(rank)] = {"events": int(len(df)), "by_name": by_name, "by_category": by_cat, "steps": steps}
    return out


def main():
    trace_dir = sys.argv[1]
    result = {"all": describe(trace_dir, True), "default": describe(trace_dir, False)}
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
