"""Runs Holistic Trace Analysis' analyses on a directory of traces (one file
per rank, as TraceAnalysis(trace_dir=...) reads them) and prints what each
gave as JSON: {analysis: [row, ...]} with every DataFrame as a list of
records, or {analysis: {"error": "..."}} where the analysis raised.

Run by test_gpu_hta.py with the interpreter that has HTA (the venv's):
    python hta_analyses.py TRACE_DIR [--without-last-step] [--kernel-delay=US]
--without-last-step loads as TraceAnalysis does by default (the last
ProfilerStep's work left out); without it, every step is kept.
--kernel-delay=US: the idle split's kernel-wait threshold; without it, the
one clear_kernel_delay() picks from the trace (given back as kernel_delay). Exit status
3 when HTA is not importable.

Beyond HTA's own results: each kernel row of the breakdown gets its count
(sum / mean: HTA gives no count), and the kernel-type breakdown is given a
second time at ns resolution ("by_type_ns"): HTA casts each merged interval
of it to whole us, so a replay's GPU times, a few ns off the trace's whole
us (the clock fit), would lose 1 us per interval.
"""

import json
import logging
import math
import os
import sys
import traceback

# HTA rounds a trace's ns timestamps to whole us (start up, end down), so an
# event's duration depends on where within its us it began: on a replay's
# start time, not on the trace. Both sides are compared on exact times.
os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"

try:
    from hta.analyzers.breakdown_analysis import BreakdownAnalysis
    from hta.trace_analysis import TraceAnalysis
    from hta.utils.utils import KernelType, get_kernel_type
except ImportError as e:
    print("HolisticTraceAnalysis is not importable: %s" % e, file=sys.stderr)
    sys.exit(3)

# The kernel breakdown lumps all but the costliest kernels into "others" by
# default; these keep every kernel name a row of its own.
ALL_KERNELS = {"duration_ratio": 1.0, "num_kernels": 1 << 30, "include_memory_kernels": True}


def records(df):
    """A DataFrame as JSON-ready records; the index (and column levels) flattened."""
    if df is None:
        return None
    df = df.reset_index()
    df.columns = [".".join(str(p) for p in c if p != "") if isinstance(c, tuple) else str(c) for c in df.columns]
    return [{k: plain(v) for k, v in row.items()} for row in df.to_dict(orient="records")]


def plain(v):
    if hasattr(v, "item"):  # numpy scalars
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def kernel_breakdown(a):
    by_type, by_kernel = a.get_gpu_kernel_breakdown(visualize=False, **ALL_KERNELS)
    rows = records(by_kernel)
    for row in rows:
        mean = row.get("mean (us)")
        row["count"] = round(row["sum (us)"] / mean) if mean else None
    return {"by_type": records(by_type), "by_kernel": rows, "by_type_ns": kernel_type_time_ns(a)}


def kernel_type_time_ns(a):
    """get_gpu_kernel_breakdown's by-type sums, its own code on times in ns (then back in us)."""
    names = a.t.symbol_table.get_sym_table()
    kinds = [KernelType.COMPUTATION.name, KernelType.COMMUNICATION.name, KernelType.MEMORY.name]
    out = []
    for rank, df in sorted(a.t.traces.items()):
        gpu = df[df["stream"].ne(-1)].copy()
        gpu["kernel_type"] = gpu["name"].apply(lambda i: get_kernel_type(names[i]))
        gpu["ts"] = gpu["ts"] * 1000
        gpu["dur"] = gpu["dur"] * 1000
        for row in records(BreakdownAnalysis._get_gpu_kernel_type_time(gpu, kinds)):
            out.append({"rank": int(rank), "kernel_type": row["kernel_type"], "sum": row["sum"] / 1000})
    return out


def idle_time_breakdown(a, kernel_delay=None):
    """HTA's idle split at a kernel-wait threshold (us) no idle interval of this
    trace lies near, unless one is given (the other side's, to compare alike)."""
    delay = clear_kernel_delay(a) if kernel_delay is None else kernel_delay
    by_category, intervals = a.get_idle_time_breakdown(
        ranks=ranks_of(a), visualize=False, show_idle_interval_stats=True, consecutive_kernel_delay=delay
    )
    return {"by_category": records(by_category), "intervals": records(intervals), "kernel_delay": delay}


# HTA calls an idle interval kernel wait when it is shorter than a threshold
# (30 us by default; ts is in us). Recorded traces have intervals of exactly
# 30.000 us, and a replay's GPU times are a few ns off the trace's (the clock
# fit), so at 30 such an interval is "other" on one side and "kernel wait"
# on the other. The threshold used is the one nearest 30 that keeps every
# interval of the trace this far away, far more than the fit's error.
KERNEL_DELAY_MARGIN_US = 0.05


def clear_kernel_delay(a):
    """The kernel-wait threshold nearest HTA's default 30 us with no idle interval within the margin."""
    gaps = []
    names = a.t.symbol_table.get_sym_id_map()
    cats = [names[c] for c in ("kernel", "gpu_memset", "gpu_memcpy") if c in names]
    for df in a.t.traces.values():
        gpu = df[df["stream"].ne(-1) & df["cat"].isin(cats)]
        for _, s in gpu.groupby("stream"):
            s = s.sort_values("ts")
            gaps.extend((s["ts"] - (s["ts"] + s["dur"]).shift(1)).dropna().tolist())
    for step in range(0, 200):
        for delay in (30 - step * 0.01, 30 + step * 0.01):
            if all(abs(g - delay) > KERNEL_DELAY_MARGIN_US for g in gaps):
                return round(delay, 2)
    return 30


def launch_stats(a):
    stats = a.get_cuda_kernel_launch_stats(ranks=ranks_of(a), visualize=False)
    return {str(rank): records(df) for rank, df in stats.items()}


def ranks_of(a):
    """Every rank the directory holds (HTA's analyses of one rank default to rank 0)."""
    return sorted(int(r) for r in a.t.get_ranks())


ANALYSES = {
    "gpu_kernel_breakdown": kernel_breakdown,
    "temporal_breakdown": lambda a: records(a.get_temporal_breakdown(visualize=False)),
    "idle_time_breakdown": idle_time_breakdown,
    "queue_length_summary": lambda a: records(a.get_queue_length_summary(ranks=ranks_of(a))),
    "cuda_kernel_launch_stats": launch_stats,
    "comm_comp_overlap": lambda a: records(a.get_comm_comp_overlap(visualize=False)),
}


def main():
    trace_dir, flags = sys.argv[1], sys.argv[2:]
    logging.disable(logging.WARNING)  # HTA logs every parse at WARNING
    analysis = TraceAnalysis(trace_dir=trace_dir, include_last_profiler_step="--without-last-step" not in flags)
    out = {"ranks": sorted(int(r) for r in analysis.t.get_ranks())}
    delay = [float(f.split("=", 1)[1]) for f in flags if f.startswith("--kernel-delay=")]
    for name in ANALYSES:
        try:
            if name == "idle_time_breakdown" and delay:
                out[name] = idle_time_breakdown(analysis, delay[-1])
                continue
            out[name] = ANALYSES[name](analysis)
        except Exception as e:  # one analysis that raises is that analysis' result
            out[name] = {"error": "%s: %s" % (type(e).__name__, e), "traceback": traceback.format_exc()[-2000:]}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
