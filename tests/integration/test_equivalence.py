"""Equivalence with torch.profiler: the same script, once inside
torch.profiler.profile(activities=[CPU], record_shapes=True,
schedule=schedule(wait=1, warmup=1, active=3)) and once unchanged under
`ptprof run --schedule wait=1,warmup=1,active=3 --record-shapes`: the operator
names, call counts and grouped input shapes of the recorded steps are
identical (rows profiler::* and ProfilerStep* aside)."""

import collections
import os

import ptproftest as T

SCRIPTS = [
    "train_mlp.py",
    "train_mlp_10_steps.py",
    "train_mlp_ranges.py",
    "train_conv_bn_adam.py",
    "train_lstm_clip.py",
]


def keep(name):
    return not name.startswith("profiler::") and not name.startswith("ProfilerStep")


def table(rows):
    out = collections.Counter()
    for r in rows:
        if keep(r["name"]):
            shapes = r["input_shapes"]
            # torch's rows hold the list; its text is Python's str() of it,
            # which is what torch prints and what ptprof reports.
            key = (r["name"], shapes if isinstance(shapes, str) else str(shapes))
            out[key] += r["count"] if "count" in r else r["calls"]
    return out


def profiler_step_artifact():
    """The operators torch.profiler itself adds per recorded step: prof.step()
    opens and closes `record_function("ProfilerStep#N")`, whose __init__ in
    torch 1.13 runs `torch.zeros(1)` (torch/autograd/profiler.py: self.handle
    = torch.zeros(1)) and whose profiler::_record_function_enter allocates the
    handle (aten::empty). They are the profiler's, not the script's, so they
    are measured here, on that record_function alone, and taken out of the
    torch side once per ProfilerStep span."""
    code = ("import json, torch\n"
            "from torch.profiler import profile, ProfilerActivity\n"
            "with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as p:\n"
            "    r = torch.autograd.profiler.record_function('ProfilerStep#0')\n"
            "    r.__enter__()\n"
            "    r.__exit__(None, None, None)\n"
            "print(json.dumps([[e.key, str(e.input_shapes), e.count] for e in\n"
            "                  p.key_averages(group_by_input_shape=True)]))\n")
    proc = T.run_python(["-c", code])
    if proc.returncode != 0:
        raise AssertionError("measuring torch.zeros(1) failed: " + T.describe(proc))
    import json
    return collections.Counter({(k, shapes): n for k, shapes, n in json.loads(proc.stdout.strip().splitlines()[-1])
                                if keep(k)})


def diff(a, b):
    lines = []
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            lines.append("  %-60s %-40s torch=%s ptprof=%s" % (key[0][:60], key[1][:40], a.get(key), b.get(key)))
    return "\n".join(lines[:40])


def torch_reference(script, d, env, attempt):
    rows = T.torch_profile(script, os.path.join(d, "torch%d.json" % attempt), wait=1, warmup=1, active=3, env=env)
    expected = table(rows)
    torch_steps = sum(r["count"] for r in rows if r["name"].startswith("ProfilerStep"))
    for key, n in ARTIFACT.items():
        expected[key] -= n * torch_steps
    return +expected, torch_steps  # + drops keys that reached zero


def check_script(name):
    script = os.path.join(T.EXAMPLES_DIR, name)
    with T.tempdir() as d:
        env = T.clean_env(STEPS=6)
        out = os.path.join(d, "out")
        proc = T.run_ptprof(["run", "-o", out, "--schedule", "wait=1,warmup=1,active=3", "--record-shapes",
                             "--", T.PYTHON, script], env=env)
        T.check_eq(proc.returncode, 0, name + ": ptprof run\n" + T.describe(proc))
        rep = T.report_json(out, "--group-by-input-shape")
        T.check_eq([s["step"] for s in rep["steps"]], [2, 3, 4], name + ": recorded steps")
        actual = table(rep["rows"])
        # torch.profiler itself is not deterministic at its window's edges: on
        # some runs it misses an aten::empty of the first recorded step (seen
        # with train_conv_bn_adam.py, about one run in three). The reference
        # is therefore taken up to three times; ptprof must equal one of them.
        tries = []
        for attempt in range(3):
            expected, torch_steps = torch_reference(script, d, env, attempt)
            T.check_eq(torch_steps, 3, name + ": ProfilerStep spans torch recorded")
            T.check(len(expected) > 10, name + ": torch recorded operators (%d keys)" % len(expected))
            tries.append(expected)
            if expected == actual:
                break
        T.check(tries[-1] == actual, name + ": (name, input shapes) -> calls differ from every torch run:\n" +
                "\n--\n".join(diff(e, actual) for e in tries))


def test_train_mlp():
    check_script("train_mlp.py")


def test_train_mlp_10_steps():
    check_script("train_mlp_10_steps.py")


def test_train_mlp_ranges():
    check_script("train_mlp_ranges.py")


def test_train_conv_bn_adam():
    check_script("train_conv_bn_adam.py")


def test_train_lstm_clip():
    check_script("train_lstm_clip.py")


if __name__ == "__main__":
    ARTIFACT = profiler_step_artifact()
    T.main()
