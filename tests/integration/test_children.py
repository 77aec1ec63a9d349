"""Child processes follow their parent's windows (issue #23, build item 3).

Under a schedule, a DataLoader worker or any forked or spawned child that has
no steps of its own records while its nearest ancestor's window is open, and
its events join that window's trace; a child never invents steps; a child
that has steps of its own (a rank that a step-less launcher started) runs its
own schedule.

References that cannot drift: the scripts' own loop counts and the
schedule's recorded steps; which process ran what is told by ops only that
process runs (the workers' dataset runs aten::cumsum, the spawned children
aten::flip and aten::tril, the main process aten::mm). A spawned child is
joined inside one step, so whether it runs in a window is the script's
choice, never timing."""

import os
import re
import textwrap

import ptproftest as T

SCHEDULE = "wait=1,warmup=1,active=3"  # records steps 2, 3, 4: window 0
STEPS = 6

# Two persistent DataLoader workers, started before the first window; the
# dataset's aten::cumsum runs in the workers only. prefetch_factor=1: batch k
# goes to worker k % 2 and is asked for in step k - 2; the main process takes
# it in step k. Batches 3 and 4 (items 6 to 9), one per worker, are taken in
# steps 3 and 4, inside the window: their items wait until the worker's agent
# says it records (ptprof.recording()), which it must do before the window
# ends, as the main process waits for them inside it. So each worker records
# them by the script's structure, not by how soon its follower woke up; the
# deadline only turns a worker that never follows into a failure, not a hang.
WORKERS = """
import os, sys, time, torch, torch.nn as nn
from torch.utils.data import DataLoader, Dataset
import ptprof

def note(role):
    with open(sys.argv[1], "a") as f:
        f.write("%s %d\\n" % (role, os.getpid()))

class Items(Dataset):
    def __len__(self):
        return 4 * STEPS

    def __getitem__(self, i):
        if 6 <= i <= 9:
            deadline = time.monotonic() + 120
            while not ptprof.recording() and time.monotonic() < deadline:
                time.sleep(0.001)
        return torch.ones(4).cumsum(0) * i

def init(worker_id):
    note("worker%d" % worker_id)

note("main")
torch.manual_seed(0)
model = nn.Linear(4, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(Items(), batch_size=2, num_workers=2, prefetch_factor=1, persistent_workers=True,
                    worker_init_fn=init)
it = iter(loader)
for step in range(STEPS):
    x = next(it)
    a = torch.ones(8, 8)
    for _ in range(20):
        a = a.mm(a) / 8
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
""".replace("STEPS", str(STEPS))

# A main process with steps that starts two 'spawn' children, each joined
# inside one step: one in step 0 (before any window: aten::tril, nothing of
# it recorded) and one in step 3 (inside window 0: aten::flip, all of it).
SPAWN = """
import multiprocessing as mp
import os, sys, torch, torch.nn as nn

def note(role):
    with open(sys.argv[1], "a") as f:
        f.write("%s %d\\n" % (role, os.getpid()))

def child(role, op, n):
    note(role)
    x = torch.ones(4, 4)
    for _ in range(n):
        x = getattr(x, op)(0)

if __name__ == "__main__":
    note("main")
    torch.manual_seed(0)
    model = nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ctx = mp.get_context("spawn")
    for step in range(STEPS):
        if step in (0, 3):
            role, op, n = ("outside", "tril", 5) if step == 0 else ("inside", "flip", 7)
            p = ctx.Process(target=child, args=(role, op, n))
            p.start()
            p.join()
            assert p.exitcode == 0, p.exitcode
        opt.zero_grad()
        model(torch.ones(2, 4)).sum().backward()
        opt.step()
""".replace("STEPS", str(STEPS))
SPAWN_FLIPS = 7

# Two DataLoader workers started with the 'spawn' context (new interpreters:
# the agent cannot tell them by a fork), no schedule.
SPAWN_WORKERS = """
import os, sys, torch
from torch.utils.data import DataLoader, Dataset

class Items(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.ones(4).cumsum(0) * i

def init(worker_id):
    with open(sys.argv[1], "a") as f:
        f.write("worker%d %d\\n" % (worker_id, os.getpid()))

if __name__ == "__main__":
    with open(sys.argv[1], "a") as f:
        f.write("main %d\\n" % os.getpid())
    loader = DataLoader(Items(), batch_size=2, num_workers=2, multiprocessing_context="spawn", worker_init_fn=init)
    assert sum(1 for _ in loader) == 4
"""

# A launcher with no steps of its own (as torchrun) that runs a rank with
# steps: the rank keeps its own schedule.
RANK = """
import os, sys, torch, torch.nn as nn
with open(sys.argv[1], "a") as f:
    f.write("rank %d\\n" % os.getpid())
torch.manual_seed(0)
model = nn.Linear(4, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(STEPS):
    opt.zero_grad()
    model(torch.ones(2, 4)).sum().backward()
    opt.step()
""".replace("STEPS", str(STEPS))
LAUNCH = """
import os, subprocess, sys, torch
with open(sys.argv[1], "a") as f:
    f.write("launcher %d\\n" % os.getpid())
torch.ones(2).cumsum(0)
env = dict(os.environ, RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
subprocess.run([sys.executable, sys.argv[2], sys.argv[1]], env=env, check=True)
"""


# The main process forks a child in step 3 (inside window 0) and, once the
# child has run its 7 aten::flip, SIGKILLs itself: its agent never ends the
# window. The child waits for its parent to be gone, then for its own
# recording to stop (ptprof.recording()), and says which came first: the
# window closed, or the deadline (only a failure ends there, never a pass).
# What it runs after that, 3 aten::tril, must not be in the trace.
KILLED_PARENT = """
import os, signal, sys, time, torch, ptprof, torch.nn as nn

def note(role, pid):
    with open(sys.argv[1], "a") as f:
        f.write("%s %d\\n" % (role, pid))

def wait_for(cond, seconds):
    deadline = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True

note("main", os.getpid())
model = nn.Linear(4, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(6):
    if step == 3:
        parent = os.getpid()
        r, w = os.pipe()
        if os.fork() == 0:
            note("child", os.getpid())
            x = torch.ones(4, 4)
            for _ in range(7):
                x = x.flip(0)
            os.write(w, b"x")
            gone = wait_for(lambda: os.getppid() != parent, 60)
            closed = gone and wait_for(lambda: not ptprof.recording(), 60)
            note("closed" if closed else ("recording" if gone else "parent_alive"), os.getpid())
            for _ in range(3):
                x = x.tril()
            os._exit(0)
        os.read(r, 1)
        os.kill(os.getpid(), signal.SIGKILL)
    opt.zero_grad()
    model(torch.ones(2, 4)).sum().backward()
    opt.step()
"""


def write(d, name, text):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))
    return path


def files_by_pid(out):
    """{pid: {window number: path}} of the run's trace files."""
    files = {}
    for f in sorted(os.listdir(out)):
        m = re.match(r"^.+?\.(\d+)(?:-\d+)?\.[0-9a-f]{8}\.w(\d{3})\.bin$", f)
        if m:
            files.setdefault(int(m.group(1)), {})[int(m.group(2))] = os.path.join(out, f)
    return files


def calls(path, op):
    rows = {r["name"]: r["calls"] for r in T.report_json(path)["rows"]}
    return rows.get(op, 0)


def run(d, script, *args, schedule=SCHEDULE):
    out = os.path.join(d, "out")
    roles_file = os.path.join(d, "roles.txt")
    flags = ["--schedule", schedule] if schedule else []
    proc = T.run_ptprof(["run", "-o", out] + flags + ["--", T.PYTHON, script, roles_file] + list(args))
    T.check_eq(proc.returncode, 0, "ptprof run\n" + T.describe(proc))
    return out, T.read_roles(roles_file), proc


def test_dataloader_workers_record_in_the_parents_window():
    with T.tempdir() as d:
        out, roles, proc = run(d, write(d, "workers.py", WORKERS))
        T.check_eq(sorted(roles), ["main", "worker0", "worker1"], "roles that ran")
        files = files_by_pid(out)
        rep = T.report_json(out)
        T.check_eq([s["step"] for s in rep["steps"]], [2, 3, 4], "the steps recorded are the main process's")
        T.check_eq({s["pid"] for s in rep["steps"]}, {roles["main"]}, "steps from the main process only")
        worker_cumsum = 0
        for w in ("worker0", "worker1"):
            pid = roles[w]
            T.check_eq(
                sorted(files.get(pid, {})),
                [0],
                "%s's files are of window 0, and only of it: %s" % (w, sorted(os.listdir(out))),
            )
            worker_cumsum_w = 0
            for path in files.get(pid, {}).values():
                worker_cumsum_w += calls(path, "aten::cumsum")
                T.check_eq(calls(path, "aten::mm"), 0, "%s ran no aten::mm" % w)
            # Its batch of steps 3 or 4 (2 items), at most every item asked
            # for by the window's end.
            T.check(
                2 <= worker_cumsum_w <= 4 * STEPS,
                "%s's aten::cumsum inside the window: %d\n%s" % (w, worker_cumsum_w, T.describe(proc)),
            )
            worker_cumsum += worker_cumsum_w
        T.check(worker_cumsum >= 4, "the workers' aten::cumsum inside the window: %d" % worker_cumsum)
        main_files = files.get(roles["main"], {})
        T.check_eq(sorted(main_files), [0], "the main process's window")
        # ptprof's own labels, in the report and the run summary.
        labels = {p["pid"]: p["role"] for p in rep.get("processes", [])}
        T.check_eq(labels.get(roles["main"]), "main", "the main process's role in the report: %s" % labels)
        T.check_eq(
            sorted(labels.get(roles[w]) for w in ("worker0", "worker1")),
            ["DataLoader worker 0", "DataLoader worker 1"],
            "the workers' roles in the report: %s" % labels,
        )
        for w, n in (("worker0", 0), ("worker1", 1)):
            T.check(
                "DataLoader worker %d (pid %d)" % (n, roles[w]) in proc.stderr,
                "the run summary labels %s:\n%s" % (w, T.describe(proc)),
            )
        for path in main_files.values():
            T.check_eq(calls(path, "aten::cumsum"), 0, "the dataset's ops are the workers'")


def test_dataloader_workers_without_a_schedule_invent_no_steps():
    with T.tempdir() as d:
        out, roles, _ = run(d, write(d, "workers.py", WORKERS), schedule=None)
        rep = T.report_json(out)
        T.check_eq([s["step"] for s in rep["steps"]], list(range(STEPS)), "the main process's steps")
        T.check_eq({s["pid"] for s in rep["steps"]}, {roles["main"]}, "steps from the main process only")
        files = files_by_pid(out)
        for w in ("worker0", "worker1"):
            T.check(
                sum(calls(p, "aten::cumsum") for p in files.get(roles[w], {}).values()) > 0, "%s recorded its ops" % w
            )


def test_spawned_dataloader_workers_are_labelled_workers():
    with T.tempdir() as d:
        out, roles, proc = run(d, write(d, "spawn_workers.py", SPAWN_WORKERS), schedule=None)
        T.check_eq(sorted(roles), ["main", "worker0", "worker1"], "roles that ran")
        labels = {p["pid"]: p["role"] for p in T.report_json(out).get("processes", [])}
        for w, n in (("worker0", 0), ("worker1", 1)):
            T.check_eq(labels.get(roles[w]), "DataLoader worker %d" % n, "%s in the report: %s" % (w, labels))
            T.check(
                "DataLoader worker %d (pid %d)" % (n, roles[w]) in proc.stderr,
                "the run summary labels %s:\n%s" % (w, T.describe(proc)),
            )


def test_spawned_child_follows_the_parents_window():
    with T.tempdir() as d:
        out, roles, proc = run(d, write(d, "spawn.py", SPAWN))
        T.check_eq(sorted(roles), ["inside", "main", "outside"], "roles that ran")
        files = files_by_pid(out)
        rep = T.report_json(out)
        T.check_eq([s["step"] for s in rep["steps"]], [2, 3, 4], "the main process's steps only")
        inside = files.get(roles["inside"], {})
        T.check_eq(sorted(inside), [0], "the child joined in step 3 recorded in window 0\n" + T.describe(proc))
        T.check_eq(
            sum(calls(p, "aten::flip") for p in inside.values()),
            SPAWN_FLIPS,
            "every aten::flip of the child inside the window",
        )
        outside = files.get(roles["outside"], {})
        T.check_eq(
            sum(calls(p, "aten::tril") for p in outside.values()),
            0,
            "nothing of the child joined in step 0, before any window",
        )


def test_a_killed_parent_ends_its_followers_window():
    # The parent's agent never ends its window (SIGKILL): the launcher ends
    # it on its behalf when it sees the process gone. Before, the child
    # recorded on until it exited ("recording" after 60 s).
    with T.tempdir() as d:
        out = os.path.join(d, "out")
        roles_file = os.path.join(d, "roles.txt")
        proc = T.run_ptprof(
            ["run", "-o", out, "--schedule", SCHEDULE, "--", T.PYTHON, write(d, "killed.py", KILLED_PARENT), roles_file]
        )
        T.check_eq(proc.returncode, 128 + 9, "ptprof run passes on the SIGKILL\n" + T.describe(proc))
        roles = T.read_roles(roles_file)
        T.check(
            "closed" in roles,
            "the child's window ended after its parent was killed: %s\n%s" % (sorted(roles), T.describe(proc)),
        )
        child = files_by_pid(out).get(roles.get("child"), {})
        T.check_eq(sorted(child), [0], "the child's files: window 0's\n" + T.describe(proc))
        T.check_eq(sum(calls(p, "aten::flip") for p in child.values()), 7, "the child's ops inside the window")
        T.check_eq(sum(calls(p, "aten::tril") for p in child.values()), 0, "nothing after the window ended")


def test_rank_with_steps_keeps_its_own_schedule():
    with T.tempdir() as d:
        rank = write(d, "rank.py", RANK)
        out, roles, proc = run(d, write(d, "launch.py", LAUNCH), rank)
        rep = T.report_json(out)
        T.check_eq([s["step"] for s in rep["steps"]], [2, 3, 4], "the rank's own steps 2..4\n" + T.describe(proc))
        T.check_eq({s["pid"] for s in rep["steps"]}, {roles["rank"]}, "steps from the rank only")
        T.check_eq(sorted(files_by_pid(out).get(roles["rank"], {})), [0], "the rank's own window 0")


if __name__ == "__main__":
    T.main()
