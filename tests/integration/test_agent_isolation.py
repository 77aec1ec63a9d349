"""The agent is invisible to the program it profiles (issue #28): a program
that closes every descriptor and opens files of its own under the agent's
old numbers keeps its files as it wrote them, and its events are all
recorded, with their names; a program that loads a library through
dlopen("$ORIGIN/...") finds it with the agent preloaded, in a session or
not. Torch-free: the targets are tests/programs/fd_reuse.cpp and
origin_dlopen.cpp.
"""

import os

import ptproftest as T

PROGRAMS = os.path.join(T.BUILD_DIR, "bin")


def test_program_that_closes_all_descriptors_keeps_its_files_and_events():
    """fd_reuse closes every descriptor above stderr, opens eight files
    (numbers the agent's descriptors had), records from new threads and
    under 5000 new names, and forks a child that writes to each file. The
    agent acted on descriptors it no longer owned: it grew a file with
    fallocate, closed one in the fork child (whose write then landed in
    /dev/shm), and took a regular file's lack of a lock for a dead launcher."""
    with T.tempdir() as d:
        out = os.path.join(d, "out")
        files = os.path.join(d, "files")
        os.mkdir(files)
        proc = T.run_ptprof(["run", "-o", out, "--", os.path.join(PROGRAMS, "fd_reuse"), files])
        T.check_eq(proc.returncode, 0, "the program's files hold what it wrote\n" + T.describe(proc))
        T.check("files intact" in proc.stdout, "the program checked its files\n" + T.describe(proc))
        T.check("is gone" not in proc.stderr, "no false 'launcher is gone'\n" + T.describe(proc))
        T.check("lost" not in proc.stderr and "not recorded" not in proc.stderr,
                "no event lost\n" + T.describe(proc))
        rows = {r["name"]: r for r in T.report_json(out)["rows"]}
        calls = lambda name: rows.get(name, {}).get("calls", 0)
        T.check_eq(calls("fd-reuse.thread"), 2 * 4 * 100, "every thread's marks\n" + T.describe(proc))
        T.check_eq(calls("fd-reuse.child"), 1, "the forked child's mark")
        T.check_eq(calls("fd-reuse.after"), 1, "the last mark")
        named = [n for n in rows if n.startswith("fd-reuse.name-")]
        T.check_eq(len(named), 5000, "every new name is in the report")
        T.check("" not in rows, "no row without a name")


def test_dlopen_of_origin_relative_path_with_the_agent_preloaded():
    """glibc expands $ORIGIN to the directory of dlopen's caller: the agent's
    dlopen wrapper, when it called the real dlopen itself, made that the
    agent's directory, and the load failed."""
    program = os.path.join(PROGRAMS, "origin_dlopen")
    agent = os.path.join(T.BUILD_DIR, "lib", "libptprof_agent.so")
    proc = T.run([program], env=T.clean_env(LD_PRELOAD=agent))
    T.check_eq((proc.returncode, proc.stdout.strip()), (0, "origin_probe 42"),
               "preloaded, no session\n" + T.describe(proc))
    with T.tempdir() as d:
        proc = T.run_ptprof(["run", "-o", os.path.join(d, "out"), "--", program])
        T.check_eq(proc.returncode, 0, "under ptprof run\n" + T.describe(proc))
        T.check("origin_probe 42" in proc.stdout, "under ptprof run\n" + T.describe(proc))


if __name__ == "__main__":
    T.main()
