"""The in-target Python bootstrap (docs/bootstrap.md): ptprof's
sitecustomize.py, which `ptprof run` puts first on PYTHONPATH. It must not
change a program: the user's own sitecustomize still runs, PYTHONPATH and
sys.path keep the user's entries, a Python process that never imports torch
loads nothing of ptprof's, and outside `ptprof run` nothing happens. Once
torch is imported it installs only what the run needs: module hooks only
under a rule that watches the model's forward (PTPROF_STEP=forward/auto),
and, on torch 2.x, torch's profiler flag on exactly while a ptprof window
records (torch.autograd.profiler._is_profiler_enabled, which gates the
compiled-code scopes; test_compiled.py checks those).

References that cannot drift: what the script itself prints."""

import json
import os
import textwrap

import ptproftest as T

USER_SITECUSTOMIZE = """
import os, sys
sys.path.append("/user-sitecustomize-added")
os.environ["USER_SITECUSTOMIZE_RAN"] = "1"
"""

# Prints, as one JSON line, what the program sees of its start-up.
SEES = """
import json, os, sys
{imports}
seen = {{
    "user_sitecustomize": os.environ.get("USER_SITECUSTOMIZE_RAN"),
    "pythonpath": os.environ.get("PYTHONPATH", ""),
    "sys_path": sys.path,
    "ptprof_modules": sorted(m for m in sys.modules if m == "ptprof" or m.startswith("ptprof.")),
    "torch": "torch" in sys.modules,
}}
if "torch" in sys.modules:
    import torch
    mod = torch.nn.modules.module
    seen["forward_hooks"] = len(mod._global_forward_hooks) + len(mod._global_forward_pre_hooks)
print("SEEN " + json.dumps(seen))
"""

# The profiler flag, read in each of 5 steps that ptprof.step() ends.
FLAG_PER_STEP = """
import json, torch, ptprof
flags = []
for i in range(5):
    torch.ones(2).add_(1)
    flags.append(torch.autograd.profiler._is_profiler_enabled)
    ptprof.step()
print("FLAGS " + json.dumps(flags))
"""


def write(d, name, text):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))
    return path


def seen(proc, tag="SEEN "):
    for line in proc.stdout.splitlines():
        if line.startswith(tag):
            return json.loads(line[len(tag) :])
    raise AssertionError("the script printed no %r line\n%s" % (tag, T.describe(proc)))


def run_script(d, script, *flags, env=None):
    proc = T.run_ptprof(["run", "-o", os.path.join(d, "out")] + list(flags) + ["--", T.PYTHON, script], env=env)
    T.check_eq(proc.returncode, 0, "ptprof run's exit status\n" + T.describe(proc))
    return proc


def test_user_sitecustomize_and_pythonpath_kept():
    with T.tempdir() as d:
        user_dir = os.path.join(d, "user")
        os.mkdir(user_dir)
        write(user_dir, "sitecustomize.py", USER_SITECUSTOMIZE)
        script = write(d, "sees.py", SEES.format(imports="import torch"))
        proc = run_script(d, script, env=T.clean_env(PYTHONPATH=user_dir))
        s = seen(proc)
        T.check_eq(s["user_sitecustomize"], "1", "the user's sitecustomize ran")
        T.check(s["pythonpath"].split(":")[-1] == user_dir, "PYTHONPATH keeps the user's entry: %s" % s["pythonpath"])
        T.check(
            user_dir in s["sys_path"] and "/user-sitecustomize-added" in s["sys_path"],
            "sys.path keeps the user's entry and what their sitecustomize added: %s" % s["sys_path"],
        )
        T.check(T.PYTHON_MODULE_DIR in s["sys_path"], "`import ptprof` still works in the program")
        T.check("ptprof._boot" in s["ptprof_modules"], "the bootstrap ran once torch was imported: %s" % s)
        T.check_eq(s.get("forward_hooks"), 0, "no module hooks under the default step rule")


def test_python_without_torch_untouched():
    with T.tempdir() as d:
        script = write(d, "sees.py", SEES.format(imports=""))
        s = seen(run_script(d, script))
        T.check(not s["torch"], "torch was not imported by ptprof")
        T.check_eq(s["ptprof_modules"], [], "nothing of ptprof's is loaded in a process without torch")


def test_nothing_outside_ptprof_run():
    """The bootstrap's directory on PYTHONPATH by hand, without `ptprof run`
    (no PTPROF_SESSION): the program sees no ptprof module and no hooks."""
    with T.tempdir() as d:
        script = write(d, "sees.py", SEES.format(imports="import torch"))
        proc = T.run_python([script], env=T.clean_env(PYTHONPATH=T.PYTHON_MODULE_DIR, PTPROF_STEP="forward"))
        T.check_eq(proc.returncode, 0, "the script ran\n" + T.describe(proc))
        s = seen(proc)
        T.check_eq(s["ptprof_modules"], [], "no ptprof module outside ptprof run")
        T.check_eq(s.get("forward_hooks"), 0, "no module hooks outside ptprof run")


def test_forward_rule_installs_module_hooks():
    with T.tempdir() as d:
        script = write(d, "sees.py", SEES.format(imports="import torch"))
        for rule in ("forward", "auto"):
            s = seen(run_script(d, script, "--step", rule))
            T.check_eq(s.get("forward_hooks"), 2, "a pre and a post module hook under --step " + rule)


def test_profiler_flag_follows_the_window():
    import torch

    if not hasattr(torch.autograd.profiler, "_is_profiler_enabled"):
        # torch 1.13 gates nothing on it: the bootstrap leaves it alone.
        with T.tempdir() as d:
            script = write(d, "sees.py", SEES.format(imports="import torch"))
            run_script(d, script)
        return
    with T.tempdir() as d:
        script = write(d, "flag.py", FLAG_PER_STEP)
        proc = run_script(d, script, "--step", "manual", "--schedule", "wait=1,warmup=1,active=2")
        # Step 1 is the warmup: recorded and discarded, as torch.profiler's
        # warmup (which sets the flag too).
        T.check_eq(
            seen(proc, "FLAGS "),
            [False, True, True, True, False],
            "torch's profiler flag is on in the warmup and recorded steps (1 to 3) only",
        )
        proc = run_script(d, script, "--step", "manual")
        T.check_eq(seen(proc, "FLAGS "), [True] * 5, "on throughout without a schedule (one window)")


if __name__ == "__main__":
    T.main()
