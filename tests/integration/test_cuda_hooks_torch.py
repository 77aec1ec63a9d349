"""`ptprof run` on torch with CUDA interposition in the agent, on a machine
without a GPU: with pip's CUDA wheel, libtorch_cuda and its libcudart are
loaded and the agent's CUDA wrappers and dlsym hook are live; nothing
crashes, torch answers as it does without ptprof, and the CPU report is
intact. (The one-line "no GPU" message is the CUPTI consumer's.)"""

import os
import textwrap

import ptproftest as T

SCRIPT = """
import torch
x = torch.ones(64, 64)
for _ in range(5):
    y = torch.mm(x, x)
print("cuda", torch.cuda.is_available(), "device_count", torch.cuda.device_count(), "sum", float(y.sum()))
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
        T.check_eq(proc.stdout.strip().splitlines()[-1:], plain.stdout.strip().splitlines()[-1:],
                   "torch answers the same under ptprof")
        rows = {r["name"]: r for r in T.report_json(out)["rows"]}
        T.check_eq(rows.get("aten::mm", {}).get("calls"), 5, "calls of aten::mm")


if __name__ == "__main__":
    T.main()
