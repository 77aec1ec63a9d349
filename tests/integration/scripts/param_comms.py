"""A library built against the running torch whose one function opens a
`record_param_comms` scope through c10d's RECORD_PARAM_COMMS macro, as NCCL's
process group does around each collective (gloo's records none, and this
machine has no GPU): what ptprof's bridge reads a collective's facts from.
Plain C (ctypes), so that it needs no pybind11 (Debian's torch ships none).

    param_comms.py build DIR    compile DIR/libparam_comms.so (once per torch and source)
    param_comms.py run DIR      load it and make calls 5, 6 and 7 of process group "0"
    param_comms.py torch DIR OUT.json   the calls of `run` under torch.profiler, its Chrome trace to OUT.json
    param_comms.py steps DIR    3 iterations (record_function "iteration") of two calls,
                                2N and 2N+1; rank 1 (RANK) makes them in the other order
"""

import ctypes
import hashlib
import os
import subprocess
import sys

import torch

SOURCE = r"""
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/ParamCommsUtils.hpp>

extern "C" void comms(int64_t seq, int64_t elements) {
  std::vector<int64_t> none;
#if TORCH_VERSION_MAJOR >= 2
  RECORD_PARAM_COMMS(std::make_tuple(seq, false), std::make_tuple(std::string("0"), std::string("default_pg")), 1,
                     "allreduce", elements, elements, at::kFloat, none, none, 0, 1, 2);
#else
  (void)seq;
  RECORD_PARAM_COMMS(1, "allreduce", elements, elements, at::kFloat, none, none);
#endif
}
"""


def library(directory):
    tag = hashlib.sha256((SOURCE + torch.__version__).encode()).hexdigest()[:12]
    return os.path.join(directory, "libparam_comms-%s.so" % tag)


def build(directory):
    from torch.utils import cpp_extension

    out = library(directory)
    if os.path.exists(out):
        return
    os.makedirs(directory, exist_ok=True)
    src = os.path.join(directory, "param_comms.cpp")
    with open(src, "w") as f:
        f.write(SOURCE)
    abi = "-D_GLIBCXX_USE_CXX11_ABI=%d" % int(torch.compiled_with_cxx11_abi())
    std = "-std=c++20" if int(torch.__version__.split(".")[0]) >= 2 else "-std=c++17"  # 2.x's headers need 20
    cmd = ["c++", "-shared", "-fPIC", "-O1", std, abi, src, "-o", out + ".tmp"]
    cmd += ["-isystem" + p for p in cpp_extension.include_paths()]
    cmd += ["-L" + p for p in cpp_extension.library_paths()] + ["-ltorch_cpu", "-lc10"]
    subprocess.run(cmd, check=True)
    os.rename(out + ".tmp", out)


def main():
    what, directory = sys.argv[1], sys.argv[2]
    if what == "build":
        return build(directory)
    lib = ctypes.CDLL(library(directory))
    lib.comms.argtypes = [ctypes.c_int64, ctypes.c_int64]
    x = torch.ones(4)
    if what in ("run", "torch"):

        def calls(x):
            for seq in (5, 6, 7):
                x = x + 1  # an op between the calls
                lib.comms(seq, 16)

        if what == "run":
            calls(x)
        else:
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                calls(x)
            prof.export_chrome_trace(sys.argv[3])
    else:
        flip = os.environ.get("RANK") == "1"
        for n in range(3):
            with torch.autograd.profiler.record_function("iteration"):
                x = x + 1
                for seq in (2 * n + 1, 2 * n) if flip else (2 * n, 2 * n + 1):
                    lib.comms(seq, 16)
    print("done")


if __name__ == "__main__":
    main()
