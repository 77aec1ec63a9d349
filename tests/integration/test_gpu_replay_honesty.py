"""The GPU replay fails where ptprof would be wrong (issue 54: "the replay
itself is honest"). Each test replays one trace twice through the real
agent, with the machinery of test_gpu_replay.py: once as it is (the
comparison with kineto_reference passes), once with a knob of the stand-in
CUPTI (tests/replay/standin) that makes the agent see exactly what a bug of
its own would make it see; kineto_reference.compare must then name the
damage, and only it:

- a broken correlation join (PTPROF_REPLAY_CORRELATION_SHIFT=1): the
  external correlation records, the only place the agent learns which op a
  call belongs to (it enables no API callbacks: the kernel's correlation id
  is looked up in them, launcher/collect/cuda_join.hpp), name each call's
  correlation id + 1, as a join off by one would. Ops' Self CUDA and CUDA
  total and the count of unmatched kernels fail; kernels, copies, busy time
  and launch latency (CUPTI's call record, joined by the right id) do not.
- the CUPTI clock offset ignored (PTPROF_REPLAY_TIMESTAMP=host):
  cuptiGetTimestamp, which the agent samples to align CUPTI's clock with its
  own (cupti_consumer.cpp, calibrate), answers the host's clock while the
  records carry the offset, so the agent aligns with offset 0. CUPTI's
  record of each hooked call then lies the offset away from the hooked
  record of the same call, the two no longer fold into one (call_fold.hpp),
  and the runtime call rows count each such call twice (CUPTI 7000 s
  ahead, the stand-in's default); with a CUPTI clock 40 s behind the
  host's the GPU work falls before the window (busy time 0). Launch
  latency is not where it shows: kernel and launch are both CUPTI's
  times. Not shown: an error too small to split a call's records or move
  work across a window's edge (kineto_reference compares nothing else
  that depends on the alignment).
- buffers out of order (PTPROF_REPLAY_BUFFER_ORDER=reverse). No part of
  ptprof assumes CUPTI's order, so there is no real bug to re-enact: what
  is shown is (1) that reversed deliveries do put kernels before the
  external correlation that joins them (the stand-in's log counts them),
  (2) that ptprof's report still passes the comparison (the launcher holds
  such work until the window is written), and (3) what a consumer that
  joins each record only with the correlations before it would report,
  re-enacted by leaving those late correlations out
  (PTPROF_REPLAY_LATE_CORRELATIONS=drop): exactly the kernels the log
  counted are unmatched, and the comparison fails. Not shown: a failure
  for other order assumptions (work per stream in time order, a call's
  record before its work), which reversed deliveries exercise (1, 2) but no
  knob re-enacts; and buffers swapped across deliveries (the agent's 4 MiB
  buffers hold a whole delivery: reversal is within one).

The trace is simple_add (79 kernels, copies, sets and syncs on two streams,
331 runtime calls): the smallest that shows each failure on many ops.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptproftest as pt  # noqa: E402
import test_gpu_replay as gpu_replay  # noqa: E402  (its replay, plans, known gaps and reference)
from ptproftest import check, check_eq  # noqa: E402

kineto_reference = gpu_replay.kineto_reference

COST_S = 30

TRACE = "simple_add"
CUPTI_BEHIND_NS = "-40000000000"  # a CUPTI clock 40 s behind the host's
OUT_OF_ORDER = re.compile(
    r"^ptprof replay CUPTI: [a-z ]+: out of order: (\d+) work records \((\d+) kernels\) before their "
    r"correlation record; (\d+) correlation records left out$",
    re.M,
)

_base = {}  # the in-order replay's report, once per file run


def own_rules():
    """The reference test_gpu_replay's strict comparison uses."""
    _, warped = gpu_replay.make_plan(TRACE)
    return gpu_replay.ptprof_reference(warped)


def mismatches(ref, report):
    """compare()'s lines, less the known gaps the in-order replay shows too."""
    return [m for m in kineto_reference.compare(ref, report) if not gpu_replay.gap_of(m, ref)]


def replay(tmp, name, **knobs):
    report, stderr = gpu_replay.replay(tmp, TRACE, name, **knobs)
    check_eq(report["losses"].get("late_events"), 0, "%s: nothing late" % name)
    return report, stderr


def base_report(tmp, ref):
    """The replay without a knob: it must pass, or no failure below means anything."""
    if "report" not in _base:
        report, _ = replay(tmp, "in-order")
        check_eq(mismatches(ref, report), [], "%s in order: the comparison passes" % TRACE)
        _base["report"] = report
    return _base["report"]


def kinds(lines):
    """The lines by kind: the op column, or the line's subject."""
    out = {}
    for line in lines:
        m = re.match(r"op '.*?'(?: \(its row also holds [^)]*\))?: (self_cuda_us|cuda_total_us) ", line)
        if m:
            kind = "op " + m.group(1)
        elif line.startswith("unmatched kernels: "):
            kind = "unmatched kernels"
        elif line.startswith("runtime call row "):
            kind = "runtime call row"
        elif line.startswith("busy time of device "):
            kind = "busy time"
        else:
            kind = "other"
        out.setdefault(kind, []).append(line)
    return out


def failing(label, ref, report):
    """The comparison's lines by kind, each kind's first few printed (what the replay caught)."""
    got = kinds(mismatches(ref, report))
    for kind, lines in sorted(got.items()):
        print("%s: %d line(s) of %s, e.g." % (label, len(lines), kind))
        for line in lines[:3]:
            print("    " + line[:160])
    return got


def op_names(lines):
    return {re.match(r"op '(.*?)'", line).group(1) for line in lines}


def unmatched(report):
    return (report.get("gpu") or {}).get("unmatched_kernels")


def check_join_broken(label, ref, report, lost_kernels, ops=()):
    """The damage a broken join does, and only it: ops' CUDA times (of
    `ops` among others) and `lost_kernels` unmatched."""
    got = failing(label, ref, report)
    check_eq(sorted(got), ["op cuda_total_us", "op self_cuda_us", "unmatched kernels"], "%s: what fails" % label)
    check_eq(
        got.get("unmatched kernels"),
        ["unmatched kernels: %d in ptprof, 0 in the trace (ptprof lost a join the trace has)" % lost_kernels],
        "%s: the kernels joined to no op" % label,
    )
    wrong = op_names(got.get("op self_cuda_us", []))
    check(set(ops) <= wrong, "%s: Self CUDA wrong of %s (of %s)" % (label, sorted(ops), sorted(wrong)))
    _, warped = gpu_replay.make_plan(TRACE)
    check_eq(gpu_replay.report_launches(report), gpu_replay.kernel_launches(warped), "%s: still every kernel" % label)


def test_broken_correlation_join_fails():
    """A join off by one: ops' CUDA times and unmatched kernels fail."""
    gpu_replay.need_replay()
    ref = own_rules()
    with pt.tempdir() as tmp:
        base_report(tmp, ref)
        report, _ = replay(tmp, "shifted", PTPROF_REPLAY_CORRELATION_SHIFT="1")
        lost = unmatched(report) or 0
        check(lost > 0, "some kernels' call + 1 has no op: %r unmatched" % lost)
        # Ops whose every call's + 1 is a call of no op: all their kernels lost.
        lost_ops = ("aten::add_", "aten::clamp_min_", "aten::max_pool2d_with_indices", "aten::_adaptive_avg_pool2d")
        check_join_broken("correlation + 1", ref, report, lost, lost_ops)


# The calls of the trace that the agent hooks (agent/src/cuda): each has a
# hooked record and CUPTI's. The others (cudaMalloc, cudaStreamIsCapturing,
# ...) only CUPTI's, which no clock can split.
HOOKED_CALLS = (
    "cudaLaunchKernel",
    "cudaMemcpyAsync",
    "cudaMemsetAsync",
    "cudaStreamSynchronize",
    "cudaDeviceSynchronize",
    "cudaStreamWaitEvent",
)


def runtime_rows_doubled(label, ref, got, required=True):
    """The runtime call rows count each hooked call twice (its two records
    unfolded), and nothing else; `required`: every hooked call's row does."""
    lines = got.get("runtime call row", [])
    doubled = set()
    for line in lines:
        m = re.match(r"runtime call row '(.*)': calls (\d+) in ptprof, (\d+) in the trace$", line)
        if m and int(m.group(2)) == 2 * int(m.group(3)) == 2 * ref["runtime_calls"].get(m.group(1), -1):
            doubled.add(m.group(1))
        else:
            check(False, "%s: not a call counted twice: %s" % (label, line))
    if required:
        check(set(HOOKED_CALLS) <= doubled, "%s: hooked calls twice: %s of %s" % (label, sorted(doubled), HOOKED_CALLS))


def test_clock_offset_ignored_fails():
    """The agent aligning CUPTI's clock with offset 0: every hooked call
    counted twice (its two records 7000 s apart); with CUPTI 40 s behind,
    the GPU work before the window (busy time 0). The same offsets, told
    to the agent as CUPTI does, pass."""
    gpu_replay.need_replay()
    ref = own_rules()
    with pt.tempdir() as tmp:
        base_report(tmp, ref)  # the stand-in's default offset: 7000 s ahead
        ahead, _ = replay(tmp, "ahead-ignored", PTPROF_REPLAY_TIMESTAMP="host")
        got = failing("offset 7000 s ignored", ref, ahead)
        check_eq(sorted(got), ["runtime call row"], "offset 7000 s ignored: what fails")
        runtime_rows_doubled("offset 7000 s ignored", ref, got)

        behind, _ = replay(tmp, "behind", PTPROF_REPLAY_CUPTI_OFFSET_NS=CUPTI_BEHIND_NS)
        check_eq(mismatches(ref, behind), [], "CUPTI 40 s behind, the offset told: the comparison passes")
        behind, _ = replay(
            tmp, "behind-ignored", PTPROF_REPLAY_CUPTI_OFFSET_NS=CUPTI_BEHIND_NS, PTPROF_REPLAY_TIMESTAMP="host"
        )
        got = failing("offset -40 s ignored", ref, behind)
        # CUPTI's records of the calls lie before the window too: where the
        # launcher keeps them, each hooked call is counted twice again.
        check(set(got) in ({"busy time"}, {"busy time", "runtime call row"}), "offset -40 s ignored: what fails")
        runtime_rows_doubled("offset -40 s ignored", ref, got, required=False)
        want = [
            "busy time of device %s: 0.000 us in ptprof, %.3f us in the trace" % (d["device"], d["busy_us"])
            for d in ref["busy"]["devices"]
        ]
        want += [
            "busy time of device %s stream %s: 0.000 us in ptprof, %.3f us in the trace"
            % (s["device"], s["stream"], s["busy_us"])
            for s in ref["busy"]["streams"]
        ]
        check_eq(sorted(got.get("busy time", [])), sorted(want), "offset -40 s ignored: the work before the window")


def out_of_order(stderr):
    """(work records, kernels, correlations left out) the stand-in delivered before their correlation."""
    found = [tuple(int(n) for n in m.groups()) for m in OUT_OF_ORDER.finditer(stderr)]
    return tuple(sum(f[i] for f in found) for i in range(3))


def test_out_of_order_buffers():
    """Reversed deliveries put kernels before their correlation: ptprof's
    report still passes; a consumer that assumed order (the late
    correlations left out) loses exactly those kernels and fails."""
    gpu_replay.need_replay()
    ref = own_rules()
    with pt.tempdir() as tmp:
        base_report(tmp, ref)
        report, stderr = replay(tmp, "reversed", PTPROF_REPLAY_BUFFER_ORDER="reverse")
        work, kernels, left_out = out_of_order(stderr)
        check(kernels > 0, "reversed: kernels delivered before their correlation (%d work records)" % work)
        check_eq(left_out, 0, "reversed: every correlation delivered")
        check_eq(mismatches(ref, report), [], "reversed: the comparison passes")
        check_eq(unmatched(report), 0, "reversed: every kernel joined")

        report, stderr = replay(
            tmp, "assumed-order", PTPROF_REPLAY_BUFFER_ORDER="reverse", PTPROF_REPLAY_LATE_CORRELATIONS="drop"
        )
        work, kernels, left_out = out_of_order(stderr)
        check(kernels > 0 and left_out > 0, "late correlations left out: %d, for %d kernels" % (left_out, kernels))
        check_join_broken("order assumed", ref, report, kernels)


if __name__ == "__main__":
    pt.main()
