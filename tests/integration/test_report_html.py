"""`ptprof report --html`: one self-contained page that opens in headless
Chromium without script errors, with a visible operator table and at least
two plots (step breakdown, top operators), whose table sorts on a click.
Skipped when Chromium is not installed (Debian: apt-get install chromium)."""

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
                                    external: document.querySelectorAll('[src],link[href]').length});
  document.body.appendChild(pre);
});
</script>"""


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    T.skip("Chromium is not installed (Debian: apt-get install chromium)")


def headless(browser, *args):
    return T.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                  "--window-size=1200,1600"] + list(args), timeout=120)


def test_html_report_opens_in_chromium():
    browser = chromium()
    with T.tempdir() as d:
        trace = X.trace_example(d, "train_mlp_ranges.py", env=T.clean_env(STEPS=3))
        page = os.path.join(d, "report.html")
        proc = T.run_ptprof(["report", trace, "--html", page])
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
        T.check(probe["plots"] >= 2, "plots with a size: %d" % probe["plots"])
        T.check_eq(probe["external"], 0, "elements loading other files")
        rows = T.report_json(trace)["rows"]
        most = max(r["calls"] for r in rows)
        T.check(any(r["name"] == probe["first"] and r["calls"] == most for r in rows),
                "after sorting by # of Calls, the first row (%s) has the most calls (%d)" % (probe["first"], most))

        shot = os.path.join(d, "report.png")
        proc = headless(browser, "--screenshot=" + shot, "file://" + page)
        T.check(os.path.exists(shot), "screenshot written\n" + T.describe(proc))
        if os.path.exists(shot):
            with open(shot, "rb") as f:
                head = f.read(24)
            width, height = struct.unpack(">II", head[16:24])
            T.check(head[:8] == b"\x89PNG\r\n\x1a\n" and width > 0 and height > 0,
                    "screenshot is a PNG of %dx%d" % (width, height))


if __name__ == "__main__":
    T.main()
