"""The page of `ptprof report --html` as the place users look (issue 24):
headless Chromium opens the page of a run of every example, of a 2-rank DDP
run and of a `--with-stack --profile-memory` run without script errors; the
timeline draws (pixels on its canvas); a scripted click on an op, found where
the page drew it, shows that op's details; the header says "1 window"; the
ranks, their collectives, stragglers and collective arrivals are on the page and steps are
labelled by rank; the memory plot marks the steps and the peak with its op
and answers a hover; the flame graph draws and zooms on a click. No check
depends on timing: the browser runs with a virtual time budget and every
check reads what the page put in its DOM. Skipped without Chromium."""

import html
import json
import os
import re
import textwrap

import export_check as X
import ptproftest as T
import test_ranks
from test_report_html import chromium, headless

COST_S = 125

# Injected into a copy of the page (the page has no test code besides the
# timeline's find/drawn hook): records script errors from the start; once
# loaded, checks the timeline's canvas for drawn pixels, clicks the op named
# by the page's <meta name="probe-op"> where the timeline drew it, hovers the
# memory plot, clicks the flame graph's widest frame, and writes what it found
# into the DOM for --dump-dom.
PROBE = """<script>
window.__errors = [];
window.addEventListener('error', function (e) { __errors.push(String(e.message)); });
var __ce = console.error;
console.error = function () { __errors.push(Array.prototype.join.call(arguments, ' ')); __ce.apply(console, arguments); };
window.addEventListener('load', function () {
  var out = {errors: __errors};
  function text(sel) { return Array.prototype.map.call(document.querySelectorAll(sel), function (e) { return e.textContent; }); }
  var canvas = document.getElementById('timeline');
  out.timeline = !!canvas;
  if (canvas) {
    var ctx = canvas.getContext('2d'), px = ctx.getImageData(0, 0, canvas.width, Math.min(canvas.height, 2000)).data, n = 0;
    for (var i = 3; i < px.length; i += 4) if (px[i]) n++;
    out.pixels = n;
    out.drawn = window.ptprofTimeline ? window.ptprofTimeline.drawn() : -1;
    out.step_boxes = window.ptprofTimeline && window.ptprofTimeline.stepLabels ? window.ptprofTimeline.stepLabels() : null;
    out.sampled = text('#timeline-sampled');
    var op = document.querySelector('meta[name=probe-op]').content, at = window.ptprofTimeline.find(op);
    out.found = !!at;
    out.box_height = document.getElementById('timeline-box').scrollHeight;
    if (at) {
      var cr = canvas.getBoundingClientRect(), k = window.devicePixelRatio || 1;
      out.found_alpha = ctx.getImageData(Math.floor((at.x - cr.left) * k), Math.floor((at.y - cr.top) * k), 1, 1).data[3];
      canvas.dispatchEvent(new MouseEvent('click', {clientX: at.x, clientY: at.y, bubbles: true}));
    }
    var d = document.getElementById('tl-details');
    out.details_name = d.dataset.name || '';
    out.details = d.textContent;
  }
  out.meta = text('table.meta tr').join('\\n');
  out.step_labels = text('svg.plot text').filter(function (s) { return /step \\d/.test(s); });
  out.tables = {};
  ['processes', 'ranks', 'collectives', 'stragglers', 'arrivals'].forEach(function (id) {
    var t = document.getElementById(id);
    out.tables[id] = t ? Array.prototype.map.call(t.tBodies[0].rows, function (r) {
      return Array.prototype.map.call(r.cells, function (c) { return c.textContent; }); }) : null;
  });
  var mem = document.getElementById('memory-plot');
  if (mem) {
    out.step_markers = document.querySelectorAll('#memory-plot .step-marker').length;
    out.peaks = text('#memory-plot .memory-peak title');
    var r = mem.getBoundingClientRect();
    mem.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + r.width * 0.6, clientY: r.top + 50, bubbles: true}));
    out.hover = document.getElementById('memory-hover').textContent;
  }
  var flame = document.getElementById('flame');
  if (flame) {
    var info = document.getElementById('flame-info');
    out.flame_before = info.textContent;
    out.flame_buttons = text('#flame-tools button');
    var fr = flame.getBoundingClientRect();
    flame.dispatchEvent(new MouseEvent('mousemove', {clientX: fr.left + 5, clientY: fr.top + 25, bubbles: true}));
    out.flame_hover = info.textContent;
  }
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""  # noqa: E501 (the page's script, as written)


def probe_page(browser, d, page, op):
    """The probe's findings on `page`, after clicking op `op` in the timeline."""
    with open(page, encoding="utf-8") as f:
        text = f.read()
    T.check(not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), "no external resources")
    probed = os.path.join(d, "probed.html")
    meta = '<meta name="probe-op" content="%s">' % html.escape(op)
    with open(probed, "w", encoding="utf-8") as f:
        f.write(text.replace("<head>", "<head>" + meta + PROBE, 1))
    dom = headless(browser, "--virtual-time-budget=10000", "--dump-dom", "file://" + probed)
    m = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.S)
    T.check(m is not None, "the page loaded and the probe ran\n" + T.describe(dom))
    return json.loads(html.unescape(m.group(1))) if m else None


def longest_op(trace, *args, shapes=True):
    """The aten op (with input shapes, when they were recorded) that took the
    most time per call."""
    rows = [
        r
        for r in T.report_json(trace, "--group-by-input-shape", *args)["rows"]
        if r["name"].startswith("aten::") and (not shapes or r.get("input_shapes") not in (None, "", "[]"))
    ]
    rows.sort(key=lambda r: -r["cpu_time_avg_us"])
    return rows[0]


def check_timeline(probe, op, what):
    T.check_eq(probe["errors"], [], what + ": script errors in the page")
    T.check(probe["timeline"], what + ": the page has a timeline")
    T.check(
        probe.get("pixels", 0) > 1000, what + ": the timeline's canvas has drawn pixels (%d)" % probe.get("pixels", 0)
    )
    T.check(probe.get("drawn", 0) > 0, what + ": the timeline drew events (%d)" % probe.get("drawn", 0))
    T.check(probe.get("found"), what + ": the timeline drew %s where a click can reach it" % op["name"])
    T.check(
        probe.get("found_alpha", 0) > 0,
        what + ": the canvas has pixels where the timeline says it drew %s" % op["name"],
    )
    T.check_eq(probe.get("details_name"), op["name"], what + ": the details after clicking the op")
    details = probe.get("details", "")
    for part in ("Duration", "Where", "Start"):
        T.check(part in details, what + ": the details say %s: %r" % (part, details))
    T.check(
        "Input shapes" in details and "[" in details, what + ": the details show the op's input shapes: %r" % details
    )
    T.check(
        re.search(r"Windows1 window \(0\)", probe["meta"]) is not None,
        what + ": the header says '1 window': %r" % probe["meta"],
    )


def test_every_example():
    browser = chromium()
    for script in sorted(f for f in os.listdir(T.EXAMPLES_DIR) if f.endswith(".py")):
        with T.tempdir() as d:
            trace = X.trace_example(d, script, env=T.clean_env(STEPS=3))
            page = os.path.join(d, "report.html")
            proc = T.run_ptprof(["report", trace, "--html", page])
            T.check_eq(proc.returncode, 0, script + ": report --html\n" + T.describe(proc))
            op = longest_op(trace)
            probe = probe_page(browser, d, page, op["name"])
            if probe:
                check_timeline(probe, op, script)
                T.check_eq(probe["tables"]["ranks"], None, script + ": no ranks section for one process")
                T.check("flame_buttons" not in probe, script + ": no flame graph without recorded stacks")


def test_two_rank_ddp():
    browser = chromium()
    with T.tempdir() as d:
        out = os.path.join(d, "out")
        test_ranks.run_ranks(out)
        page = os.path.join(d, "report.html")
        proc = T.run_ptprof(["report", out, "--window", "0", "--html", page])
        T.check_eq(proc.returncode, 0, "report --html\n" + T.describe(proc))
        rep = T.report_json(out, "--window", "0")
        op = longest_op(out, "--window", "0", shapes=False)
        probe = probe_page(browser, d, page, op["name"])
        if not probe:
            return
        T.check_eq(probe["errors"], [], "script errors in the page")
        T.check(
            probe.get("pixels", 0) > 1000 and probe.get("drawn", 0) > 0, "the timeline draws: %r" % probe.get("drawn")
        )
        T.check_eq(probe.get("details_name"), op["name"], "the details after clicking " + op["name"])
        ranks = probe["tables"]["ranks"] or []
        T.check_eq(
            sorted(int(r[0]) for r in ranks),
            [r["rank"] for r in sorted(rep["ranks"], key=lambda r: r["rank"])],
            "the page's ranks are the report's",
        )
        roles = [row[3] for row in probe["tables"]["processes"] or []]
        T.check("rank 0 (main)" in roles and "rank 1 (main)" in roles, "each rank's main process by role: %r" % roles)
        collectives = probe["tables"]["collectives"] or []
        T.check(any(r[1] in test_ranks.ALLREDUCE for r in collectives), "the allreduce per rank: %r" % collectives)
        stragglers = probe["tables"]["stragglers"] or []
        T.check_eq(sorted(int(r[0]) for r in stragglers), [1, 2], "a straggler row per step of window 0")
        arrivals = probe["tables"]["arrivals"] or []
        # One all-reduce per step (step 1 also has DDP's first-forward broadcasts).
        T.check_eq(
            sorted(int(r[0]) for r in arrivals if r[2] in test_ranks.ALLREDUCE),
            [1, 2],
            "a collective arrivals row for each step's all-reduce in window 0: %r" % arrivals,
        )
        T.check(
            all(r[3] == "2" and r[4] in ("0", "1") for r in arrivals),
            "each arrivals row matches both ranks and names the last: %r" % arrivals,
        )
        labels = probe["step_labels"]
        T.check(
            labels and all(re.match(r"^rank [01] step \d+", s) for s in labels),
            "steps labelled by rank, not pid: %r" % labels,
        )
        # The timeline's ruler: both ranks' steps labelled, no two labels over each other.
        boxes = probe.get("step_boxes") or []
        T.check_eq(
            sorted({b["label"].split(" step")[0] for b in boxes}),
            ["rank 0", "rank 1"],
            "the timeline labels both ranks' steps: %r" % boxes,
        )
        overlapping = [
            (a["label"], b["label"])
            for i, a in enumerate(boxes)
            for b in boxes[i + 1 :]
            if a["x0"] < b["x1"] and b["x0"] < a["x1"] and a["y0"] < b["y1"] and b["y0"] < a["y1"]
        ]
        T.check_eq(overlapping, [], "step labels drawn over each other in the timeline")


def probe_ranges_script(code, op):
    """Runs the Python `code` (ranges only) under ptprof, opens its page and
    clicks range `op` in the timeline; checks the page had no script errors
    and that `op` was found, drawn where the timeline says, and clicked.
    Returns the probe's findings (None when the page did not load)."""
    browser = chromium()
    with T.tempdir() as d:
        script = os.path.join(d, "ranges.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(code))
        out = os.path.join(d, "out")
        proc = T.run_ptprof(["run", "-o", out, "--", T.PYTHON, script])
        T.check_eq(proc.returncode, 0, "run\n" + T.describe(proc))
        page = os.path.join(d, "report.html")
        proc = T.run_ptprof(["report", out, "--html", page])
        T.check_eq(proc.returncode, 0, "report --html\n" + T.describe(proc))
        probe = probe_page(browser, d, page, op)
        if probe:
            T.check_eq(probe["errors"], [], "script errors in the page")
            T.check(probe.get("found"), "%s is reachable in the timeline" % op)
            T.check(probe.get("found_alpha", 0) > 0, "%s is drawn where the timeline says" % op)
            T.check_eq(probe.get("details_name"), op, "the details after clicking it")
        return probe


def test_timeline_taller_than_a_canvas():
    """60 threads, each 40 ranges deep: 40,000 px of tracks, more than a
    browser draws on one canvas (about 32,000 px). The innermost range of the
    last thread, at the bottom, is drawn, reachable and clickable."""
    probe = probe_ranges_script(
        """\
        import contextlib, threading, ptprof
        def nest(k):
            with contextlib.ExitStack() as stack:
                for j in range(39):
                    stack.enter_context(ptprof.range("thread%d_level%d" % (k, j)))
                with ptprof.range("innermost_of_thread%d" % k):
                    pass
        for k in range(60):
            t = threading.Thread(target=nest, args=(k,))
            t.start()
            t.join()
    """,
        "innermost_of_thread59",
    )
    if probe:
        T.check(
            probe.get("box_height", 0) > 36000, "the timeline is as tall as its tracks: %r" % probe.get("box_height")
        )


def test_long_range_right_after_a_tiny_one():
    """A range that starts within a pixel of a tiny one before it (here 2 s
    of timeline on about 1,000 px) is drawn all along, not merged into that
    pixel and lost."""
    probe_ranges_script(
        """\
        import time, ptprof
        with ptprof.range("before"):
            time.sleep(1)
        with ptprof.range("tiny"):
            pass
        with ptprof.range("long_after_tiny"):
            time.sleep(0.2)
        with ptprof.range("after"):
            time.sleep(1)
    """,
        "long_after_tiny",
    )


def test_stack_and_memory():
    browser = chromium()
    with T.tempdir() as d:
        trace = X.trace_example(d, "train_mlp.py", "--with-stack", "--profile-memory", env=T.clean_env(STEPS=3))
        page = os.path.join(d, "report.html")
        proc = T.run_ptprof(["report", trace, "--html", page])
        T.check_eq(proc.returncode, 0, "report --html\n" + T.describe(proc))
        op = longest_op(trace)
        probe = probe_page(browser, d, page, op["name"])
        if not probe:
            return
        check_timeline(probe, op, "--with-stack --profile-memory")
        T.check(
            "Stack" in probe.get("details", "") and "train_mlp.py(" in probe.get("details", ""),
            "the clicked op's Python stack: %r" % probe.get("details"),
        )
        steps = len(T.report_json(trace)["steps"])
        T.check_eq(probe.get("step_markers"), steps, "the memory plot marks each step's start")
        mem = T.run_ptprof(["memory", trace]).stdout
        peak_ops = re.findall(r"^  pid \d+ \S+\s+allocated .*? at (\S.*?)(?: \(in .*\))?$", mem, re.M)
        T.check(
            peak_ops and any(o in t for o in peak_ops for t in probe.get("peaks", [])),
            "the memory peak marked with its op %r: %r" % (peak_ops, probe.get("peaks")),
        )
        T.check("allocated" in probe.get("hover", ""), "hovering the memory plot shows values: %r" % probe.get("hover"))
        T.check(
            "CPU time (self)" in probe.get("flame_buttons", []) and "Allocated bytes" in probe.get("flame_buttons", []),
            "flame graphs of CPU time and allocated bytes: %r" % probe.get("flame_buttons"),
        )
        T.check(re.search(r"\d", probe.get("flame_before", "")) is not None, "the flame graph's total")
        T.check(
            probe.get("flame_hover", "") and probe["flame_hover"] != probe["flame_before"],
            "hovering a frame names it: %r" % probe.get("flame_hover"),
        )


if __name__ == "__main__":
    T.main()
