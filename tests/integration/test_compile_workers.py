"""torch inductor's compile workers are labelled so (issue #23, build item 3;
torch 2.x only: torch 1.13 has no inductor).

The script starts inductor's compile pool itself (no compile: seconds, not
minutes) and has it run one job, so the pool's processes start: the pool's
own process runs torch/_inductor/compile_worker (told by its command line)
and forks its workers (children of a compile worker). References that cannot
drift: the processes the pool started are children of the main process, and
each one ptprof saw is labelled compile worker, never child."""

import os
import re

import ptproftest as T

REQUIRES = ("torch2",)

POOL = """
import operator
from torch._inductor.async_compile import AsyncCompile
AsyncCompile.warm_pool()
assert AsyncCompile.process_pool().submit(operator.add, 1, 2).result(timeout=300) == 3
"""


def test_compile_pool_processes_are_compile_workers():
    with T.tempdir() as d:
        script = os.path.join(d, "pool.py")
        with open(script, "w") as f:
            f.write(POOL)
        out = os.path.join(d, "out")
        proc = T.run_ptprof(["run", "-o", out, "--", T.PYTHON, script])
        T.check_eq(proc.returncode, 0, "ptprof run\n" + T.describe(proc))
        m = re.search(r"^ptprof: processes: (.*)$", proc.stderr, re.M)
        T.check(m, "the run summary lists the processes:\n" + proc.stderr)
        if not m:
            return
        roles = re.findall(r"(main|compile worker|DataLoader worker \d+|rank \d+|child) \(pid \d+\)", m.group(1))
        T.check_eq(roles[:1], ["main"], "the main process first: " + m.group(1))
        T.check(
            len(roles) >= 2 and set(roles[1:]) == {"compile worker"},
            "every process of the pool a compile worker: " + m.group(1),
        )
        processes = T.report_json(out).get("processes", [])
        pool = [p for p in processes if "torch/_inductor/compile_worker" in p["cmdline"]]
        T.check_eq([p["role"] for p in pool], ["compile worker"], "the pool's process in the report: %r" % processes)


if __name__ == "__main__":
    T.main()
