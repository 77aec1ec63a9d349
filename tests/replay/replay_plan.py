"""Turns a Kineto trace (what torch.profiler writes) into the plan file of the
GPU replay (issue 54; the format is /work/notes/replay-spec.md, "Plan file").

Why: no machine here has a GPU, so ptprof's GPU side is checked by replaying
real GPU runs. The replay's target (replay_driver.py) re-enacts the trace's
CPU side -- every cpu_op and user_annotation as a RecordFunction scope, every
CUDA runtime/driver call inside them, on as many threads as the trace has, at
the trace's relative times -- and a trace-driven stand-in CUPTI hands the agent
the trace's kernels, copies, sets and syncs. Both read this plan; nothing else
of the trace is needed at run time.

Usage (stdlib only; Python 3.8+; any Kineto trace, .json or .json.gz, the
current schema or the 2021 one):

    replay_plan.py TRACE -o PLAN [--max-steps N] [--max-idle-ms G]
                   [--warped-trace OUT.json.gz] [--summary]

--max-steps N   keeps what happened up to the end of the N-th ProfilerStep#k
                scope: CPU events that start before that end, the GPU work of
                the calls kept, and GPU work of no known call (correlation 0,
                or a correlation without a runtime/driver event) that starts
                before that end.
--max-idle-ms G shortens every stretch of the timeline longer than G ms in
                which no GPU work runs and no CPU event starts or ends to G ms
                (a monotone warp of every time, CPU and GPU alike): some traces
                span 41 s because one CUDA-init call lasted 24 s. G is taken to
                whole microseconds.
--warped-trace  writes the trace itself, cut and warped the same way (every
                ts and dur; everything else as it was), so that a reference
                (kineto_reference.py) and HTA see exactly the run replayed.
--summary       prints counts: threads, scopes, calls, work per kind, the span
                before and after the warp, and the oddities met (clamped
                children, calls outside scopes, work of no known call).

What becomes what: cpu_op and Operator (2021) -> `scope ... cpu_op`;
user_annotation -> `scope ... user_annotation`; cuda_runtime and Runtime
(2021) -> `call ... runtime`; cuda_driver -> `call ... driver`; kernel,
gpu_memcpy, gpu_memset, cuda_sync (and Kernel, Memcpy, Memset) -> `work`.
python_function and gpu_user_annotation events are not replayed. Every (pid,
tid) with CPU events is a plan thread. Per thread, scopes and calls are sorted
by (start, -end) and made properly nested: a child that overruns its parent is
clamped to the parent's end. Times are integer ns from the trace's microsecond
values read exactly (as decimals), relative to the earliest event kept.
The same input gives a byte-identical plan.

Exit status: 0 done; 2 bad input (no such file, not a Kineto trace, no CPU
events). --max-steps on a trace without ProfilerStep#k scopes, or with fewer
than N, keeps everything (with a note on stderr for the former).
"""

import argparse
import bisect
import collections
import decimal
import gzip
import json
import os
import re
import sys

PLAN_MAGIC = "ptprof-replay-plan"
PLAN_VERSION = 1

SCOPE_KINDS = {"cpu_op": "cpu_op", "user_annotation": "user_annotation", "Operator": "cpu_op"}
CALL_KINDS = {"cuda_runtime": "runtime", "Runtime": "runtime", "cuda_driver": "driver", "Driver": "driver"}
WORK_KINDS = {
    "kernel": "kernel",
    "Kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "Memcpy": "memcpy",
    "gpu_memset": "memset",
    "Memset": "memset",
    "cuda_sync": "sync",
}
LEGACY_CATEGORIES = {"Operator", "Runtime", "Kernel", "Memcpy", "Memset"}
FLOW_CATEGORIES = {"ac2g", "async"}  # flows whose id is a correlation (launch -> GPU work)
WORK_ORDER = ("kernel", "memcpy", "memset", "sync")

# CUpti_ActivityMemcpyKind and CUpti_ActivityMemoryKind, by the words Kineto
# writes for them (CuptiActivity.cpp: memcpyKindString, memoryKindString).
MEMCPY_KINDS = {
    "Unknown": 0,
    "HtoD": 1,
    "DtoH": 2,
    "HtoA": 3,
    "AtoH": 4,
    "AtoA": 5,
    "AtoD": 6,
    "DtoA": 7,
    "DtoD": 8,
    "HtoH": 9,
    "PtoP": 10,
}
MEMORY_KINDS = {
    "Unknown": 0,
    "Pageable": 1,
    "Pinned": 2,
    "Device": 3,
    "Array": 4,
    "Managed": 5,
    "Device Static": 6,
    "Managed Static": 7,
}
# CUpti_ActivitySynchronizationType by Kineto's cuda_sync_kind (syncTypeString).
SYNC_TYPES = {"Unknown Sync": 0, "Event Sync": 1, "Stream Wait Event": 2, "Stream Sync": 3, "Context Sync": 4}

MEMCPY_NAME = re.compile(r"^Memcpy (\w+) \((.+) -> (.+)\)$")
MEMSET_NAME = re.compile(r"^Memset \((.+)\)$")
STEP_NAME = re.compile(r"^ProfilerStep#\d+$")


class PlanError(Exception):
    """Bad input: main() prints it and returns 2."""


# ---------------------------------------------------------------- reading


def ns_of(value):
    """A trace time in microseconds (int, or a decimal read exactly) -> integer ns."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            return None
        return int((value * 1000).to_integral_value(rounding=decimal.ROUND_HALF_EVEN))
    if isinstance(value, float):
        return int(round(value * 1000))
    return None


def plain(value):
    """Decimals from the reader -> floats (what json.load would have given), recursively."""
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def int_or_text(value):
    """pid/tid as the trace gives them: ints, digit strings ('25738'), labels ('stream 7')."""
    if isinstance(value, str):
        s = value.strip()
        if s.lstrip("-").isdigit():
            return int(s)
        return s
    if isinstance(value, decimal.Decimal):
        return int(value)
    return value


def int_arg(args, *keys):
    """The first of keys in args as an int, or None."""
    for k in keys:
        v = args.get(k)
        if v is None or isinstance(v, bool):
            continue
        if isinstance(v, (int, decimal.Decimal, float)):
            return int(v)
        if isinstance(v, str) and v.strip().lstrip("-").isdigit():
            return int(v)
    return None


def field(text):
    """A name as a plan field: no TAB, CR or newline."""
    return str(text).replace("\t", " ").replace("\r", " ").replace("\n", " ")


def read_trace(path):
    if not os.path.exists(path):
        raise PlanError("%s: no such file" % path)
    if os.path.isdir(path):
        raise PlanError("%s: a directory, not a trace file" % path)
    try:
        with open(path, "rb") as f:
            head = f.read(2)
        opener = gzip.open if head == b"\x1f\x8b" else open
        with opener(path, "rt", encoding="utf-8") as f:
            # Decimals: a float64 keeps a 1.7e15 us timestamp to 0.25 us only.
            doc = json.load(f, parse_float=decimal.Decimal)
    except (OSError, EOFError, UnicodeDecodeError, ValueError) as e:
        raise PlanError("%s: not a Kineto trace (unreadable JSON: %s)" % (path, e)) from None
    if isinstance(doc, list):  # a bare event array is valid Chrome JSON
        doc = {"traceEvents": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise PlanError("%s: not a Kineto trace (no traceEvents list)" % path)
    return doc


class Cpu:
    """A scope or call of one thread."""

    __slots__ = ("index", "what", "kind", "thread", "start", "end", "name", "cbid", "correlation", "clamped")

    def __init__(self, index, what, kind, thread, start, end, name, cbid=None, correlation=None):
        self.index = index
        self.what = what  # "scope" or "call"
        self.kind = kind  # cpu_op/user_annotation, runtime/driver
        self.thread = thread  # (pid, tid)
        self.start = start
        self.end = end
        self.name = name
        self.cbid = cbid
        self.correlation = correlation
        self.clamped = False


class Work:
    """A kernel, copy, set or sync on the GPU."""

    __slots__ = ("index", "kind", "start", "end", "correlation", "device", "context", "stream", "attrs", "name")

    def __init__(self, index, kind, start, end, correlation, device, context, stream, attrs, name):
        self.index = index
        self.kind = kind
        self.start = start
        self.end = end
        self.correlation = correlation
        self.device = device
        self.context = context
        self.stream = stream
        self.attrs = attrs  # list of (key, value); times (queued) in ns, not yet relative
        self.name = name


def work_attrs(kind, name, args):
    """The plan's <attrs> of one piece of GPU work, as (key, value) pairs (queued in absolute ns)."""
    out = []

    def triple(key, v):
        if isinstance(v, list) and len(v) == 3:
            out.append((key, ",".join(str(int(x)) for x in v)))

    if kind == "kernel":
        triple("grid", args.get("grid"))
        triple("block", args.get("block"))
        regs = int_arg(args, "registers per thread")
        if regs is not None:
            out.append(("regs", regs))
        smem = int_arg(args, "shared memory")
        if smem is not None:
            out.append(("smem", smem))
        # Kineto writes CUPTI's raw `queued`; 0 is CUPTI_TIMESTAMP_UNKNOWN (not collected), so
        # only a positive one is a time (taken as ns on the ts clock).
        q = args.get("queued")
        if isinstance(q, (int, decimal.Decimal)) and not isinstance(q, bool) and q > 0:
            out.append(("queued", int(q)))
    elif kind == "memcpy":
        nbytes = int_arg(args, "bytes")
        if nbytes is not None:
            out.append(("bytes", nbytes))
        m = MEMCPY_NAME.match(name)
        if m:
            out.append(("copy_kind", MEMCPY_KINDS.get(m.group(1), 0)))
            out.append(("src_kind", MEMORY_KINDS.get(m.group(2), 0)))
            out.append(("dst_kind", MEMORY_KINDS.get(m.group(3), 0)))
    elif kind == "memset":
        nbytes = int_arg(args, "bytes")
        if nbytes is not None:
            out.append(("bytes", nbytes))
        m = MEMSET_NAME.match(name)
        if m:  # the set memory's kind: Memset4.memoryKind
            out.append(("dst_kind", MEMORY_KINDS.get(m.group(1), 0)))
        value = int_arg(args, "value")
        if value is not None:
            out.append(("value", value))
    elif kind == "sync":
        out.append(("sync_type", SYNC_TYPES.get(str(args.get("cuda_sync_kind", name)), 0)))
        event = int_arg(args, "wait_on_cuda_event_id")
        if event is not None:
            out.append(("event", event))
        # Beyond the spec's keys: what Kineto joined from the event's cudaEventRecord.
        wait_stream = int_arg(args, "wait_on_stream")
        if wait_stream is not None:
            out.append(("wait_stream", wait_stream))
        wait_corr = int_arg(args, "wait_on_cuda_event_record_corr_id")
        if wait_corr is not None:
            out.append(("wait_corr", wait_corr))
    graph_node = int_arg(args, "graph node id", "graphNodeId")
    if graph_node is not None:
        out.append(("graph_node", graph_node))
    graph = int_arg(args, "graph id", "graphId")
    if graph is not None:
        out.append(("graph", graph))
    return out


class Trace:
    """The replayable part of one Kineto trace."""

    def __init__(self, path, doc):
        self.path = path
        self.doc = doc
        self.schema = "kineto"
        self.cpu = []
        self.work = []
        self.thread_names = {}
        self.ignored = collections.Counter()
        raw = doc["traceEvents"]
        for index, e in enumerate(raw):
            if not isinstance(e, dict):
                continue
            ph = e.get("ph")
            cat = e.get("cat")
            if cat in LEGACY_CATEGORIES:
                self.schema = "2021"
            if ph == "M" and e.get("name") == "thread_name":
                name = (e.get("args") or {}).get("name")
                if isinstance(name, str):
                    # The last name wins: a thread may be renamed (pt_main_thread -> pt_autograd_0).
                    self.thread_names[(int_or_text(e.get("pid")), int_or_text(e.get("tid")))] = name.strip()
                continue
            if ph != "X":
                continue
            start = ns_of(e.get("ts"))
            if start is None:
                continue
            dur = ns_of(e.get("dur")) or 0
            end = start + max(0, dur)
            args = e.get("args") or {}
            if not isinstance(args, dict):
                args = {}
            name = field(e.get("name", ""))
            thread = (int_or_text(e.get("pid")), int_or_text(e.get("tid")))
            if cat in SCOPE_KINDS:
                self.cpu.append(Cpu(index, "scope", SCOPE_KINDS[cat], thread, start, end, name))
            elif cat in CALL_KINDS:
                cbid = int_arg(args, "cbid")
                corr = int_arg(args, "correlation")
                self.cpu.append(
                    Cpu(index, "call", CALL_KINDS[cat], thread, start, end, name, -1 if cbid is None else cbid, corr)
                )
            elif cat in WORK_KINDS:
                kind = WORK_KINDS[cat]
                corr = int_arg(args, "correlation")
                device = int_arg(args, "device")
                if device is None and isinstance(thread[0], int):
                    device = thread[0]  # Kineto's GPU pid is the device
                self.work.append(
                    Work(
                        index,
                        kind,
                        start,
                        end,
                        0 if corr is None else corr,
                        -1 if device is None else device,
                        int_arg(args, "context") if int_arg(args, "context") is not None else -1,
                        int_arg(args, "stream") if int_arg(args, "stream") is not None else -1,
                        work_attrs(kind, name, args),
                        name,
                    )
                )
            else:
                self.ignored[str(cat)] += 1
        if not self.cpu:
            raise PlanError(
                "%s: no CPU events (cpu_op, user_annotation, Operator, cuda_runtime, cuda_driver, Runtime): "
                "nothing to replay" % path
            )
        self.call_correlations = {c.correlation for c in self.cpu if c.what == "call" and c.correlation}
        self.all_correlations = self.call_correlations | {w.correlation for w in self.work if w.correlation}


# ---------------------------------------------------------------- cutting


class Cut:
    """What --max-steps keeps (everything when steps is None)."""

    def __init__(self, trace, steps):
        self.steps_found = 0
        self.end = None  # CPU events starting before this (ns) are kept; None: all
        if steps is None:
            self.cpu = list(trace.cpu)
            self.work = list(trace.work)
        else:
            marks = sorted(
                (c for c in trace.cpu if c.what == "scope" and STEP_NAME.match(c.name)),
                key=lambda c: (c.start, c.index),
            )
            self.steps_found = len(marks)
            if not marks:
                print(
                    "replay_plan.py: %s: --max-steps: no ProfilerStep#k scopes, nothing cut" % trace.path,
                    file=sys.stderr,
                )
            elif steps <= len(marks):
                self.end = marks[steps - 1].end
            if self.end is None:
                self.cpu = list(trace.cpu)
                self.work = list(trace.work)
            else:
                self.cpu = [c for c in trace.cpu if c.start < self.end]
                calls = {c.correlation for c in self.cpu if c.what == "call" and c.correlation}
                self.work = [w for w in trace.work if self.keeps_work(trace, calls, w)]
        self.correlations = {c.correlation for c in self.cpu if c.what == "call" and c.correlation}
        self.correlations |= {w.correlation for w in self.work if w.correlation}

    def keeps_work(self, trace, kept_calls, w):
        """The work of a kept call; work of no known call when it starts before the end."""
        if w.correlation and w.correlation in trace.call_correlations:
            return w.correlation in kept_calls
        return w.start < self.end

    def keeps_other(self, trace, e):
        """Whether an event of the trace that is no plan event stays in the cut trace."""
        if self.end is None:
            return True
        if e.get("ph") == "M":
            return True
        if e.get("cat") in FLOW_CATEGORIES:
            # A launch -> GPU work flow goes with its correlation.
            fid = int_arg(e, "id")
            if fid is not None and fid in trace.all_correlations:
                return fid in self.correlations
        ts = ns_of(e.get("ts"))
        return ts is None or ts < self.end


# ---------------------------------------------------------------- warping


class Warp:
    """A monotone map of trace ns onto the replayed timeline: every stretch
    between consecutive CPU event boundaries / GPU work boundaries in which
    no GPU work runs, longer than max_gap, becomes max_gap long."""

    def __init__(self, cpu, work, max_gap_ns):
        self.starts = []  # gap starts, sorted
        self.gaps = []  # (a, b, removed_before_a)
        self.removed = 0
        if max_gap_ns is None:
            return
        busy = sorted((w.start, w.end) for w in work if w.end > w.start)
        union = []
        for s, e in busy:
            if union and s <= union[-1][1]:
                if e > union[-1][1]:
                    union[-1][1] = e
            else:
                union.append([s, e])
        points = set()
        for c in cpu:
            points.add(c.start)
            points.add(c.end)
        for w in work:
            points.add(w.start)
            points.add(w.end)
        points = sorted(points)
        removed = 0
        u = 0
        for a, b in zip(points, points[1:]):
            # (a, b) holds no boundary; idle unless a GPU busy interval covers it.
            while u < len(union) and union[u][1] <= a:
                u += 1
            covered = u < len(union) and union[u][0] <= a and union[u][1] >= b
            if covered or b - a <= max_gap_ns:
                continue
            self.starts.append(a)
            self.gaps.append((a, b, removed))
            removed += (b - a) - max_gap_ns
        self.removed = removed
        self.max_gap = max_gap_ns

    def __call__(self, t):
        if not self.gaps:
            return t
        i = bisect.bisect_right(self.starts, t) - 1
        if i < 0:
            return t
        a, b, before = self.gaps[i]
        if t >= b:
            return t - before - ((b - a) - self.max_gap)
        # Inside a shortened gap (only events that are not plan events): squeezed linearly.
        return a - before + (t - a) * self.max_gap // (b - a)


# ---------------------------------------------------------------- the plan


class Plan:
    def __init__(self, trace, cut, warp):
        self.trace = trace
        self.cut = cut
        self.warp = warp
        cpu = cut.cpu
        work = cut.work
        starts = [warp(c.start) for c in cpu] + [warp(w.start) for w in work]
        self.t0 = min(starts)
        self.span_before = max([c.end for c in cpu] + [w.end for w in work]) - min(
            [c.start for c in cpu] + [w.start for w in work]
        )
        self.span_after = max([warp(c.end) for c in cpu] + [warp(w.end) for w in work]) - self.t0
        # Threads, in the order their first event starts.
        first = {}
        for c in cpu:
            k = c.thread
            if k not in first or (c.start, c.index) < first[k]:
                first[k] = (c.start, c.index)
        self.threads = sorted(first, key=lambda k: first[k])
        self.thread_index = {k: n for n, k in enumerate(self.threads)}
        by_thread = collections.defaultdict(list)
        for c in cpu:
            by_thread[c.thread].append(c)
        self.lines_of = {}
        self.clamped = 0
        self.calls_outside = 0
        self.max_depth = 0
        for k in self.threads:
            self.lines_of[k] = self.nest(by_thread[k])

    def nest(self, events):
        """(start, -end) order, parents first on ties (scopes before calls, then trace order);
        a child overrunning its parent is clamped to the parent's end. Returns
        [(event, start_rel, end_rel)] with warped, relative, nested times."""
        warp = self.warp
        items = []
        for c in events:
            s = warp(c.start)
            e = warp(c.end)
            items.append([s, e, c])
        items.sort(key=lambda it: (it[0], -it[1], 0 if it[2].what == "scope" else 1, it[2].index))
        stack = []
        out = []
        for it in items:
            s, e, c = it
            while stack and stack[-1][1] <= s:
                stack.pop()
            if stack and e > stack[-1][1]:
                e = stack[-1][1]
                it[1] = e
                c.clamped = True
                self.clamped += 1
            if c.what == "call" and not any(p[2].what == "scope" for p in stack):
                self.calls_outside += 1
            stack.append(it)
            self.max_depth = max(self.max_depth, len(stack))
            out.append((c, s - self.t0, e - self.t0))
        return out

    def text(self):
        t = self.trace
        out = ["%s\t%d" % (PLAN_MAGIC, PLAN_VERSION), "trace\t%s\t%s" % (field(t.path), t.schema)]
        for d in t.doc.get("deviceProperties") or []:
            if isinstance(d, dict):
                dev = int_arg(d, "id")
                out.append(
                    "device\t%d\t%s"
                    % (-1 if dev is None else dev, json.dumps(plain(d), separators=(",", ":"), ensure_ascii=True))
                )
        for n, k in enumerate(self.threads):
            name = t.thread_names.get(k)
            out.append("thread\t%d\t%s\t%s\t%s" % (n, field(k[0]), field(k[1]), field(name) if name else "-"))
        for n, k in enumerate(self.threads):
            for c, s, e in self.lines_of[k]:
                if c.what == "scope":
                    out.append("scope\t%d\t%d\t%d\t%s\t%s" % (n, s, e, c.kind, c.name))
                else:
                    corr = 0 if c.correlation is None else c.correlation
                    out.append("call\t%d\t%d\t%d\t%s\t%d\t%d\t%s" % (n, s, e, c.kind, c.cbid, corr, c.name))
        work = sorted(self.cut.work, key=lambda w: (self.warp(w.start), self.warp(w.end), w.index))
        for w in work:
            out.append(
                "work\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s"
                % (
                    w.correlation,
                    w.kind,
                    self.warp(w.start) - self.t0,
                    self.warp(w.end) - self.t0,
                    w.device,
                    w.context,
                    w.stream,
                    self.attrs_text(w),
                    w.name,
                )
            )
        return "\n".join(out) + "\n"

    def attrs_text(self, w):
        parts = []
        for k, v in w.attrs:
            if k == "queued":
                v = self.warp(v) - self.t0
            parts.append("%s=%s" % (k, v))
        return ";".join(parts) if parts else "-"

    def summary(self):
        t = self.trace
        cut = self.cut
        scopes = collections.Counter(c.kind for c in cut.cpu if c.what == "scope")
        calls = collections.Counter(c.kind for c in cut.cpu if c.what == "call")
        work = collections.Counter(w.kind for w in cut.work)
        no_call = [w for w in cut.work if not w.correlation or w.correlation not in t.call_correlations]
        launches = collections.Counter(w.correlation for w in cut.work if w.correlation)
        lines = [
            "trace %s (schema %s)" % (t.path, t.schema),
            "threads %d" % len(self.threads),
        ]
        for n, k in enumerate(self.threads):
            evs = [c for c, _, _ in self.lines_of[k]]
            lines.append(
                "  thread %d: pid %s tid %s %r: %d scopes, %d calls"
                % (
                    n,
                    k[0],
                    k[1],
                    t.thread_names.get(k, "-"),
                    sum(1 for c in evs if c.what == "scope"),
                    sum(1 for c in evs if c.what == "call"),
                )
            )
        lines += [
            "scopes %d (cpu_op %d, user_annotation %d)"
            % (sum(scopes.values()), scopes["cpu_op"], scopes["user_annotation"]),
            "calls %d (runtime %d, driver %d)" % (sum(calls.values()), calls["runtime"], calls["driver"]),
            "work %d (%s)" % (sum(work.values()), ", ".join("%s %d" % (k, work[k]) for k in WORK_ORDER)),
            "devices %d" % sum(1 for d in t.doc.get("deviceProperties") or [] if isinstance(d, dict)),
            "span before warp %.3f ms, after %.3f ms (%d gaps shortened)"
            % (self.span_before / 1e6, self.span_after / 1e6, len(self.warp.gaps)),
            "nesting: %d children clamped to their parent's end, max depth %d" % (self.clamped, self.max_depth),
            "calls outside any scope %d" % self.calls_outside,
            "work of no known call %d (correlation 0: %d)"
            % (len(no_call), sum(1 for w in no_call if not w.correlation)),
            "correlations with more than one piece of work %d" % sum(1 for n in launches.values() if n > 1),
        ]
        if cut.end is not None:
            lines.append("cut after step %d of %d found" % (self.cut_steps, cut.steps_found))
        elif self.cut_steps is not None:
            lines.append(
                "not cut: %d ProfilerStep#k scopes, fewer than the %d asked" % (cut.steps_found, self.cut_steps)
            )
        if t.ignored:
            lines.append("not replayed: %s" % ", ".join("%s %d" % kv for kv in sorted(t.ignored.items())))
        return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the warped trace


def us_value(ns, was_int):
    """ns -> the trace's microseconds: an int where it was one and stays whole, else a float."""
    if was_int and ns % 1000 == 0:
        return ns // 1000
    return float(decimal.Decimal(ns) / 1000)


def warped_trace(trace, cut, warp):
    """The trace, cut and warped as the plan is; every other field as it was."""
    events = []
    kept_plan = {c.index for c in cut.cpu} | {w.index for w in cut.work}
    plan_cats = set(SCOPE_KINDS) | set(CALL_KINDS) | set(WORK_KINDS)
    for index, e in enumerate(trace.doc["traceEvents"]):
        if not isinstance(e, dict):
            events.append(plain(e))
            continue
        is_plan = e.get("ph") == "X" and e.get("cat") in plan_cats and ns_of(e.get("ts")) is not None
        if is_plan and index not in kept_plan:
            continue
        if not is_plan and not cut.keeps_other(trace, e):
            continue
        out = plain(e)
        ts = ns_of(e.get("ts"))
        if ts is not None:
            new_ts = warp(ts)
            out["ts"] = us_value(new_ts, isinstance(e.get("ts"), int))
            dur = ns_of(e.get("dur"))
            if dur is not None:
                out["dur"] = us_value(warp(ts + max(0, dur)) - new_ts, isinstance(e.get("dur"), int))
        args = e.get("args")
        if isinstance(args, dict):
            q = args.get("queued")
            if isinstance(q, (int, decimal.Decimal)) and not isinstance(q, bool) and q > 0:
                out["args"]["queued"] = warp(int(q))
        events.append(out)
    doc = {k: plain(v) for k, v in trace.doc.items() if k != "traceEvents"}
    doc["traceEvents"] = events
    return doc


def write_json(path, doc):
    data = json.dumps(doc, ensure_ascii=False).encode("utf-8", errors="surrogatepass")
    if path.endswith(".gz"):
        with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
            f.write(data)
    else:
        with open(path, "wb") as f:
            f.write(data)


# ---------------------------------------------------------------- command line


def build(trace_path, max_steps=None, max_idle_ms=None):
    """Reads a trace; returns (trace, cut, warp, plan). Raises PlanError on bad input."""
    trace = Trace(trace_path, read_trace(trace_path))
    cut = Cut(trace, max_steps)
    if not cut.cpu:
        raise PlanError("%s: nothing kept before the end of step %d" % (trace_path, max_steps))
    gap = None if max_idle_ms is None else int(round(max_idle_ms * 1000)) * 1000
    warp = Warp(cut.cpu, cut.work, gap)
    plan = Plan(trace, cut, warp)
    plan.cut_steps = max_steps
    return trace, cut, warp, plan


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="replay_plan.py",
        description="Kineto trace (.json/.json.gz) -> the GPU replay's plan file (issue 54).",
    )
    p.add_argument("trace", help="a Kineto trace written by torch.profiler (.json or .json.gz)")
    p.add_argument("-o", "--output", required=True, metavar="PLAN", help="the plan file to write")
    p.add_argument("--max-steps", type=int, metavar="N", help="keep the run up to the end of the N-th ProfilerStep#k")
    p.add_argument("--max-idle-ms", type=float, metavar="G", help="shorten every idle stretch longer than G ms to G ms")
    p.add_argument(
        "--warped-trace", metavar="OUT", help="also write the trace, cut and warped as the plan (.json[.gz])"
    )
    p.add_argument("--summary", action="store_true", help="print counts of what the plan holds")
    args = p.parse_args(argv)
    if args.max_steps is not None and args.max_steps < 1:
        p.error("--max-steps must be at least 1")
    if args.max_idle_ms is not None and not args.max_idle_ms >= 0:
        p.error("--max-idle-ms must be 0 or more")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        trace, cut, warp, plan = build(args.trace, args.max_steps, args.max_idle_ms)
    except PlanError as e:
        print("replay_plan.py: %s" % e, file=sys.stderr)
        return 2
    text = plan.text()
    with open(args.output, "w", encoding="utf-8", errors="surrogatepass", newline="\n") as f:
        f.write(text)
    if args.warped_trace:
        write_json(args.warped_trace, warped_trace(trace, cut, warp))
    if args.summary:
        sys.stdout.write(plan.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
