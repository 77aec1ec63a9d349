"""Self-test of kineto_reference.py over hand-built Kineto traces whose answers
are worked out by hand below: nested ops, a kernel launched in a child op and
one in the parent itself, a copy, a set, a cuda_sync, a kernel launched inside
a user annotation only, one whose launch is not in the trace, a filtered
helper op, a duplicate node torch folds, a kernel overlapping the previous one
on its stream (with a negative launch latency), the 2021 schema, exact
sub-microsecond times, and compare() against a report that agrees and ones
that do not.

    python3 tests/replay/test_kineto_reference.py
"""

import contextlib
import copy
import gzip
import io
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kineto_reference as kr  # noqa: E402

PID = 100
TID = 100


def cpu(cat, name, ts, dur, ext, **args):
    a = {"External id": ext}
    a.update(args)
    return {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID, "ts": ts, "dur": dur, "args": a}


def launch(name, ts, dur, corr, ext):
    return cpu("cuda_runtime", name, ts, dur, ext, cbid=211, correlation=corr)


def gpu(cat, name, ts, dur, corr, ext, stream=7, **args):
    a = {"External id": ext, "device": 0, "context": 1, "stream": stream, "correlation": corr}
    a.update(args)
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur, "args": a}


# Times in us. External ids: step 1, fwd 2, linear 3, addmm 4, copy_ 5, zero_ 6, outer to 7, inner to 8.
CURRENT = {
    "schemaVersion": 1,
    "deviceProperties": [{"id": 0, "name": "Test GPU", "numSms": 2}],
    "traceEvents": [
        {"ph": "M", "name": "process_name", "pid": PID, "tid": 0, "args": {"name": "python"}},
        cpu("user_annotation", "ProfilerStep#1", 0, 1000, 1),
        cpu("user_annotation", "## fwd ##", 10, 890, 2),
        cpu("cpu_op", "aten::linear", 20, 380, 3),
        cpu("cpu_op", "aten::addmm", 30, 270, 4),
        launch("cudaLaunchKernel", 40, 10, 1, 4),
        gpu("kernel", "gemm", 100, 50, 1, 4),
        launch("cudaLaunchKernel", 310, 10, 2, 3),  # in aten::linear itself
        gpu("kernel", "bias", 145, 10, 2, 3),  # overlaps gemm; starts before its launch
        cpu("cpu_op", "aten::is_leaf", 350, 10, 9),  # torch filters it: no node, no row
        cpu("cpu_op", "aten::copy_", 410, 190, 5),
        launch("cudaMemcpyAsync", 420, 10, 3, 5),
        gpu("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 440, 20, 3, 5, bytes=4096),
        launch("cudaStreamSynchronize", 440, 150, 4, 5),
        gpu("cuda_sync", "Stream Sync", 440, 140, 4, 5, cuda_sync_kind="Stream Sync"),
        cpu("cpu_op", "aten::zero_", 610, 90, 6),
        launch("cudaMemsetAsync", 620, 10, 5, 6),
        gpu("gpu_memset", "Memset (Device)", 640, 5, 5, 6, stream=8, bytes=512),
        launch("cudaLaunchKernel", 710, 10, 6, 2),  # inside the user annotation only
        gpu("kernel", "orphan", 730, 30, 6, 2),
        gpu("kernel", "lost", 800, 10, 99, 0, stream=8),  # its launch is not in the trace
        {"ph": "X", "cat": "gpu_user_annotation", "name": "## fwd ##", "pid": 0, "tid": 7, "ts": 100, "dur": 660,
         "args": {"External id": 2}},
        cpu("cpu_op", "aten::to", 910, 80, 7),
        cpu("cpu_op", "aten::to", 920, 60, 8),  # its parent's only child, of the same name: folded
        launch("cudaLaunchKernel", 930, 10, 7, 8),
        gpu("kernel", "cast", 950, 4, 7, 7),  # External id names the outer aten::to, the launch lies in the inner
        cpu("cpu_op", "aten::empty", 990, 0, 10),  # at the outer aten::to's end: not its child, so the fold holds
        {"ph": "s", "id": 1, "pid": PID, "tid": TID, "ts": 40, "cat": "ac2g", "name": "ac2g"},
        {"ph": "f", "id": 1, "pid": 0, "tid": 7, "ts": 100, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    ],
}  # fmt: skip


def write(doc, suffix):
    """The trace as a file; "@123.456" strings become the number tokens they hold, exactly as
    Kineto writes them (a Python float would round a 1.6e15 us timestamp to 0.25 us)."""
    fd, path = tempfile.mkstemp(suffix=suffix)
    os.close(fd)
    data = re.sub(r'"@([-0-9.]+)"', r"\1", json.dumps(doc)).encode()
    if suffix.endswith(".gz"):
        data = gzip.compress(data)
    with open(path, "wb") as f:
        f.write(data)
    return path


def close(a, b):
    return abs(a - b) < 1e-6


def check_ops(ops, expected):
    for name, (count, self_us, total_us) in expected.items():
        o = ops[name]
        assert o["count"] == count, (name, o)
        assert close(o["self_cuda_us"], self_us), (name, o)
        assert close(o["cuda_total_us"], total_us), (name, o)


def test_current_schema(path):
    ref = kr.reference(path)
    assert ref["schema"] == "kineto"
    assert ref["events"]["read"] == len(CURRENT["traceEvents"])
    # Sync in CUDA time (torch's rule), launches by cpu_op only.
    check_ops(
        ref["ops"],
        {
            "aten::addmm": (1, 50, 50),
            "aten::linear": (1, 10, 60),
            "aten::copy_": (1, 160, 160),  # 20 of copy + 140 of sync
            "aten::zero_": (1, 5, 5),
            "aten::to": (1, 4, 4),  # two events, one after folding; the inner one's kernel lifted
            "## fwd ##": (1, 0, 225),  # the orphan kernel is nobody's
            "ProfilerStep*": (1, 0, 229),
        },
    )
    assert "aten::is_leaf" not in ref["ops"]
    assert len(ref["ops"]) == 8 and ref["ops"]["aten::empty"]["count"] == 1
    assert close(ref["ops"]["aten::copy_"]["self_sync_us"], 140)
    assert close(ref["ops"]["ProfilerStep*"]["sync_total_us"], 140)
    assert ref["runtime_calls"] == {
        "cudaLaunchKernel": 4,
        "cudaMemcpyAsync": 1,
        "cudaMemsetAsync": 1,
        "cudaStreamSynchronize": 1,
    }
    assert {k: (v["count"], v["total_us"]) for k, v in ref["kernels"].items()} == {
        "gemm": (1, 50.0),
        "bias": (1, 10.0),
        "orphan": (1, 30.0),
        "lost": (1, 10.0),
        "cast": (1, 4.0),
    }
    assert ref["memory_ops"]["Memcpy HtoD (Pageable -> Device)"]["bytes"] == 4096
    assert ref["memory_ops"]["Memset (Device)"]["count"] == 1
    assert ref["memory_kinds"]["Memcpy HtoD"] == {"count": 1, "bytes": 4096, "total_us": 20.0}
    assert ref["memory_kinds"]["Memset"] == {"count": 1, "bytes": 512, "total_us": 5.0}
    assert ref["syncs"] == {"Stream Sync": {"count": 1, "matched": 1, "total_us": 140.0}}
    assert ref["gpu_user_annotations"] == {"## fwd ##": {"count": 1, "total_us": 660.0}}

    # Busy: stream 7 = [100,155] + [440,460] + [730,760] + [950,954] = 109; stream 8 = 5 + 10.
    streams = {(s["device"], s["stream"]): s["busy_us"] for s in ref["busy"]["streams"]}
    assert streams == {(0, 7): 109.0, (0, 8): 15.0}, streams
    assert ref["busy"]["devices"] == [{"device": 0, "busy_us": 124.0, "work": 7}]

    # Latencies of the kernels with a launch: 60, -165, 20, 20 -> sorted -165, 20, 20, 60.
    lat = ref["launch_latency"]
    assert (lat["count"], lat["without_launch"], lat["negative"]) == (4, 1, 1), lat
    assert (lat["p50_us"], lat["p90_us"], lat["p99_us"]) == (20.0, 60.0, 60.0), lat
    assert (lat["min_us"], lat["max_us"]) == (-165.0, 60.0)

    m = ref["matching"]
    assert m["kernel"] == {"matched": 3, "unmatched": 2, "no_launch": 1, "launch_outside_ops": 1}, m
    assert m["gpu_memcpy"]["matched"] == 1 and m["gpu_memset"]["matched"] == 1 and m["cuda_sync"]["matched"] == 1
    x = ref["external_id"]
    assert (x["agree"], x["disagree"], x["names_no_op"], x["names_op_correlation_joins_none"]) == (4, 1, 1, 1), x
    a = ref["anomalies"]
    assert a["overlapping_work_on_a_stream"] == 1
    assert a["negative_launch_latencies"] == 1
    assert a["dup_nodes_folded"] == 1
    assert a["partial_overlaps_not_nested"] == 0
    assert ref["launch_apis"]["kernel"] == {"cudaLaunchKernel": 4}
    json.dumps(ref)  # serializable

    # Other rules: user annotations own what they launch; syncs left out.
    anyref = kr.reference(path, launch_scopes="any")
    check_ops(anyref["ops"], {"## fwd ##": (1, 30, 255), "ProfilerStep*": (1, 0, 259)})
    assert anyref["matching"]["kernel"]["matched"] == 4
    nosync = kr.reference(path, sync_in_cuda_time=False)
    check_ops(nosync["ops"], {"aten::copy_": (1, 20, 20), "## fwd ##": (1, 0, 85), "ProfilerStep*": (1, 0, 89)})
    assert close(nosync["ops"]["aten::copy_"]["self_sync_us"], 140)

    # Step names kept, then folded.
    exact = kr.reference(path, fold_steps=False)
    assert "ProfilerStep#1" in exact["ops"] and "ProfilerStep*" not in exact["ops"]
    folded = kr.fold_profiler_steps(exact["ops"])
    assert folded["ProfilerStep*"]["count"] == 1 and close(folded["ProfilerStep*"]["cuda_total_us"], 229)
    return ref


def report_for(ref):
    """A ptprof report (the parts compare() reads) that says what the reference says."""
    rows = []
    for name, o in ref["ops"].items():
        rows.append(
            {"name": name, "calls": o["count"], "self_cuda_us": o["self_cuda_us"], "cuda_total_us": o["cuda_total_us"]}
        )
    for name, k in ref["kernels"].items():
        rows.append({"name": name, "calls": k["count"], "self_cuda_us": k["total_us"], "cuda_total_us": k["total_us"]})
    for name, n in ref["runtime_calls"].items():
        rows.append({"name": name, "calls": n, "self_cuda_us": 0.0, "cuda_total_us": 0.0})
    for name, m in ref["memory_ops"].items():  # Kineto's names, as ptprof's agent gives them
        rows.append({"name": name, "calls": m["count"], "self_cuda_us": m["total_us"], "cuda_total_us": m["total_us"]})
    lat = ref["launch_latency"]
    return {
        "columns": [{"title": "Name", "key": "name"}, {"title": "Self CUDA", "key": "self_cuda_us"}],
        "rows": rows,
        "gpu": {
            "matched": 5,
            "unmatched_kernels": ref["matching"]["kernel"]["unmatched"],
            # ptprof splits a name's kernels by grid and block: two rows for gemm
            "kernels": [
                {"name": n, "time_ns": {"count": k["count"], "total": int(k["total_us"] * 1000)}}
                for n, k in ref["kernels"].items()
                if n != "gemm"
            ]
            + [
                {"name": "gemm", "grid": [1, 1, 1], "time_ns": {"count": 1, "total": 30000}},
                {"name": "gemm", "grid": [2, 1, 1], "time_ns": {"count": 0, "total": 20000}},
            ],
            "memory_ops": [
                {"name": n, "time_ns": {"count": m["count"]}, "bytes": {"total": m["bytes"]}}
                for n, m in ref["memory_ops"].items()
            ],
            "devices": [{"pid": 1, "device": 0, "busy_ns": 124000, "span_ns": 10**6}],
            "streams": [{"device": 0, "stream": 7, "busy_ns": 109000}, {"device": 0, "stream": 8, "busy_ns": 15000}],
            "launch_latency_ns": {
                "count": lat["count"],
                "p50": int(lat["p50_us"] * 1000),
                "p90": int(lat["p90_us"] * 1000),
                "p99": int(lat["p99_us"] * 1000),
            },
        },
    }


def find(mismatches, text):
    return [m for m in mismatches if text in m]


def test_compare(ref):
    good = report_for(ref)
    assert kr.compare(ref, good) == [], kr.compare(ref, good)

    r = copy.deepcopy(good)
    rows = {row["name"]: row for row in r["rows"]}
    rows["aten::addmm"]["calls"] = 2
    rows["aten::linear"]["self_cuda_us"] += 0.9  # inside max(1 us, 0.1%)
    rows["aten::zero_"]["cuda_total_us"] += 1.5  # outside
    rows["ProfilerStep*"]["cuda_total_us"] += 0.2
    r["rows"].append({"name": "aten::extra", "calls": 1, "self_cuda_us": 0.0, "cuda_total_us": 0.0})
    rows["cudaMemsetAsync"]["calls"] = 3
    g = r["gpu"]
    g["kernels"][0]["time_ns"]["count"] += 1  # bias: one instance too many
    g["kernels"][1]["time_ns"]["total"] += 1000  # orphan: 31 us for 30
    g["memory_ops"][0]["bytes"]["total"] += 1
    g["devices"][0]["busy_ns"] = int(124000 * 1.01)
    g["streams"][1]["busy_ns"] = 15000 + 50  # 0.33%: within 0.5%
    g["launch_latency_ns"]["p50"] += 2000
    g["launch_latency_ns"]["p90"] += 900
    g["unmatched_kernels"] = 3
    mm = kr.compare(ref, r)
    expected = [
        "op 'aten::addmm': calls 2",
        "op 'aten::zero_': cuda_total_us",
        "ptprof row 'aten::extra'",
        "runtime call row 'cudaMemsetAsync': calls 3",
        "kernel 'bias': instances 2",
        "kernel 'orphan': total 31.000 us",
        "copy/set 'Memcpy HtoD (Pageable -> Device)': bytes 4097",
        "busy time of device 0",
        "launch latency p50",
        "unmatched kernels: 3 in ptprof, 2 in the trace",
    ]
    for text in expected:
        assert len(find(mm, text)) == 1, (text, mm)
    assert len(mm) == len(expected), mm

    # Figures the report lacks are said, not skipped.
    r = copy.deepcopy(good)
    del r["gpu"]["streams"]
    del r["gpu"]["launch_latency_ns"]
    mm = kr.compare(ref, r)
    assert find(mm, "ptprof report has no busy time per stream"), mm
    assert find(mm, "ptprof report has no launch latency percentiles"), mm
    assert len(mm) == 2, mm
    r = copy.deepcopy(good)
    del r["gpu"]
    assert kr.compare(ref, r) == ["ptprof report has no gpu section"]

    # Copies and sets named by their kind alone (without Kineto's memory
    # kinds) are other names: each is said, in the table and the GPU section.
    r = copy.deepcopy(good)
    for row in r["rows"] + r["gpu"]["memory_ops"]:
        row["name"] = kr.memory_kind(row["name"])
    mm = kr.compare(ref, r)
    for text in (
        "ptprof row 'Memcpy HtoD' (1 calls) is not in the trace",
        "ptprof row 'Memset' (1 calls) is not in the trace",
        "copy/set 'Memcpy HtoD (Pageable -> Device)': not in ptprof's report",
        "copy/set 'Memset (Device)': not in ptprof's report",
        "copy/set 'Memcpy HtoD': in ptprof's report, not in the trace",
        "copy/set 'Memset': in ptprof's report, not in the trace",
    ):
        assert len(find(mm, text)) == 1, (text, mm)
    r = copy.deepcopy(good)
    r["rows"] = [row for row in r["rows"] if row["name"] != "ProfilerStep*"]
    assert find(kr.compare(ref, r), "op 'ProfilerStep*': no row in ptprof's report (ptprof leaves"), kr.compare(ref, r)

    # Copies named as Kineto names them are compared by those names.
    r = copy.deepcopy(good)
    r["gpu"]["memory_ops"] = [
        {"name": n, "time_ns": {"count": m["count"]}, "bytes": {"total": m["bytes"]}}
        for n, m in ref["memory_ops"].items()
    ]
    assert kr.compare(ref, r) == []

    # The command line: exit 1 on mismatches, 0 without.
    fd, good_path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    with open(good_path, "w") as f:
        json.dump(good, f)
    fd, bad_path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    bad = copy.deepcopy(good)
    bad["gpu"]["unmatched_kernels"] = 5
    with open(bad_path, "w") as f:
        json.dump(bad, f)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            assert kr.main([ref["_path"], "--compare", good_path]) == 0
            assert kr.main([ref["_path"], "--compare", bad_path]) == 1
            assert kr.main([ref["_path"]]) == 0
            assert kr.main([ref["_path"], "--json"]) == 0
        assert "unmatched kernels: 5 in ptprof, 2 in the trace" in out.getvalue()
    finally:
        os.unlink(good_path)
        os.unlink(bad_path)


def test_op_named_like_a_kernel(path):
    # A triton op and its kernel share a name: ptprof's row holds both.
    doc = copy.deepcopy(CURRENT)
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("name") != "gemm"]
    doc["traceEvents"].append(gpu("kernel", "aten::addmm", 100, 50, 1, 4))
    p = write(doc, ".json")
    try:
        ref = kr.reference(p)
        assert ref["anomalies"]["op_names_that_are_kernel_names"] == ["aten::addmm"]
        good = report_for(ref)
        merged = [row for row in good["rows"] if row["name"] != "aten::addmm"]
        merged.append({"name": "aten::addmm", "calls": 2, "self_cuda_us": 100.0, "cuda_total_us": 100.0})
        good["rows"] = merged
        good["gpu"]["kernels"] = [
            {"name": n, "time_ns": {"count": k["count"], "total": int(k["total_us"] * 1000)}}
            for n, k in ref["kernels"].items()
        ]
        assert kr.compare(ref, good) == [], kr.compare(ref, good)
    finally:
        os.unlink(p)


def legacy(cat, name, ts, dur, **args):
    """A 2021-schema event: string tids, GPU work on "stream 7", lower-case "external id"."""
    on_gpu = cat in ("Kernel", "Memset")
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": 0 if on_gpu else 7,
        "tid": "stream 7" if on_gpu else "7",
        "ts": ts,
        "dur": dur,
        "args": dict({"device": 0, "context": 1, "stream": 7} if on_gpu else {}, **args),
    }


LEGACY = {
    "schemaVersion": 1,
    "traceEvents": [
        legacy("Operator", "ProfilerStep#3", "@1623142623460111.5", 100, **{"External id": 1}),
        legacy("Runtime", "cudaLaunchKernel", "@1623142623460120.25", 5, correlation=11, **{"external id": 1}),
        legacy("Kernel", "k1", "@1623142623460130.125", "@1.001", correlation=11, **{"external id": 1}),
        legacy("Operator", "aten::add", "@1623142623460140.5", 10, **{"External id": 2}),
        legacy("Runtime", "cudaMemsetAsync", "@1623142623460141.5", 2, correlation=12, **{"external id": 2}),
        legacy("Memset", "Memset (Device)", "@1623142623460150.5", 2, correlation=12, bytes=64, **{"external id": 2}),
        {"ph": "i", "s": "t", "name": "[memory]", "pid": 7, "tid": 7, "ts": 1623142623460121, "args": {"Bytes": 4}},
    ],
}


def test_legacy_schema():
    p = write(LEGACY, ".json.gz")
    try:
        ref = kr.reference(p)
        assert ref["schema"] == "kineto-2021"
        # In 2021 every scope was an Operator that pushed the ordinary id: the step owns k1.
        check_ops(ref["ops"], {"ProfilerStep*": (1, 1.001, 3.001), "aten::add": (1, 2, 2)})
        assert ref["kernels"] == {"k1": {"count": 1, "total_us": 1.001}}  # exact to the ns
        assert ref["busy"]["streams"] == [{"device": 0, "stream": 7, "busy_us": 3.001, "work": 2}]
        assert ref["launch_latency"]["p50_us"] == 9.875
        assert ref["external_id"]["agree"] == 2
        assert ref["matching"]["kernel"]["matched"] == 1
    finally:
        os.unlink(p)


def test_nearest_rank():
    v = list(range(1, 101))
    assert (kr.nearest_rank(v, 50), kr.nearest_rank(v, 90), kr.nearest_rank(v, 99)) == (50, 90, 99)
    assert kr.nearest_rank([5], 99) == 5 and kr.nearest_rank([], 50) == 0
    assert kr.nearest_rank([1, 2, 3], 50) == 2 and kr.nearest_rank([1, 2, 3, 4], 50) == 2
    assert kr.nearest_rank(list(range(1, 11)), 91) == 10 and kr.nearest_rank([1, 2], 50) == 1


def main():
    test_nearest_rank()
    for suffix in (".json", ".json.gz"):
        path = write(CURRENT, suffix)
        try:
            ref = test_current_schema(path)
            ref["_path"] = path
            test_compare(ref)
            test_op_named_like_a_kernel(path)
        finally:
            os.unlink(path)
    test_legacy_schema()
    print("test_kineto_reference: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
