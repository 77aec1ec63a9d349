"""Inductor kernels tied to their source (issue #25 item 3; docs/report.md,
"Inductor kernels"; docs/bootstrap.md): a torch.compile'd MLP trained for 6
steps on the CPU, compiled in-process (TORCHINDUCTOR_COMPILE_THREADS=1) into
a private inductor cache.

- Run 1, no schedule, a cold cache: every C++ kernel the generated wrappers
  call (``cpp_fused_*``) is a row of its own, named ``<kernel> [<aten ops>]``
  with the ops exactly as inductor's output code lists them above the
  kernel's call ("Original ATen: [...]"); those ops are the ones inductor's
  descriptive kernel name was made from; one call per step each; each call
  inside the ``## Call CompiledFxGraph <key> ##`` scope that ran it (the
  Chrome export, same thread). ``--group-by-compiled-source`` folds each
  kernel's time onto its ops' row, and nothing else changes.
- Run 2, a schedule whose window opens after the compile (steps 2 and 3) and
  the cache of run 1 (the modules load from the FX graph cache): the same
  rows, two calls each; after the window closed no kernel of the generated
  modules is ptprof's any more (nothing of ptprof runs outside windows).

torch's ``## Call CompiledFxGraph ##`` scope is opened only while a profiler
state sits in the thread's PROFILER_STATE slot: until the torch bridge
installs its state in every window (#25 item 1) the runs profile memory,
whose reporter is such a state. torch 2.x only (REQUIRES)."""

import glob
import gzip
import json
import os
import re
import textwrap

import ptproftest as T

REQUIRES = ("torch2",)

SCRIPT = """
import sys, torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
compiled = torch.compile(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(6):
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    loss = ((compiled(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
from torch._inductor.codecache import PyCodeCache
wrapped = [k for m in PyCodeCache.modules for k, v in vars(m).items() if getattr(v, "_ptprof_kernel", False)]
print("ptprof kernels after the run:", len(wrapped), file=sys.stderr)
"""

ORIGINS = re.compile(r"^\s*# (?:Topologically Sorted|Unsorted) Source Nodes: \[.*?\], Original ATen: \[(.*?)\]\s*$")
CALL = re.compile(r"^\s*(cpp_\w+)\(")
ROW = re.compile(r"^(cpp_\w+) \[(.*)\]$")


def output_code(cache):
    """{kernel: [aten ops]} from the wrappers inductor wrote into the cache:
    the Original ATen of the comment right above each C++ kernel's call."""
    kernels = {}
    for path in glob.glob(os.path.join(cache, "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        if not any(line.startswith("def call(") or "    def call(self, args):" == line for line in lines):
            continue
        for i, line in enumerate(lines):
            call = CALL.match(line)
            if call:
                above = ORIGINS.match(lines[i - 1]) if i else None
                T.check(above, "%s: a comment with the Original ATen right above %r" % (path, line.strip()))
                if above:
                    kernels[call.group(1)] = [op.strip() for op in above.group(1).split(",")]
    return kernels


def record(d, *flags):
    script = os.path.join(d, "compiled_mlp.py")
    with open(script, "w") as f:
        f.write(textwrap.dedent(SCRIPT))
    env = T.clean_env(TORCHINDUCTOR_CACHE_DIR=os.path.join(d, "inductor-cache"), TORCHINDUCTOR_COMPILE_THREADS=1)
    out = os.path.join(d, "out%d" % len(os.listdir(d)))
    proc = T.run_ptprof(["run", "-o", out] + list(flags) + ["--", T.PYTHON, script], env=env, timeout=1200)
    T.check_eq(proc.returncode, 0, "ptprof run\n" + T.describe(proc))
    return out, proc


def kernel_rows(report):
    return {m.group(1): (m.group(2).split(", "), r) for r in report["rows"] for m in [ROW.match(r["name"])] if m}


def check_nested(d, out):
    """Each kernel call lies inside a CompiledFxGraph call on its thread."""
    chrome = os.path.join(d, "trace.json.gz")
    proc = T.run_ptprof(["export", out, "--chrome", chrome])
    T.check_eq(proc.returncode, 0, "ptprof export --chrome\n" + T.describe(proc))
    with gzip.open(chrome, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    graphs = [e for e in events if e["name"].startswith("## Call CompiledFxGraph ")]
    kernels = [e for e in events if ROW.match(e["name"])]
    T.check(graphs and kernels, "CompiledFxGraph calls (%d) and kernel calls (%d)" % (len(graphs), len(kernels)))
    outside = [
        k["name"]
        for k in kernels
        if not any(
            g["pid"] == k["pid"]
            and g["tid"] == k["tid"]
            and g["ts"] <= k["ts"]
            and k["ts"] + k["dur"] <= g["ts"] + g["dur"]
            for g in graphs
        )
    ]
    T.check_eq(outside, [], "kernel calls outside any CompiledFxGraph call")


def test_kernels_name_their_aten_ops():
    import torch

    if not hasattr(torch, "compile"):
        T.skip("torch %s has no torch.compile" % torch.__version__)
    with T.tempdir() as d:
        out, _ = record(d)
        code = output_code(os.path.join(d, "inductor-cache"))
        T.check(len(code) >= 2, "the MLP's forward and backward have C++ kernels: %r" % code)
        for kernel, ops in code.items():
            # inductor named the kernel from the same ops (descriptive_names="original_aten").
            named = "cpp_fused_" + "_".join(sorted(set(op.split(".")[-1] for op in ops)))
            T.check(re.fullmatch(re.escape(named) + r"_\d+", kernel), "%s fused %r" % (kernel, ops))
        report = T.report_json(out)
        rows = kernel_rows(report)
        T.check_eq(sorted(rows), sorted(code), "a row per C++ kernel")
        for kernel, (ops, row) in rows.items():
            T.check_eq(ops, code.get(kernel), "%s: the aten ops of inductor's output code" % kernel)
            T.check_eq(row["calls"], 6, "%s: one call per step" % kernel)
        check_nested(d, out)

        # --group-by-compiled-source: each kernel's time on its ops' row.
        folded = T.report_json(out, "--group-by-compiled-source")
        by_name = {r["name"]: r for r in folded["rows"]}
        T.check_eq(kernel_rows(folded), {}, "no kernel rows left")
        expected = {}
        for ops, row in rows.values():
            key = " + ".join(op.replace(".", "::", 1) for op in ops)
            expected.setdefault(key, []).append(row)
        plain = {r["name"]: r for r in report["rows"]}
        for key, kernels in expected.items():
            base = plain.get(key, {"calls": 0, "self_cpu_us": 0.0})
            T.check(key in by_name, "a row %r: %r" % (key, sorted(by_name)))
            if key in by_name:
                T.check_eq(by_name[key]["calls"], base["calls"] + sum(k["calls"] for k in kernels), key + ": calls")
                want = base["self_cpu_us"] + sum(k["self_cpu_us"] for k in kernels)
                T.check(
                    abs(by_name[key]["self_cpu_us"] - want) <= 0.01 * len(kernels) + 0.001,
                    "%s: self CPU %.3f us, its kernels' %.3f us" % (key, by_name[key]["self_cpu_us"], want),
                )
        others = {n: r["calls"] for n, r in plain.items() if not ROW.match(n) and n not in expected}
        T.check_eq({n: by_name[n]["calls"] for n in others if n in by_name}, others, "the other rows unchanged")

        # Run 2: the window opens after the compile; the modules come from the cache.
        out2, run2 = record(d, "--schedule", "wait=1,warmup=1,active=2,repeat=1")
        rows2 = kernel_rows(T.report_json(out2))
        T.check_eq(sorted(rows2), sorted(code), "run 2: a row per C++ kernel")
        for kernel, (ops, row) in rows2.items():
            T.check_eq((ops, row["calls"]), (code.get(kernel), 2), "run 2: %s, two steps" % kernel)
        T.check(
            "ptprof kernels after the run: 0" in run2.stderr,
            "run 2: inductor's own kernels back after the window:\n" + run2.stderr[-2000:],
        )


# A generated wrapper's call, as torch 2.15 writes it (with the bootstrap's
# line above the C++ kernel), cut down; a kernel called twice; a kernel with
# no line above it; an extern kernel's line that must not reach the next kernel.
WRAPPER = """
    def call(self, args):
        # Topologically Sorted Source Nodes: [input_1], Original ATen: [aten.t, aten.addmm]
        extern_kernels.addmm(primals_2, primals_3, reinterpret_tensor(primals_1, (32, 64), (1, 32), 0), alpha=1, beta=1, out=buf0)
        buf1 = buf0; del buf0  # reuse
        cpp_fused_relu_0(buf1)
        # Topologically Sorted Source Nodes: [sum_1, le, full_default, where], Original ATen: [aten.sum, aten.threshold_backward]
        cpp_fused_sum_threshold_backward_0(buf3, tangents_1, buf0, buf2)
        # Unsorted Source Nodes: [add], Original ATen: [aten.add]
        stream0 = get_raw_stream(0)
        triton_poi_fused_add_1.run(buf4, 64, stream=stream0)
        # Topologically Sorted Source Nodes: [mul], Original ATen: [aten.mul]
        cpp_fused_sum_threshold_backward_0(buf5, tangents_1, buf0, buf2)
"""  # noqa: E501 (inductor's output, as it writes it)


def test_parse_provenance():
    """The bootstrap's reading of a wrapper (ptprof/_inductor_kernels.py)."""
    import sys

    sys.path.insert(0, T.PYTHON_MODULE_DIR)
    from ptprof._inductor_kernels import parse_provenance, row_name

    found = parse_provenance(WRAPPER)
    T.check_eq(
        found,
        {
            "cpp_fused_relu_0": {"aten": [], "nodes": []},
            "cpp_fused_sum_threshold_backward_0": {
                "aten": ["aten.sum", "aten.threshold_backward", "aten.mul"],
                "nodes": ["sum_1", "le", "full_default", "where", "mul"],
            },
            "triton_poi_fused_add_1": {"aten": ["aten.add"], "nodes": ["add"]},
        },
        "each kernel's ops and nodes",
    )
    T.check_eq(row_name("cpp_fused_relu_0", found["cpp_fused_relu_0"]), "cpp_fused_relu_0", "no ops: the bare name")
    T.check_eq(
        row_name("cpp_fused_x_0", {"aten": ["aten.sum", "aten.mul"]}),
        "cpp_fused_x_0 [aten.sum, aten.mul]",
        "the row's name",
    )


if __name__ == "__main__":
    T.main()
