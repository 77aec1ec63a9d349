"""A collective's facts, as torch gives them, from a real torch: a library
built against the torch under test (scripts/param_comms.py) opens
`record_param_comms` scopes through c10d's RECORD_PARAM_COMMS macro, as
NCCL's process group does (gloo's records none, and this machine has no GPU).
The bridge reads each scope's ParamCommsDebugInfo: torch 2.x gives the
process group, its sequence number, element counts, dtype and group size;
torch 1.13 the collective's name, element counts and dtype only. The dataset
has them; two ranks making the same calls in different orders are matched by
sequence number on torch 2.x (by order on 1.13), in the report and in
`ptprof query --report` alike."""

import json
import os

import dataset_check as D
import ptproftest as T

SCRIPT = os.path.join(T.HERE, "scripts", "param_comms.py")
LAUNCH = os.path.join(T.HERE, "scripts", "launch_ranks.py")
TORCH2 = not os.environ.get("PTPROF_TORCH_VERSION", "").startswith("1.")


def library_dir():
    """Built once per torch into the build tree (a few seconds of compiling)."""
    d = os.path.join(os.environ["PTPROF_BUILD_DIR"], "test-param-comms")
    proc = T.run_python([SCRIPT, "build", d], timeout=600)
    T.check_eq(proc.returncode, 0, "building scripts/param_comms.py's library\n" + T.describe(proc))
    return d


def test_the_dataset_has_torchs_facts_of_each_call():
    D.need_pyarrow()
    lib = library_dir()
    with T.tempdir() as d:
        out = os.path.join(d, "traces")
        proc = T.run_ptprof(["run", "-o", out, "--", T.PYTHON, SCRIPT, "run", lib], env=T.clean_env())
        T.check_eq(proc.returncode, 0, T.describe(proc))
        data = D.export_and_read(out, os.path.join(d, "ds"), "collectives")
        rows = data.get("collectives", {}).get("rows", [])
        keys = (
            "name",
            "nested",
            "process_group",
            "process_group_desc",
            "seq",
            "collective",
            "in_elements",
            "out_elements",
            "dtype",
            "group_size",
        )
        got = [tuple(r[k] for k in keys) for r in sorted(rows, key=lambda r: r["start_ns"])]
        if TORCH2:
            want = [
                ("record_param_comms", False, "0", "default_pg", seq, "allreduce", 16, 16, "Float", 2)
                for seq in (5, 6, 7)
            ]
        else:  # 1.13's ParamCommsDebugInfo: no process group, sequence number or group size
            want = [("record_param_comms", False, None, None, None, "allreduce", 16, 16, "Float", None)] * 3
        T.check_eq(got, want, "the collectives table: %s" % (keys,))
        check_chrome_args(d, out, lib)


def comms_args(path):
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    return [e["args"] for e in sorted(events, key=lambda e: e.get("ts", 0)) if e.get("name") == "record_param_comms"]


def check_chrome_args(d, out, lib):
    """The Chrome export gives each call's facts under Kineto's names, with
    torch.profiler's own values for them (torch 2.x; 1.13's profiler writes
    none)."""
    ours = os.path.join(d, "ours.json")
    proc = T.run_ptprof(["export", out, "--chrome", ours])
    T.check_eq(proc.returncode, 0, T.describe(proc))
    mine = comms_args(ours)
    T.check_eq(len(mine), 3, "three record_param_comms in the export")
    T.check(
        all(
            a.get("Collective name") == "allreduce" and a.get("In msg nelems") == 16 and a.get("dtype") == "Float"
            for a in mine
        ),
        "the calls' facts in the export's args: %r" % mine,
    )
    if not TORCH2:
        return
    ref = os.path.join(d, "torch.json")
    proc = T.run_python([SCRIPT, "torch", lib, ref], env=T.clean_env())
    T.check_eq(proc.returncode, 0, T.describe(proc))
    theirs = comms_args(ref)
    keys = (
        "Collective name",
        "dtype",
        "In msg nelems",
        "Out msg nelems",
        "Group size",
        "Process Group Name",
        "Process Group Description",
        "Rank",
        "Seq",
    )
    T.check_eq(
        [{k: a.get(k) for k in keys} for a in mine],
        [{k: a.get(k) for k in keys} for a in theirs],
        "the export's collective args against torch.profiler's",
    )


def test_ranks_are_matched_by_sequence_number_where_torch_gives_one():
    lib = library_dir()
    with T.tempdir() as d:
        out = os.path.join(d, "traces")
        proc = T.run_ptprof(
            ["run", "-o", out, "--step", "iteration", "--", T.PYTHON, LAUNCH, "2", SCRIPT, "steps", lib],
            env=T.clean_env(),
        )
        T.check_eq(proc.returncode, 0, T.describe(proc))
        rep = T.report_json(out)
        rows = rep["collective_arrivals"]
        T.check_eq(sorted({r["step"] for r in rows}), [0, 1, 2], "the steps' collectives, step 0 too")
        T.check(all(r["ranks"] == 2 for r in rows), "rows of both ranks: %r" % rows)
        by_step = {}
        for r in rows:
            by_step.setdefault(r["step"], []).append(r)
        for step, of_step in sorted(by_step.items()):
            # Step N (--step numbers from 0) holds the calls 2N and 2N+1, rank 1 making them in the other order.
            if TORCH2:
                T.check_eq(
                    [(r["process_group"], r["seq"]) for r in of_step],
                    [("0", 2 * step), ("0", 2 * step + 1)],
                    "step %d: matched by process group and sequence number" % step,
                )
            else:
                T.check_eq(
                    [(r["process_group"], r["seq"]) for r in of_step],
                    [(None, None), (None, None)],
                    "step %d: torch 1.13 numbers nothing: matched by order" % step,
                )
        text = T.run_ptprof(["report", out])
        T.check(("0:3" in text.stdout) == TORCH2, "the text report's Group:seq column\n" + text.stdout[-3000:])
        if D.analysis_python() is None:
            return
        ds = os.path.join(d, "ds")
        data = D.export_and_read(out, ds, "collectives")
        # What rank 1 recorded: its calls in the order it made them.
        calls = sorted(
            (r for r in data.get("collectives", {}).get("rows", []) if r["rank"] == 1), key=lambda r: r["start_ns"]
        )
        if TORCH2:
            T.check_eq([c["seq"] for c in calls], [1, 0, 3, 2, 5, 4], "rank 1's calls, as torch numbered them")
        q = D.query_report(ds)
        T.check_eq(q.get("collective_arrivals"), rows, "query --report's arrivals equal the report's, every field")


if __name__ == "__main__":
    T.main()
