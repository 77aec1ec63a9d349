"""The Chrome export against torch.profiler's own export of the same script
(torch_chrome_wrapper.py), for the examples: the same arg keys on every
event name both have (per category and name: "Sequence number" and "Fwd
thread id" on the backward ops, "Record function id" everywhere torch writes
it), the same top-level fields, and the same fwdbwd flows: every backward op
torch links to a forward op, ptprof links to a forward op of the same name
(counted per (forward name, backward name) pair, which cannot drift: the
scripts run the same ops every run).

What ptprof does not write, with why, is listed in KNOWN_DIFFERENCES: a key
torch writes that is not listed fails the test, and so does a listed one
ptprof has come to write (the list is kept true).

torch 1.13's export is Kineto's too, with fewer keys and no flows of this
kind; the comparison is made on torch 2.x only."""

import collections
import json
import os

import export_check as X
import ptproftest as pt

REQUIRES = ("torch2",)
COST_S = 100

SCRIPTS = ("train_mlp.py", "train_conv_bn_adam.py", "train_lstm_clip.py")
WRAPPER = os.path.join(pt.HERE, "torch_chrome_wrapper.py")

# Keys of torch's export that ptprof's lacks, per category, and why.
KNOWN_DIFFERENCES = {
    # torch's span of its profiler session ("PyTorch Profiler (0)"); ptprof
    # records from the start of the process, and its windows are files.
    ("Trace", "Op count"): "torch's profiler-session span; ptprof has no session span",
    # With record_shapes: what the agent's shape encoding does not carry (it
    # records dimensions only, the cheapest part, on the per-op hot path).
    ("cpu_op", "Input type"): "the agent records input dimensions, not dtypes",
    ("cpu_op", "Input Strides"): "the agent records input dimensions, not strides",
    ("cpu_op", "Concrete Inputs"): "the agent records input dimensions, not scalar values",
}
# Top-level fields of torch's document that ptprof's lacks.
KNOWN_TOP_LEVEL = set()


def torch_export(d, script, shapes):
    out = os.path.join(d, "torch.json")
    cmd = [WRAPPER, "--out", out] + (["--record-shapes"] if shapes else []) + ["--", script]
    proc = pt.run_python(cmd, env=pt.clean_env(STEPS="2"))
    pt.check_eq(proc.returncode, 0, "torch reference %s: %s" % (script, pt.describe(proc)))
    with open(out) as f:
        return json.load(f)


def ptprof_export(d, script, shapes):
    out = os.path.join(d, "out")
    run = ["run", "-o", out] + (["--record-shapes"] if shapes else []) + ["--", pt.PYTHON, script]
    proc = pt.run_ptprof(run, env=pt.clean_env(STEPS="2"))
    pt.check_eq(proc.returncode, 0, "ptprof run %s: %s" % (script, pt.describe(proc)))
    chrome = os.path.join(d, "ptprof.json")
    proc = pt.run_ptprof(["export", out, "--chrome", chrome])
    pt.check_eq(proc.returncode, 0, "ptprof export: %s" % pt.describe(proc))
    with open(chrome) as f:
        return json.load(f)


def keys_by_name(doc):
    """(category, name) -> the arg keys of its complete events."""
    keys = collections.defaultdict(set)
    for e in doc["traceEvents"]:
        if e.get("ph") == "X":
            keys[(e.get("cat"), e.get("name"))] |= set(e.get("args", {}))
    return keys


def compare(script, shapes):
    path = os.path.join(pt.EXAMPLES_DIR, script)
    with pt.tempdir() as d:
        torch_doc = torch_export(d, path, shapes)
        ours = ptprof_export(d, path, shapes)
    what = "%s%s" % (script, " --record-shapes" if shapes else "")
    missing_top = set(torch_doc) - set(ours) - KNOWN_TOP_LEVEL
    pt.check(not missing_top, "%s: top-level fields of torch's export missing: %r" % (what, sorted(missing_top)))
    theirs, mine = keys_by_name(torch_doc), keys_by_name(ours)
    by_category = collections.defaultdict(set)
    for (cat, _name), keys in theirs.items():
        by_category[cat] |= keys
    mine_by_category = collections.defaultdict(set)
    for (cat, _name), keys in mine.items():
        mine_by_category[cat] |= keys
    for cat, keys in sorted(by_category.items()):
        lacking = {k for k in keys - mine_by_category[cat] if (cat, k) not in KNOWN_DIFFERENCES}
        pt.check(not lacking, "%s: category %s: torch's keys %r not in ptprof's export" % (what, cat, sorted(lacking)))
    common = sorted(set(theirs) & set(mine))
    pt.check(len(common) > 10, "%s: event names in both exports: %d" % (what, len(common)))
    for key in common:
        lacking = {k for k in theirs[key] - mine[key] if (key[0], k) not in KNOWN_DIFFERENCES}
        pt.check(
            not lacking, "%s: %s %s: torch's keys %r not on ptprof's events" % (what, key[0], key[1], sorted(lacking))
        )
    stale = {(cat, k) for (cat, k) in KNOWN_DIFFERENCES if k in mine_by_category.get(cat, set())}
    pt.check(not stale, "%s: listed as missing yet written by ptprof: %r" % (what, sorted(stale)))
    torch_links, our_links = X.fwdbwd_links(torch_doc), X.fwdbwd_links(ours)
    pt.check(sum(torch_links.values()) > 5, "%s: torch links backward ops: %r" % (what, torch_links))
    pt.check_eq(our_links, torch_links, "%s: fwdbwd flows per (forward op, backward op)" % what)


def test_arg_keys_and_flows_equal_torch():
    version = os.environ.get("PTPROF_TORCH_VERSION", "")
    if not version.startswith("2."):  # REQUIRES: registered for a torch 2.x only
        pt.skip("torch %s: the comparison is made with torch 2.x's export" % version)
    for script in SCRIPTS:
        compare(script, shapes=False)
    compare(SCRIPTS[1], shapes=True)


if __name__ == "__main__":
    pt.main()
