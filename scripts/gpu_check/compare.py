"""Compares torch.profiler's view of a CUDA run (workload.py --torch-profiler)
with ptprof's (`ptprof report --format json` of a `ptprof run --profile-memory`
trace), prints them side by side, and exits 1 when kernel instance counts
differ, total kernel time differs by more than 10%, or any op's Self CUDA Mem
differs at all (2 on unreadable input).

CUDA memory per op must be equal to the byte: the sizes the CUDA caching
allocator reports to profilers are those of its blocks (requests rounded up to
512 B; a cached block is handed out whole when what would remain is too small
to split off), a deterministic function of the sequence of requests, and the
same seeded training loop makes the same requests under either profiler;
neither profiler allocates through the caching allocator itself. So any
difference is a recording or attribution error, not noise. Self CUDA Mem is
what must be equal; CUDA Mem (with children) is shown alongside. (torch counts
into an op the memory events of every thread during its span, ptprof those of
the op's own thread; in this loop the backward ops run on autograd's device
thread while the main thread waits outside any op, so the two agree.)

CUPTI's overhead (its buffer flushes, instrumentation, ...) and the step time
each profiler adds to the run without one are shown, never judged: the one
differs in what each profiler asks CUPTI to record, the other is what is
being measured.

    python compare.py LABEL TORCH.json PTPROF_REPORT.json [TIMING.json]

TIMING.json: workload.py --timing's, {"none"|"torch.profiler"|"ptprof":
{"steps", "warmup", "step_ms"}}.
"""

import json
import sys

TIME_TOLERANCE = 0.10


def from_ptprof(report):
    """The same summary as workload.py's, from ptprof's report JSON."""
    gpu = report.get("gpu", {})
    kernels = {}
    for k in gpu.get("kernels", []):  # one row per (name, grid, block): merge by name
        e = kernels.setdefault(k["name"], {"count": 0, "total_us": 0.0})
        e["count"] += k["time_ns"]["count"]
        e["total_us"] += k["time_ns"]["total"] / 1000.0
    memcpy = {}
    for m in gpu.get("memory_ops", []):
        if m["name"].startswith("Memcpy"):
            memcpy[m["name"]] = {"count": m["time_ns"]["count"], "bytes": m["bytes"]["total"]}
    kernel_names = set(kernels)
    ops = [
        (r["name"], r.get("cuda_total_us", 0.0))
        for r in report.get("rows", [])
        if r.get("cuda_total_us", 0.0) > 0
        and r["name"] not in kernel_names
        and not r["name"].startswith("Memcpy ")
        and not r["name"].startswith("Memset ")
    ]
    ops.sort(key=lambda kv: -kv[1])
    cuda_memory = {}
    for r in report.get("rows", []):
        self_b, total_b = r.get("self_cuda_memory_bytes", 0), r.get("cuda_memory_bytes", 0)
        if self_b or total_b:  # one row per op name (ptprof report's default grouping)
            e = cuda_memory.setdefault(r["name"], {"self": 0, "total": 0})
            e["self"] += self_b
            e["total"] += total_b
    overheads = {
        o["name"]: {"count": o["time_ns"]["count"], "total_us": o["time_ns"]["total"] / 1000.0}
        for o in gpu.get("overheads", [])
    }
    return {
        "kernels": kernels,
        "kernel_total_us": gpu.get("kernel_total_ns", 0) / 1000.0,
        "top_ops": [[k, v] for k, v in ops[:10]],
        "memcpy": memcpy,
        "cuda_memory": cuda_memory,
        "overheads": overheads,
        "cost": report.get("ptprof_cost"),
    }


def overhead_lines(label, torch_o, ptprof_o):
    """CUPTI's overhead as each profiler recorded it (the kinds are named
    differently: kineto's names, ptprof's "Overhead CUPTI ..."): shown, not judged."""
    lines = ["== %s: CUPTI overhead (records, total us; shown, not compared)" % label]
    for side, o in (("torch", torch_o), ("ptprof", ptprof_o)):
        if not o:
            lines.append("%-7s none recorded" % side)
            continue
        total = sum(e["total_us"] for e in o.values())
        kinds = ", ".join("%s %d/%.1f" % (n, e["count"], e["total_us"]) for n, e in sorted(o.items()))
        lines.append("%-7s %.1f us in %d records (%s)" % (side, total, sum(e["count"] for e in o.values()), kinds))
    return lines


def step_time_lines(label, timing, cost):
    """The mean step time of the run without a profiler and what each
    profiler adds to it; ptprof's own estimate of its cost (its report's
    ptprof_cost: ops and records times their calibrated costs) beside."""
    lines = ["== %s: step time (ms, mean after the warm-up steps; added: against no profiler)" % label]
    if cost:
        steps = (timing or {}).get("ptprof", {}).get("steps")
        lines.append(
            "ptprof's own estimate of its cost: %.3f ms over the run (%d ops x %.1f ns, %d records x %.1f ns)%s"
            % (
                cost["added_ms"],
                cost["ops"],
                cost["op_ns"],
                cost["records"],
                cost["record_ns"],
                ", %.4f ms a step" % (cost["added_ms"] / steps) if steps else "",
            )
        )
    if not timing:
        return lines + ["not measured (no timing file)"]
    base = timing.get("none")
    for run in ("none", "torch.profiler", "ptprof"):
        t = timing.get(run)
        if t is None:
            lines.append("%-15s not measured" % run)
            continue
        added = ""
        if run != "none" and base and base["step_ms"] > 0:
            d = t["step_ms"] - base["step_ms"]
            added = "  added %+.3f ms (%+.1f%%)" % (d, 100.0 * d / base["step_ms"])
        lines.append("%-15s %10.3f ms  (%d steps, %d warm-up)%s" % (run, t["step_ms"], t["steps"], t["warmup"], added))
    return lines


def memory_side_by_side(label, torch_mem, ptprof_mem):
    """The CUDA memory section: (lines, failures). Every op is checked; the top
    10 by absolute bytes are printed, and any op that differs is printed too."""
    zero = {"self": 0, "total": 0}
    names = set(torch_mem) | set(ptprof_mem)
    differ = {n for n in names if torch_mem.get(n, zero)["self"] != ptprof_mem.get(n, zero)["self"]}

    def size(n):
        t, p = torch_mem.get(n, zero), ptprof_mem.get(n, zero)
        return max(abs(t["self"]), abs(t["total"]), abs(p["self"]), abs(p["total"]))

    ranked = sorted(names, key=lambda n: (-size(n), n))
    shown = ranked[:10] + [n for n in ranked[10:] if n in differ]
    lines = [
        "== %s: CUDA memory per op (Self CUDA Mem, CUDA Mem; bytes; top 10 by absolute bytes)" % label,
        "%-40s %14s %14s %14s %14s" % ("op", "torch self", "ptprof self", "torch total", "ptprof total"),
    ]
    for n in shown:
        t, p = torch_mem.get(n, zero), ptprof_mem.get(n, zero)
        mark = "  <-- Self CUDA Mem differs" if n in differ else ""
        lines.append("%-40s %14d %14d %14d %14d%s" % (n[:40], t["self"], p["self"], t["total"], p["total"], mark))
    t_sum = sum(e["self"] for e in torch_mem.values())
    p_sum = sum(e["self"] for e in ptprof_mem.values())
    lines.append("total Self CUDA Mem over %d ops: torch %d B, ptprof %d B" % (len(names), t_sum, p_sum))
    failures = []
    if not torch_mem:
        failures.append("%s: torch.profiler recorded no CUDA memory (was it run with profile_memory=True?)" % label)
    for n in sorted(differ, key=lambda n: (-size(n), n)):
        failures.append(
            "%s: op %r: Self CUDA Mem %d B under torch.profiler, %d B under ptprof (must be equal)"
            % (label, n, torch_mem.get(n, zero)["self"], ptprof_mem.get(n, zero)["self"])
        )
    return lines, failures


def side_by_side(label, torch_s, ptprof_s, timing=None):
    """Returns (lines, failures)."""
    lines, failures = [], []
    lines.append("== %s: kernels (instances, total us)" % label)
    lines.append("%-60s %10s %10s %12s %12s" % ("kernel", "torch n", "ptprof n", "torch us", "ptprof us"))
    names = sorted(set(torch_s["kernels"]) | set(ptprof_s["kernels"]))
    for n in names:
        t = torch_s["kernels"].get(n, {"count": 0, "total_us": 0.0})
        p = ptprof_s["kernels"].get(n, {"count": 0, "total_us": 0.0})
        mark = "" if t["count"] == p["count"] else "  <-- count differs"
        lines.append(
            "%-60s %10d %10d %12.1f %12.1f%s" % (n[:60], t["count"], p["count"], t["total_us"], p["total_us"], mark)
        )
        if t["count"] != p["count"]:
            failures.append(
                "%s: kernel %r: %d instances under torch.profiler, %d under ptprof" % (label, n, t["count"], p["count"])
            )
    tt, pt = torch_s["kernel_total_us"], ptprof_s["kernel_total_us"]
    diff = abs(pt - tt) / tt if tt > 0 else (0.0 if pt == 0 else float("inf"))
    lines.append("total kernel time: torch %.1f us, ptprof %.1f us (%.1f%% apart)" % (tt, pt, 100 * diff))
    if diff > TIME_TOLERANCE:
        failures.append(
            "%s: total kernel time %.1f us under torch.profiler, %.1f us under ptprof (more than %d%% apart)"
            % (label, tt, pt, int(100 * TIME_TOLERANCE))
        )
    lines.append("== %s: top ops by CUDA total (us)" % label)
    top_t, top_p = torch_s["top_ops"], ptprof_s["top_ops"]
    for i in range(max(len(top_t), len(top_p))):
        a = top_t[i] if i < len(top_t) else ["", 0.0]
        b = top_p[i] if i < len(top_p) else ["", 0.0]
        lines.append("%-40s %12.1f | %-40s %12.1f" % (a[0][:40], a[1], b[0][:40], b[1]))
    # Per copy name, Kineto's on both sides ("Memcpy HtoD (Pageable -> Device)").
    lines.append("== %s: memcpy (count, bytes)" % label)
    names = sorted(set(torch_s["memcpy"]) | set(ptprof_s["memcpy"]))
    width = max([20] + [len(n) for n in names])
    for name in names:
        t = torch_s["memcpy"].get(name, {"count": 0, "bytes": 0})
        p = ptprof_s["memcpy"].get(name, {"count": 0, "bytes": 0})
        lines.append(
            "%-*s torch %6d %12d | ptprof %6d %12d" % (width, name, t["count"], t["bytes"], p["count"], p["bytes"])
        )
    mem_lines, mem_failures = memory_side_by_side(label, torch_s.get("cuda_memory", {}), ptprof_s["cuda_memory"])
    more = overhead_lines(label, torch_s.get("overheads", {}), ptprof_s["overheads"]) + step_time_lines(
        label, timing, ptprof_s.get("cost")
    )
    return lines + mem_lines + more, failures + mem_failures


def main(argv):
    if len(argv) not in (4, 5):
        sys.stderr.write(__doc__)
        return 2
    label = argv[1]
    try:
        with open(argv[2]) as f:
            torch_s = json.load(f)
        with open(argv[3]) as f:
            ptprof_s = from_ptprof(json.load(f))
        timing = None
        if len(argv) == 5:
            with open(argv[4]) as f:
                timing = json.load(f)
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.stderr.write("compare: cannot read the inputs: %s\n" % e)
        return 2
    lines, failures = side_by_side(label, torch_s, ptprof_s, timing)
    print("\n".join(lines))
    for f in failures:
        print("MISMATCH: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
