"""Checks ptprof's CUDA graph attribution for scripts/gpu-check.sh, from
`ptprof report --format json` of graphs_workload.py's runs and
torch.profiler's kernel count of the same replays:

    python graphs_check.py TORCH.json IN_WINDOW.json OUTSIDE.json

IN_WINDOW: the graph captured inside the recorded window: every replayed
kernel is attributed to an aten op (never "captured outside the window").
OUTSIDE: captured before the window: every replayed
kernel is "captured outside the window", none dropped. In both, kernels per
replay equal torch.profiler's (which attributes them to cudaGraphLaunch).
Prints one line per check; exits 1 on a mismatch.
"""

import json
import sys

OUTSIDE = "captured outside the window"


def graph_rows(path):
    with open(path) as f:
        gpu = json.load(f).get("gpu") or {}
    return gpu, gpu.get("graphs", [])


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        torch_run = json.load(f)
    want_per_replay = torch_run["kernels"] / max(torch_run["replays"], 1)
    bad = 0

    def check(ok, what):
        nonlocal bad
        print(("ok       " if ok else "MISMATCH ") + what)
        bad += 0 if ok else 1

    for label, path, outside in (("in window", argv[2], False), ("outside", argv[3], True)):
        gpu, rows = graph_rows(path)
        check(len(rows) >= 1, "%s: CUDA graph rows in the report: %d" % (label, len(rows)))
        ops = {o["op"]: o["kernels"] for r in rows for o in r["ops"]}
        replays = sum(r["replays"] for r in rows)
        kernels = sum(r["kernels"] for r in rows)
        per_replay = kernels / replays if replays else 0
        check(
            abs(per_replay - want_per_replay) < 1e-9,
            "%s: kernels per replay %.2f, torch.profiler's %.2f" % (label, per_replay, want_per_replay),
        )
        if outside:
            check(list(ops) == [OUTSIDE], "%s: every replayed kernel %r: %r" % (label, OUTSIDE, ops))
        else:
            check(
                ops and all(op.startswith("aten::") for op in ops),
                "%s: every replayed kernel attributed to its capturing aten op: %r" % (label, ops),
            )
        # Graph work is never counted unmatched: all of it is attributed.
        check(
            gpu.get("graph_work", 0) >= kernels > 0,
            "%s: graph work attributed by its capture %r, of it outside %r (graph kernels %d)"
            % (label, gpu.get("graph_work"), gpu.get("graph_work_outside"), kernels),
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
