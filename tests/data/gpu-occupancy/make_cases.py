#!/usr/bin/env python3
"""Writes cases.tsv: every distinct kernel launch of the recorded GPU traces
(tests/data/gpu-traces/*.json.gz) with its device's properties and the
occupancy args Kineto recorded for it ("blocks per SM", "warps per SM" as
the trace's text, "est. achieved occupancy %"), for the unit test that
holds ptprof's occupancy computation to Kineto's
(tests/unit/analysis/test_kernel_occupancy.cpp).

    python3 tests/data/gpu-occupancy/make_cases.py

Lines (TAB-separated):
    trace   <file>  <kernels in it>
    device  <key>   <compact JSON: the trace's deviceProperties entry>
    kernel  <device key>  gx,gy,gz  bx,by,bz  <registers per thread>  <shared memory>
            <blocks per SM text>  <warps per SM text>  <est. achieved occupancy %>  <kernels of this launch>
The two_ranks traces have no deviceProperties; their "blocks per SM" say
108 SMs, and their kernels are checked against the A100-PG509-200 of the
other HTA traces of that cluster (device key "assumed-a100-pg509").
Python 3, standard library only.
"""

import gzip
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.join(HERE, "..", "gpu-traces")
ASSUMED = ("two_ranks_rank0.json.gz", "two_ranks_rank1.json.gz")
ASSUMED_FROM = "a100_alexnet_cuda_sync.json.gz"


class Raw(str):
    """A JSON number kept as the trace wrote it."""


def load(name):
    with gzip.open(os.path.join(TRACES, name), "rt", encoding="utf-8") as f:
        return json.load(f, parse_float=Raw, parse_int=Raw)


def compact(entry):
    def plain(v):
        return int(v) if isinstance(v, Raw) else v

    return json.dumps({k: plain(v) for k, v in entry.items()}, separators=(",", ":"))


def main():
    lines = []
    assumed_key = "assumed-a100-pg509"
    assumed = load(ASSUMED_FROM)["deviceProperties"][0]
    lines.append("device\t%s\t%s" % (assumed_key, compact(assumed)))
    for name in sorted(os.listdir(TRACES)):
        if not name.endswith(".json.gz"):
            continue
        doc = load(name)
        stem = name[: -len(".json.gz")]
        keys = {}
        for entry in doc.get("deviceProperties") or []:
            key = "%s-%d" % (stem, int(entry["id"]))
            keys[int(entry["id"])] = key
            lines.append("device\t%s\t%s" % (key, compact(entry)))
        launches = {}
        kernels = 0
        for e in doc["traceEvents"]:
            if e.get("cat") not in ("kernel", "Kernel"):
                continue
            a = e["args"]
            device = int(a["device"])
            key = assumed_key if name in ASSUMED else keys.get(device)
            if key is None:
                continue
            kernels += 1
            launch = (
                key,
                ",".join(str(int(v)) for v in a["grid"]),
                ",".join(str(int(v)) for v in a["block"]),
                str(int(a["registers per thread"])),
                str(int(a["shared memory"])),
                str(a["blocks per SM"]),
                str(a["warps per SM"]),
                str(int(a["est. achieved occupancy %"])),
            )
            launches[launch] = launches.get(launch, 0) + 1
        lines.append("trace\t%s\t%d" % (name, kernels))
        for launch, count in launches.items():
            lines.append("kernel\t" + "\t".join(launch) + "\t%d" % count)
    with open(os.path.join(HERE, "cases.tsv"), "w", encoding="utf-8") as f:
        f.write("# written by make_cases.py from tests/data/gpu-traces: do not edit\n")
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
