"""Process trees: every process under `ptprof run` is profiled with its own
pid, and its ops are its own. scripts/process_tree.py runs a DataLoader with
two forked workers whose dataset runs aten::cumsum, a multiprocessing 'spawn'
child (aten::cumprod), a 'forkserver' child (aten::flip) and an exec'd
subprocess (aten::tril); the main process runs aten::mm. Each process writes
its role and pid to a file, so the test knows which pid is whose."""

import os
import re

import ptproftest as T

SCRIPT = os.path.join(T.HERE, "scripts", "process_tree.py")

ITEMS, MAIN_MM, SPAWN_OPS, FORKSERVER_OPS, EXEC_OPS = 8, 5, 3, 4, 6

# role -> (op only that role runs, how many times)
EXPECTED = {
    "main": ("aten::mm", MAIN_MM),
    "worker0": ("aten::cumsum", ITEMS // 2),
    "worker1": ("aten::cumsum", ITEMS // 2),
    "spawn": ("aten::cumprod", SPAWN_OPS),
    "forkserver": ("aten::flip", FORKSERVER_OPS),
    "exec": ("aten::tril", EXEC_OPS),
}
DISTINCT_OPS = sorted({op for op, _ in EXPECTED.values()})


def op_calls(path):
    """{op name: calls} of one trace file."""
    return {r["name"]: r["calls"] for r in T.report_json(path)["rows"]}


def test_every_process_has_its_own_file_and_ops():
    check_tree()


def test_processes_drained_on_three_threads_are_the_same():
    """The launcher's drain on several threads (PTPROF_DRAIN_THREADS, one
    process on one thread at a time): the same files and ops, and the
    debug log says it used them."""
    check_tree(drain_threads=3)


def check_tree(drain_threads=None):
    with T.tempdir() as d:
        out = os.path.join(d, "out")
        roles_file = os.path.join(d, "roles.txt")
        env = T.clean_env()
        if drain_threads:
            env.update(PTPROF_DRAIN_THREADS=str(drain_threads), PTPROF_LOG_LEVEL="debug")
        proc = T.run_ptprof(["run", "-o", out, "--", T.PYTHON, SCRIPT, roles_file], env=env)
        T.check_eq(proc.returncode, 0, "ptprof run\n" + T.describe(proc))
        if drain_threads:
            T.check(
                re.search(r"ptprof: debug: \d+ processes: drained on %d threads" % drain_threads, proc.stderr),
                "the launcher says it drained on %d threads\n%s" % (drain_threads, T.describe(proc)),
            )
        roles = T.read_roles(roles_file)
        T.check_eq(sorted(roles), sorted(EXPECTED), "roles that ran")
        T.check_eq(len(set(roles.values())), len(roles), "every role is a process of its own: %r" % roles)

        files = [f for f in os.listdir(out) if f.endswith(".bin")]
        by_pid = {}
        for f in files:
            # <host>.<pid>[-<exec>].<run id>.wNNN.bin: the run id is not optional,
            # or one of all decimal digits would read as the pid
            m = re.match(r"^.+?\.(\d+)(?:-\d+)?\.[0-9a-f]{8}\.w(\d{3})\.bin$", f)
            if T.check(m, "file name %s is <host>.<pid>[-K].<run>.wNNN.bin" % f):
                by_pid.setdefault(int(m.group(1)), []).append(os.path.join(out, f))
        for role, pid in sorted(roles.items()):
            op, count = EXPECTED[role]
            if not T.check(pid in by_pid, "%s (pid %d) has a trace file; files: %s" % (role, pid, sorted(files))):
                continue
            calls = {}
            for path in by_pid[pid]:
                for name, n in op_calls(path).items():
                    calls[name] = calls.get(name, 0) + n
            T.check_eq(calls.get(op, 0), count, "%s (pid %d): %s calls" % (role, pid, op))
            # Nobody else's ops: the dataset's ops are the workers', not the main process's.
            for other in DISTINCT_OPS:
                if other != op and other != "aten::mm":
                    T.check_eq(calls.get(other, 0), 0, "%s (pid %d): %s calls" % (role, pid, other))
            if role != "main":
                T.check_eq(calls.get("aten::mm", 0), 0, "%s (pid %d): aten::mm calls" % (role, pid))

        # The merged report lists every process with its pid, parent and op count.
        rep = T.report_json(out)
        procs = {p["pid"]: p for p in rep["processes"]}
        for role, pid in sorted(roles.items()):
            if T.check(pid in procs, "report lists %s (pid %d): %r" % (role, pid, sorted(procs))):
                T.check(procs[pid]["ops"] >= EXPECTED[role][1], "%s: op count %d" % (role, procs[pid]["ops"]))
                T.check_eq(procs[pid]["rank"], -1, "%s: no rank outside a distributed job" % role)
        for w in ("worker0", "worker1"):
            if roles.get(w) in procs:
                T.check_eq(procs[roles[w]]["ppid"], roles["main"], "%s's parent is the main process" % w)
        table = T.run_ptprof(["report", out])
        T.check(
            table.returncode == 0 and "Processes" in table.stdout,
            "the table has a Processes section\n" + T.describe(table),
        )
        T.check_eq(rep["ranks"], [], "no ranks outside a distributed job")


if __name__ == "__main__":
    T.main()
