"""Prints what torch.profiler(record_shapes=True) reports as input shapes and
dtypes for the cases the ptprof shapes encoding must reproduce.

Run: /usr/bin/python3 tests/integration/torch_shapes_probe.py
Each line: <case> | <name> | <str(input_shapes)> | <dtypes> | <scope>
"""

import torch
from torch.profiler import ProfilerActivity, profile, record_function


def run(label, fn):
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        fn()
    seen = set()
    for evt in prof.events():
        key = (evt.name, str(evt.input_shapes))
        if key in seen:
            continue
        seen.add(key)
        dtypes = getattr(evt, "input_dtypes", None) if hasattr(evt, "input_dtypes") else None
        print(f"{label} | {evt.name} | {evt.input_shapes!s} | {dtypes} | {evt.scope}")
    return prof


def main():
    x = torch.randn(4, 3, 16, 16)
    w = torch.randn(8, 3, 3, 3)
    b = torch.randn(8)
    run("conv", lambda: torch.nn.functional.conv2d(x, w, b))
    run("add_scalar", lambda: torch.add(torch.ones(2, 3), 2.5))
    run("add_alpha", lambda: torch.add(torch.ones(2, 3), torch.ones(2, 3), alpha=2))
    run("cat", lambda: torch.cat([torch.ones(2, 3), torch.ones(4, 3)], dim=0))
    run("stack", lambda: torch.stack([torch.ones(2), torch.ones(2), torch.ones(2)]))
    run("zero_dim", lambda: torch.mul(torch.tensor(3.0), torch.tensor(2.0)))
    run("int_long", lambda: torch.add(torch.ones(3, dtype=torch.int64), torch.ones(3, dtype=torch.int32)))
    run(
        "dtypes",
        lambda: [
            torch.ones(2, dtype=d) + 1
            for d in (
                torch.float16,
                torch.bfloat16,
                torch.float64,
                torch.uint8,
                torch.int8,
                torch.int16,
                torch.bool,
                torch.complex64,
                torch.complex128,
            )
        ],
    )
    run("none_arg", lambda: torch.nn.functional.linear(torch.ones(2, 3), torch.ones(4, 3), None))
    run("empty_shape", lambda: torch.ones(0, 5).sum())
    run("sum_dim", lambda: torch.ones(2, 3).sum(dim=[0, 1]))
    run(
        "many",
        lambda: torch.nn.functional.batch_norm(
            torch.ones(2, 3, 4), torch.zeros(3), torch.ones(3), torch.ones(3), torch.zeros(3), True, 0.1, 1e-5
        ),
    )
    run("string_arg", lambda: torch.div(torch.ones(2), torch.ones(2), rounding_mode="floor"))
    run("index_optional_list", lambda: torch.ones(4, 4)[torch.tensor([0, 1])])

    def user_scopes():
        with record_function("outer"):
            with record_function("inner", "some args"):
                torch.ones(1) + 1

    run("user", user_scopes)

    def train():
        model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        out = model(torch.randn(3, 5))
        out.sum().backward()
        opt.step()

    run("train", train)

    # Undefined tensor input: a backward node whose incoming grad is undefined.
    def undefined():
        a = torch.randn(3, requires_grad=True)
        u, _v = a.unbind(0)[0], a.unbind(0)[1]
        (u * 2).backward()

    run("undefined", undefined)

    # Key-averages text for one grouped table row (what users see).
    prof = run("kavg", lambda: torch.nn.functional.conv2d(x, w, b))
    for row in prof.key_averages(group_by_input_shape=True):
        print("KAVG |", row.key, "|", str(row.input_shapes))
    print(prof.key_averages(group_by_input_shape=True).table(row_limit=5))


if __name__ == "__main__":
    main()
