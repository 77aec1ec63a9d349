"""A script that starts torch's profiler itself, under --profile-memory.

ptprof's memory reporter holds each thread's PROFILER_STATE slot, which
torch's profiler wants empty ("Profiler is already enabled on this
thread"): the agent wraps torch's enableProfiler* so that the reporter steps
aside, and the bridge puts it back at the thread's next operator. Checked:
the script's own profiler works and sees its memory (aten::ones of
torch.ones(256, 256): 1 call, 256 KiB); ptprof records every aten::ones call
and the memory before and after the script's profiler (the five
torch.ones(64, 64) it keeps, live at the window's end), not what torch's
profiler took while it held the slot.
"""

import os

import ptproftest as T

SCRIPT = os.path.join(T.HERE, "scripts", "own_profiler.py")


def test_own_profiler_under_profile_memory():
    with T.tempdir() as d:
        out = os.path.join(d, "out")
        proc = T.run_ptprof(
            [
                "run",
                "-o",
                out,
                "--profile-memory",
                "--record-shapes",
                "--schedule",
                "active=6,repeat=1",
                "--",
                T.PYTHON,
                SCRIPT,
            ],
            env=T.clean_env(),
        )
        T.check(proc.returncode == 0, "ptprof run: " + T.describe(proc))
        T.check(
            "own profiler: aten::ones calls 1 cpu_memory 262144" in proc.stdout,
            "the script's profiler saw its torch.ones(256, 256):\n" + T.describe(proc),
        )
        T.check("own_profiler: 5 tensors kept" in proc.stdout, T.describe(proc))
        rep = T.report_json(out)
        ones = [r for r in rep["rows"] if r["name"] == "aten::ones"]
        T.check_eq(sum(r["calls"] for r in ones), 6, "aten::ones calls ptprof recorded")
        mem = T.run_ptprof(["memory", out, "--bytes", "--row-limit", "0"])
        T.check(mem.returncode == 0, T.describe(mem))
        # The window's live blocks, not the growth table above them, which names the same op.
        window_live = mem.stdout[mem.stdout.find("Live at the end of the window") :]
        live = [line for line in window_live.splitlines() if line.rstrip().endswith("aten::ones [64, 64]")]
        T.check(len(live) == 1, "one live group of aten::ones [64, 64]:\n" + mem.stdout)
        fields = live[0].split()
        T.check_eq((int(fields[0]), int(fields[1])), (5 * 64 * 64 * 4, 5), "bytes and count live:\n" + mem.stdout)
        T.check(
            "aten::ones [256, 256]" not in mem.stdout,
            "the allocation made under the script's profiler went to it, not to ptprof:\n" + mem.stdout,
        )
        print(live[0].strip(), flush=True)


if __name__ == "__main__":
    T.main()
