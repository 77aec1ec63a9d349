"""Holistic Trace Analysis reads ptprof's Chrome export of a GPU replay as it
reads torch.profiler's trace of the recorded run (issue 54).

Per trace: test_gpu_replay.py's replay (the same plan, driver, stand-in CUPTI
and runtime; its functions, imported) under `ptprof run`, `ptprof export
--chrome`, and HTA (hta_analyses.py, run with the venv's interpreter: the
torch under test need not have HTA) on two directories of one trace each:
the warped trace (replay_plan.py's cut of the original, what the replay
re-enacts) and ptprof's export. HTA keeps every step (include_last_profiler_
step=True; the two-rank trace is also loaded as HTA loads by default, its
last step left out) and works on exact times: HTA_DISABLE_NS_ROUNDING,
because HTA's rounding of ns timestamps to whole us depends on where within
its us an event began, which in a replay is the run's start time.

What is compared. GPU times follow the plan, to a few ns (the agent's fit
of CUPTI's clock to the host's), and so do the runtime calls' in the export:
a hooked call folded with CUPTI's record of it shows CUPTI's times
(launcher/collect/call_fold.hpp, trace::CudaInfo::cupti_start_ns), which
the stand-in gives at the plan's times, however late the replay made the
call. The ops' times are the replay's real host times, and no analysis
below reads them:

- get_gpu_kernel_breakdown, per kernel: count exact, sum within 0.5%; per
  kernel type the time within 0.5%, taken at ns resolution (hta_analyses.py
  says why).
- get_temporal_breakdown (GPU times only): idle, compute, non-compute and
  kernel time within 0.5%. The percentages follow from these.
- get_idle_time_breakdown, per stream: the idle time, the number of idle
  intervals and the split into host wait, kernel wait and other, within
  0.5%. The split is taken at the kernel-wait threshold nearest HTA's 30 us
  that no idle interval of the trace lies within 50 ns of (hta_analyses.py's
  clear_kernel_delay), the same on both sides: the traces have intervals of
  exactly 30.000 us, which a few ns of clock fit put on either side of 30.
- get_queue_length_summary, per stream: the number of queue-length changes
  (exact) and the queue length's min, mean and max.
- get_cuda_kernel_launch_stats: the correlations HTA joins (exact) and each
  one's GPU duration, CPU duration and launch delay (within 0.5%).
- get_comm_comp_overlap (GPU times only), per rank: within 1%.

Absolute slack of 10 ns on any time: the clock fit's last ns. What ptprof
does not yet give HTA is listed in KNOWN_GAPS with the reason: a mismatch of
one of those kinds is printed, not failed; any other mismatch fails. Where
the trace has what ptprof cannot record (a cpu_op's `stream`), the export is
compared strictly with the trace without it, and what HTA's figures on the
original differ by besides is the known gap.
"""

import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_check  # noqa: E402
import ptproftest as pt  # noqa: E402
import test_gpu_replay as replay  # noqa: E402
from ptproftest import check  # noqa: E402

COST_S = 50

HTA_ANALYSES = os.path.join(pt.HERE, "hta_analyses.py")

# The NCCL data-parallel trace, one step of it: the one with communication
# kernels overlapping compute. make_plan() and replay() read replay.TRACES.
replay.TRACES.setdefault("nccl", ("a100_nccl_rank0.json.gz", ["--max-steps", "1"]))

TIME_REL = 0.005  # issue 54: kernel sums within 0.5%
OVERLAP_REL = 0.01  # issue 54: comm/comp overlap within 1%
TIME_ABS_US = 0.01  # the clock fit's last ns

# Categories of the CPU side whose `stream` arg makes HTA take the event for GPU work.
CPU_CATEGORIES = ("cpu_op", "user_annotation", "python_function")

KNOWN_GAPS = {
    "cpu_op_stream_arg": "torch.profiler keeps a RecordFunction's keyword inputs as args of its cpu_op "
    "(inductor's Triton launch: stream, grid, kernel_file), and HTA takes a cpu_op with a `stream` for GPU "
    "work on that stream; the agent records no keyword inputs (nor does the replay give any), so ptprof's "
    "export has no such event and HTA's figures on the original differ by it",
}

_seen_gaps = set()
_compared = []


def note_gap(key, line):
    if key not in _seen_gaps:
        print("KNOWN GAP %s: %s" % (key, KNOWN_GAPS[key]))
    _seen_gaps.add(key)
    print("  (known) " + line[:200])


def hta(trace_dir, *flags):
    """hta_analyses.py's results on the traces in trace_dir."""
    proc = pt.run([export_check.hta_python(), HTA_ANALYSES, trace_dir] + list(flags), timeout=600)
    if proc.returncode != 0:
        raise AssertionError("hta_analyses.py on %s: %s" % (trace_dir, pt.describe(proc)))
    return json.loads(proc.stdout)


def close(got, want, rel=TIME_REL, slack=TIME_ABS_US):
    if got is None or want is None:
        return got is None and want is None
    return abs(got - want) <= max(rel * abs(want), slack)


def shown(v):
    return "%.3f" % v if isinstance(v, float) else repr(v)


def diff_maps(what, want, got, same):
    """Mismatch lines of two {key: value} maps: keys on one side only, values `same` rejects."""
    out = []
    for k in sorted(set(want) | set(got), key=repr):
        if k not in got:
            out.append("%s %s: only in the trace (%s)" % (what, k, shown(want[k])))
        elif k not in want:
            out.append("%s %s: only in the export (%s)" % (what, k, shown(got[k])))
        elif not same(got[k], want[k]):
            out.append("%s %s: trace %s, export %s" % (what, k, shown(want[k]), shown(got[k])))
    return out


def failed(what, want, got, info):
    """Mismatch lines where an analysis raised on either side (both raising alike is HTA's limit, no mismatch)."""
    errors = [r.get("error") if isinstance(r, dict) else None for r in (want, got)]
    if errors[0] and errors[1]:
        info("  %s: HTA raises on both: %s" % (what, errors[0]))
        return []
    if errors[0] or errors[1]:
        return ["%s: HTA raises on the %s: %s" % (what, "trace" if errors[0] else "export", errors[0] or errors[1])]
    return None


def cut_name(name):
    return name[: replay.MAX_NAME_BYTES]


def kernel_breakdown(want, got, gaps, info):
    bad = failed("kernel breakdown", want, got, info)
    if bad is not None:
        return bad

    # Copies and sets by Kineto's names ("Memcpy HtoD (Pageable -> Device)"), as the agent gives them.
    def per_kernel(result, field):
        out = {}
        for r in result["by_kernel"]:
            k, v = (r["kernel_type"], cut_name(r["name"])), r[field]
            out[k] = out[k] + v if out.get(k) is not None and v is not None else v
        return out

    def per_type(result):
        return {(r["rank"], r["kernel_type"]): r["sum"] for r in result["by_type_ns"]}

    return (
        diff_maps("kernel count", per_kernel(want, "count"), per_kernel(got, "count"), lambda a, b: a == b)
        + diff_maps("kernel sum (us)", per_kernel(want, "sum (us)"), per_kernel(got, "sum (us)"), close)
        + diff_maps("kernel type time (us)", nonzero(per_type(want)), nonzero(per_type(got)), close)
    )


def nonzero(values):
    """Rows of no time (an overlap of 0 ns, which one side lists and the other not) left out."""
    return {k: v for k, v in values.items() if v is None or abs(v) > TIME_ABS_US}


TEMPORAL_FIELDS = ("idle_time(us)", "compute_time(us)", "non_compute_time(us)", "kernel_time(us)")


def temporal_breakdown(want, got, gaps, info):
    bad = failed("temporal breakdown", want, got, info)
    if bad is not None:
        return bad

    def fields(rows):
        return {(r["rank"], f): r[f] for r in rows for f in TEMPORAL_FIELDS}

    return diff_maps("temporal", fields(want), fields(got), close)


def idle_time_breakdown(want, got, gaps, info):
    bad = failed("idle time breakdown", want, got, info)
    if bad is not None:
        return bad

    def total(rows, field):
        out = {}
        for r in rows:
            k = (r["rank"], r["stream"])
            out[k] = out.get(k, 0) + (r[field] or 0)
        return out

    def split(result):
        return {(r["rank"], r["stream"], r["idle_category"]): r["idle_time"] for r in result["by_category"]}

    info("  idle split at a kernel-wait threshold of %s us (the trace's)" % got.get("kernel_delay"))
    return (
        diff_maps(
            "idle time (us) of stream, rank/stream/category",
            split(want),
            split(got),
            close,
        )
        + diff_maps(
            "idle time (us) of stream",
            total(want["by_category"], "idle_time"),
            total(got["by_category"], "idle_time"),
            close,
        )
        + diff_maps(
            "idle intervals of stream",
            total(want["intervals"], "count"),
            total(got["intervals"], "count"),
            lambda x, y: x == y,
        )
    )


def queue_length_summary(want, got, gaps, info):
    bad = failed("queue length summary", want, got, info)
    if bad is not None:
        return bad

    def stat(rows, s):
        return {(r["rank"], r["stream"]): r["queue_length." + s] for r in rows or []}

    info("  queue length, trace -> export, min/mean/max:")
    for k in sorted(stat(want, "count")):
        a, b = ("/".join(shown(stat(r, s).get(k)) for s in ("min", "mean", "max")) for r in (want, got))
        info("    rank %s stream %s: %s -> %s" % (k + (a, b)))
    out = diff_maps("queue length changes of stream", stat(want, "count"), stat(got, "count"), lambda a, b: a == b)
    for s in ("min", "mean", "max"):
        out += diff_maps("queue length %s of stream" % s, stat(want, s), stat(got, s), close)
    return out


def median(values):
    v = sorted(values)
    return v[len(v) // 2] if v else None


def launch_stats(want, got, gaps, info):
    bad = failed("launch stats", want, got, info)
    if bad is not None:
        return bad
    out = []
    for rank in sorted(set(want) | set(got)):
        a = {r["correlation"]: r for r in want.get(rank) or []}
        b = {r["correlation"]: r for r in got.get(rank) or []}
        if set(a) != set(b):
            out.append(
                "launch stats rank %s: correlations only in the trace %s, only in the export %s"
                % (rank, sorted(set(a) - set(b))[:10], sorted(set(b) - set(a))[:10])
            )
        for field in ("gpu_duration", "cpu_duration", "launch_delay"):
            out += diff_maps(
                "launch %s (us) of correlation" % field,
                {c: r[field] for c, r in a.items() if c in b},
                {c: r[field] for c, r in b.items() if c in a},
                close,
            )
        info(
            "  launches of rank %s: %d -> %d; median cpu_duration %s -> %s us, launch_delay %s -> %s us"
            % (
                (rank, len(a), len(b))
                + tuple(
                    shown(median(r[f] for r in x.values())) for f in ("cpu_duration", "launch_delay") for x in (a, b)
                )
            )
        )
    return out


def comm_comp_overlap(want, got, gaps, info):
    bad = failed("comm/comp overlap", want, got, info)
    if bad is not None:
        return bad

    def pctg(rows):
        return {r["rank"]: r["comp_comm_overlap_pctg"] for r in rows}

    a, b = pctg(want), pctg(got)
    info("  comm/comp overlap %% per rank, trace -> export: %s -> %s" % (a, b))
    return diff_maps("comm/comp overlap % of rank", a, b, lambda x, y: close(x, y, OVERLAP_REL, 0.01))


COMPARISONS = {
    "gpu_kernel_breakdown": kernel_breakdown,
    "temporal_breakdown": temporal_breakdown,
    "idle_time_breakdown": idle_time_breakdown,
    "queue_length_summary": queue_length_summary,
    "cuda_kernel_launch_stats": launch_stats,
    "comm_comp_overlap": comm_comp_overlap,
}


def compare(what, want, got, verbose=True):
    """(mismatch lines, [(known gap, line)]) of HTA's results on the trace (want) and on the export (got)."""
    out, gaps = [], []

    def info(line):
        if verbose:
            print(line)

    if want.get("ranks") != got.get("ranks"):
        out.append("ranks: trace %s, export %s" % (want.get("ranks"), got.get("ranks")))
    for name, comparison in COMPARISONS.items():
        info("%s: %s" % (what, name))
        found = []
        out += ["%s: %s" % (name, line) for line in comparison(want[name], got[name], found, info)]
        gaps += [(gap, "%s: %s: %s" % (what, name, line)) for gap, line in found]
    return out, gaps


def call_differences(want, got):
    """The calls (category, name, correlation) of one side and not the other, one line each."""
    lines = []
    for k in sorted(set(want) | set(got), key=repr):
        n, m = want.get(k, 0), got.get(k, 0)
        if n != m:
            lines.append("call %s: %d in the trace, %d in the export" % (k, n, m))
    return lines


def without_cpu_streams(src, dst):
    """src without the `stream` args of its CPU-side events (what ptprof records), written to dst;
    how many it took away."""
    with open(src, encoding="utf-8") as f:
        doc = json.load(f)
    taken = 0
    for e in doc["traceEvents"]:
        args = e.get("args")
        if e.get("cat") in CPU_CATEGORIES and isinstance(args, dict) and "stream" in args:
            del args["stream"]
            taken += 1
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return taken


def kernel_delay(result):
    """The kernel-wait threshold hta_analyses.py chose for a trace (30 where it could not say)."""
    idle = result.get("idle_time_breakdown")
    return idle.get("kernel_delay", 30) if isinstance(idle, dict) else 30


def one_trace_dir(tmp, what, src, key):
    """A directory holding `src` alone, as <key>.json: HTA reads every .json/.gz file of a directory as a rank."""
    d = os.path.join(tmp, what)
    os.makedirs(d, exist_ok=True)
    shutil.copyfile(src, os.path.join(d, key + ".json"))
    return d


def replay_and_compare(key, *flags_sets):
    """Replays `key`, exports it, and compares HTA on the warped trace and on the export,
    once per set of hta_analyses.py flags (default: one load keeping every step)."""
    replay.need_replay()
    with pt.tempdir() as tmp:
        replay.replay(tmp, key)
        _, warped = replay.make_plan(key)
        # export_calls() writes the export to <tmp>/<key>.chrome.json
        calls = call_differences(replay.trace_calls(warped), replay.export_calls(tmp, key))
        for line in calls:  # a hooked call and CUPTI's record of it are one event (launcher/collect/call_fold.hpp)
            check(False, "%s: %s" % (key, line))
        exported = os.path.join(tmp, key + ".chrome.json")
        if not os.path.exists(exported):
            return
        trace_dir = one_trace_dir(tmp, "trace", warped, key)
        export_dir = one_trace_dir(tmp, "export", exported, key)
        own_dir = None  # the trace as ptprof can know it (no cpu_op streams), where that differs
        own = os.path.join(tmp, key + ".own.json")
        if without_cpu_streams(warped, own):
            own_dir = one_trace_dir(tmp, "own", own, key)
        _compared.append(key)
        for flags in flags_sets or [()]:
            what = "%s%s" % (key, " (%s)" % " ".join(flags) if flags else "")
            want = hta(trace_dir, *flags)
            # The export's idle split at the trace's threshold (hta_analyses.clear_kernel_delay).
            same = flags + ("--kernel-delay=%s" % kernel_delay(want),)
            got = hta(export_dir, *same)
            strict, gaps = compare(what, hta(own_dir, *same) if own_dir else want, got)
            for line in strict:
                check(False, "%s: %s" % (what, line))
            for gap, line in gaps:
                note_gap(gap, line)
            if own_dir:
                for line in compare(what + " vs the original", want, got, verbose=False)[0]:
                    if line not in strict:
                        note_gap("cpu_op_stream_arg", "%s: %s" % (what, line))
            print("%s: HTA on the export and on the trace compared (%d mismatches)" % (what, len(strict)))


def test_triton_kernel():
    """One Triton kernel launched with cuLaunchKernel; the trace's cpu_op of
    the launch carries inductor's `stream`, which HTA counts as GPU work."""
    replay_and_compare("triton")


def test_simple_add_copies_sets_syncs():
    """Copies, sets and cuda_sync events on two streams."""
    replay_and_compare("simple_add")


def test_two_ranks_streams_threads():
    """Two steps of one rank, four streams, NCCL kernels; loaded with every
    step and as HTA loads by default (the last step left out)."""
    replay_and_compare("two_ranks", (), ("--without-last-step",))


def test_nccl_comm_comp_overlap():
    """One step of NCCL data-parallel training: all-reduce overlapping compute."""
    replay_and_compare("nccl")


def test_zz_known_gaps_still_seen():
    """Says which KNOWN_GAPS no comparison met (fixed: remove them)."""
    if _compared:
        for key in sorted(set(KNOWN_GAPS) - _seen_gaps):
            print("NOTE: known gap %r was not seen in this run: if it is fixed, remove it from KNOWN_GAPS" % key)


# The categories of what CUDA brings (chrome_category()): the events whose
# category, args and ac2g flows the Perfetto export must carry as the Chrome
# export does.
CUDA_CATEGORIES = ("cuda_runtime", "cuda_driver", "kernel", "gpu_memcpy", "gpu_memset", "cuda_sync")


def _event_key(name, cat, thread, args):
    """An event as both exports can say it: name, category, (pid, tid) and
    args ("Ev Idx", the Chrome file's order of events, aside; a grid's list
    as the text Perfetto holds, "[1, 1, 1]")."""
    shown = tuple(
        sorted((k, json.dumps(v) if isinstance(v, list) else v) for k, v in (args or {}).items() if k != "Ev Idx")
    )
    return (name, cat, thread, shown)


def chrome_cuda_events(doc):
    """The CUDA events of a Chrome export (keys as _event_key), and its ac2g
    flows as (launch's key, work's key) pairs: each end is the CUDA event on
    the flow event's thread at its ts."""
    keys, at = [], {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in CUDA_CATEGORIES:
            key = _event_key(e["name"], e["cat"], (e["pid"], e["tid"]), e.get("args"))
            keys.append(key)
            at.setdefault((e["pid"], e["tid"], e["ts"]), []).append(key)
    ends = {}
    for e in doc["traceEvents"]:
        if e.get("cat") == "ac2g" and e.get("ph") in ("s", "f"):
            found = at.get((e["pid"], e["tid"], e["ts"]), [])
            check(len(found) == 1, "one CUDA event at the ac2g flow end %r: %r" % (e, found))
            ends.setdefault(e["id"], {})[e["ph"]] = found[0] if found else None
    flows = [(v.get("s"), v.get("f")) for v in ends.values()]
    return keys, flows


def perfetto_cuda_events(slices):
    """The same of a Perfetto export's slices (test_export.perfetto_slices)."""
    keys, ends = [], {}
    for s in slices:
        if s["cat"] not in CUDA_CATEGORIES:
            continue
        key = _event_key(s["name"], s["cat"], s["thread"], s["args"])
        keys.append(key)
        for ph, field in (("s", "flow_ids"), ("f", "terminating_flow_ids")):
            for flow in s[field]:
                ends.setdefault(flow, {})[ph] = key
    flows = [(v.get("s"), v.get("f")) for v in ends.values()]
    return keys, flows


def test_perfetto_export_carries_the_chrome_exports_cuda_events():
    """`ptprof export --perfetto` of a GPU replay, decoded with protoc
    (test_export.py's): every CUDA event of the Chrome export of the same run
    is a slice of the same name, category, thread and args (ints, floats
    and texts alike), and the ac2g flows join the same launch and work."""
    import collections

    import test_export

    if not shutil.which("protoc"):
        pt.skip("protoc is not installed (Debian: apt-get install protobuf-compiler)")
    replay.need_replay()
    for key in ("simple_add", "triton"):
        with pt.tempdir() as tmp:
            replay.replay(tmp, key)
            chrome, pf = os.path.join(tmp, key + ".json"), os.path.join(tmp, key + ".pftrace")
            export_check.export(os.path.join(tmp, key + ".run"), "--chrome", chrome, "--perfetto", pf)
            want, want_flows = chrome_cuda_events(export_check.load_chrome(chrome))
            got, got_flows = perfetto_cuda_events(test_export.perfetto_slices(test_export.protoc_decode(pf)))
            check(want and want_flows, "%s: the replay has CUDA events and ac2g flows" % key)
            missing = collections.Counter(want) - collections.Counter(got)
            extra = collections.Counter(got) - collections.Counter(want)
            check(
                not missing and not extra,
                "%s: CUDA events, Chrome's not in Perfetto's: %r; Perfetto's not in Chrome's: %r"
                % (key, sorted(missing)[:3], sorted(extra)[:3]),
            )
            check(
                collections.Counter(want_flows) == collections.Counter(got_flows),
                "%s: the same ac2g flows (%d in Chrome's, %d in Perfetto's)" % (key, len(want_flows), len(got_flows)),
            )
            print("%s: %d CUDA events and %d ac2g flows alike in both exports" % (key, len(want), len(want_flows)))


if __name__ == "__main__":
    pt.main()
