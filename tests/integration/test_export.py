"""`ptprof export` on traces of real PyTorch programs: the Chrome export's
structure (numeric ts, non-negative dur, flows with both ends, steps that
enclose their ops and nest per thread, Input Dims as lists), names with
control characters, size-bounded parts, and the Perfetto export decoded with
Perfetto's own message definitions (tests/integration/perfetto_subset.proto)
holding the same events per name as the Chrome export."""

import codecs
import collections
import json
import os
import shutil
import textwrap

import export_check as X
import ptproftest as T

COUNTER_WRAPPER = os.path.join(T.HERE, "rf_count_wrapper.py")
# test_equivalence.py's schedule, STEPS=6: recorded steps 2, 3, 4.
SCHEDULE = dict(wait=1, warmup=1, active=3)


def counted_by_torch(script, d, env):
    """Operators per name that a plain RecordFunction callback counts in the
    recorded steps (rf_count_wrapper.py, as in test_equivalence.py): a
    reference that shares nothing with ptprof's agent, files or reader."""
    out = os.path.join(d, "counter.json")
    cmd = [COUNTER_WRAPPER, "--cache-dir", os.path.join(T.BUILD_DIR, "torch-cxx-cache"), "--no-shapes", "--out", out]
    for k, v in SCHEDULE.items():
        cmd += ["--" + k, v]
    proc = T.run_python(cmd + ["--", script], env=env)
    if proc.returncode != 0:
        raise AssertionError("rf_count_wrapper failed: " + T.describe(proc))
    with open(out) as f:
        rows = json.load(f)["rows"]
    counts = collections.Counter()
    for r in rows:
        counts[r["name"]] += r["count"]
    return {name: n for name, n in counts.items() if not name.startswith("profiler::") and n}


def test_chrome_export_of_an_example():
    """The export's events per name, read with the standard library's json,
    are what a plain RecordFunction counter counted in the same steps."""
    script = os.path.join(T.EXAMPLES_DIR, "train_conv_bn_adam.py")
    env = T.clean_env(STEPS=6)
    with T.tempdir() as d:
        spec = ",".join("%s=%d" % kv for kv in SCHEDULE.items())
        trace = X.trace_example(d, "train_conv_bn_adam.py", "--schedule", spec, env=env)
        out = os.path.join(d, "trace.json")
        proc = X.export(trace, "--chrome", out)
        T.check("events as Chrome trace JSON" in proc.stderr, "export says what it wrote: " + proc.stderr)
        doc = X.load_chrome(out)
        names = X.check_chrome(doc, "train_conv_bn_adam")
        steps = sorted(int(X.STEP.match(n).group(1)) for n in names if X.STEP.match(n))
        T.check_eq(steps, [2, 3, 4], "the recorded steps in the export")
        exported = {n: c for n, c in names.items() if not X.STEP.match(n) and not n.startswith("profiler::")}
        counted = counted_by_torch(script, d, env)
        T.check(len(counted) > 10, "the counter counted operators: %r" % counted)
        differ = {
            n: (exported.get(n, 0), counted.get(n, 0))
            for n in sorted(set(exported) | set(counted))
            if exported.get(n, 0) != counted.get(n, 0)
        }
        T.check(not differ, "events per name (export, RecordFunction counter) differ: %r" % differ)
        ops = [e for e in doc["traceEvents"] if e.get("cat") == "cpu_op"]
        T.check(len(ops) > 100, "cpu_op events: %d" % len(ops))
        dims = [e["args"].get("Input Dims") for e in ops]
        T.check(
            all(isinstance(v, list) and all(isinstance(x, list) for x in v) for v in dims if v is not None),
            "Input Dims are lists of lists",
        )
        T.check(any(v for v in dims), "some op has input dims (shapes were recorded)")
        conv = [e for e in ops if e["name"] == "aten::conv2d"]
        T.check(
            conv and len(conv[0]["args"]["Input Dims"][0]) == 4,
            "aten::conv2d's first input is 4-d: %r" % (conv[0]["args"] if conv else None),
        )
        meta = {(e["name"], e["tid"]) for e in doc["traceEvents"] if e.get("ph") == "M"}
        T.check(any(n == "thread_name" for n, _ in meta), "thread_name metadata")
        T.check(any(n == "process_name" for n, _ in meta), "process_name metadata")


def test_control_characters_in_names_are_escaped():
    with T.tempdir() as d:
        script = os.path.join(d, "names.py")
        with open(script, "w") as f:
            f.write(
                textwrap.dedent("""
                import ptprof
                for i in range(3):
                    with ptprof.range("bell\\x07 escape\\x1b[31m nul-free\\x7f"):
                        pass
                with ptprof.range("tab\\there \\"quoted\\" back\\\\slash"):
                    pass
            """)
            )
        out_dir = os.path.join(d, "trace")
        proc = T.run_ptprof(["run", "-o", out_dir, "--", T.PYTHON, script])
        T.check_eq(proc.returncode, 0, "run\n" + T.describe(proc))
        out = os.path.join(d, "names.json.gz")
        X.export(out_dir, "--chrome", out)
        doc = X.load_chrome(out)  # json.load rejects raw control characters
        names = X.check_chrome(doc, "names")
        T.check_eq(names.get("bell\x07 escape\x1b[31m nul-free\x7f"), 3, "the control-character name, decoded")
        T.check_eq(names.get('tab\there "quoted" back\\slash'), 1, "quotes, tab and backslash, decoded")


def test_size_bounded_parts():
    with T.tempdir() as d:
        trace = X.trace_example(d, "train_lstm_clip.py", env=T.clean_env(STEPS=6))
        whole_path = _export_to(d, trace, "whole.json")
        whole = X.check_chrome(X.load_chrome(whole_path), "whole")
        # A third of the whole: 6 steps make at least 3 parts.
        limit_k = max(64, os.path.getsize(whole_path) // 3 // 1024)
        limit = limit_k << 10
        parts_dir = os.path.join(d, "parts")
        os.mkdir(parts_dir)
        # The environment variable sets the limit when the flag is absent.
        env = T.clean_env(PTPROF_EXPORT_MAX_FILE_SIZE="%dK" % limit_k)
        proc = T.run_ptprof(["export", trace, "--chrome", os.path.join(parts_dir, "t.json")], env=env)
        T.check_eq(proc.returncode, 0, "export with PTPROF_EXPORT_MAX_FILE_SIZE\n" + T.describe(proc))
        files = sorted(os.listdir(parts_dir))
        T.check(len(files) >= 3, "parts written: %s" % files)
        T.check_eq(files[0], "t.part001.json", "the first part's name")
        merged = collections.Counter()
        steps_seen = []
        for f in files:
            path = os.path.join(parts_dir, f)
            T.check(os.path.getsize(path) <= limit, "%s is %d bytes" % (f, os.path.getsize(path)))
            names = X.check_chrome(X.load_chrome(path), f)
            merged.update(names)
            steps_seen += [n for n in names if X.STEP.match(n)]
        T.check_eq(dict(merged), dict(whole), "the parts together hold every event once")
        T.check_eq(len(steps_seen), len(set(steps_seen)), "each step in one part")
        bad = T.run_ptprof(["export", trace, "--chrome", os.path.join(d, "x.json"), "--max-file-size", "1k"])
        T.check_eq(bad.returncode, 2, "a limit under 64K\n" + T.describe(bad))
        T.check("at least 64K" in bad.stderr, "the message says what is accepted: " + bad.stderr)


def _export_to(d, trace, name):
    path = os.path.join(d, name)
    X.export(trace, "--chrome", path)
    return path


def perfetto_events(text):
    """From `protoc --decode` text: slices (BEGIN) and instants per name, and
    the flows per (name of the slice starting one, name of the slice
    terminating it)."""
    names, counts = {}, collections.Counter()
    flows = collections.defaultdict(dict)
    block, iid, name, kind, name_iid, ends = [], None, None, None, None, []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.endswith("{"):
            block.append(stripped[:-1].strip())
            if block == ["packet"]:
                kind = name_iid = None
                ends = []
            continue
        if stripped == "}":
            closed = block.pop()
            if closed == "event_names" and iid is not None:
                names[iid] = name
                iid = name = None
            if closed == "packet" and kind in ("TYPE_SLICE_BEGIN", "TYPE_INSTANT"):
                counts[name_iid] += 1
                for end, flow in ends:
                    flows[flow][end] = name_iid
            continue
        key, _, value = stripped.partition(": ")
        if block[-1:] == ["event_names"]:
            if key == "iid":
                iid = int(value)
            elif key == "name":
                name = _text_value(value)
        elif block[-1:] == ["track_event"]:
            if key == "type":
                kind = value
            elif key == "name_iid":
                name_iid = int(value)
            elif key in ("flow_ids", "terminating_flow_ids"):
                ends.append(("s" if key == "flow_ids" else "f", int(value)))
    per_name = {names.get(k, "?%s" % k): n for k, n in counts.items()}
    pairs = collections.Counter((names.get(v.get("s")), names.get(v.get("f"))) for v in flows.values())
    return per_name, pairs


def _text_value(value):
    """A string field of `protoc --decode` text ("..." with C escapes) as str."""
    return codecs.escape_decode(value[1:-1].encode())[0].decode("utf-8")


def perfetto_slices(text):
    """From `protoc --decode` text: every slice (BEGIN) and instant as a dict
    of its name, category, (pid, tid) of its track, debug annotations (name
    -> int, float or str) and flow ids ("flow_ids", "terminating_flow_ids")."""
    tables = collections.defaultdict(dict)  # interned table -> iid -> name
    threads = {}  # track uuid -> (pid, tid)
    slices = []
    block, entry, event, annotation, track = [], {}, None, None, {}
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.endswith("{"):
            block.append(stripped[:-1].strip())
            if block == ["packet", "track_event"]:
                event = {"ann": [], "flow_ids": [], "terminating_flow_ids": []}
            elif block == ["packet", "track_descriptor"]:
                track = {}
            elif block[-1:] == ["debug_annotations"]:
                annotation = {}
            elif len(block) == 3 and block[1] == "interned_data":
                entry = {}
            continue
        if stripped == "}":
            closed = block.pop()
            if len(block) == 2 and block[1] == "interned_data":
                tables[closed][entry.get("iid")] = entry.get("name")
            elif closed == "debug_annotations" and event is not None:
                event["ann"].append(annotation)
            elif block == ["packet"] and closed == "track_descriptor" and "pid" in track:
                threads[track["uuid"]] = (track["pid"], track["tid"])
            elif block == ["packet"] and closed == "track_event":
                if event.get("type") in ("TYPE_SLICE_BEGIN", "TYPE_INSTANT"):
                    slices.append(event)
                event = None
            continue
        key, _, value = stripped.partition(": ")
        where = block[-1] if block else ""
        if len(block) == 3 and block[1] == "interned_data":
            if key in ("iid", "name"):
                entry[key] = int(value) if key == "iid" else _text_value(value)
        elif where == "debug_annotations":
            if key == "name_iid":
                annotation["name_iid"] = int(value)
            elif key == "int_value":
                annotation["value"] = int(value)
            elif key == "double_value":
                annotation["value"] = float(value)
            elif key == "string_value":
                annotation["value"] = _text_value(value)
        elif where == "track_event":
            if key in ("flow_ids", "terminating_flow_ids"):
                event[key].append(int(value))
            elif key in ("type",):
                event[key] = value
            elif key in ("name_iid", "category_iids", "track_uuid"):
                event[key] = int(value)
        elif where == "track_descriptor" and key == "uuid":
            track["uuid"] = int(value)
        elif where == "thread" and key in ("pid", "tid"):
            track[key] = int(value)
    out = []
    for e in slices:
        args = {}
        for a in e["ann"]:
            args[tables["debug_annotation_names"].get(a.get("name_iid"))] = a.get("value")
        out.append(
            {
                "name": tables["event_names"].get(e.get("name_iid")),
                "cat": tables["event_categories"].get(e.get("category_iids")),
                "thread": threads.get(e.get("track_uuid")),
                "args": args,
                "flow_ids": e["flow_ids"],
                "terminating_flow_ids": e["terminating_flow_ids"],
            }
        )
    return out


def protoc_decode(pf):
    """`protoc --decode` text of Perfetto trace file `pf` (perfetto_subset.proto); skips the test without protoc."""
    protoc = shutil.which("protoc")
    if not protoc:
        T.skip("protoc is not installed (Debian: apt-get install protobuf-compiler)")
    with open(pf, "rb") as f:
        proc = T.subprocess.run(
            [protoc, "--proto_path=" + T.HERE, "--decode=perfetto.protos.Trace", "perfetto_subset.proto"],
            stdin=f,
            capture_output=True,
            text=True,
        )
    T.check_eq(proc.returncode, 0, "protoc --decode\n" + T.describe(proc))
    return proc.stdout


def test_perfetto_export_decodes_with_perfettos_protos():
    if not shutil.which("protoc"):
        T.skip("protoc is not installed (Debian: apt-get install protobuf-compiler)")
    with T.tempdir() as d:
        trace = X.trace_example(d, "train_mlp_ranges.py", env=T.clean_env(STEPS=3))
        pf = os.path.join(d, "trace.pftrace")
        chrome = os.path.join(d, "trace.json")
        X.export(trace, "--perfetto", pf, "--chrome", chrome)
        text = protoc_decode(pf)
        T.check("process {" in text and "thread {" in text, "process and thread track descriptors")
        T.check("sequence_flags: 1" in text, "the first packet clears the sequence's incremental state")
        begins, ends = text.count("TYPE_SLICE_BEGIN"), text.count("TYPE_SLICE_END")
        T.check_eq(begins, ends, "every slice that begins ends")
        chrome_doc = X.load_chrome(chrome)
        chrome_names = X.check_chrome(chrome_doc, "chrome")
        per_name, flows = perfetto_events(text)
        T.check_eq(per_name, dict(chrome_names), "events per name, Perfetto vs Chrome")
        # torch's fwdbwd links: the same pairs of ops as the Chrome export's.
        chrome_flows = X.fwdbwd_links(chrome_doc)
        T.check(sum(chrome_flows.values()) > 5, "the Chrome export links backward ops: %r" % chrome_flows)
        T.check_eq(dict(flows), dict(chrome_flows), "fwdbwd flows per (forward op, backward op), Perfetto vs Chrome")


if __name__ == "__main__":
    T.main()
