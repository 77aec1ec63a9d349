"""What torch.profiler itself says about a recorded GPU run, computed from its
Kineto trace alone: the independent reference that issue 54's replay is
checked against (`ptprof report --format json` of the replay must equal it).

Pure Python (stdlib only, 3.8+), sharing nothing with ptprof's C++. From one
Kineto trace (`.json` or `.json.gz`; the current schema, categories
`cpu_op`, `user_annotation`, `cuda_runtime`, `cuda_driver`, `kernel`,
`gpu_memcpy`, `gpu_memset`, `cuda_sync`, `gpu_user_annotation`, and the 2021
schema, `Operator`, `Runtime`, `Kernel`, `Memcpy`, `Memset`, lower-case
`external id`, string tids such as "stream 7") it computes:

1. per operator name (key_averages' key): calls, Self CUDA and CUDA total;
2. per kernel name: instances and total time;
3. per copy and set name (Kineto's, "Memcpy HtoD (Pageable -> Device)",
   "Memset (Device)"; and per kind, "Memcpy HtoD", "Memset"): count and bytes;
4. GPU busy time per (device, stream) and per device: the union of kernels,
   copies and sets;
5. kernel launch latency (kernel start - launch call start) percentiles;
6. how many kernels (copies, sets, syncs) the trace joins to an op.

The rules, and why each is torch's (torch 1.13's and 2.x's Python is
`torch/autograd/profiler.py` `_parse_kineto_results` and
`torch/autograd/profiler_util.py`; Kineto is `libkineto/src`):

- **Which op a GPU activity belongs to.** torch attaches a device event to the
  CPU event whose id equals the device event's `linked_correlation_id()`
  (`_parse_kineto_results`: `device_corr_map`, `fe.append_kernel`). That id
  is the correlation id of Kineto's `linkedActivity()`, which Kineto looks up
  through CUPTI's external correlation records of kind CUSTOM0
  (`CuptiActivityProfiler::handleGpuActivity` -> `linkedActivity(
  correlationId, cpuCorrelationMap_)`). torch pushes a CUSTOM0 id when an op
  starts and pops it when it ends, *except for user scopes*
  (`torch/csrc/profiler/collection.cpp` `ThreadLocalSubqueue::begin_op`:
  `USER_SCOPE` -> `pushUserCorrelationId`, CUSTOM1, the same in 1.13 and
  2.x), so the activity belongs to the innermost **cpu_op** (not
  `user_annotation`, not `ProfilerStep#N`, which is a user scope) open on the
  launching thread when the runtime/driver call was made. Work launched
  inside user scopes only is joined to no op.
  This script finds that op as HTA does, from the trace: the activity's
  `correlation` gives its launch (`cuda_runtime`/`cuda_driver` event of the
  same `correlation`; the `ac2g` flows say the same), and the launch's
  innermost enclosing cpu_op on its pid/tid by time (torch's nesting, below).
  The kernel's `External id` should name the same op, but in five of the
  eight stored traces (torch 2.0/2.1, HTA's samples) the cpu_ops' `External
  id`s are numbered apart from the GPU side's, so only the correlation join
  is usable; `external_id` in the result counts where the two agree.
  In the 2021 schema (torch 1.8/1.9) user scopes and ProfilerStep#N are
  `Operator`s and pushed the ordinary id: every Operator can launch (the
  trace's `external id`s agree with that for all 8,772 kernels).
  `launch_scopes="any"` makes user_annotation scopes eligible too (what an
  agent that pushes one id for every scope, as ptprof's does, computes).
- **Nesting** (`EventList._populate_cpu_children`): per thread, the CPU
  events (ops, user annotations, runtime and driver calls, which are CPU
  FunctionEvents and children like any other) sorted by (start, -end); the
  parent is the innermost earlier event with start < parent end and end <=
  parent end; partial overlaps do not nest. Names torch filters out first
  (`_filter_name`: `aten::is_leaf`, `aten::output_nr`, `aten::_version`,
  `profiler::_record_function_*`, `[memory]`, `[OutOfMemory]`) make no
  nodes. `ProfilerStep#N` is renamed `ProfilerStep*` before anything else
  (`_rewrite_name(with_wildcard=True)`), so key_averages has one row
  `ProfilerStep*`; `reference(fold_steps=False)` keeps the numbered names
  and `fold_profiler_steps()` folds such a mapping afterwards.
- **Duplicate folding** (`EventList._remove_dup_nodes`): a child with its
  parent's name that is the parent's only child disappears; its children
  become the parent's and its GPU activities *replace* the parent's
  (`cpu_parent.kernels = self[idx].kernels`). Calls count after folding.
- **CUDA total** (`FunctionEvent.device_time_total`, 1.13's
  `cuda_time_total`) = the op's own activities' durations + its children's
  CUDA totals; **Self CUDA** (`self_device_time_total`) = CUDA total - the
  children's CUDA totals, i.e. its own activities. key_averages sums both
  over the events of a key (`FunctionEventAvg.add`).
- **cuda_sync counts.** torch maps Kineto's CUDA_SYNC activity to
  `DeviceType.CUDA` (`deviceTypeFromActivity` in kineto_shim.cpp) and Kineto
  links it to the op like a kernel (`handleCudaSyncActivity`:
  `linkedActivity(correlationId, cpuCorrelationMap_)`), so
  `_parse_kineto_results` appends it to the op's kernels: a trace recorded
  with `enable_cuda_sync_events=True` has the syncs' time in its ops' Self
  CUDA. (Read from the sources; not yet seen on a GPU.) Each op also carries
  the sync part separately (`self_sync_us`, `sync_total_us`) and
  `reference(sync_in_cuda_time=False)` leaves it out.
- **gpu_user_annotation does not count.** Kineto builds it as a span with no
  linked activity (`GenericActivityProfiler::createUserGpuSpan`), so it is
  appended to no op; torch 2.x shows it as a row of its own (device CUDA,
  `is_user_annotation`, excluded from the Self CUDA total in `_build_table`).
  Listed under `gpu_user_annotations`, not in any op.
- **Kernels, copies, sets** are rows of their own in key_averages (device
  CUDA, CUDA time = duration); here under `kernels` and `memory_ops`.
  CUDA runtime/driver calls are rows with CPU time only: `runtime_calls`.
- **Busy time**: the union of the kernel, copy and set intervals of a stream
  (and of all streams of a device), as HTA's temporal breakdown and ptprof's
  utilisation count it; syncs and gpu_user_annotation are not GPU work.
- **Launch latency**: for each kernel whose launch is in the trace, kernel
  start - launch start; percentiles by nearest rank (the smallest value with
  at least p% of the values at or below it, rank = ceil(p/100 * n)), the
  definition ptprof's report uses.

Times are kept in integer nanoseconds (the JSON's microseconds read
exactly, as decimals) and given in microseconds.

    python3 tests/replay/kineto_reference.py TRACE [--json]
    python3 tests/replay/kineto_reference.py TRACE --compare REPORT.json
"""

from __future__ import annotations

import argparse
import collections
import decimal
import gzip
import json
import math
import os
import sys
import time

# Category names of both schemas -> one vocabulary. The 2021 schema has no
# user_annotation: every RecordFunction scope was an Operator, and pushed the
# ordinary correlation id, so it maps to cpu_op.
CATEGORIES = {
    "cpu_op": "cpu_op",
    "user_annotation": "user_annotation",
    "python_function": "python_function",
    "cuda_runtime": "cuda_runtime",
    "cuda_driver": "cuda_driver",
    "kernel": "kernel",
    "gpu_memcpy": "gpu_memcpy",
    "gpu_memset": "gpu_memset",
    "cuda_sync": "cuda_sync",
    "gpu_user_annotation": "gpu_user_annotation",
    "Operator": "cpu_op",
    "Runtime": "cuda_runtime",
    "Driver": "cuda_driver",
    "Kernel": "kernel",
    "Memcpy": "gpu_memcpy",
    "Memset": "gpu_memset",
}
LEGACY_CATEGORIES = {"Operator", "Runtime", "Kernel", "Memcpy", "Memset"}

CPU_NODES = {"cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver"}
ROW_OPS = {"cpu_op", "user_annotation"}
LAUNCHES = {"cuda_runtime", "cuda_driver"}
GPU_WORK = {"kernel", "gpu_memcpy", "gpu_memset"}  # busy time; and what every tool counts as CUDA time
LINKED_GPU = GPU_WORK | {"cuda_sync"}  # joined to a launch by correlation, appended to its op

# torch's _filter_name (profiler_util.py): never FunctionEvents.
FILTERED_NAMES = {
    "[memory]",
    "[OutOfMemory]",
    "profiler::_record_function_enter",
    "profiler::_record_function_enter_new",
    "profiler::_record_function_exit",
    "aten::is_leaf",
    "aten::output_nr",
    "aten::_version",
}
STEP_PREFIX = "ProfilerStep#"
STEP_KEY = "ProfilerStep*"

# The tolerances.
OP_TIME_ABS_US = 1.0
OP_TIME_REL = 0.001
KERNEL_TIME_REL = 0.001
BUSY_REL = 0.005
LATENCY_ABS_US = 1.0


def torch_name(name):
    """_rewrite_name(with_wildcard=True): ProfilerStep#N -> ProfilerStep*."""
    return STEP_KEY if name.startswith(STEP_PREFIX) else name


def memory_kind(name):
    """'Memcpy HtoD (Pageable -> Device)' -> 'Memcpy HtoD', 'Memset (Device)' -> 'Memset':
    the kind nsys names a copy or set by (the reference's memory_kinds; ptprof's
    report names them as Kineto does, and is compared by the full names)."""
    i = name.find(" (")
    return name[:i] if i >= 0 else name


def _ns(value):
    """A trace time in microseconds (int, or a decimal read exactly) -> integer ns."""
    if value is None:
        return None
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, decimal.Decimal):
        return int((value * 1000).to_integral_value(rounding=decimal.ROUND_HALF_EVEN))
    return int(round(float(value) * 1000))


def _int_or_text(value):
    """pid/tid as the trace gives them: ints, digit strings ('25738'), or labels ('stream 7')."""
    if isinstance(value, str):
        s = value.strip()
        if s.lstrip("-").isdigit():
            return int(s)
        return s
    if isinstance(value, decimal.Decimal):
        return int(value)
    return value


def _plain(value):
    """Decimals from the reader -> int/float, for args handed on."""
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class Event:
    """One complete ('X') event of the trace, in the one vocabulary."""

    __slots__ = (
        "index",
        "cat",
        "raw_cat",
        "name",
        "pid",
        "tid",
        "start",
        "end",
        "correlation",
        "external_id",
        "device",
        "stream",
        "nbytes",
        # nesting (CPU nodes) and attribution, filled by reference()
        "parent",
        "children",
        "own",
        "owner",
        "launch",
    )

    def __init__(self, index, cat, raw_cat, name, pid, tid, start, end, args):
        self.index = index
        self.cat = cat
        self.raw_cat = raw_cat
        self.name = name
        self.pid = pid
        self.tid = tid
        self.start = start
        self.end = end
        a = args or {}
        self.correlation = _plain(a.get("correlation"))
        ext = a.get("External id", a.get("external id"))
        self.external_id = _plain(ext)
        self.device = _plain(a.get("device"))
        self.stream = _plain(a.get("stream"))
        self.nbytes = _plain(a.get("bytes"))
        self.parent = None
        self.children = []
        self.own = []  # GPU activities appended to this op (torch's FunctionEvent.kernels)
        self.owner = None
        self.launch = None

    def __repr__(self):
        return "Event(%s %r %s/%s %d..%d)" % (self.cat, self.name, self.pid, self.tid, self.start, self.end)


def _read_json(path):
    with open(path, "rb") as f:
        head = f.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as f:
        # Decimals: a float64 keeps a 1.7e15 us timestamp to 0.25 us only.
        return json.load(f, parse_float=decimal.Decimal)


def load(path):
    """Reads one Kineto trace. Returns a dict: path, schema ('kineto' or
    'kineto-2021'), metadata (the header's fields: schemaVersion,
    deviceProperties, distributedInfo, ...), events (Event objects of the
    categories above, complete events only, in trace order), read (all
    entries of traceEvents) and categories (entries per raw category)."""
    doc = _read_json(path)
    if isinstance(doc, list):  # a bare event array is valid Chrome JSON
        doc = {"traceEvents": doc}
    raw = doc.get("traceEvents") or []
    metadata = {k: _plain(v) if not isinstance(v, (dict, list)) else v for k, v in doc.items() if k != "traceEvents"}
    categories = collections.Counter()
    events = []
    legacy = False
    for e in raw:
        raw_cat = e.get("cat")
        categories[raw_cat if raw_cat is not None else "(none)"] += 1
        if e.get("ph") != "X":
            continue
        cat = CATEGORIES.get(raw_cat)
        if cat is None:
            continue
        legacy = legacy or raw_cat in LEGACY_CATEGORIES
        start = _ns(e.get("ts"))
        dur = _ns(e.get("dur")) or 0
        if start is None:
            continue
        events.append(
            Event(
                len(events),
                cat,
                raw_cat,
                str(e.get("name", "")),
                _int_or_text(e.get("pid")),
                _int_or_text(e.get("tid")),
                start,
                start + max(0, dur),
                e.get("args"),
            )
        )
    return {
        "path": path,
        "schema": "kineto-2021" if legacy else "kineto",
        "metadata": metadata,
        "events": events,
        "read": len(raw),
        "categories": dict(categories),
    }


def _nest(nodes):
    """torch's _populate_cpu_children over one thread's CPU events. Returns how
    many events partially overlapped an open event (and so did not nest in it)."""
    nodes.sort(key=lambda n: (n.start, -n.end, n.index))
    stack = []
    partial = 0
    for n in nodes:
        while stack:
            p = stack[-1]
            if n.start >= p.end or n.end > p.end:
                if n.start < p.end and n.end > p.end:
                    partial += 1
                stack.pop()
            else:
                n.parent = p
                p.children.append(n)
                break
        stack.append(n)
    return partial


def _remove_dup_nodes(nodes):
    """torch's EventList._remove_dup_nodes, pass for pass. Returns the nodes kept,
    the folds made and the GPU time of parents whose own activities the fold
    replaced by the child's (torch's 'lift kernels up' drops them)."""
    folds = 0
    dropped_ns = 0
    while True:
        kept = []
        removed = False
        for n in nodes:
            p = n.parent
            if p is not None and torch_name(p.name) == torch_name(n.name) and len(p.children) == 1:
                p.children = n.children
                dropped_ns += sum(g.end - g.start for g in p.own)
                p.own = n.own
                for c in n.children:
                    c.parent = p
                removed = True
                folds += 1
            else:
                kept.append(n)
        nodes = kept
        if not removed:
            return nodes, folds, dropped_ns


def nearest_rank(sorted_values, p):
    """The smallest value with at least p% of the values at or below it."""
    if not sorted_values:
        return 0
    rank = int(math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[min(max(rank, 1), len(sorted_values)) - 1]


def _union_ns(intervals):
    total = 0
    cur_s = cur_e = None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        elif e > cur_e:
            cur_e = e
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def _us(ns):
    return ns / 1000.0


def reference(path, launch_scopes="cpu_op", sync_in_cuda_time=True, fold_steps=True, loaded=None):
    """The reference for one trace, as a JSON-serializable dict (see the module
    docstring for the rules). launch_scopes: "cpu_op" (torch's) or "any" (user
    annotations launch too); sync_in_cuda_time: cuda_sync durations in the ops'
    CUDA time (torch's code does); fold_steps: ProfilerStep#N as ProfilerStep*
    (torch's key). loaded: the result of load(path), to skip reading again."""
    if launch_scopes not in ("cpu_op", "any"):
        raise ValueError("launch_scopes must be 'cpu_op' or 'any'")
    t0 = time.monotonic()
    data = loaded if loaded is not None else load(path)
    t1 = time.monotonic()
    events = data["events"]
    for e in events:  # a loaded trace can be given again: start from no nesting
        e.parent, e.children, e.own, e.owner, e.launch = None, [], [], None, None
    eligible = {"cpu_op"} if launch_scopes == "cpu_op" else {"cpu_op", "user_annotation"}

    # Nesting, per thread.
    threads = collections.defaultdict(list)
    for e in events:
        if e.cat in CPU_NODES and e.name not in FILTERED_NAMES:
            threads[(e.pid, e.tid)].append(e)
    partial = 0
    for nodes in threads.values():
        partial += _nest(nodes)

    # Launch of each GPU activity, and the op it belongs to.
    launches = {}
    duplicate_correlations = 0
    for e in events:
        if e.cat in LAUNCHES and e.correlation is not None:
            if e.correlation in launches:
                duplicate_correlations += 1
            else:
                launches[e.correlation] = e
    by_ext = {}
    for e in events:
        if e.cat in ROW_OPS and e.external_id is not None:
            by_ext.setdefault(e.external_id, e)

    matching = {c: collections.Counter() for c in sorted(LINKED_GPU)}
    launch_apis = {c: collections.Counter() for c in sorted(LINKED_GPU)}
    ext_check = collections.Counter()
    ext_examples = []
    latencies = []
    without_launch = 0
    for g in events:
        if g.cat not in LINKED_GPU:
            continue
        m = matching[g.cat]
        launch = launches.get(g.correlation) if g.correlation is not None else None
        g.launch = launch
        if launch is None:
            m["no_launch"] += 1
        else:
            launch_apis[g.cat][launch.name] += 1
            a = launch.parent
            while a is not None and a.cat not in eligible:
                a = a.parent
            g.owner = a
            if a is None:
                m["launch_outside_ops"] += 1
            else:
                m["matched"] += 1
                a.own.append(g)
        if g.cat == "kernel":
            if launch is None:
                without_launch += 1
            else:
                latencies.append(g.start - launch.start)
        # What the trace's own External id says, where it can say anything.
        if g.cat in GPU_WORK and g.external_id is not None:
            named = by_ext.get(g.external_id)
            if launch is not None and launch.external_id is not None and launch.external_id != g.external_id:
                ext_check["launch_external_id_differs"] += 1
            if named is None:
                ext_check["names_no_op"] += 1
            elif g.owner is None:
                ext_check["names_op_correlation_joins_none"] += 1
            elif named is g.owner:
                ext_check["agree"] += 1
            else:
                ext_check["disagree"] += 1
                if len(ext_examples) < 3:
                    ext_examples.append(
                        "%s %r: External id %s names %r, its launch lies in %r"
                        % (g.cat, g.name[:60], g.external_id, named.name[:60], g.owner.name[:60])
                    )
    for m in matching.values():
        m["unmatched"] = m["no_launch"] + m["launch_outside_ops"]

    # Duplicate folding over torch's event order, then totals bottom-up.
    all_nodes = [n for nodes in threads.values() for n in nodes]
    all_nodes.sort(key=lambda n: (n.start, -n.end, n.index))
    all_nodes, folds, dropped_ns = _remove_dup_nodes(all_nodes)
    total_ns = {}
    sync_total_ns = {}
    for n in reversed(all_nodes):
        own = sum(g.end - g.start for g in n.own)
        own_sync = sum(g.end - g.start for g in n.own if g.cat == "cuda_sync")
        total_ns[id(n)] = own + sum(total_ns[id(c)] for c in n.children)
        sync_total_ns[id(n)] = own_sync + sum(sync_total_ns[id(c)] for c in n.children)

    key_of = torch_name if fold_steps else (lambda s: s)
    ops = {}
    op_kinds = collections.defaultdict(set)
    runtime_calls = collections.Counter()
    for n in all_nodes:
        if n.cat in LAUNCHES:
            runtime_calls[n.name] += 1
            continue
        if n.cat not in ROW_OPS:
            continue
        key = key_of(n.name)
        row = ops.get(key)
        if row is None:
            row = ops[key] = {"count": 0, "self_ns": 0, "total_ns": 0, "self_sync_ns": 0, "sync_total_ns": 0}
        own_sync = sum(g.end - g.start for g in n.own if g.cat == "cuda_sync")
        row["count"] += 1
        row["self_ns"] += sum(g.end - g.start for g in n.own) - (0 if sync_in_cuda_time else own_sync)
        row["total_ns"] += total_ns[id(n)] - (0 if sync_in_cuda_time else sync_total_ns[id(n)])
        row["self_sync_ns"] += own_sync
        row["sync_total_ns"] += sync_total_ns[id(n)]
        op_kinds[key].add(n.raw_cat)

    kernels = collections.OrderedDict()
    memory_ops = collections.OrderedDict()
    syncs = collections.OrderedDict()
    gpu_annotations = collections.OrderedDict()
    streams = collections.defaultdict(list)
    for g in events:
        dur = g.end - g.start
        if g.cat == "kernel":
            k = kernels.setdefault(g.name, {"count": 0, "total_ns": 0})
        elif g.cat in ("gpu_memcpy", "gpu_memset"):
            k = memory_ops.setdefault(g.name, {"count": 0, "total_ns": 0, "bytes": 0})
            k["bytes"] += int(g.nbytes or 0)
        elif g.cat == "cuda_sync":
            k = syncs.setdefault(g.name, {"count": 0, "total_ns": 0, "matched": 0})
            k["matched"] += 1 if g.owner is not None else 0
        elif g.cat == "gpu_user_annotation":
            k = gpu_annotations.setdefault(g.name, {"count": 0, "total_ns": 0})
        else:
            continue
        k["count"] += 1
        k["total_ns"] += dur
        if g.cat in GPU_WORK:
            device = g.device if g.device is not None else g.pid
            stream = g.stream if g.stream is not None else g.tid
            streams[(device, stream)].append((g.start, g.end))

    # Busy time, and work that overlaps earlier work on its own stream.
    busy_streams = []
    overlapping = 0
    by_device = collections.defaultdict(list)
    for (device, stream), iv in sorted(streams.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
        iv.sort()
        latest = None
        for s, e in iv:
            if latest is not None and s < latest:
                overlapping += 1
            latest = e if latest is None else max(latest, e)
        busy_streams.append({"device": device, "stream": stream, "busy_us": _us(_union_ns(iv)), "work": len(iv)})
        by_device[device].extend(iv)
    busy_devices = [
        {"device": d, "busy_us": _us(_union_ns(iv)), "work": len(iv)}
        for d, iv in sorted(by_device.items(), key=lambda kv: str(kv[0]))
    ]

    latencies.sort()
    n_lat = len(latencies)
    launch_latency = {
        "definition": "kernel start - start of the launch call with its correlation; nearest-rank percentiles",
        "count": n_lat,
        "without_launch": without_launch,
        "negative": sum(1 for v in latencies if v < 0),
        "min_us": _us(latencies[0]) if n_lat else 0.0,
        "avg_us": _us(sum(latencies) / n_lat) if n_lat else 0.0,
        "p50_us": _us(nearest_rank(latencies, 50)),
        "p90_us": _us(nearest_rank(latencies, 90)),
        "p99_us": _us(nearest_rank(latencies, 99)),
        "max_us": _us(latencies[-1]) if n_lat else 0.0,
    }

    memory_kinds = collections.OrderedDict()
    for name, v in memory_ops.items():
        k = memory_kinds.setdefault(memory_kind(name), {"count": 0, "bytes": 0, "total_ns": 0})
        for f in ("count", "bytes", "total_ns"):
            k[f] += v[f]

    def timed(d):
        return {
            name: dict({f: v for f, v in row.items() if not f.endswith("_ns")}, total_us=_us(row["total_ns"]))
            for name, row in d.items()
        }

    op_rows = collections.OrderedDict()
    for name in sorted(ops, key=lambda k: (-ops[k]["total_ns"], k)):
        row = ops[name]
        op_rows[name] = {
            "count": row["count"],
            "self_cuda_us": _us(row["self_ns"]),
            "cuda_total_us": _us(row["total_ns"]),
            "self_sync_us": _us(row["self_sync_ns"]),
            "sync_total_us": _us(row["sync_total_ns"]),
            "categories": sorted(op_kinds[name]),
        }
    t2 = time.monotonic()
    return {
        "trace": os.path.basename(path),
        "schema": data["schema"],
        "rules": {
            "launch_scopes": sorted(eligible),
            "sync_in_cuda_time": bool(sync_in_cuda_time),
            "fold_steps": bool(fold_steps),
            "percentiles": "nearest rank",
        },
        "events": {
            "read": data["read"],
            "used": len(events),
            "by_category": data["categories"],
        },
        "ops": op_rows,
        "runtime_calls": dict(sorted(runtime_calls.items())),
        "kernels": timed(kernels),
        "memory_ops": timed(memory_ops),
        "memory_kinds": timed(memory_kinds),
        "syncs": timed(syncs),
        "gpu_user_annotations": timed(gpu_annotations),
        "busy": {"streams": busy_streams, "devices": busy_devices},
        "launch_latency": launch_latency,
        "matching": {
            c: {k: m[k] for k in ("matched", "unmatched", "no_launch", "launch_outside_ops")}
            for c, m in matching.items()
        },
        "launch_apis": {c: dict(sorted(v.items())) for c, v in launch_apis.items()},
        "external_id": dict(ext_check, examples=ext_examples),
        "anomalies": {
            "overlapping_work_on_a_stream": overlapping,
            "negative_launch_latencies": launch_latency["negative"],
            "partial_overlaps_not_nested": partial,
            "duplicate_launch_correlations": duplicate_correlations,
            "dup_nodes_folded": folds,
            "dup_fold_dropped_gpu_us": _us(dropped_ns),
            "names_both_cpu_op_and_user_annotation": sorted(k for k, v in op_kinds.items() if len(v) > 1),
            "op_names_that_are_kernel_names": sorted(k for k in ops if k in kernels),
            "work_launched_by_cudaGraphLaunch": sum(c["cudaGraphLaunch"] for c in launch_apis.values()),
        },
        "seconds": {"load": round(t1 - t0, 3), "compute": round(t2 - t1, 3)},
    }


def fold_profiler_steps(ops):
    """A mapping of ops keyed by trace names (reference(fold_steps=False)) with
    the ProfilerStep#N rows merged into one ProfilerStep* row, as torch keys them."""
    out = collections.OrderedDict()
    for name, row in ops.items():
        key = torch_name(name)
        if key not in out:
            out[key] = dict(row)
            continue
        acc = out[key]
        for f, v in row.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                acc[f] = acc.get(f, 0) + v
            elif isinstance(v, list):
                acc[f] = sorted(set(acc.get(f, [])) | set(v))
    return out


# --- comparison with ptprof's report --------------------------------------


def _within(actual, expected, abs_tol=0.0, rel_tol=0.0):
    return abs(actual - expected) <= max(abs_tol, rel_tol * abs(expected))


def compare(ref, report):
    """Mismatches between a reference (reference()) and `ptprof report --format
    json` of the replay, with issue 54's tolerances. Figures the report does
    not have are mismatches too ("ptprof report has no ..."). [] = equal."""
    out = []
    ops = ref["ops"] if ref["rules"].get("fold_steps", True) else fold_profiler_steps(ref["ops"])
    kernels = ref["kernels"]
    runtime = ref.get("runtime_calls", {})

    # The operator table. ptprof keys its rows by name alone: a kernel or a
    # runtime call named like an op shares the op's row (torch keeps them
    # apart by device type), so the expected row adds them.
    rows = collections.OrderedDict()
    for r in report.get("rows") or []:
        acc = rows.setdefault(r.get("name"), {"calls": 0, "self_cuda_us": None, "cuda_total_us": None})
        acc["calls"] += int(r.get("calls") or 0)
        for f in ("self_cuda_us", "cuda_total_us"):
            if f in r and r[f] is not None:
                acc[f] = (acc[f] or 0.0) + float(r[f])
    has_cuda_columns = any(c.get("key") == "self_cuda_us" for c in report.get("columns") or []) or any(
        r["self_cuda_us"] is not None for r in rows.values()
    )
    if ops and not has_cuda_columns:
        out.append("ptprof report has no self_cuda_us / cuda_total_us columns")
    for name, op in ops.items():
        exp_calls = op["count"] + kernels.get(name, {}).get("count", 0) + runtime.get(name, 0)
        gpu_as_row = kernels.get(name, {}).get("total_us", 0.0)
        exp_self = op["self_cuda_us"] + gpu_as_row
        exp_total = op["cuda_total_us"] + gpu_as_row
        label = "op %r" % name
        if exp_calls != op["count"]:
            label += " (its row also holds the kernels/runtime calls of that name)"
        r = rows.get(name)
        if r is None:
            hint = " (ptprof leaves a script's own torch.profiler steps out of its table)" if name == STEP_KEY else ""
            out.append("%s: no row in ptprof's report%s" % (label, hint))
            continue
        if r["calls"] != exp_calls:
            out.append("%s: calls %d in ptprof, %d in the trace" % (label, r["calls"], exp_calls))
        if not has_cuda_columns:
            continue
        for f, exp in (("self_cuda_us", exp_self), ("cuda_total_us", exp_total)):
            got = r[f] or 0.0
            if not _within(got, exp, OP_TIME_ABS_US, OP_TIME_REL):
                out.append("%s: %s %.3f in ptprof, %.3f in the trace" % (label, f, got, exp))
    known = set(ops) | set(kernels) | set(runtime) | set(ref["memory_ops"])
    known |= set(ref.get("syncs", {})) | set(ref.get("gpu_user_annotations", {}))
    for name, r in rows.items():
        if name not in known:
            out.append("ptprof row %r (%d calls) is not in the trace" % (name, r["calls"]))
    for name, n in runtime.items():
        if name in ops or name in kernels:
            continue  # checked with the op's row
        r = rows.get(name)
        got = r["calls"] if r else 0
        if got != n:
            out.append("runtime call row %r: calls %d in ptprof, %d in the trace" % (name, got, n))

    gpu = report.get("gpu")
    if not isinstance(gpu, dict):
        if kernels or ref["memory_ops"]:
            out.append("ptprof report has no gpu section")
        return out

    # Kernels: ptprof's rows are per (name, grid, block); sum them per name.
    got_k = collections.defaultdict(lambda: [0, 0])
    for k in gpu.get("kernels") or []:
        t = k.get("time_ns") or {}
        got_k[k.get("name")][0] += int(t.get("count") or 0)
        got_k[k.get("name")][1] += int(t.get("total") or 0)
    for name, k in kernels.items():
        if name not in got_k:
            out.append("kernel %r: not in ptprof's report (%d in the trace)" % (name[:120], k["count"]))
            continue
        count, total_ns = got_k[name]
        if count != k["count"]:
            out.append("kernel %r: instances %d in ptprof, %d in the trace" % (name[:120], count, k["count"]))
        exp_ns = k["total_us"] * 1000.0
        if not _within(total_ns, exp_ns, 1.0, KERNEL_TIME_REL):
            out.append(
                "kernel %r: total %.3f us in ptprof, %.3f us in the trace" % (name[:120], total_ns / 1e3, k["total_us"])
            )
    for name in got_k:
        if name not in kernels:
            out.append("kernel %r: in ptprof's report, not in the trace" % (name[:120],))

    # Copies and sets, by Kineto's names ("Memcpy HtoD (Pageable -> Device)"):
    # ptprof names them as Kineto does, memory kinds and all.
    got_m = collections.defaultdict(lambda: [0, 0])
    for m in gpu.get("memory_ops") or []:
        got_m[m.get("name")][0] += int((m.get("time_ns") or {}).get("count") or 0)
        got_m[m.get("name")][1] += int((m.get("bytes") or {}).get("total") or 0)
    want_m = ref["memory_ops"]
    for name, m in want_m.items():
        count, nbytes = got_m.get(name, (0, 0))
        if name not in got_m:
            out.append("copy/set %r: not in ptprof's report (%d in the trace)" % (name, m["count"]))
            continue
        if count != m["count"]:
            out.append("copy/set %r: count %d in ptprof, %d in the trace" % (name, count, m["count"]))
        if nbytes != m["bytes"]:
            out.append("copy/set %r: bytes %d in ptprof, %d in the trace" % (name, nbytes, m["bytes"]))
    for name in got_m:
        if name not in want_m:
            out.append("copy/set %r: in ptprof's report, not in the trace" % (name,))

    # Busy time per device (ptprof: per process and device; summed over processes).
    devices = gpu.get("devices")
    if devices is None:
        out.append("ptprof report has no gpu.devices (busy time per device)")
    else:
        got_d = collections.defaultdict(int)
        for d in devices:
            got_d[d.get("device")] += int(d.get("busy_ns") or 0)
        for d in ref["busy"]["devices"]:
            if d["device"] not in got_d:
                out.append("busy time of device %s: not in ptprof's report" % (d["device"],))
            elif not _within(got_d[d["device"]] / 1e3, d["busy_us"], 0.0, BUSY_REL):
                out.append(
                    "busy time of device %s: %.3f us in ptprof, %.3f us in the trace"
                    % (d["device"], got_d[d["device"]] / 1e3, d["busy_us"])
                )
    streams = gpu.get("streams")
    if streams is None:
        if ref["busy"]["streams"]:
            out.append("ptprof report has no busy time per stream (gpu.streams)")
    else:
        got_s = {(s.get("device"), s.get("stream")): int(s.get("busy_ns") or 0) for s in streams}
        for s in ref["busy"]["streams"]:
            got = got_s.get((s["device"], s["stream"]))
            if got is None:
                out.append("busy time of device %s stream %s: not in ptprof's report" % (s["device"], s["stream"]))
            elif not _within(got / 1e3, s["busy_us"], 0.0, BUSY_REL):
                out.append(
                    "busy time of device %s stream %s: %.3f us in ptprof, %.3f us in the trace"
                    % (s["device"], s["stream"], got / 1e3, s["busy_us"])
                )

    # Launch latency.
    lat = gpu.get("launch_latency_ns")
    want = ref["launch_latency"]
    if not isinstance(lat, dict) or not all(("p%d" % p) in lat for p in (50, 90, 99)):
        out.append("ptprof report has no launch latency percentiles (gpu.launch_latency_ns p50/p90/p99)")
    else:
        if int(lat.get("count") or 0) != want["count"]:
            out.append(
                "launch latency: %s kernels with a launch in ptprof, %d in the trace"
                % (lat.get("count"), want["count"])
            )
        for p in (50, 90, 99):
            got = float(lat["p%d" % p]) / 1e3
            if not _within(got, want["p%d_us" % p], LATENCY_ABS_US):
                out.append("launch latency p%d: %.3f us in ptprof, %.3f us in the trace" % (p, got, want["p%d_us" % p]))

    # No kernel unmatched that the trace matched (the report has counts, not
    # identities: more unmatched than the trace's is the failure it can show).
    ref_unmatched = ref["matching"]["kernel"]["unmatched"]
    if "unmatched_kernels" not in gpu:
        out.append("ptprof report has no gpu.unmatched_kernels")
    elif int(gpu["unmatched_kernels"]) > ref_unmatched:
        out.append(
            "unmatched kernels: %d in ptprof, %d in the trace (ptprof lost a join the trace has)"
            % (int(gpu["unmatched_kernels"]), ref_unmatched)
        )
    return out


# --- command line -----------------------------------------------------------


def summary(ref):
    """A readable account of a reference."""
    lines = []
    add = lines.append
    ev = ref["events"]
    add("%s (%s schema): %d events read, %d used" % (ref["trace"], ref["schema"], ev["read"], ev["used"]))
    add(
        "rules: launches by %s; cuda_sync %s CUDA time; percentiles by %s"
        % (
            " or ".join(ref["rules"]["launch_scopes"]),
            "in" if ref["rules"]["sync_in_cuda_time"] else "not in",
            ref["rules"]["percentiles"],
        )
    )
    k = ref["matching"]["kernel"]
    add(
        "ops: %d names, %d calls; kernels: %d names, %d instances, %d matched, %d unmatched "
        "(%d without launch, %d launched outside any op)"
        % (
            len(ref["ops"]),
            sum(o["count"] for o in ref["ops"].values()),
            len(ref["kernels"]),
            sum(v["count"] for v in ref["kernels"].values()),
            k["matched"],
            k["unmatched"],
            k["no_launch"],
            k["launch_outside_ops"],
        )
    )
    for cat in ("gpu_memcpy", "gpu_memset", "cuda_sync"):
        m = ref["matching"][cat]
        if m["matched"] or m["unmatched"]:
            add("%s: %d matched, %d unmatched" % (cat, m["matched"], m["unmatched"]))
    add("")
    add("%-60s %8s %14s %14s" % ("op (top 15 by CUDA total)", "calls", "Self CUDA us", "CUDA total us"))
    for name, o in list(ref["ops"].items())[:15]:
        add("%-60s %8d %14.3f %14.3f" % (name[:60], o["count"], o["self_cuda_us"], o["cuda_total_us"]))
    add("")
    add("%-60s %8s %14s" % ("kernel (top 10 by time)", "count", "total us"))
    for name, v in sorted(ref["kernels"].items(), key=lambda kv: -kv[1]["total_us"])[:10]:
        add("%-60s %8d %14.3f" % (name[:60], v["count"], v["total_us"]))
    if ref["memory_ops"]:
        add("")
        add("%-60s %8s %14s" % ("copy / set", "count", "bytes"))
        for name, v in ref["memory_ops"].items():
            add("%-60s %8d %14d" % (name[:60], v["count"], v["bytes"]))
    add("")
    for d in ref["busy"]["devices"]:
        add("device %s busy %.3f us (%d kernels, copies, sets)" % (d["device"], d["busy_us"], d["work"]))
    for s in ref["busy"]["streams"]:
        add("  stream %s busy %.3f us (%d)" % (s["stream"], s["busy_us"], s["work"]))
    lat = ref["launch_latency"]
    add(
        "launch latency (%d kernels, %d without launch): p50 %.3f p90 %.3f p99 %.3f us"
        " (min %.3f, max %.3f, %d negative)"
        % (
            lat["count"],
            lat["without_launch"],
            lat["p50_us"],
            lat["p90_us"],
            lat["p99_us"],
            lat["min_us"],
            lat["max_us"],
            lat["negative"],
        )
    )
    x = ref["external_id"]
    add(
        "External id vs correlation join: %d agree, %d disagree, %d name no op, %d name an op where the join finds none"
        % (
            x.get("agree", 0),
            x.get("disagree", 0),
            x.get("names_no_op", 0),
            x.get("names_op_correlation_joins_none", 0),
        )
    )
    for e in x.get("examples", []):
        add("  e.g. " + e)
    a = ref["anomalies"]
    add(
        "anomalies: %d work items overlap earlier work on their stream; %d events partially overlap (not nested); "
        "%d dup nodes folded (%.3f us of a parent's own GPU time dropped)"
        % (
            a["overlapping_work_on_a_stream"],
            a["partial_overlaps_not_nested"],
            a["dup_nodes_folded"],
            a["dup_fold_dropped_gpu_us"],
        )
    )
    if a["names_both_cpu_op_and_user_annotation"]:
        add("names both cpu_op and user_annotation: %s" % ", ".join(a["names_both_cpu_op_and_user_annotation"][:5]))
    if a["op_names_that_are_kernel_names"]:
        add("op names that are also kernel names: %s" % ", ".join(a["op_names_that_are_kernel_names"][:5]))
    if a["work_launched_by_cudaGraphLaunch"]:
        add("kernels, copies and sets launched by cudaGraphLaunch: %d" % a["work_launched_by_cudaGraphLaunch"])
    add("took %.2f s to read, %.2f s to compute" % (ref["seconds"]["load"], ref["seconds"]["compute"]))
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description="torch.profiler's own figures from a Kineto trace (issue 54's reference)")
    p.add_argument("trace", help="Kineto trace, .json or .json.gz")
    p.add_argument("--json", action="store_true", help="print the reference as JSON")
    p.add_argument(
        "--compare", metavar="REPORT", help="ptprof report --format json output to check; exit 1 on mismatch"
    )
    p.add_argument("--annotations-launch", action="store_true", help="user annotations own the work launched in them")
    p.add_argument("--no-sync", action="store_true", help="leave cuda_sync out of the ops' CUDA time")
    p.add_argument("--exact-step-names", action="store_true", help="keep ProfilerStep#N apart")
    args = p.parse_args(argv)
    ref = reference(
        args.trace,
        launch_scopes="any" if args.annotations_launch else "cpu_op",
        sync_in_cuda_time=not args.no_sync,
        fold_steps=not args.exact_step_names,
    )
    if args.compare:
        with open(args.compare, encoding="utf-8") as f:
            report = json.load(f)
        mismatches = compare(ref, report)
        for m in mismatches:
            print(m)
        print("%d mismatches" % len(mismatches), file=sys.stderr)
        return 1 if mismatches else 0
    if args.json:
        json.dump(ref, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(summary(ref))
    return 0


if __name__ == "__main__":
    sys.exit(main())
