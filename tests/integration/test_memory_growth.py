"""Leaks by growth (`ptprof memory`), once per torch: memory still allocated
at the end of each step, and what grows step over step.

1. mem_keep_ones.py keeps one torch.ones(512, 512) (1 MiB) per step for 12
   steps, run without a schedule (one window to the process's end: the
   interpreter frees the list at exit, after the last step, so nothing is
   live at the end of the window): `ptprof memory` names aten::ones
   [512, 512] as growth of 1 MiB per step over 12 steps, 12 blocks and
   12 MiB live at the last step's end; the live bytes at the steps' ends
   rise by 1 MiB per step.
2. The same with a schedule (steps 2-7 of 12 recorded): 6 steps, 6 MiB.
3. mem_same_each_step.py allocates and frees the same 1 MiB in every step:
   no growth.
"""

import os

import ptproftest as T

KEEP_ONES = os.path.join(T.HERE, "scripts", "mem_keep_ones.py")
SAME_EACH_STEP = os.path.join(T.HERE, "scripts", "mem_same_each_step.py")
MIB = 1 << 20


def record(script, d, *schedule):
    out = os.path.join(d, "out")
    proc = T.run_ptprof(
        ["run", "-o", out, "--profile-memory", "--record-shapes"] + list(schedule) + ["--", T.PYTHON, script],
        env=T.clean_env(STEPS=12),
    )
    if proc.returncode != 0:
        raise AssertionError("ptprof run failed: " + T.describe(proc))
    proc = T.run_ptprof(["memory", out, "--bytes", "--row-limit", "0"])
    if proc.returncode != 0:
        raise AssertionError("ptprof memory failed: " + T.describe(proc))
    return proc.stdout


def section(text, title):
    """The lines of the section whose heading starts with `title` (its
    heading may take two lines)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(title)), None)
    T.check(start is not None, "a section %r in:\n%s" % (title, text))
    if start is None:
        return []
    out = []
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            if out:
                break
            continue
        out.append(line)
    return out


def growth_rows(text):
    """(live at end, per step, steps, blocks, last step, device, op) of each row."""
    rows = section(text, "Growth step over step")
    if rows == ["  none"]:
        return []
    T.check(rows and rows[0].split()[:3] == ["live", "at", "end"], "the growth table's header:\n" + text)
    out = []
    for r in rows[1:]:
        f = r.split(None, 6)
        if not f[0].isdigit():
            continue  # a line of the op's stack
        out.append((int(f[0]), int(f[1]), int(f[2]), int(f[3]), int(f[4]), f[5], f[6]))
    return out


def step_rows(text):
    """(step, live, blocks, change) of the CPU rows of the steps table."""
    rows = section(text, "Live at the end of each step")[1:]
    out = []
    for r in rows:
        f = r.split()
        if f[1] == "CPU":
            out.append((int(f[2]), int(f[3]), int(f[4]), int(f[5])))
    return out


def check_keep_ones(text, steps):
    rows = growth_rows(text)
    T.check(len(rows) >= 1, "a growth row:\n" + text)
    live, per_step, n, blocks, last, device, op = rows[0]
    T.check_eq(op, "aten::ones [512, 512]", "the op that grows:\n" + text)
    T.check_eq(device, "CPU", "its device")
    T.check_eq(per_step, MIB, "growth per step:\n" + text)
    T.check_eq(n, steps, "steps that left a block:\n" + text)
    T.check_eq(blocks, steps, "blocks:\n" + text)
    T.check_eq(live, steps * MIB, "bytes live at the last step's end:\n" + text)
    cpu = step_rows(text)
    T.check_eq(len(cpu), steps, "a CPU row per recorded step:\n" + text)
    T.check_eq(last, cpu[-1][0], "the growth's last step is the last step:\n" + text)
    rises = [b[1] - a[1] for a, b in zip(cpu, cpu[1:])]
    T.check(all(r == MIB for r in rises), "the live bytes rise by 1 MiB per step: %s\n%s" % (rises, text))
    T.check(all(c[3] == MIB for c in cpu[1:]), "each step's change is +1 MiB:\n" + text)
    print(section(text, "Growth step over step")[1].strip(), flush=True)
    print("live at step ends: %s" % [c[1] for c in cpu], flush=True)


def test_growth_without_schedule():
    with T.tempdir() as d:
        text = record(KEEP_ONES, d)
        T.check("Live at the end of the window" in text, "the window's section is still there:\n" + text)
        check_keep_ones(text, 12)


def test_growth_with_schedule():
    with T.tempdir() as d:
        text = record(KEEP_ONES, d, "--schedule", "wait=1,warmup=1,active=6,repeat=1")
        check_keep_ones(text, 6)


def test_no_growth_when_each_step_frees():
    with T.tempdir() as d:
        text = record(SAME_EACH_STEP, d)
        T.check_eq(section(text, "Growth step over step"), ["  none"], "no growth:\n" + text)
        cpu = step_rows(text)
        T.check_eq(len(cpu), 12, "a CPU row per step:\n" + text)
        T.check(len(set(c[1] for c in cpu[1:])) == 1, "the same bytes live at each step's end: %s" % cpu)


if __name__ == "__main__":
    T.main()
