"""CUDA graph replays attributed to the ops that captured them, through the
real agent, launcher and report: the stand-in CUPTI (built by the tests)
makes the graph node callbacks and the replays' kernels that a program
using CUDA graphs would cause (cuda_ops "graph": graph 8 captured in step 0,
before the window; graph 7 captured in step 1 inside aten::mm; both replayed
in steps 1 and 2 inside an op graph_replay). Graph 7's kernels belong to
aten::mm, not to graph_replay (whose cudaGraphLaunch they ran under);
graph 8's are "captured outside the window", and nothing is unmatched."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptproftest as pt  # noqa: E402
from ptproftest import check, check_eq  # noqa: E402

REQUIRES = ("no_torch",)

CUDA_OPS = os.path.join(pt.BUILD_DIR, "bin", "cuda_ops")
FAKE_CUPTI = os.path.join(pt.BUILD_DIR, "fake-cupti", "libcupti.so")
STUB_DRIVER_DIR = os.path.join(pt.BUILD_DIR, "stub-driver")
TOOLKIT_CUDART = "/usr/local/cuda/lib64/libcudart.so"


def test_graph_replays_attributed_to_capturing_ops():
    if not os.path.exists(TOOLKIT_CUDART) or not os.path.exists(FAKE_CUPTI):
        pt.skip("no CUDA toolkit at /usr/local/cuda, or no CUPTI headers at build time")
    with pt.tempdir() as out:
        traces = os.path.join(out, "traces")
        log = os.path.join(out, "cupti.log")
        run = pt.run_ptprof(
            [
                "run",
                "-o",
                traces,
                "--wait",
                "1",
                "--active",
                "2",
                "--repeat",
                "1",
                "--",
                CUDA_OPS,
                TOOLKIT_CUDART,
                "3",
                "graph",
            ],
            env=pt.clean_env(
                LD_LIBRARY_PATH=STUB_DRIVER_DIR,
                PTPROF_CUPTI_PATH=FAKE_CUPTI,
                PTPROF_STEP="manual",
                FAKE_CUPTI_GRAPHS="1",
                FAKE_CUPTI_LOG=log,
            ),
        )
        check_eq(run.returncode, 0, pt.describe(run))
        with open(log) as f:
            calls = f.read().split("\n")[:-1]
        # CUPTI was not held at step 0's capture, so the agent heard of
        # graph 7's nodes only.
        check("graph node created 800" in calls and "graph node created 700" in calls, "both captures: %r" % calls)
        files = sorted(os.listdir(traces))
        check_eq(len(files), 1, "one window: %r" % files)
        report = pt.report_json(os.path.join(traces, files[0]))
        gpu = report.get("gpu") or {}
        check_eq(
            (gpu.get("unmatched_kernels"), gpu.get("graph_work"), gpu.get("graph_work_outside")),
            (0, 4, 2),
            "every replayed kernel attributed: %r" % {k: gpu.get(k) for k in ("matched", "unmatched_kernels")},
        )
        graphs = {g["graph"]: g for g in gpu.get("graphs", [])}
        check_eq(sorted(graphs), [7, 8], "one row per graph: %r" % gpu.get("graphs"))
        if 7 in graphs:
            g = graphs[7]
            check_eq((g["replays"], g["kernels"], g["kernels_per_replay"]), (2, 2, 1.0), "graph 7: %r" % g)
            check_eq(g["ops"], [{"op": "aten::mm", "kernels": 2}], "graph 7's kernels came from aten::mm")
            # The stand-in's kernels run 5 us; GPU times go through the clock fit.
            check(abs(g["replay_ns"]["avg"] - 5000) <= 5, "5 us per replay: %r" % g["replay_ns"])
        if 8 in graphs:
            check_eq(graphs[8]["ops"], [{"op": "captured outside the window", "kernels": 2}], "graph 8")
        rows = {r["name"]: r for r in report["rows"]}
        mm = rows.get("aten::mm")
        check(mm is not None and abs(mm["self_cuda_us"] - 10.0) < 0.02, "aten::mm has its replays' 10 us: %r" % mm)
        replay = rows.get("graph_replay")
        check(replay is not None and replay["self_cuda_us"] == 0, "graph_replay has none: %r" % replay)

        table = pt.run_ptprof(["report", os.path.join(traces, files[0])])
        check_eq(table.returncode, 0, pt.describe(table))
        check(
            "CUDA graph replays" in table.stdout and "captured outside the window (2)" in table.stdout,
            "the table's section: " + table.stdout,
        )


if __name__ == "__main__":
    pt.main()
