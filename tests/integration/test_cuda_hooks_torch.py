"""`ptprof run` on torch with CUDA interposition in the agent, on a machine
without a GPU: with pip's CUDA wheel, libtorch_cuda and its libcudart are
loaded and the agent's CUDA wrappers and dlsym hook are live; nothing
crashes, torch answers as it does without ptprof, and the CPU report is
intact. (The one-line "no GPU" message is the CUPTI consumer's.)

Registered only for torches built with CUDA (REQUIRES): a torch without
libcudart is a failure here."""

import os
import textwrap

import ptproftest as T

REQUIRES = ("cuda_torch",)

SCRIPT = """
import torch
x = torch.ones(64, 64)
for _ in range(5):
    y = torch.mm(x, x)
print("cuda", torch.cuda.is_available(), "device_count", torch.cuda.device_count(), "sum", float(y.sum()))
"""

# Whether the hooks are live in a torch process: with a CUDA wheel its
# libcudart is mapped, and a lookup on that library's own handle (how
# ctypes, or a runtime looking for the driver, finds a function) gives the
# agent's wrapper.
PROBE = """
import ctypes, torch
maps = open("/proc/self/maps").read().splitlines()
cudart = sorted({l.split()[-1] for l in maps if "libcudart.so" in l.split()[-1]})
if not cudart:
    print("probe: no libcudart")
else:
    addr = ctypes.cast(ctypes.CDLL(cudart[0]).cudaMalloc, ctypes.c_void_p).value
    agent = [l.split()[0].split("-") for l in maps if "libptprof_agent" in l]
    inside = any(int(lo, 16) <= addr < int(hi, 16) for lo, hi in agent)
    print("probe: cudaMalloc wrapped", inside)
"""


def test_cuda_wheel_without_gpu_keeps_the_cpu_report():
    with T.tempdir() as d:
        script = os.path.join(d, "cpu.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(SCRIPT))
        plain = T.run([T.PYTHON, script])
        T.check_eq(plain.returncode, 0, "plain run\n" + T.describe(plain))
        out = os.path.join(d, "out")
        proc = T.run_ptprof(["run", "-o", out, "--", T.PYTHON, script])
        T.check_eq(proc.returncode, 0, "run under ptprof\n" + T.describe(proc))
        T.check_eq(
            proc.stdout.strip().splitlines()[-1:],
            plain.stdout.strip().splitlines()[-1:],
            "torch answers the same under ptprof",
        )
        rows = {r["name"]: r for r in T.report_json(out)["rows"]}
        T.check_eq(rows.get("aten::mm", {}).get("calls"), 5, "calls of aten::mm")


def test_cuda_wheel_gets_the_wrappers():
    with T.tempdir() as d:
        script = os.path.join(d, "probe.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(PROBE))
        proc = T.run_ptprof(["run", "-o", os.path.join(d, "out"), "--", T.PYTHON, script])
        T.check_eq(proc.returncode, 0, "probe under ptprof\n" + T.describe(proc))
        T.check("probe: no libcudart" not in proc.stdout, "this torch maps a libcudart\n" + T.describe(proc))
        T.check("probe: cudaMalloc wrapped True" in proc.stdout, "the wrapper is handed out\n" + T.describe(proc))


if __name__ == "__main__":
    T.main()
