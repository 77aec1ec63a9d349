// The page's scripts: the timeline and the flame graphs drawn on canvases
// from the JSON of page_timeline.cpp, and the memory plot's hover. Plain
// JavaScript, no library: the page opens offline. The timeline draws only
// what is in view, one block per pixel where events are denser than pixels
// (found by binary search), so a frame costs the pixels, not the events.
// Its canvas is one view high and stays at the top of its scrolling box
// (CSS sticky) while a spacer below it gives the box the height of every
// track: browsers cap a canvas's height (about 32,000 px), and many threads
// or deep nesting are taller than that.
#include "html/page_events.hpp"

namespace ptprof::html::detail {

const char* const kTimelineScript = R"JS(
(function () {
  var el = document.getElementById('tl-data');
  if (!el) return;
  var timings = {script: performance.now()};
  var D = JSON.parse(el.textContent), S = D.strings;
  timings.parsed = performance.now();
  var canvas = document.getElementById('timeline'), box = document.getElementById('timeline-box');
  var details = document.getElementById('tl-details'), range = document.getElementById('tl-range');
  var ctx = canvas.getContext('2d');
  var space = document.getElementById('timeline-space');
  // The ruler: the time axis, then a lane of steps per process that has steps.
  var STEP_LANES = D.steps.reduce(function (m, st) { return Math.max(m, st[3] + 1); }, 1);
  var ROW = 16, HEAD = 18, RULER = 20 + 16 * STEP_LANES, GAP = 6, stepBoxes = [];
  function lowerBound(a, v) { var lo = 0, hi = a.length; while (lo < hi) { var m = (lo + hi) >> 1; if (a[m] < v) lo = m + 1; else hi = m; } return lo; }
  var y = RULER;
  var tracks = D.tracks.map(function (t) {
    var n = t.s.length, start = new Float64Array(n), end = new Float64Array(n), acc = 0, deepest = 0, i;
    for (i = 0; i < n; i++) { acc += t.s[i]; start[i] = acc; end[i] = acc + t.d[i]; if (t.l[i] > deepest) deepest = t.l[i]; }
    var ids = [];
    for (i = 0; i <= deepest; i++) ids.push([]);
    for (i = 0; i < n; i++) ids[t.l[i]].push(i);
    var lanes = ids.map(function (list) {
      var a = Int32Array.from(list), s = new Float64Array(a.length), reach = new Float64Array(a.length), m = -Infinity;
      for (var j = 0; j < a.length; j++) { s[j] = start[a[j]]; m = Math.max(m, end[a[j]]); reach[j] = m; }
      return {ids: a, start: s, reach: reach};
    });
    var tr = {t: t, start: start, end: end, lanes: lanes, y: y, h: HEAD + lanes.length * ROW};
    y += tr.h + GAP;
    return tr;
  });
  var fullHeight = y, v0 = 0, v1 = Math.max(D.t1, 1), W = 0, dpr = 1, drawn = 0, pending = false;
  // The first view: the steps (the setup before them, imports included, can
  // be most of the window); "whole window" shows the rest.
  function home() {
    v0 = 0; v1 = Math.max(D.t1, 1);
    if (!D.steps.length) return;
    var a = Infinity, b = -Infinity;
    D.steps.forEach(function (st) { a = Math.min(a, st[0]); b = Math.max(b, st[0] + st[1]); });
    var pad = (b - a) * 0.02;
    v0 = Math.max(0, a - pad); v1 = Math.min(D.t1, b + pad);
    if (v1 <= v0) { v0 = 0; v1 = Math.max(D.t1, 1); }
  }
  home();
  function colour(n) { var h = (Math.imul(n + 1, 2654435761) >>> 0) % 360; return 'hsl(' + h + ',55%,62%)'; }
  function X(t) { return (t - v0) / (v1 - v0) * W; }
  function T(x) { return v0 + x / W * (v1 - v0); }
  function fmt(ns) {
    var a = Math.abs(ns);
    if (a < 1e3) return ns.toFixed(0) + ' ns';
    if (a < 1e6) return (ns / 1e3).toFixed(3) + ' us';
    if (a < 1e9) return (ns / 1e6).toFixed(3) + ' ms';
    return (ns / 1e9).toFixed(3) + ' s';
  }
  function resize() {
    dpr = window.devicePixelRatio || 1;
    W = Math.max(200, box.clientWidth - 2);
    var view = Math.min(fullHeight, parseFloat(getComputedStyle(box).maxHeight) || fullHeight);
    canvas.width = W * dpr; canvas.height = view * dpr;
    canvas.style.width = W + 'px'; canvas.style.height = view + 'px';
    space.style.height = (fullHeight - view) + 'px';
  }
  function tickStep(span) { var s = Math.pow(10, Math.floor(Math.log10(span / 8))); return span / s > 40 ? s * 5 : span / s > 16 ? s * 2 : s; }
  function draw() {
    pending = false; drawn = 0;
    var top = box.scrollTop, bottom = top + box.clientHeight;
    // The page's coordinates from here on: y is from the top of the first track.
    ctx.setTransform(dpr, 0, 0, dpr, 0, -top * dpr);
    ctx.clearRect(0, top, W, bottom - top);
    ctx.font = '11px system-ui, sans-serif'; ctx.textBaseline = 'middle';
    tracks.forEach(function (tr) {
      if (tr.y > bottom || tr.y + tr.h < top) return;
      ctx.fillStyle = '#f2f2f2'; ctx.fillRect(0, tr.y, W, HEAD);
      ctx.fillStyle = '#222'; ctx.fillText(tr.t.label + '  (' + tr.t.s.length + ' events)', 4, tr.y + HEAD / 2);
      tr.lanes.forEach(function (lane, d) {
        var ly = tr.y + HEAD + d * ROW;
        if (ly > bottom || ly + ROW < top) return;
        var j = lowerBound(lane.reach, v0), n = lane.ids.length;
        while (j < n) {
          var i = lane.ids[j], s = tr.start[i];
          if (s > v1) break;
          var x0 = Math.max(X(s), 0), x1 = Math.min(X(tr.end[i]), W);
          drawn++;
          if (x1 - x0 < 1) {
            var px = Math.floor(x0), next = lowerBound(lane.start, T(px + 1)), last = next - 1;
            ctx.fillStyle = next > j + 1 ? '#999' : colour(tr.t.n[i]);
            ctx.fillRect(px, ly + 1, 1, ROW - 2);
            // The events of a lane follow one another: of those starting in
            // this pixel only the last can reach beyond it, and it is drawn.
            j = last > j && X(tr.end[lane.ids[last]]) >= px + 1 ? last : Math.max(j + 1, next);
            continue;
          }
          ctx.fillStyle = colour(tr.t.n[i]); ctx.fillRect(x0, ly + 1, x1 - x0, ROW - 2);
          if (x1 - x0 > 30) {
            ctx.save(); ctx.beginPath(); ctx.rect(x0, ly, x1 - x0, ROW); ctx.clip();
            ctx.fillStyle = '#111'; ctx.fillText(S[tr.t.n[i]], x0 + 3, ly + ROW / 2); ctx.restore();
          }
          j++;
        }
      });
    });
    if (selected) {  // the op whose details are shown
      var sx0 = X(selected.tr.start[selected.i]), sx1 = X(selected.tr.end[selected.i]);
      var sy = selected.tr.y + HEAD + selected.tr.t.l[selected.i] * ROW;
      ctx.strokeStyle = '#000'; ctx.lineWidth = 2; ctx.strokeRect(sx0, sy + 1, Math.max(sx1 - sx0, 2), ROW - 2); ctx.lineWidth = 1;
    }
    // The ruler, kept at the top of the visible part: the time axis and the steps.
    ctx.fillStyle = '#fff'; ctx.fillRect(0, top, W, RULER);
    var nth = [];  // per lane: its steps so far, for alternating shades
    stepBoxes = [];
    D.steps.forEach(function (st) {
      var a = X(st[0]), b = X(st[0] + st[1]), sy = top + 18 + st[3] * 16, k = nth[st[3]] = (nth[st[3]] || 0) + 1;
      if (b < 0 || a > W) return;
      ctx.fillStyle = k % 2 ? '#c9d9ec' : '#dfe8f3'; ctx.fillRect(a, sy, Math.max(b - a, 1), 16);
      ctx.strokeStyle = 'rgba(40,80,140,0.35)'; ctx.beginPath(); ctx.moveTo(a + 0.5, sy); ctx.lineTo(a + 0.5, bottom); ctx.stroke();
      if (b - a > 40) {
        ctx.save(); ctx.beginPath(); ctx.rect(a, sy, b - a, 16); ctx.clip(); ctx.fillStyle = '#123'; ctx.fillText(st[2], a + 3, sy + 8); ctx.restore();
        stepBoxes.push({label: st[2], x0: a + 3, x1: Math.min(a + 3 + ctx.measureText(st[2]).width, b), y0: sy - top, y1: sy - top + 16});
      }
    });
    var step = tickStep(v1 - v0);
    ctx.fillStyle = '#444'; ctx.strokeStyle = '#bbb';
    for (var t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
      var x = X(t); ctx.beginPath(); ctx.moveTo(x + 0.5, top); ctx.lineTo(x + 0.5, top + 16); ctx.stroke(); ctx.fillText(fmt(t), x + 3, top + 8);
    }
    range.textContent = 'showing ' + fmt(v0) + ' to ' + fmt(v1) + ' of ' + fmt(D.t1);
  }
  function redraw() { if (!pending) { pending = true; requestAnimationFrame(draw); } }
  function zoom(f, at) {
    var tm = T(at), span = Math.max((v1 - v0) * f, 100), pad = D.t1 * 0.05 + 1000;
    v0 = Math.max(tm - (tm - v0) * span / (v1 - v0), -pad); v1 = Math.min(v0 + span, D.t1 + pad);
    redraw();
  }
  function hit(cx, cy) {
    for (var k = 0; k < tracks.length; k++) {
      var tr = tracks[k], d = Math.floor((cy - tr.y - HEAD) / ROW);
      if (cy < tr.y + HEAD || d < 0 || d >= tr.lanes.length) continue;
      var lane = tr.lanes[d], t = T(cx), slack = (v1 - v0) / W * 3, best = -1, bestGap = Infinity;
      for (var j = lowerBound(lane.reach, t - slack); j < lane.ids.length && lane.start[j] <= t + slack; j++) {
        var i = lane.ids[j], gap = t < tr.start[i] ? tr.start[i] - t : t > tr.end[i] ? t - tr.end[i] : 0;
        if (gap < bestGap) { best = i; bestGap = gap; }
      }
      return best >= 0 ? {tr: tr, i: best} : null;
    }
    return null;
  }
  function row(label, value, pre) {
    var p = document.createElement(pre ? 'pre' : 'div'), b = document.createElement('b');
    b.textContent = label + ': '; p.appendChild(b); p.appendChild(document.createTextNode(value)); details.appendChild(p);
  }
  var selected = null;
  function show(h) {
    selected = h; redraw();
    var t = h.tr.t, i = h.i, x = t.x ? t.x[i] : 0;
    details.textContent = ''; details.dataset.name = S[t.n[i]];
    var title = document.createElement('h3'); title.textContent = S[t.n[i]]; details.appendChild(title);
    row('Where', t.label);
    row('Start', fmt(h.tr.start[i]) + ' after the window\'s first event');
    row('Duration', fmt(t.d[i]));
    if (t.h && t.h[i]) row('Input shapes', S[t.h[i]]);
    if (t.k && t.k[i]) row('Stack', S[t.k[i]], true);
    if (!x) return;
    var found = [];
    tracks.forEach(function (o) {
      if (o.t.pid !== t.pid || !o.t.x || o.t.gpu === t.gpu) return;
      for (var j = 0; j < o.t.x.length && found.length < 50; j++)
        if (o.t.x[j] === x) found.push(S[o.t.n[j]] + ' (' + fmt(o.t.d[j]) + ', ' + o.t.label + ')');
    });
    if (found.length) row(t.gpu ? 'Launched by' : 'CUDA kernels', found.join('\n'), true);
  }
  var press = null;
  canvas.addEventListener('mousedown', function (e) { press = {x: e.clientX, y: e.clientY, v0: v0, v1: v1, top: box.scrollTop, moved: false}; });
  window.addEventListener('mousemove', function (e) {
    if (!press) return;
    var dx = e.clientX - press.x, dy = e.clientY - press.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) press.moved = true;
    var shift = dx / W * (press.v1 - press.v0);
    v0 = press.v0 - shift; v1 = press.v1 - shift; box.scrollTop = press.top - dy; redraw();
  });
  window.addEventListener('mouseup', function () { setTimeout(function () { press = null; }, 0); });
  canvas.addEventListener('click', function (e) {
    if (press && press.moved) return;
    var r = canvas.getBoundingClientRect(), h = hit(e.clientX - r.left, e.clientY - r.top + box.scrollTop);
    if (h) show(h);
  });
  canvas.addEventListener('wheel', function (e) { e.preventDefault(); zoom(Math.exp(e.deltaY * 0.002), e.clientX - canvas.getBoundingClientRect().left); }, {passive: false});
  canvas.addEventListener('dblclick', function () { home(); redraw(); });
  document.getElementById('tl-in').addEventListener('click', function () { zoom(0.5, W / 2); });
  document.getElementById('tl-out').addEventListener('click', function () { zoom(2, W / 2); });
  document.getElementById('tl-steps').addEventListener('click', function () { home(); redraw(); });
  document.getElementById('tl-reset').addEventListener('click', function () { v0 = 0; v1 = Math.max(D.t1, 1); redraw(); });
  box.addEventListener('scroll', redraw);
  window.addEventListener('resize', function () { resize(); draw(); });
  timings.built = performance.now();
  resize(); draw();
  timings.drawn = performance.now();
  // For tests and scripts driving the page: find(name) brings the first op of
  // that name into view (zoomed to it when it is narrow, scrolled to its
  // row) and returns the client coordinates of its middle.
  window.ptprofTimeline = {
    drawn: function () { return drawn; },
    stepLabels: function () { return stepBoxes; },  // the step labels drawn last, with their boxes (canvas px)
    timings: timings,  // performance.now() when the script started, parsed its data, built its lanes, drew
    draw: function () { draw(); return drawn; },
    find: function (name) {
      var id = S.indexOf(name);
      for (var k = 0; k < tracks.length && id >= 0; k++) {
        var tr = tracks[k], n = tr.t.n;
        for (var i = 0; i < n.length; i++) {
          if (n[i] !== id) continue;
          var s = tr.start[i], e = tr.end[i];
          if (X(e) - X(s) < 20 || X(e) < 0 || X(s) > W) { var pad = Math.max((e - s) * 2, 1000); v0 = s - pad; v1 = e + pad; }
          var ly = tr.y + HEAD + tr.t.l[i] * ROW;
          box.scrollTop = Math.max(0, ly - RULER - 20); draw();
          var r = canvas.getBoundingClientRect();
          return {x: r.left + (Math.max(X(s), 0) + Math.min(X(e), W)) / 2, y: r.top + ly - box.scrollTop + ROW / 2};
        }
      }
      return null;
    }
  };
})();
)JS";

const char* const kFlameScript = R"JS(
(function () {
  var el = document.getElementById('flame-data');
  if (!el) return;
  var D = JSON.parse(el.textContent), keys = Object.keys(D);
  var canvas = document.getElementById('flame'), info = document.getElementById('flame-info'), tools = document.getElementById('flame-tools');
  var ctx = canvas.getContext('2d'), ROW = 17, W = 0, root = null, focus = null, key = keys[0], rects = [];
  function fmt(v) {
    if (key === 'bytes') { var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], k = 0; while (v >= 1024 && k < 4) { v /= 1024; k++; } return v.toFixed(k ? 1 : 0) + ' ' + u[k]; }
    return v < 1e6 ? (v / 1e3).toFixed(3) + ' us' : v < 1e9 ? (v / 1e6).toFixed(3) + ' ms' : (v / 1e9).toFixed(3) + ' s';
  }
  function build(g) {
    var r = {name: 'all', v: 0, kids: {}, parent: null, depth: 0}, deepest = 0;
    g.lines.forEach(function (l) {
      var n = r; r.v += l[1];
      l[0].split(';').forEach(function (f) {
        var c = n.kids[f];
        if (!c) c = n.kids[f] = {name: f, v: 0, kids: {}, parent: n, depth: n.depth + 1};
        c.v += l[1]; n = c; if (n.depth > deepest) deepest = n.depth;
      });
    });
    r.deepest = deepest; r.v += g.left_out; return r;
  }
  function colour(name) { var h = 0; for (var i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0; return 'hsl(' + (10 + h % 50) + ',75%,' + (55 + h % 20) + '%)'; }
  function draw() {
    var dpr = window.devicePixelRatio || 1, H = Math.min((root.deepest + 1) * ROW, 4000);
    W = Math.max(300, canvas.parentElement.clientWidth - 20);
    canvas.width = W * dpr; canvas.height = H * dpr; canvas.style.width = W + 'px'; canvas.style.height = H + 'px';
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0); ctx.font = '11px system-ui, sans-serif'; ctx.textBaseline = 'middle';
    rects = [];
    var base = focus.depth;
    function box(n, x, w) {
      var y = (n.depth - base) * ROW;
      if (y >= H) return;
      ctx.fillStyle = n === focus && n !== root ? '#e6a23c' : colour(n.name); ctx.fillRect(x, y, Math.max(w - 0.5, 0.5), ROW - 1);
      rects.push({x: x, y: y, w: w, n: n});
      if (w > 30) { ctx.save(); ctx.beginPath(); ctx.rect(x, y, w, ROW); ctx.clip(); ctx.fillStyle = '#111'; ctx.fillText(n.name, x + 3, y + ROW / 2); ctx.restore(); }
      if (w < 1) return;
      var kids = Object.keys(n.kids).map(function (k) { return n.kids[k]; }).sort(function (a, b) { return b.v - a.v; });
      var cx = x;
      kids.forEach(function (c) { var cw = w * c.v / n.v; box(c, cx, cw); cx += cw; });
    }
    box(focus, 0, W);
  }
  function pick(e) {
    var r = canvas.getBoundingClientRect(), x = e.clientX - r.left, y = e.clientY - r.top;
    for (var i = rects.length - 1; i >= 0; i--) { var b = rects[i]; if (x >= b.x && x < b.x + b.w && y >= b.y && y < b.y + ROW) return b.n; }
    return null;
  }
  function select(k) {
    key = k; root = build(D[k]); focus = root; draw();
    info.textContent = D[k].title + ': ' + fmt(root.v) + ' in all' + (D[k].left_out ? ' (' + fmt(D[k].left_out) + ' in the smallest stacks, not drawn)' : '');
    Array.prototype.forEach.call(tools.children, function (b) { b.disabled = b.dataset.key === k; });
  }
  keys.forEach(function (k) {
    var b = document.createElement('button'); b.textContent = D[k].title; b.dataset.key = k;
    b.addEventListener('click', function () { select(k); }); tools.appendChild(b); tools.appendChild(document.createTextNode(' '));
  });
  canvas.addEventListener('click', function (e) { var n = pick(e); if (!n) return; focus = n === focus && n.parent ? n.parent : n; draw(); });
  canvas.addEventListener('mousemove', function (e) {
    var n = pick(e); if (!n) return;
    info.textContent = n.name + ': ' + fmt(n.v) + ' (' + (100 * n.v / root.v).toFixed(2) + '% of all)';
  });
  window.addEventListener('resize', draw);
  select(key);
})();
)JS";

const char* const kMemoryHoverScript = R"JS(
(function () {
  var el = document.getElementById('memory-data'), svg = document.getElementById('memory-plot');
  if (!el || !svg) return;
  var D = JSON.parse(el.textContent), out = document.getElementById('memory-hover'), line = document.getElementById('memory-cursor');
  function bytes(v) { var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], k = 0; while (Math.abs(v) >= 1024 && k < 4) { v /= 1024; k++; } return v.toFixed(k ? 1 : 0) + ' ' + u[k]; }
  svg.addEventListener('mousemove', function (e) {
    var r = svg.getBoundingClientRect(), x = (e.clientX - r.left) * D.width / r.width;
    if (x < D.left || x > D.right) return;
    var t = (x - D.left) / (D.right - D.left) * D.span, parts = [];
    D.series.forEach(function (s) {
      var lo = 0, hi = s.t.length;
      while (lo < hi) { var m = (lo + hi) >> 1; if (s.t[m] <= t) lo = m + 1; else hi = m; }
      if (lo === 0) return;
      parts.push(s.label + ': allocated ' + bytes(s.a[lo - 1]) + (s.r ? ', reserved ' + bytes(s.r[lo - 1]) : ''));
    });
    line.setAttribute('x1', x); line.setAttribute('x2', x); line.setAttribute('visibility', 'visible');
    out.textContent = 'at ' + (t / 1e6).toFixed(3) + ' ms: ' + (parts.length ? parts.join('; ') : 'no memory event yet');
  });
})();
)JS";

}  // namespace ptprof::html::detail
