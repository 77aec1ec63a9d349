"""Two runs of scripts/bench.sh side by side: every figure of both, and
whether the two are within 15% of each other (issue #27 asks that of every
ratio, run twice on the same code); then the figures that are differences
near zero (ns per op over no profiler, across processes), whose change is
given in ns. The across-process figures are there only as differences: a
process without a profiler against another one is the noise between
processes, and their step ratios (1.01-1.07 in one pair of runs, 1.22-1.77
in another, 2026-12-05) say how noisy the machine was, not what ptprof
costs.

    python3 bench/compare_runs.py RUN1/figures.json RUN2/figures.json

scripts/bench.sh writes $BUILD/bench/figures.json; copy it away between the
runs. Prints a Markdown table and how many figures agree.
"""

import json
import sys

OPTION_RATIOS = (
    "ptprof/floor",
    "ptprof/torch",
    "ptprof+shapes/torch+shapes",
    "ptprof+memory/torch+memory",
    "ptprof+stack/torch+stack",
)


def is_ratio(name):
    """A ratio of two costs measured in the same run, as opposed to an
    absolute figure (ns, M/s, bytes), which moves with the machine's speed."""
    return (
        any(name.endswith(k) or (" %s " % k) in name for k in OPTION_RATIOS)
        or name.endswith("/measured")
        or "speed-up" in name
    )


def figures(path):
    """{name: value} of one run, and its length and date."""
    with open(path) as f:
        fig = json.load(f)
    out = {}
    for c in fig["steps_core"]:
        m, t = c["models"]["small"], c["torch"][:4]
        for k in ("floor", "ptprof", "torch"):
            out["%s ns/op %s (in-process)" % (t, k)] = m["ns_per_op"]["cpu"].get(k)
        for k in OPTION_RATIOS:
            out["%s %s" % (t, k)] = m["ratio"]["cpu"].get(k)
        out["%s start-up estimate/measured" % t] = m.get("estimate_over_measured")
        out["%s own-steps/measured" % t] = m.get("own_steps_over_measured")
    near_zero = {}
    for e in fig["end_to_end"]:
        t = e["torch"][:4]
        modes = e["loops"]["small"]["modes"]
        for mode, r in modes.items():
            if mode != "none":
                # A difference near zero (its sign flips with the noise), so
                # it is compared in ns, not in percent.
                near_zero["%s across %s ns/op" % (t, mode)] = r["ns_per_op"]
    # Also differences near zero (-167 to 82 ns in one pair of runs): what
    # the callbacks cost outside windows, within one process.
    for r in fig.get("registered", []):
        near_zero["%s callback set before ns/op (in-process)" % r["torch"][:4]] = r["sets"]["bridge"]["ns_per_op"]
        near_zero["%s step watcher ns/op (in-process)" % r["torch"][:4]] = r["sets"]["watcher"]["ns_per_op"]
        if r.get("agent_steps"):
            near_zero["%s step hook ns/op (in-process)" % r["torch"][:4]] = r["agent_steps"]["ns_per_op"]
    oc = fig.get("op_cost")
    if oc:
        out["C++ ptprof/floor"], out["C++ own ns/op"], out["TSC read ns"] = oc["ratio"], oc["own_ns"], oc["tsc_ns"]
    # Per batch, not the p50: percentiles come in whole 10 ns here (the timer's
    # step). Runs before 2026-12-05 have the mean over batches instead.
    for k, v in fig["hot_path"].items():
        out["hot path %s per batch ns" % k] = v.get("batch", v.get("mean"))
    d = fig["drain"]
    for t, r in d["threads"].items():
        out["drain M/s per core, %s writers" % t] = 1 / r["launcher_cpu_s_per_m"]
    first_drop = next((r for r in d["sweep"] if r["dropped"]), None)
    out["drop onset M/s"] = first_drop["written_per_s"] / 1e6 if first_drop else None
    for o in fig["outputs"]:
        t, p, q = o["torch"][:4], o["ptprof"], o["torch_profiler"]
        out["%s trace bytes/event" % t] = p["trace_bytes"] / p["events"]
        out["%s report vs key_averages speed-up" % t] = (q["table_s"] / q["events"]) / (p["report_s"] / p["events"])
    rr = fig.get("rank_report")
    if rr:
        out["rank report speed-up (2 threads)"] = rr["speedup"]
        out["rank report M events/CPU-s"] = rr["default"]["events_per_cpu_s"] / 1e6
    lr = fig.get("long_run")
    if lr:
        out["long run bytes/event"] = lr["trace_bytes"] / lr["events"]
    rm = fig.get("real_models")
    if rm:
        for model, m in rm["models"].items():
            for k in OPTION_RATIOS:
                out["%s %s (wall)" % (model, k)] = m["ratio"]["wall"].get(k)
    return out, near_zero, fig["seconds"], fig["date"]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: compare_runs.py RUN1.json RUN2.json")
    (a, za, sa, da), (b, zb, sb, db) = figures(sys.argv[1]), figures(sys.argv[2])
    print("| figure | run 1 (%s UTC, %.0f s) | run 2 (%s UTC, %.0f s) | within 15%% |" % (da, sa, db, sb))
    print("|---|---:|---:|---|")
    n = ok = rn = rok = 0
    for k in a:
        x, y = a.get(k), b.get(k)
        if x is None or y is None or x != x or y != y:
            print("| %s | %s | %s | n/a |" % (k, x, y))
            continue
        d = abs(x - y) / max(abs(x), abs(y), 1e-9)
        n += 1
        ok += d <= 0.15
        if is_ratio(k):
            rn += 1
            rok += d <= 0.15
        print("| %s | %.2f | %.2f | %s |" % (k, x, y, "yes" if d <= 0.15 else "no (%.0f%%)" % (d * 100)))
    print("\n%d of %d figures within 15%%; of the ratios (what the issue asks of), %d of %d." % (ok, n, rok, rn))
    if za:
        print("\nDifferences near zero, compared in ns:\n")
        print("| figure | run 1 | run 2 | change ns |")
        print("|---|---:|---:|---:|")
        for k in za:
            x, y = za.get(k), zb.get(k)
            if x is None or y is None:
                print("| %s | %s | %s | n/a |" % (k, x, y))
            else:
                print("| %s | %.1f | %.1f | %+.1f |" % (k, x, y, y - x))


if __name__ == "__main__":
    main()
