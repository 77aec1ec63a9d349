"""What the README promises of a program annotated with the `ptprof` module
when it is run outside `ptprof run`: "Outside `ptprof run` the module warns
once and its calls do nothing." The program is run as a user runs it without
ptprof: the interpreter alone, no PYTHONPATH, no agent, from a directory of
its own (test_python_module.py tests the module itself, put on PYTHONPATH)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptproftest as pt  # noqa: E402
from ptproftest import check_eq  # noqa: E402

ANNOTATED = r'''
import ptprof

@ptprof.range("evaluate")
def evaluate():
    return 42

for i in range(3):
    with ptprof.range("data"):
        x = i * 2
    ptprof.step()
ptprof.mark("done")
print("result", evaluate(), ptprof.enabled())
'''


def test_annotated_program_outside_ptprof_run():
    """The README's example of an annotated program runs to its end, with one
    RuntimeWarning."""
    with pt.tempdir() as tmp:
        path = os.path.join(tmp, "annotated.py")
        with open(path, "w") as f:
            f.write(ANNOTATED)
        proc = pt.run_python([path], env=pt.clean_env(PYTHONPATH=None), cwd=tmp)
        check_eq(proc.returncode, 0, "the annotated program outside ptprof run: " + pt.describe(proc))
        check_eq(proc.stdout.strip(), "result 42 False", "what it prints")
        warned = [line for line in proc.stderr.splitlines() if "RuntimeWarning" in line]
        check_eq(len(warned), 1, "one RuntimeWarning: " + proc.stderr)


if __name__ == "__main__":
    pt.main()
