"""Compares ptprof's memory snapshot (`ptprof memory --snapshot`) with
torch's own (torch.cuda.memory._dump_snapshot) of the same workload, for
scripts/gpu-check.sh (issue #26):

    python snapshot_check.py TORCH.pickle PTPROF.pickle

Both are read as PyTorch's memory viewer reads them, and through torch's own
readers (torch.cuda._memory_viz: segsum, trace, segment_plot, trace_plot). Per
device, they must agree on: the number of allocations and frees and their
bytes (trace actions alloc, free_completed), the segments live at the end
(count, reserved bytes) and the bytes allocated in them at the end. Prints
one line per check; exits 1 on a mismatch.
"""

import pickle
import sys
from collections import defaultdict


def summary(path):
    with open(path, "rb") as f:
        snap = pickle.load(f)
    s = defaultdict(lambda: defaultdict(int))
    for device, trace in enumerate(snap.get("device_traces", [])):
        for e in trace:
            a = e.get("action")
            if a in ("alloc", "free_completed", "segment_alloc", "segment_free", "oom"):
                s[device][a + " count"] += 1
                s[device][a + " bytes"] += int(e.get("size", 0))
    for seg in snap.get("segments", []):
        d = s[seg.get("device", 0)]
        d["segments at the end"] += 1
        d["reserved at the end"] += int(seg.get("total_size", 0))
        d["allocated at the end"] += sum(
            int(b.get("size", 0)) for b in seg.get("blocks", []) if b.get("state") == "active_allocated"
        )
    return snap, s


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    torch_snap, want = summary(argv[1])
    ours_snap, got = summary(argv[2])
    bad = 0
    for device in sorted(set(want) | set(got)):
        for key in sorted(set(want[device]) | set(got[device])):
            ok = want[device][key] == got[device][key]
            bad += 0 if ok else 1
            print(
                "%s device %d %s: torch %d, ptprof %d"
                % ("ok      " if ok else "MISMATCH", device, key, want[device][key], got[device][key])
            )
    try:  # torch's own readers accept the file (they raise on what they cannot read)
        import torch.cuda._memory_viz as viz

        # (segments and memory draw flame graphs with a script they download)
        for name in ("segsum", "trace", "segment_plot", "trace_plot"):
            getattr(viz, name)(ours_snap)
        print("ok       torch.cuda._memory_viz reads ptprof's snapshot (segsum, trace, segment_plot, trace_plot)")
    except Exception as e:  # noqa: BLE001 - any failure is the finding
        bad += 1
        print("MISMATCH torch.cuda._memory_viz could not read ptprof's snapshot: %r" % e)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
