#!/bin/sh
# The HTML page of a window of N events (default 1 million; synthetic, from
# export_trace_gen): the time `ptprof report --html` takes and the page's
# size, then in headless Chromium the time from navigation to the page loaded
# with its timeline drawn (performance.now() at the load event), and the time
# of one redraw of the whole window and of a zoomed view.
#   bench/page_bench.sh [BUILD_DIR] [N]
set -eu
build=${1:-build}
n=${2:-1000000}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$build/bin/export_trace_gen" "$dir/trace.bin" "$n"
start=$(date +%s.%N)
"$build/bin/ptprof" report "$dir/trace.bin" --html "$dir/page.html" 2>/dev/null
end=$(date +%s.%N)
echo "report --html: $(echo "$end - $start" | bc) s, page $(stat -c %s "$dir/page.html") bytes"
grep -o '<p class="tl-note" id="timeline-sampled">[^<]*' "$dir/page.html" | sed 's/<[^>]*>//' || true
probe='<script>window.addEventListener("load", function () {
  var loaded = performance.now(), t = window.ptprofTimeline, a = performance.now(), whole = t.draw(), b = performance.now();
  document.getElementById("tl-in").click(); for (var i = 0; i < 6; i++) document.getElementById("tl-in").click();
  var c = performance.now(), zoomed = t.draw(), e = performance.now();
  var p = document.createElement("pre"); p.id = "bench";
  var m = t.timings;
  p.textContent = "loaded and drawn at " + loaded.toFixed(0) + " ms (the timeline script started at " + m.script.toFixed(0) +
    " ms, parsed its data in " + (m.parsed - m.script).toFixed(0) + " ms, built its lanes in " + (m.built - m.parsed).toFixed(0) +
    " ms, drew in " + (m.drawn - m.built).toFixed(0) + " ms); redraw of the whole window " + (b - a).toFixed(1) +
    " ms (" + whole + " blocks); redraw zoomed 64x " + (e - c).toFixed(1) + " ms (" + zoomed + " blocks)";
  document.body.appendChild(p); });</script>'
awk -v p="$probe" '{ if (!done && sub(/<head>/, "<head>" p)) done = 1; print }' "$dir/page.html" >"$dir/probed.html"
"$browser" --headless --no-sandbox --disable-gpu --window-size=1200,1600 --virtual-time-budget=60000 \
  --dump-dom "file://$dir/probed.html" 2>/dev/null | grep -o '<pre id="bench">[^<]*' | sed 's/<pre id="bench">//'
