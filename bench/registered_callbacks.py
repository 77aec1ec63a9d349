"""What torch charges per operator for the RecordFunction callbacks ptprof's
torch bridge keeps registered outside its windows, measured within one
process: the small-op loop (bench/torch_overhead.py) in blocks of steady
steps, with the bridge's set of callbacks registered (four operator
variants, disabled, and the USER_SCOPE step watcher, as
agent/torch/bridge.cpp registers them: bench/floor/rf_floor.cpp) and
without, alternating; also each part of the set alone. The thread's CPU
time, the median step of each block, the median over pairs of blocks of the
block with the set less the one without it (every other pair the other way
round).

Since 2026-12-05 the bridge registers none of them outside windows where
the Python bootstrap reports the optimizer's steps itself
(ptprof/_step_scopes.py: a wrapper of the optimizer classes' step), and
keeps the watcher alone elsewhere (a rule that names a user scope). What the bootstrap's report
costs instead, a Python hook (which folds most ends outside windows) and the
agent's end of a step, is measured with --agent-steps in a process under
`ptprof run --on-demand`: blocks with the hooks as the bootstrap left them
(its CLASS_STEP_HOOKS) and emptied, alternating.

Across processes (torch_overhead.py's ptprof-on-demand against a process
without a profiler) the same costs are read against noise of the same size;
within one process they are not.

    python bench/registered_callbacks.py [--blocks 16] [--steps 150] [--json OUT]
    ptprof run --on-demand -- python bench/registered_callbacks.py --agent-steps [--json OUT]
"""

import argparse
import ctypes
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_overhead  # noqa: E402

# (name, operator variants, step watcher)
SETS = (("bridge", 4, 1), ("watcher", 0, 1), ("variants", 4, 0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--blocks", type=int, default=16, help="blocks with the set, and as many without, per set")
    ap.add_argument("--steps", type=int, default=150, help="steps timed per block (after an untimed one)")
    ap.add_argument("--floor-lib", default=None, help="the floor library; default: built for this torch")
    ap.add_argument("--json", help="also write the figures to this file as JSON")
    ap.add_argument(
        "--agent-steps",
        action="store_true",
        help="under `ptprof run`: the cost of the bootstrap's optimizer step hook instead",
    )
    args = ap.parse_args()
    if args.blocks < 1 or args.steps < 1:
        ap.error("--blocks and --steps must be at least 1")
    import torch

    torch.set_num_threads(1)
    step = torch_overhead.build_loop("small")
    ops = torch_overhead.count_ops(step)
    for _ in range(200):
        step()

    def block():
        # The step after a change is not steady: torch rebuilds its callback cache.
        step()
        times = []
        for _ in range(args.steps):
            c = time.thread_time_ns()
            step()
            times.append(time.thread_time_ns() - c)
        return statistics.median(times)

    out = {"torch": torch.__version__, "ops": ops, "blocks": args.blocks, "steps": args.steps, "sets": {}}
    if args.agent_steps:
        out["agent_steps"] = agent_steps(args, block, ops)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=1)
        return
    lib = ctypes.CDLL(args.floor_lib or torch_overhead.build_floor())
    for name, variants, watcher in SETS:
        diffs = []
        for i in range(args.blocks):
            # Every other pair the other way round, so that a drift through
            # the run does not side with either.
            first = block() if i % 2 == 0 else None
            lib.ptprof_bench_add_bridge_set(variants, watcher)
            registered = block()
            lib.ptprof_bench_remove_bridge_set()
            without = first if first is not None else block()
            diffs.append((registered - without) / ops)
        out["sets"][name] = {
            "variants": variants,
            "watcher": watcher,
            "ns_per_op": statistics.median(diffs),
            "ns_per_op_blocks": diffs,
        }
        print(
            "%-9s (%d disabled operator variants, %s step watcher): %+.1f ns/op (blocks %s)"
            % (
                name,
                variants,
                "a" if watcher else "no",
                out["sets"][name]["ns_per_op"],
                " ".join("%.0f" % d for d in diffs),
            ),
            flush=True,
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


def agent_steps(args, block, ops):
    """ns/op of the bootstrap's optimizer step hook (ptprof_boot_scope_ended:
    the agent ends a step), per pair of blocks with it and without; None
    where there is none (not under ptprof, or a torch without global
    optimizer hooks)."""
    import importlib

    try:  # the bootstrap's wrapper of the optimizer classes' step calls these
        hooks = importlib.import_module("ptprof._step_scopes").CLASS_STEP_HOOKS
    except ImportError:
        hooks = None
    if not hooks:
        print("agent steps: no optimizer step hook of ptprof's in this process", flush=True)
        return None
    kept = dict(hooks)
    diffs = []
    for i in range(args.blocks):
        first = block() if i % 2 == 0 else None
        hooks.clear()
        without = block()
        hooks.update(kept)
        hooked = first if first is not None else block()
        diffs.append((hooked - without) / ops)
    res = {"ns_per_op": statistics.median(diffs), "ns_per_op_blocks": diffs}
    print(
        "agent steps (the bootstrap's optimizer step hook and the agent's end of a step): %+.1f ns/op "
        "(blocks %s)" % (res["ns_per_op"], " ".join("%.0f" % d for d in diffs)),
        flush=True,
    )
    return res


if __name__ == "__main__":
    main()
