"""`ptprof memory --snapshot FILE`: a snapshot in PyTorch's format, read by
torch's own functions (torch.cuda._memory_viz), whose summaries must equal
ptprof's numbers. Once per torch: torch 2.x's segsum, trace, segment_plot,
trace_plot, memory and segments; torch 1.13 knows only a list of segments
(stats, segments, memory), which it is given.

1. A synthetic trace (tests/programs/memory_trace_gen.cpp): segments with
   torch's blocks on two devices, a freed block, a released segment, and a
   failed cudaMalloc of 8 GiB. torch's summaries equal the totals at the end
   in `ptprof memory --timeline` (allocated and reserved per device), the
   blocks and frames are those written, the trace has one entry per memory
   event (two per free) and the OOM. (trace()'s "TOTAL MEM" line is not
   checked: torch's loop variable overwrites its running count.)
2. The stand-in CUDA runtime returning out-of-memory for one cudaMalloc
   (tests/programs/cuda/cuda_oom.cpp) under `ptprof run --profile-memory`:
   the snapshot holds the segment's reservation and release and the OOM
   event.
"""

import csv
import os
import pickle

import ptproftest as T
import torch.cuda._memory_viz as viz

KIB, MIB = 1 << 10, 1 << 20
BIN = os.path.join(T.BUILD_DIR, "bin")
TORCH_2 = not os.environ.get("PTPROF_TORCH_VERSION", "").startswith("1.")


def snapshot(inputs, d, name="out.pickle"):
    """Writes the snapshot and the timeline; returns (the snapshot, the
    timeline's last point per device, ptprof memory's stderr)."""
    path, timeline = os.path.join(d, name), os.path.join(d, name + ".csv")
    proc = T.run_ptprof(["memory", inputs, "--bytes", "--snapshot", path, "--timeline", timeline])
    if proc.returncode != 0:
        raise AssertionError("ptprof memory --snapshot failed: " + T.describe(proc))
    with open(path, "rb") as f:
        raw = f.read()
    T.check(raw[:2] == b"\x80\x04", "pickle protocol 4: %r" % raw[:2])
    data = pickle.loads(raw)
    last = {}
    with open(timeline) as f:
        for row in csv.DictReader(f):
            last[row["device"]] = (int(row["allocated_bytes"]), int(row["reserved_bytes"]))
    return data, last, proc.stderr


def viz_check(data):
    """torch's functions accept the snapshot; returns torch's numbers."""
    lines = []

    def keep(text):
        lines.append(text)
        return text

    out = {}
    if TORCH_2:
        out["segsum"] = viz.segsum(data)
        out["trace"] = viz.trace(data)
        T.check("<html>" in viz.segment_plot(data).lower(), "segment_plot gives a page")
        T.check("<html>" in viz.trace_plot(data).lower(), "trace_plot gives a page")
        viz.memory(data, format_flamegraph=keep)
        viz.segments(data, format_flamegraph=keep)
    else:
        stats = viz.stats(data["segments"])  # asserts that each segment's blocks add up to it
        out["stats"] = stats
        viz.memory(data["segments"], format_flamegraph=keep)
        viz.segments(data["segments"], format_flamegraph=keep)
    out["flame"] = lines
    return out


def flame_bytes(text, state):
    """Bytes of the flamegraph lines in `state`."""
    return sum(int(line.rsplit(" ", 1)[1]) for line in text.splitlines() if ";%s" % state in line)


def test_synthetic_trace():
    with T.tempdir() as d:
        trace = os.path.join(d, "synthetic.bin")
        proc = T.run([os.path.join(BIN, "memory_trace_gen"), trace])
        T.check_eq(proc.returncode, 0, "memory_trace_gen: " + T.describe(proc))
        data, last, err = snapshot(trace, d)
        # ptprof's own numbers: the timeline's totals at the end, per device.
        T.check_eq(last["CUDA:0"], (1536 * KIB, 2 * MIB), "ptprof's totals at the end, CUDA:0")
        T.check_eq(last["CUDA:1"], (4 * MIB, 20 * MIB), "ptprof's totals at the end, CUDA:1")
        allocated = sum(a for a, _ in last.values())
        reserved = sum(r for _, r in last.values())
        T.check(
            "pid 777, 11 trace entries, 2 segments live at the end, 1 out-of-memory events" in err,
            "ptprof memory's line on the snapshot: " + err,
        )

        segs = sorted(data["segments"], key=lambda s: s["address"])
        T.check_eq(
            [(s["device"], s["total_size"], s["allocated_size"]) for s in segs],
            [(0, 2 * MIB, 1536 * KIB), (1, 20 * MIB, 4 * MIB)],
            "segments (device, size, allocated)",
        )
        T.check_eq(
            [(b["size"], b["state"]) for b in segs[0]["blocks"]],
            [(512 * KIB, "active_allocated"), (512 * KIB, "inactive"), (MIB, "active_allocated")],
            "device 0's blocks",
        )
        T.check_eq(
            segs[0]["blocks"][2]["frames"][:2],
            [
                {"filename": "model.py", "line": 22, "name": "forward"},
                {"filename": "train.py", "line": 10, "name": "main"},
            ],
            "the 1 MiB block's frames (aten::mm)",
        )
        actions = [[e["action"] for e in dev] for dev in data["device_traces"]]
        T.check_eq(
            actions,
            [
                ["segment_alloc", "alloc", "alloc", "alloc", "free_requested", "free_completed"],
                ["segment_alloc", "alloc", "segment_alloc", "segment_free", "oom"],
            ],
            "the trace per device",
        )
        oom = data["device_traces"][1][-1]
        T.check_eq((oom["size"], oom["frames"][0]["line"]), (8 << 30, 26), "the OOM: size asked, aten::huge's line")

        torch_says = viz_check(data)
        flame = "".join(torch_says["flame"])
        T.check_eq(
            flame_bytes(torch_says["flame"][0], "active_allocated"),
            allocated,
            "torch's memory(): active bytes = ptprof's allocated at the end",
        )
        if TORCH_2:
            s = torch_says["segsum"]
            T.check(
                "total_reserved: %s" % viz.Bytes(reserved) in s and "segments: 2" in s,
                "torch's segsum: total_reserved %d:\n%s" % (reserved, s),
            )
            T.check(
                "total_allocated: %s" % viz.Bytes(allocated) in s,
                "torch's segsum: total_allocated %d:\n%s" % (allocated, s),
            )
            t = torch_says["trace"]
            T.check("raise OutOfMemoryError # 8.0GiB requested" in t, "torch's trace() has the OOM:\n" + t)
            T.check(
                "del c # 256.0KiB" in t and "cudaFree(c) # 2.0MiB" in t,
                "torch's trace(): the freed block and the released segment:\n" + t,
            )
            T.check("6 entries" in t and "5 entries" in t, "torch's trace(): entries per device:\n" + t)
        else:
            st = torch_says["stats"]
            T.check_eq(
                (st["segments"], st["total_size"].value, st["active_allocated"].value),
                (2, reserved, allocated),
                "torch 1.13's stats()",
            )
        if TORCH_2:  # 1.13 shows frames only from a block's "history" (its older format)
            T.check("model.py:22:forward" in flame, "the flamegraph lines carry the frames:\n" + flame)
        print(
            "synthetic: torch's summaries equal ptprof's: %d allocated, %d reserved at the end" % (allocated, reserved),
            flush=True,
        )


def test_stand_in_out_of_memory():
    cuda_oom = os.path.join(BIN, "cuda_oom")
    if not os.path.exists(cuda_oom):
        T.skip("no stand-in CUDA runtime in this build (no CUDA headers)")
    with T.tempdir() as d:
        out = os.path.join(d, "out")
        env = T.clean_env()
        env["ASAN_OPTIONS"] = "allocator_may_return_null=1"
        proc = T.run_ptprof(["run", "--profile-memory", "-o", out, "--", cuda_oom], env=env)
        T.check_eq(proc.returncode, 0, "ptprof run cuda_oom: " + T.describe(proc))
        T.check("out of memory: cudaMalloc of" in proc.stderr, "the run summary names the OOM:\n" + proc.stderr)
        data, last, err = snapshot(out, d)
        T.check_eq(
            [[e["action"] for e in dev] for dev in data["device_traces"]],
            [["segment_alloc", "oom", "segment_free"]],
            "the stand-in's trace",
        )
        oom = data["device_traces"][0][1]
        T.check_eq(oom["size"], 1 << 60, "the size asked")
        T.check_eq(data["segments"], [], "nothing reserved at the end")
        T.check_eq(last["CUDA:0"], (0, 0), "ptprof's totals at the end")
        torch_says = viz_check(data)
        if TORCH_2:
            T.check(
                "raise OutOfMemoryError # 1.0EiB requested" in torch_says["trace"],
                "torch's trace() has the OOM:\n" + torch_says["trace"],
            )
        print("stand-in: %s" % err.strip(), flush=True)


if __name__ == "__main__":
    T.main()
