"""Runs a training script under torch's profiler with memory
(torch.autograd.profiler.profile(profile_memory=True, record_shapes=True),
the profiler torch.profiler.profile drives) for steps FIRST .. FIRST+COUNT-1
and writes what it saw as JSON: the memory reference of test_memory.py.

    python torch_memory_wrapper.py --first N --count N --out rows.json -- script.py [args...]

The profiler is entered directly rather than through torch.profiler's
schedule, so no ProfilerStep record_function of its own (torch 1.13's
allocates a handle tensor per step) adds allocations to the window. A step
ends where ptprof's default step rule ends it (an optimizer's step()
returns; see torch_profile_wrapper.py); the profiler is entered when step
FIRST begins (the end of step FIRST-1) and left when step FIRST+COUNT-1 ends.

The output: {"torch_version": "...", "steps": [recorded steps],
             "rows": [{"name", "count", "input_shapes", "cpu_memory_usage",
                       "self_cpu_memory_usage"}, ...],  # key_averages(group_by_input_shape=True)
             "memory_events": [[bytes, device_type], ...],  # every memory event torch reported
             "tree_rows": [...],  # as "rows", derived from torch's event tree (tree_rows below)
             "tree_op_calls": [[name, input_shapes, calls], ...],  # the tree's ops (tree_op_calls)
             "op_events": [[name, input_shapes, calls], ...]}  # the flat event list's CPU ops
"""

import argparse
import collections
import functools
import json
import os
import runpy
import sys


def shapes_text(inputs):
    """An op's input shapes as EventList's input_shapes prints them: torch 1.x
    keeps them in inputs.shapes; torch 2.x has one entry per input, a tensor's
    metadata (its sizes) or anything else (a tensor list, a scalar, None), [] then."""
    if hasattr(inputs, "shapes"):
        return str([list(s) for s in inputs.shapes])
    return str([list(i.sizes) if hasattr(i, "sizes") else [] for i in inputs])


# The ops EventList leaves out (torch.autograd.profiler_util._filter_name,
# the same on 1.13 and 2.x): their children and allocations are their parent's.
FILTERED_OUT = {
    "profiler::_record_function_enter",
    "profiler::_record_function_enter_new",
    "profiler::_record_function_exit",
    "aten::is_leaf",
    "aten::output_nr",
    "aten::_version",
}


class Op:
    def __init__(self, name, shapes):
        self.name, self.shapes = name, shapes
        self.self_bytes = 0  # CPU bytes of the allocations (frees negative) while it was the innermost op
        self.children = []


def op_tree(events, parent):
    """The profiler's events below `parent` as Ops: an allocation adds its CPU
    bytes to the op running on its thread when it happened (it is that op's
    child in the event tree); ops EventList filters out are transparent."""
    for e in events:
        kind = type(e.extra_fields).__name__
        if kind.endswith("Allocation"):
            if e.extra_fields.device.type == "cpu":
                parent.self_bytes += int(e.extra_fields.alloc_size)
        elif kind.endswith("TorchOp") and e.name not in FILTERED_OUT:
            op = Op(e.name, shapes_text(e.extra_fields.inputs))
            parent.children.append(op)
            op_tree(e.children, op)
        else:
            op_tree(e.children, parent)


def tree_rows(roots):
    """Per (name, input shapes): calls, CPU Mem and Self CPU Mem from the
    profiler's own event tree. CPU Mem of a call is every CPU allocation in its
    subtree, Self CPU Mem the CPU Mem less its child ops'; both summed over the
    calls, as key_averages sums them. EventList's _remove_dup_nodes is applied:
    an op whose only child op has its name absorbs that child (the child's
    allocations become its own, the child's children its children; the child
    is no row)."""
    table = {}

    def visit(op):
        while len(op.children) == 1 and op.children[0].name == op.name:
            child = op.children[0]
            op.self_bytes += child.self_bytes
            op.children = child.children
        total = op.self_bytes + sum(visit(c) for c in op.children)
        if op.name is not None:
            row = table.setdefault((op.name, op.shapes), [0, 0, 0])
            row[0] += 1
            row[1] += total
            row[2] += op.self_bytes
        return total

    top = Op(None, None)
    op_tree(roots, top)
    visit(top)
    return [
        {"name": name, "input_shapes": shapes, "count": c, "cpu_memory_usage": m, "self_cpu_memory_usage": s}
        for (name, shapes), (c, m, s) in sorted(table.items())
    ]


def tree_op_calls(roots):
    """[name, input shapes, calls] of the event tree's ops EventList keeps,
    before any merge: to be checked against the profiler's flat event list.
    An op still open when the profiler stops (the record_function scope the
    window ends in) has no end in torch 1.x's tree (end_time_ns < start_time_ns)
    and is not in its flat list: it is left out here (torch 2.x ends it at the
    stop and lists it)."""
    counts = collections.Counter()

    def visit(events):
        for e in events:
            if (
                type(e.extra_fields).__name__.endswith("TorchOp")
                and e.name not in FILTERED_OUT
                and e.end_time_ns >= e.start_time_ns
            ):
                counts[(e.name, shapes_text(e.extra_fields.inputs))] += 1
            visit(e.children)

    visit(roots)
    return [[name, shapes, n] for (name, shapes), n in sorted(counts.items())]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--first", type=int, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    args = p.parse_args()

    import torch

    state = {
        "step": 0,
        "depth": 0,
        "prof": None,
        "recorded": [],
        "rows": None,
        "memory": [],
        "tree_rows": [],
        "tree_op_calls": [],
        "op_events": [],
    }

    def start():
        state["prof"] = torch.autograd.profiler.profile(profile_memory=True, record_shapes=True)
        state["prof"].__enter__()

    def stop():
        prof = state["prof"]
        state["prof"] = None
        prof.__exit__(None, None, None)
        state["rows"] = [
            {
                "name": e.key,
                "count": int(e.count),
                "input_shapes": e.input_shapes,
                "cpu_memory_usage": int(e.cpu_memory_usage),
                "self_cpu_memory_usage": int(e.self_cpu_memory_usage),
            }
            for e in prof.key_averages(group_by_input_shape=True)
        ]
        state["memory"] = [
            [int(e.nbytes()), int(e.device_type())] for e in prof.kineto_results.events() if e.name() == "[memory]"
        ]
        tree = prof.kineto_results.experimental_event_tree()
        state["tree_rows"] = tree_rows(tree)
        state["tree_op_calls"] = tree_op_calls(tree)
        counts = collections.Counter(
            (e.name(), str(e.shapes()))
            for e in prof.kineto_results.events()
            if e.device_type() == torch.autograd.DeviceType.CPU
            and e.name() not in FILTERED_OUT
            and e.name() != "[memory]"
        )
        state["op_events"] = [[name, shapes, n] for (name, shapes), n in sorted(counts.items())]

    def step_ended():
        step = state["step"]
        if state["prof"] is not None:
            state["recorded"].append(step)
            if step == args.first + args.count - 1:
                stop()
        state["step"] = step + 1
        if state["step"] == args.first:
            start()

    def wrap_step(cls):
        step = cls.__dict__.get("step")
        if step is None or getattr(step, "_ptprof_wrapper", False):
            return

        @functools.wraps(step)
        def step_then_count(*a, **kw):
            state["depth"] += 1
            try:
                return step(*a, **kw)
            finally:
                state["depth"] -= 1
                if state["depth"] == 0:
                    step_ended()

        step_then_count._ptprof_wrapper = True
        cls.step = step_then_count

    original_init = torch.optim.Optimizer.__init__

    @functools.wraps(original_init)
    def init_then_wrap(self, *a, **kw):
        original_init(self, *a, **kw)
        for cls in type(self).__mro__:
            if cls is torch.optim.Optimizer:
                break
            wrap_step(cls)

    torch.optim.Optimizer.__init__ = init_then_wrap
    if args.first == 0:
        start()

    script = os.path.abspath(args.script)
    sys.argv = [script] + list(args.script_args)
    sys.path.insert(0, os.path.dirname(script))
    exit_code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code
        exit_code = code if isinstance(code, int) else (0 if code is None else 1)
    if state["prof"] is not None:
        stop()
    with open(args.out, "w") as f:
        json.dump(
            {
                "torch_version": torch.__version__,
                "steps": state["recorded"],
                "rows": state["rows"] or [],
                "memory_events": state["memory"],
                "tree_rows": state["tree_rows"],
                "tree_op_calls": state["tree_op_calls"],
                "op_events": state["op_events"],
            },
            f,
            indent=1,
        )
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
