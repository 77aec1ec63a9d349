"""What scripts/gpu-check.sh --dry-run does with Python, where a GPU is missing.

python dry_run.py formats CANNED_DIR OUT_DIR
    The canned GPU outputs (CANNED_DIR/mlp.{torch,ptprof,timing}.json,
    synthetic) must have the formats that this checkout writes: the
    workloads' summaries and timings and `ptprof report --format json`
    as the dry run just wrote them on the CPU (OUT_DIR/MODEL.*.json).
    A report on the CPU lacks only the CUDA columns and keys, which are
    named. compare.py's reading and table code then runs on the CPU
    outputs (no GPU numbers there: run, not judged). Exits 1 when a
    format drifted.
python dry_run.py break REPORT.json BROKEN.json
    A copy of a ptprof report with one kernel instance more and one
    op's Self CUDA Mem one caching-allocator block (512 B) larger:
    compare.py must name both.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

MODELS = ("mlp", "conv")
RUNS = {"none", "torch.profiler", "ptprof"}
# What a report has only when the trace holds CUDA activity.
CUDA_ONLY_KEYS = {"gpu", "self_cuda_time_total_us", "cuda_api_summary"}
# What compare.from_ptprof reads.
ROW_KEYS_READ = {"name", "cuda_total_us", "self_cuda_memory_bytes", "cuda_memory_bytes"}
GPU_KEYS_READ = {"kernel_total_ns", "kernels", "memory_ops", "overheads"}


def load(path):
    with open(path) as f:
        return json.load(f)


def row_keys(report):
    keys = set()
    for row in report.get("rows", []):
        keys |= set(row)
    return keys - {"stack"}


def check_canned_report(canned, problems):
    """What compare.py reads must be there, and the rows must have the columns' keys."""
    canned_cols = [c["key"] for c in canned["columns"]]
    if row_keys(canned) != set(canned_cols):
        problems.append("canned report: its rows' keys are not its columns'")
    if not ROW_KEYS_READ <= set(canned_cols) or not GPU_KEYS_READ <= set(canned.get("gpu", {})):
        problems.append(
            "canned report: lacks what compare.py reads (%s, gpu: %s)" % (sorted(ROW_KEYS_READ), sorted(GPU_KEYS_READ))
        )


def check_report(canned, real, model, problems):
    """The canned report against one ptprof wrote on the CPU: returns the
    columns only the canned one has (they must be CUDA's)."""
    extra = (set(canned) ^ set(real)) - CUDA_ONLY_KEYS
    if extra:
        problems.append("%s: report keys differ beyond the CUDA ones: %s" % (model, sorted(extra)))
    canned_cols = [c["key"] for c in canned["columns"]]
    real_cols = [c["key"] for c in real["columns"]]
    if row_keys(real) != set(real_cols):
        problems.append("%s: the report's rows' keys are not its columns'" % model)
    missing = [k for k in real_cols if k not in canned_cols]
    if missing:
        problems.append("%s: the canned report lacks the columns %s" % (model, missing))
    cuda_cols = [k for k in canned_cols if k not in real_cols]
    if any("cuda" not in k for k in cuda_cols):
        problems.append("%s: the canned report has columns ptprof does not write: %s" % (model, cuda_cols))
    if "gpu" in real and set(real["gpu"]) != set(canned["gpu"]):
        problems.append(
            "%s: the report's gpu keys %s, the canned %s" % (model, sorted(real["gpu"]), sorted(canned["gpu"]))
        )
    return cuda_cols


def formats(canned_dir, out_dir):
    problems = []
    canned_torch = load(os.path.join(canned_dir, "mlp.torch.json"))
    canned_report = load(os.path.join(canned_dir, "mlp.ptprof.json"))
    canned_timing = load(os.path.join(canned_dir, "mlp.timing.json"))
    if set(canned_timing) != RUNS:
        problems.append("canned timing: runs %s, expected %s" % (sorted(canned_timing), sorted(RUNS)))
    check_canned_report(canned_report, problems)
    for model in MODELS:
        before = len(problems)
        real_torch = load(os.path.join(out_dir, model + ".torch.json"))
        real_report = load(os.path.join(out_dir, model + ".ptprof.json"))
        real_timing = load(os.path.join(out_dir, model + ".timing.json"))
        if set(real_torch) != set(canned_torch):
            problems.append(
                "%s: torch summary keys %s, the canned %s" % (model, sorted(real_torch), sorted(canned_torch))
            )
        if set(real_timing) != RUNS or any(set(real_timing[r]) != set(canned_timing["none"]) for r in real_timing):
            problems.append("%s: timing %s, the canned %s" % (model, real_timing, canned_timing))
        cuda_cols = check_report(canned_report, real_report, model, problems)
        lines, _ = compare.side_by_side(model, real_torch, compare.from_ptprof(real_report), real_timing)
        print(
            "%s: %s (the CPU's report lacks %s%s); compare.py ran on the CPU outputs: %d lines"
            % (
                model,
                "formats as canned" if len(problems) == before else "FORMATS DRIFTED",
                ", ".join(cuda_cols),
                "" if "gpu" in real_report else ", gpu",
                len(lines),
            )
        )
    for p in problems:
        print("FORMAT: " + p)
    return 1 if problems else 0


def break_report(src, dst):
    report = load(src)
    kernel = report["gpu"]["kernels"][0]
    kernel["time_ns"]["count"] += 1
    row = next(r for r in report["rows"] if r.get("self_cuda_memory_bytes"))
    row["self_cuda_memory_bytes"] += 512
    row["cuda_memory_bytes"] += 512
    with open(dst, "w") as f:
        json.dump(report, f, indent=1)
    print("broken copy: kernel %r one instance more, op %r 512 B more Self CUDA Mem" % (kernel["name"], row["name"]))
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == "formats":
        return formats(argv[2], argv[3])
    if len(argv) == 4 and argv[1] == "break":
        return break_report(argv[2], argv[3])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
