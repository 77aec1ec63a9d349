"""Fork from a thread while other threads run operators (issue #28): under
--profile-memory (with and without --record-shapes) and under --with-stack
the child must not hang on a lock
another thread held at the fork (torch's CPU memory reporter's, which
--profile-memory engages; ptprof's own). On real PyTorch, once per torch.

scripts/fork_from_threads.py forks FORKS times while three threads run ops;
each child runs ops and exits, and one that has not exited after 10 s is
counted as hung and killed. A run that does not finish in time counts as
hung too. Without ptprof the script never hangs (torch's generator lock,
which is not fork-safe, is kept out of it).

The full stress (200 forks under each option) is this module with
PTPROF_FORK_STRESS=200. With PTPROF_FORK_GDB=FILE a hung child's threads
(gdb's backtraces) are appended to FILE before it is killed.
"""

import os
import re
import subprocess

import ptproftest as T

SCRIPT = os.path.join(T.HERE, "scripts", "fork_from_threads.py")
FORKS = int(os.environ.get("PTPROF_FORK_STRESS", "50"))
RUN_TIMEOUT = 60 + 12 * FORKS  # every child hung: 10 s each, then the kill


def forks_without_hangs(options):
    with T.tempdir() as d:
        try:
            proc = T.run_ptprof(
                ["run"] + options + ["-o", os.path.join(d, "out"), "--", T.PYTHON, SCRIPT, FORKS, 3],
                env=T.clean_env(PTPROF_FORK_GDB=os.environ.get("PTPROF_FORK_GDB")),
                timeout=RUN_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            T.check(False, "%s: the run did not finish in %d s (a hang)" % (" ".join(options), RUN_TIMEOUT))
            return
        m = re.search(r"forks=(\d+) hangs=(\d+)", proc.stdout)
        T.check(m is not None, "%s: the script reported\n%s" % (" ".join(options), T.describe(proc)))
        if m:
            T.check_eq(
                (int(m.group(1)), int(m.group(2))),
                (FORKS, 0),
                "%s: (forks, hung children)\n%s" % (" ".join(options), T.describe(proc)),
            )
        T.check_eq(proc.returncode, 0, "%s: exit status\n%s" % (" ".join(options), T.describe(proc)))


def test_fork_from_threads_under_profile_memory():
    forks_without_hangs(["--profile-memory"])


def test_fork_from_threads_under_with_stack():
    forks_without_hangs(["--with-stack"])


def test_fork_from_threads_under_memory_categories():
    # Memory with shapes: the bridge also records tensor identity, under its
    # own lock (agent/torch/tensor_refs.hpp's TensorImpl pins).
    forks_without_hangs(["--profile-memory", "--record-shapes"])


if __name__ == "__main__":
    T.main()
