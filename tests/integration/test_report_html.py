"""`ptprof report --html`: one self-contained page that opens in headless
Chromium without script errors, with a visible operator table, at least
three plots (step breakdown, phases, top operators), the phase table and,
with --baseline, the comparison section, and whose table sorts on a click.
The browser checks are skipped when Chromium is not installed (Debian:
apt-get install chromium). Also: the phases of a real training loop."""

import collections
import decimal
import gzip
import html
import json
import os
import re
import shutil
import struct

import export_check as X
import ptproftest as T

# Injected into a copy of the page (the page itself has no test code): it
# records script errors from the start, and once loaded measures the table
# and the plots, clicks the "# of Calls" title and writes what it found
# into the DOM, which --dump-dom prints.
PROBE = """<script>
window.__errors = [];
window.addEventListener('error', function (e) { __errors.push(String(e.message)); });
var __ce = console.error;
console.error = function () { __errors.push(Array.prototype.join.call(arguments, ' ')); __ce.apply(console, arguments); };
window.addEventListener('load', function () {
  var table = document.getElementById('ops');
  var size = function (id) {
    var e = document.getElementById(id);
    if (!e) return [0, 0];
    var r = e.getBoundingClientRect();
    return [r.width, r.height];
  };
  var box = table ? table.getBoundingClientRect() : {width: 0, height: 0};
  var plots = Array.prototype.filter.call(document.querySelectorAll('svg.plot'), function (s) {
    var r = s.getBoundingClientRect(); return r.width > 0 && r.height > 0; }).length;
  var calls = -1, first = '';
  if (table) {
    table.querySelectorAll('th').forEach(function (th, i) { if (th.textContent === '# of Calls') calls = i; });
    if (calls >= 0) table.querySelectorAll('th')[calls].click();
    first = table.tBodies[0].rows[0].cells[0].textContent;
  }
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify({errors: __errors, table: [box.width, box.height], plots: plots, first: first,
                                    phases: size('phases'), diff: size('diff'),
                                    external: document.querySelectorAll('[src],link[href]').length});
  document.body.appendChild(pre);
});
</script>"""  # noqa: E501 (the page's script, as written)


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    T.skip("Chromium is not installed (Debian: apt-get install chromium)")


def headless(browser, *args):
    return T.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1200,1600"]
        + list(args),
        timeout=120,
    )


def trace_in(d, name, script):
    sub = os.path.join(d, name)
    os.makedirs(sub)
    return X.trace_example(sub, script, env=T.clean_env(STEPS=3))


PHASE_KEYS = ("forward_us", "backward_us", "optimizer_us", "data_loading_us", "compile_us", "other_us")
BACKWARD_PREFIX = "autograd::engine::evaluate_function: "
OPTIMIZER_PREFIXES = ("Optimizer.step#", "Optimizer.zero_grad#")
DATA_LOADING = (
    "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
    "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
)


def merged(spans):
    out = []
    for lo, hi in sorted(spans):
        if hi <= lo:
            continue
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def length(spans):
    return sum(hi - lo for lo, hi in spans)


def clipped(spans, lo, hi):
    return merged([(max(a, lo), min(b, hi)) for a, b in spans])


def phases_from_chrome(path):
    """docs/report.md's rule for phases, applied here to the Chrome export
    read with the standard library (exact ns: times parsed as decimals), not
    through ptprof's reader or its phase code: {(pid, tid, step): {key: ns}}."""
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
        events = json.load(f, parse_float=decimal.Decimal)["traceEvents"]
    timed = collections.defaultdict(list)  # (pid, tid) -> [(start, end, name)]
    backward = collections.defaultdict(list)  # pid -> [(start, end)]
    compile_ = collections.defaultdict(list)  # pid -> [(start, end)]: torch.compile's scopes
    steps = []
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in ("cpu_op", "user_annotation") or e.get("args", {}).get("Async"):
            continue  # async events have no time in phases
        start = int(decimal.Decimal(e["ts"]) * 1000)
        span = (start, start + int(decimal.Decimal(e["dur"]) * 1000))
        m = X.STEP.match(e["name"])
        if m:
            steps.append((e["pid"], e["tid"], int(m.group(1)), span))
            continue
        timed[(e["pid"], e["tid"])].append(span + (e["name"],))
        if e["name"].startswith(BACKWARD_PREFIX):
            backward[e["pid"]].append(span)
        if e["name"].endswith(" (dynamo_timed)"):
            compile_[e["pid"]].append(span)
    out = {}
    for pid, tid, number, (lo, hi) in steps:
        mine = timed[(pid, tid)]
        parts = [  # in the order phases claim time
            ("compile_us", clipped(compile_[pid], lo, hi)),
            ("data_loading_us", clipped([(a, b) for a, b, n in mine if n in DATA_LOADING], lo, hi)),
            ("optimizer_us", clipped([(a, b) for a, b, n in mine if n.startswith(OPTIMIZER_PREFIXES)], lo, hi)),
            ("backward_us", clipped(backward[pid], lo, hi)),
            ("forward_us", merged([(a, b) for a, b, _ in mine if lo <= a < hi and b <= hi])),
        ]
        ns, claimed = {}, []
        for key, spans in parts:
            before = length(claimed)
            claimed = merged(claimed + spans)
            ns[key] = length(claimed) - before
        ns["other_us"] = (hi - lo) - length(claimed)
        out[(pid, tid, number)] = ns
    return out


def test_phases_of_a_training_loop():
    """train_mlp.py: autograd's backward ops and SGD's step and zero_grad
    make backward and optimizer time; each step's phases are what the rule
    of docs/report.md gives when applied independently to the Chrome export
    (phases_from_chrome), and sum to the step's wall time."""
    with T.tempdir() as d:
        trace = X.trace_example(d, "train_mlp.py", env=T.clean_env(STEPS=4))
        phases = T.report_json(trace)["phases"]
        T.check(phases["total"]["backward_us"] > 0, "backward time %r" % phases["total"])
        T.check(phases["total"]["optimizer_us"] > 0, "optimizer time %r" % phases["total"])
        T.check(phases["total"]["forward_us"] > 0, "forward time %r" % phases["total"])
        T.check_eq(phases["total"]["data_loading_us"], 0.0, "no DataLoader in train_mlp.py")
        T.check(len(phases["steps"]) >= 3, "steps %r" % phases["steps"])
        chrome = os.path.join(d, "trace.json.gz")
        X.export(trace, "--chrome", chrome)
        expected = phases_from_chrome(chrome)
        T.check_eq(
            sorted(expected),
            sorted((s["pid"], s["tid"], s["step"]) for s in phases["steps"]),
            "the steps, (pid, tid, step), export vs report",
        )
        for s in phases["steps"]:
            want = expected.get((s["pid"], s["tid"], s["step"]), {})
            # The report prints us with 3 decimals: within 1 ns of the exact value.
            off = {k: (s[k], want.get(k, 0) / 1000) for k in PHASE_KEYS if abs(s[k] - want.get(k, 0) / 1000) > 0.0015}
            T.check(not off, "step %d: phases (report, reference from the export) differ: %r" % (s["step"], off))
            T.check(abs(sum(s[k] for k in PHASE_KEYS) - s["wall_us"]) < 0.01, "phases sum to the wall time: %r" % s)


def test_html_report_opens_in_chromium():
    browser = chromium()
    with T.tempdir() as d:
        trace = trace_in(d, "run", "train_mlp_ranges.py")
        baseline = trace_in(d, "base", "train_mlp.py")
        page = os.path.join(d, "report.html")
        proc = T.run_ptprof(["report", trace, "--html", page, "--baseline", baseline])
        T.check_eq(proc.returncode, 0, "report --html\n" + T.describe(proc))
        T.check_eq(proc.stdout, "", "nothing on stdout with --html")
        with open(page, encoding="utf-8") as f:
            text = f.read()
        T.check(not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), "no external resources")

        probed = os.path.join(d, "probed.html")
        with open(probed, "w", encoding="utf-8") as f:
            f.write(text.replace("<head>", "<head>" + PROBE, 1))
        dom = headless(browser, "--virtual-time-budget=5000", "--dump-dom", "file://" + probed)
        m = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.S)
        T.check(m is not None, "the page loaded and the probe ran\n" + T.describe(dom))
        if not m:
            return
        probe = json.loads(html.unescape(m.group(1)))
        T.check_eq(probe["errors"], [], "script errors in the page")
        T.check(probe["table"][0] > 0 and probe["table"][1] > 0, "table size %r" % probe["table"])
        T.check(probe["plots"] >= 3, "plots with a size: %d" % probe["plots"])
        T.check(probe["phases"][0] > 0 and probe["phases"][1] > 0, "phase table size %r" % probe["phases"])
        T.check(probe["diff"][0] > 0 and probe["diff"][1] > 0, "diff section size %r" % probe["diff"])
        T.check_eq(probe["external"], 0, "elements loading other files")
        rows = T.report_json(trace)["rows"]
        most = max(r["calls"] for r in rows)
        T.check(
            any(r["name"] == probe["first"] and r["calls"] == most for r in rows),
            "after sorting by # of Calls, the first row (%s) has the most calls (%d)" % (probe["first"], most),
        )

        shot = os.path.join(d, "report.png")
        proc = headless(browser, "--screenshot=" + shot, "file://" + page)
        T.check(os.path.exists(shot), "screenshot written\n" + T.describe(proc))
        if os.path.exists(shot):
            with open(shot, "rb") as f:
                head = f.read(24)
            width, height = struct.unpack(">II", head[16:24])
            T.check(
                head[:8] == b"\x89PNG\r\n\x1a\n" and width > 0 and height > 0,
                "screenshot is a PNG of %dx%d" % (width, height),
            )


if __name__ == "__main__":
    T.main()
