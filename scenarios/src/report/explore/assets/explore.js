// resim explore: draws one run (and the run it is compared with) from the page's JSON, and
// links every view to one cursor (a bucket) and one window (a range of buckets). No library:
// canvas for the charts (lines on one layer, the cursor and selection on another, so that
// hovering redraws no line), SVG for the topology, text for everything else.
(function () {
  "use strict";
  // Okabe–Ito, distinct for readers with the common colour blindness, then greys.
  var PALETTE = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#777777", "#000000"];
  var MARGIN = { left: 46, right: 8, top: 8, bottom: 20 };
  var S = { cur: null, prev: null, from: 0, to: 0, cursor: 0, picked: null, charts: [], byKey: {}, prevByKey: {} };

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svg(tag, attrs, text) {
    var e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function fmt(v) {
    if (v === null || v === undefined) return "–";
    if (Number.isInteger(v)) return String(v);
    var a = Math.abs(v);
    return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : a >= 1 ? v.toFixed(2) : v.toFixed(3);
  }
  function secs(t) { return t.toFixed(3) + "s"; }
  function n() { return S.cur.t_s.length; }
  function tOf(i) { return S.cur.t_s[Math.min(Math.max(i, 0), n() - 1)] || 0; }
  function endOf(i) { return i >= n() ? S.cur.simulated_s : S.cur.t_s[i]; }
  function value(key, i, prev) {
    var line = (prev ? S.prevByKey : S.byKey)[key];
    return line && i < line.values.length ? line.values[i] : null;
  }

  // ---- the page for one run (and the compared one) ----
  function show(current, previous) {
    S.cur = current; S.prev = previous || null;
    S.byKey = {}; S.prevByKey = {};
    current.lines.forEach(function (l) { S.byKey[l.key] = l; });
    if (S.prev) S.prev.lines.forEach(function (l) { S.prevByKey[l.key] = l; });
    S.from = 0; S.to = n(); S.cursor = Math.min(S.cursor, n() - 1); S.picked = null;
    heading();
    buildCharts();
    buildMarks();
    $("scrubber").max = String(Math.max(n() - 1, 0));
    $("requests-list").textContent = ""; $("request-tree").textContent = "";
    $("requests-for").textContent = "Click a bucket of a chart to list its failed and slowest requests.";
    redraw();
  }

  function heading() {
    var c = S.cur;
    $("title").textContent = "resim explore · " + c.scenario + " · seed " + c.seed;
    var parts = ["digest " + c.digest, secs(c.simulated_s) + " simulated", "buckets of " + secs(c.bucket_s), "stopped: " + c.stop_reason];
    if (c.variant) parts.push("variant " + c.variant);
    if (c.sets.length) parts.push("--set " + c.sets.join(" --set "));
    var meta = $("meta");
    meta.textContent = parts.join(" · ") + " · replay: ";
    meta.appendChild(el("code", {}, c.replay));
    if (S.prev) {
      meta.appendChild(el("br"));
      meta.appendChild(document.createTextNode("compared with (dashed lines): " +
        (S.prev.scenario !== c.scenario ? "scenario " + S.prev.scenario + (S.prev.variant ? ", variant " + S.prev.variant : "") :
          S.prev.variant ? "variant " + S.prev.variant : "the file as written") +
        (S.prev.sets.length ? " --set " + S.prev.sets.join(" --set ") : "") +
        " · digest " + S.prev.digest + " · same seed, common random numbers"));
    }
  }

  // ---- charts ----
  function buildCharts() {
    var host = $("charts");
    host.textContent = "";
    S.charts = [];
    S.cur.charts.forEach(function (spec) {
      var lines = S.cur.lines.filter(function (l) { return l.chart === spec.id; });
      if (!lines.some(function (l) { return l.values.some(function (v) { return v; }); })) return;
      var fig = el("figure", { id: "chart-" + spec.id });
      fig.appendChild(el("figcaption", {}, spec.title + (spec.unit ? " (" + spec.unit + ")" : "")));
      var plot = el("div", { "class": "plot" });
      var base = el("canvas", { "aria-hidden": "true" });
      var over = el("canvas", { tabindex: "0", role: "img", "aria-label": spec.title + ": arrow keys move the cursor, Enter lists the bucket's failed and slowest requests" });
      plot.appendChild(base); plot.appendChild(over);
      fig.appendChild(plot);
      var readout = el("div", { "class": "readout", "aria-live": "polite" });
      fig.appendChild(readout);
      host.appendChild(fig);
      var chart = { spec: spec, lines: lines, base: base, over: over, readout: readout, max: 1 };
      S.charts.push(chart);
      hookChart(chart);
    });
  }

  function size(canvas) {
    var r = canvas.getBoundingClientRect(), d = window.devicePixelRatio || 1;
    var w = Math.max(1, Math.round(r.width * d)), h = Math.max(1, Math.round(r.height * d));
    if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
    var g = canvas.getContext("2d");
    g.setTransform(d, 0, 0, d, 0, 0);
    return { g: g, w: r.width, h: r.height };
  }

  // The x of bucket i's start, and the bucket under x, in the window shown.
  function xOf(chart, i) {
    var w = chart.w - MARGIN.left - MARGIN.right;
    return MARGIN.left + (i - S.from) / Math.max(S.to - S.from, 1) * w;
  }
  function bucketAt(chart, x) {
    var w = chart.w - MARGIN.left - MARGIN.right;
    var i = S.from + Math.floor((x - MARGIN.left) / w * (S.to - S.from));
    return Math.min(Math.max(i, S.from), S.to - 1);
  }

  function drawChart(chart) {
    var c = size(chart.base), g = c.g;
    chart.w = c.w; chart.h = c.h;
    size(chart.over);
    var max = chart.spec.id === "success" ? 1 : 0;
    var runs = S.prev ? [false, true] : [false];
    chart.lines.forEach(function (l) {
      runs.forEach(function (prev) {
        for (var i = S.from; i < S.to; i++) { var v = value(l.key, i, prev); if (v > max) max = v; }
      });
    });
    chart.max = max > 0 ? max * 1.05 : 1;
    g.clearRect(0, 0, c.w, c.h);
    g.strokeStyle = "#ccc"; g.fillStyle = "#555"; g.font = "10px sans-serif"; g.lineWidth = 1;
    var top = MARGIN.top, bottom = c.h - MARGIN.bottom;
    g.beginPath(); g.moveTo(MARGIN.left, top); g.lineTo(MARGIN.left, bottom); g.lineTo(c.w - MARGIN.right, bottom); g.stroke();
    g.textAlign = "right";
    g.fillText(fmt(chart.max), MARGIN.left - 3, top + 8);
    g.fillText("0", MARGIN.left - 3, bottom);
    g.textAlign = "center";
    [S.from, Math.floor((S.from + S.to) / 2), S.to].forEach(function (i) {
      g.fillText(secs(endOf(i)).replace(".000", ""), Math.min(Math.max(xOf(chart, i), MARGIN.left + 16), c.w - 20), c.h - 5);
    });
    shadeFaults(chart, g, top, bottom);
    runs.forEach(function (prev) {
      chart.lines.forEach(function (l, k) {
        g.strokeStyle = PALETTE[k % PALETTE.length];
        g.lineWidth = prev ? 1 : 1.6;
        g.setLineDash(prev ? [4, 3] : []);
        g.beginPath();
        var pen = false, half = (xOf(chart, 1) - xOf(chart, 0)) / 2;
        for (var i = S.from; i < S.to; i++) {
          var v = value(l.key, i, prev);
          if (v === null || v === undefined) { pen = false; continue; }
          var x = xOf(chart, i) + half, y = bottom - v / chart.max * (bottom - top);
          if (pen) g.lineTo(x, y); else g.moveTo(x, y);
          pen = true;
        }
        g.stroke();
      });
    });
    g.setLineDash([]);
  }

  function shadeFaults(chart, g, top, bottom) {
    g.fillStyle = "rgba(230,159,0,0.13)";
    S.cur.marks.forEach(function (m) {
      if (m.kind !== "fault") return;
      var a = xOfTime(chart, m.from_s), b = xOfTime(chart, m.to_s === null ? S.cur.simulated_s : m.to_s);
      a = Math.max(a, MARGIN.left); b = Math.min(b, chart.w - MARGIN.right);
      if (b > a) g.fillRect(a, top, Math.max(b - a, 1), bottom - top);
    });
  }
  function xOfTime(chart, t) { return xOf(chart, t / S.cur.bucket_s); }

  // The cursor's layer, at the size its chart measured when last drawn (no layout per hover).
  function drawOverlay(chart, select) {
    var c = { g: chart.over.getContext("2d"), w: chart.w, h: chart.h };
    var g = c.g;
    g.clearRect(0, 0, c.w, c.h);
    if (select) {
      g.fillStyle = "rgba(0,114,178,0.15)";
      var a = xOf(chart, Math.min(select[0], select[1])), b = xOf(chart, Math.max(select[0], select[1]) + 1);
      g.fillRect(a, MARGIN.top, b - a, c.h - MARGIN.top - MARGIN.bottom);
    }
    if (S.cursor >= S.from && S.cursor < S.to) {
      var x = xOf(chart, S.cursor) + (xOf(chart, 1) - xOf(chart, 0)) / 2;
      g.strokeStyle = "#000"; g.lineWidth = 1;
      g.beginPath(); g.moveTo(x, MARGIN.top); g.lineTo(x, c.h - MARGIN.bottom); g.stroke();
    }
  }

  // The values at the cursor under a chart: its spans are made once, their text changed.
  function readout(chart) {
    var r = chart.readout, i = S.cursor;
    if (!chart.spans) {
      r.textContent = "";
      chart.time = el("span", { "class": "t" });
      r.appendChild(chart.time);
      chart.spans = chart.lines.map(function (l, k) {
        var s = el("span", { "data-key": l.key });
        var sw = el("span", { "class": "swatch" }); sw.style.background = PALETTE[k % PALETTE.length];
        s.appendChild(sw);
        var text = document.createTextNode("");
        s.appendChild(text);
        r.appendChild(s);
        return { span: s, text: text, line: l };
      });
    }
    chart.time.textContent = secs(tOf(i)) + "–" + secs(endOf(i + 1));
    chart.spans.forEach(function (o) {
      var v = value(o.line.key, i, false), text = o.line.label + " " + fmt(v);
      if (S.prev) {
        var p = value(o.line.key, i, true);
        text += " (compared " + fmt(p) + (v !== null && p !== null ? ", Δ " + (v - p >= 0 ? "+" : "") + fmt(v - p) : "") + ")";
        o.span.setAttribute("data-compared", p === null ? "" : String(p));
      }
      o.text.data = text;
      o.span.setAttribute("data-value", v === null ? "" : String(v));
    });
  }

  function hookChart(chart) {
    var over = chart.over, drag = null;
    function bucket(ev) { return bucketAt(chart, ev.clientX - over.getBoundingClientRect().left); }
    over.addEventListener("mousedown", function (ev) { drag = { from: bucket(ev), x: ev.clientX }; });
    over.addEventListener("mousemove", function (ev) {
      var i = bucket(ev);
      if (drag) { drawOverlay(chart, [drag.from, i]); }
      setCursor(i);
    });
    over.addEventListener("mouseup", function (ev) {
      if (!drag) return;
      var i = bucket(ev), moved = Math.abs(ev.clientX - drag.x) > 4;
      var a = Math.min(drag.from, i), b = Math.max(drag.from, i) + 1;
      drag = null;
      if (moved && b - a >= 1) zoom(a, b); else pick(i);
    });
    over.addEventListener("mouseleave", function () { if (drag) { drag = null; drawOverlay(chart); } });
    over.addEventListener("keydown", function (ev) {
      var step = ev.shiftKey ? 10 : 1;
      if (ev.key === "ArrowLeft") { setCursor(Math.max(S.cursor - step, 0)); ev.preventDefault(); }
      else if (ev.key === "ArrowRight") { setCursor(Math.min(S.cursor + step, n() - 1)); ev.preventDefault(); }
      else if (ev.key === "Enter") { pick(S.cursor); ev.preventDefault(); }
    });
  }

  // ---- the cursor, the window ----
  function setCursor(i) {
    S.cursor = Math.min(Math.max(i, 0), n() - 1);
    if (S.cursor < S.from || S.cursor >= S.to) {
      var w = S.to - S.from;
      S.from = Math.max(0, Math.min(S.cursor - Math.floor(w / 2), n() - w));
      S.to = S.from + w;
      redraw();
      return;
    }
    S.charts.forEach(function (c) { drawOverlay(c); readout(c); });
    $("scrubber").value = String(S.cursor);
    $("scrub-t").textContent = "cursor at " + secs(tOf(S.cursor));
    drawMarks();
    topology();
  }

  function zoom(a, b) {
    S.from = Math.max(0, a); S.to = Math.min(n(), Math.max(b, a + 1));
    if (S.cursor < S.from || S.cursor >= S.to) S.cursor = S.from;
    redraw();
  }

  function redraw() {
    S.charts.forEach(function (c) { drawChart(c); });
    var whole = S.from === 0 && S.to === n();
    $("view-label").textContent = whole ? "the whole run, " + secs(0) + " to " + secs(S.cur.simulated_s) :
      "zoomed to " + secs(tOf(S.from)) + " to " + secs(endOf(S.to));
    $("reset").disabled = whole;
    whyFor();
    table();
    drawMarks(true);
    S.topology = null;
    setCursor(S.cursor);
  }

  // ---- the timeline: marks and scrubber ----
  function buildMarks() {
    var list = $("mark-list");
    list.textContent = "";
    S.cur.marks.forEach(function (m) {
      var li = el("li");
      var b = el("button", { type: "button" }, secs(m.from_s) + (m.to_s !== null ? "–" + secs(m.to_s) : ""));
      b.addEventListener("click", function () { setCursor(Math.floor(m.from_s / S.cur.bucket_s)); });
      li.appendChild(b);
      li.appendChild(document.createTextNode(" " + m.kind + ": " + m.label + (m.pass === null ? "" : m.pass ? " (held)" : " (failed)")));
      list.appendChild(li);
    });
  }

  function drawMarks(measure) {
    var canvas = $("marks"), total = S.cur.simulated_s || 1;
    if (measure || !S.marksSize) S.marksSize = size(canvas);
    var c = S.marksSize, g = c.g;
    var X = function (t) { return t / total * c.w; };
    g.clearRect(0, 0, c.w, c.h);
    g.fillStyle = "#f2f2f2"; g.fillRect(0, 0, c.w, c.h);
    if (S.from > 0 || S.to < n()) {
      g.fillStyle = "rgba(0,114,178,0.18)";
      g.fillRect(X(tOf(S.from)), 0, Math.max(X(endOf(S.to)) - X(tOf(S.from)), 2), c.h);
    }
    var rows = { fault: 4, expectation: 20, breaker: 36, verdict: 36 };
    S.cur.marks.forEach(function (m) {
      var y = rows[m.kind], a = X(m.from_s), b = X(m.to_s === null ? m.from_s : m.to_s);
      if (m.kind === "fault") { g.fillStyle = "#e69f00"; g.fillRect(a, y, Math.max(b - a, 3), 12); }
      else if (m.kind === "expectation") { g.fillStyle = m.pass ? "#009e73" : "#d55e00"; g.fillRect(a, y, Math.max(X(m.to_s === null ? total : m.to_s) - a, 3), 12); }
      else if (m.kind === "breaker") { g.fillStyle = "#cc79a7"; g.fillRect(a - 1, y, 2, 14); }
      else { g.fillStyle = m.pass ? "#009e73" : "#000"; g.beginPath(); g.moveTo(a, y); g.lineTo(a + 6, y + 7); g.lineTo(a, y + 14); g.lineTo(a - 6, y + 7); g.fill(); }
    });
    g.fillStyle = "#333"; g.font = "10px sans-serif"; g.textAlign = "left";
    g.fillText("faults", 2, 14); g.fillText("expectations", 2, 30); g.fillText("breakers, verdict", 2, 50);
    var x = X(tOf(S.cursor) + S.cur.bucket_s / 2);
    g.strokeStyle = "#000"; g.beginPath(); g.moveTo(x, 0); g.lineTo(x, c.h); g.stroke();
  }

  // ---- why, for the window shown ----
  function whyFor() {
    var body = $("why-body"), c = S.cur;
    body.textContent = "";
    var whole = S.from === 0 && S.to === n();
    var shown;
    if (whole) {
      shown = c.why_windows;
      $("why-for").textContent = shown.length ? "The whole run: each window that matters (each trigger and the recovery after it, or where failures concentrate)." : "Nothing failed in this run.";
    } else {
      var a = tOf(S.from), b = endOf(S.to), best = null, dist = Infinity;
      c.why_windows.concat(c.why_grid).forEach(function (w) {
        var d = Math.abs(w.from_s - a) + Math.abs(w.to_s - b);
        if (d < dist - 1e-9) { dist = d; best = w; }
      });
      shown = best ? [best] : [];
      $("why-for").textContent = best ? "Findings for " + secs(best.from_s) + " to " + secs(best.to_s) +
        (dist > 1e-6 ? " (the precomputed window nearest to the window shown, " + secs(a) + " to " + secs(b) + ")" : " (the window shown)") : "";
    }
    shown.forEach(function (w) { body.appendChild(windowBox(w)); });
  }

  function windowBox(w) {
    var box = el("div", { "class": "window", "data-from": String(w.from_s), "data-to": String(w.to_s) });
    // A grid window is named by its range alone; the run's windows say what they are.
    box.appendChild(el("h3", {}, (w.kind === "asked" ? "" : w.window + " · ") + secs(w.from_s) + " to " + secs(w.to_s)));
    var facts = [w.offered + " requests offered"];
    if (w.success_ratio !== null) facts.push((100 * w.success_ratio).toFixed(1) + "% succeeded");
    if (w.attempts_per_request !== null) facts.push(w.attempts_per_request.toFixed(2) + " attempts per request");
    box.appendChild(el("p", {}, facts.join(" · ")));
    list(box, "What failed", (w.failed || []).map(function (f) { return f.text; }));
    list(box, "Failed attempts", w.failed_attempts.slice(0, 5).map(function (r) {
      return r.reason + (r.at ? " at " + r.at : "") + ": " + r.count + " (" + (100 * r.share_ratio).toFixed(0) + "%)";
    }));
    list(box, "What saturated", w.saturated.map(function (f) { return f.text; }));
    list(box, "What held recovery back", w.held_back.map(function (f) { return f.text; }));
    return box;
  }

  function list(box, title, items) {
    if (!items.length) return;
    box.appendChild(el("h4", {}, title));
    var ul = el("ul");
    items.forEach(function (t) { ul.appendChild(el("li", {}, t)); });
    box.appendChild(ul);
  }

  // ---- the window's table ----
  function table() {
    var host = $("table-body"), rows = [];
    host.textContent = "";
    var sum = function (key, prev) { var s = 0; for (var i = S.from; i < S.to; i++) s += value(key, i, prev) || 0; return s; };
    var most = function (key, prev) { var m = null; for (var i = S.from; i < S.to; i++) { var v = value(key, i, prev); if (v !== null && (m === null || v > m)) m = v; } return m; };
    var mean = function (key, prev) { var s = 0, k = 0; for (var i = S.from; i < S.to; i++) { var v = value(key, i, prev); if (v !== null) { s += v; k++; } } return k ? s / k : null; };
    rows.push(["all clients", [sum("offered"), sum("successes"), sum("failures")], S.prev ? [sum("offered", true), sum("successes", true), sum("failures", true)] : null]);
    var head = ["", "offered", "successes", "failures"];
    host.appendChild(grid(head, rows));
    rows = [];
    S.cur.topology.nodes.forEach(function (node) {
      if (node.kind !== "service") return;
      var k = "service/" + node.name + "/";
      var cells = function (p) { return [mean(k + "busy", p), most(k + "queue_max", p), sum(k + "refused", p)]; };
      rows.push([node.name, cells(false), S.prev ? cells(true) : null]);
    });
    host.appendChild(grid(["service", "busy (mean)", "queue (most)", "refused"], rows));
  }

  function grid(head, rows) {
    var t = el("table"), tr = el("tr");
    head.forEach(function (h) { tr.appendChild(el("th", {}, h)); });
    t.appendChild(tr);
    rows.forEach(function (r) {
      var row = el("tr");
      row.appendChild(el("td", {}, r[0]));
      r[1].forEach(function (v, k) {
        row.appendChild(el("td", {}, fmt(v) + (r[2] ? " (" + fmt(r[2][k]) + ")" : "")));
      });
      t.appendChild(row);
    });
    return t;
  }

  // ---- from a bucket to its requests ----
  function pick(i) {
    S.picked = i;
    setCursor(i);
    var c = S.cur, samples = c.samples.filter(function (s) { return s.bucket === i; });
    var host = $("requests-list");
    host.textContent = "";
    $("request-tree").textContent = "";
    $("requests-for").textContent = samples.length ?
      "Requests offered from " + secs(tOf(i)) + " to " + secs(endOf(i + 1)) + ": the first failed of each reason, and the slowest successes:" :
      "No request was kept for the bucket from " + secs(tOf(i)) + " to " + secs(endOf(i + 1)) + ".";
    var byReason = {};
    samples.forEach(function (s) { (byReason[s.reason] = byReason[s.reason] || []).push(s); });
    Object.keys(byReason).sort().forEach(function (reason) {
      var p = el("p", { "data-reason": reason }, (reason === "slow" ? "slowest successes" : "failed: " + reason) + ": ");
      byReason[reason].forEach(function (s) {
        var b = el("button", { type: "button", "data-request": String(s.request) }, "request #" + s.request + (s.latency_ms != null ? " (" + fmt(s.latency_ms) + " ms)" : ""));
        b.addEventListener("click", function () { tree(s.request); });
        p.appendChild(b);
      });
      host.appendChild(p);
    });
  }

  function tree(id) {
    var host = $("request-tree"), c = S.cur;
    host.textContent = "";
    var t = c.trees.filter(function (x) { return x.request === id; })[0];
    var command = t ? t.command : c.replay.replace(/^resim run /, "resim why ") + " --request " + id;
    if (t) host.appendChild(el("pre", { id: "tree-text" }, t.lines.join("\n")));
    else host.appendChild(el("p", {}, "The page keeps the trees of some of the sampled requests; this one is told by the command below."));
    var p = el("p", {}, "Replay it: ");
    p.appendChild(el("code", {}, command));
    host.appendChild(p);
  }

  // ---- topology at the cursor ----
  // Rows by depth (clients first, then each service below its deepest caller), so that the
  // view fits the narrow column beside the charts; edges go down, their figures beside them.
  // The view is built once per window (S.topology) and a cursor move only changes its texts,
  // widths and colours in place: no element is made or laid out again on hover or scrub.
  var NODE = { w: 170, h: 86, gapX: 30, gapY: 56 };
  function topology() {
    var i = S.cursor;
    $("topology-t").textContent = secs(tOf(i)) + "–" + secs(endOf(i + 1));
    if (!S.topology) S.topology = buildTopology();
    S.topology.forEach(function (update) { update(i); });
  }

  function buildTopology() {
    var host = $("topology-view"), c = S.cur;
    // A service with a limiter's state (a concurrency limit, a PID shedder) gets a fifth line.
    var limited = c.lines.some(function (l) { return l.chart === "limits" || l.chart === "shed"; });
    var h = limited ? NODE.h + 16 : NODE.h;
    var depth = {};
    c.topology.nodes.forEach(function (node) { depth[node.name] = node.kind === "client" ? 0 : 1; });
    for (var pass = 0; pass < c.topology.nodes.length; pass++) {
      c.topology.edges.forEach(function (e) { depth[e.target] = Math.max(depth[e.target], Math.min(depth[e.source] + 1, 12)); });
    }
    var rows = [];
    c.topology.nodes.forEach(function (node) { var d = depth[node.name]; (rows[d] = rows[d] || []).push(node); });
    rows = rows.filter(function (r) { return r; });
    var wide = Math.max.apply(null, rows.map(function (r) { return r.length; }));
    // Room on the right for the figures of the last edge.
    var inner = wide * (NODE.w + NODE.gapX), W = inner + 170, H = rows.length * (h + NODE.gapY), at = {};
    rows.forEach(function (row, d) {
      var left = (inner - row.length * (NODE.w + NODE.gapX)) / 2;
      row.forEach(function (node, k) { at[node.name] = { x: left + k * (NODE.w + NODE.gapX) + NODE.gapX / 2, y: d * (h + NODE.gapY) + 4, h: h }; });
    });
    var view = svg("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "the topology at the cursor: its figures are the texts of its boxes and edges" });
    view.style.maxWidth = (W * 1.15) + "px";
    var updates = [];
    c.topology.edges.forEach(function (e) { var u = edge(view, e, at); if (u) updates.push(u); });
    c.topology.nodes.forEach(function (node) { updates.push(box(view, node, at[node.name])); });
    host.textContent = "";
    host.appendChild(view);
    return updates;
  }

  // Sets an element's text and its data-value (what the browser test reads), if they changed.
  function put(e, words, v) {
    if (e.textContent !== words) e.textContent = words;
    if (v !== undefined) { var s = String(v); if (e.getAttribute("data-value") !== s) e.setAttribute("data-value", s); }
  }
  function attrs(e, a) {
    for (var k in a) { var s = String(a[k]); if (e.getAttribute(k) !== s) e.setAttribute(k, s); }
  }

  function edge(view, e, at) {
    var a = at[e.source], b = at[e.target];
    if (!a || !b) return null;
    var k = "call/" + e.path + "/";
    var x1 = a.x + NODE.w / 2, y1 = a.y + a.h, x2 = b.x + NODE.w / 2, y2 = b.y;
    if (b.y <= a.y) { y1 = a.y + a.h / 2; y2 = b.y + b.h / 2; x1 = a.x + NODE.w; x2 = b.x; }
    var g = svg("g", { "data-path": e.path });
    var line = svg("line", { x1: x1, y1: y1, x2: x2, y2: y2 });
    var label = svg("text", { x: (x1 + x2) / 2 + 8, y: (y1 + y2) / 2 + 4, "data-key": k + "attempts" });
    g.appendChild(line); g.appendChild(label);
    view.appendChild(g);
    return function (i) {
      var attempts = value(k + "attempts", i) || 0, timeouts = value(k + "timeouts", i) || 0;
      var width = 1 + Math.min(Math.log(1 + attempts) / Math.LN10 * 2, 8);
      attrs(line, { stroke: timeouts > 0 ? "#d55e00" : "#0072b2", "stroke-width": width });
      var state = breakerAt(e, tOf(i));
      put(label, fmt(attempts) + " attempts · " + fmt(timeouts) + " timeouts" + (state ? " · " + state : ""), attempts);
    };
  }

  function breakerAt(e, t) {
    var states = [];
    e.breakers.forEach(function (spans) {
      spans.forEach(function (s) { if (s.from_s <= t && t < s.to_s && s.state !== "closed") states.push(s.state.replace("_", "-")); });
    });
    return states.length ? "breaker " + states.join(", ") : "";
  }

  function box(view, node, p) {
    var g = svg("g", { "data-node": node.name }), k = "service/" + node.name + "/";
    var rect = svg("rect", { x: p.x, y: p.y, width: NODE.w, height: p.h, rx: 6 });
    g.appendChild(rect);
    g.appendChild(svg("text", { x: p.x + 8, y: p.y + 16, "font-weight": "bold" }, node.name + (node.kind === "client" ? " (client)" : "")));
    var text = function (y, a) { a.x = p.x + 8; a.y = p.y + y; var t = svg("text", a); g.appendChild(t); return t; };
    view.appendChild(g);
    if (node.kind !== "service") {
      var offered = text(36, {}), failed = text(54, {});
      attrs(rect, { fill: "#f4f8fb", stroke: "#0072b2", "stroke-width": 1 });
      return function (i) {
        put(offered, "offered " + fmt(value("offered", i)) + " (all clients)");
        put(failed, "failed " + fmt(value("failures", i)));
      };
    }
    var busyT = text(33, { "data-key": k + "busy" }), queueT = text(49, { "data-key": k + "queue" });
    var refusedT = text(65, { "data-key": k + "refused" }), byT = text(81, { "data-key": k + "refused-by", "font-size": "11" });
    // What refused them (a queue, a limiter, a shedder…), and the limiters' state, if any.
    var reasons = S.cur.lines.filter(function (l) { return l.key.indexOf(k + "refused/") === 0; });
    var limit = S.byKey[k + "limit"], inFlight = S.byKey[k + "in_flight"], drop = S.byKey[k + "drop_ratio"];
    var limitT = limit || drop ? text(97, { "data-key": k + (limit ? "limit" : "drop_ratio"), "font-size": "11" }) : null;
    return function (i) {
      var busy = value(k + "busy", i), up = value(k + "capacity", i), q = value(k + "queue", i), qmax = value(k + "queue_max", i), refused = value(k + "refused", i);
      var hot = up && busy !== null && busy >= 0.9 * up;
      attrs(rect, { fill: hot ? "#fde3cf" : "#f4f8fb", stroke: hot ? "#d55e00" : "#0072b2", "stroke-width": hot ? 2 : 1 });
      put(busyT, "busy " + fmt(busy) + " of " + fmt(up), busy);
      put(queueT, "queue " + fmt(q) + " (most " + fmt(qmax) + ")", q);
      put(refusedT, "refused " + fmt(refused), refused);
      // The two largest reasons in the cursor's bucket, most first.
      put(byT, reasons.filter(function (l) { return l.values[i]; })
        .sort(function (a, b) { return b.values[i] - a.values[i]; }).slice(0, 2)
        .map(function (l) { return l.key.slice((k + "refused/").length) + " " + fmt(l.values[i]); }).join(" · "));
      if (!limitT) return;
      var parts = [];
      if (limit) parts.push("limit " + fmt(value(k + "in_flight", i)) + "/" + fmt(value(k + "limit", i)) + " in flight");
      if (drop) parts.push("dropping " + fmt(100 * (value(k + "drop_ratio", i) || 0)) + "%");
      put(limitT, parts.join(" · "), limit ? value(k + "limit", i) : value(k + "drop_ratio", i));
      if (inFlight) limitT.setAttribute("data-in-flight", String(value(k + "in_flight", i)));
    };
  }

  // ---- wiring ----
  $("reset").addEventListener("click", function () { zoom(0, n()); });
  $("scrubber").addEventListener("input", function () { setCursor(parseInt(this.value, 10)); });
  var pending = false;
  window.addEventListener("resize", function () {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; redraw(); });
  });
  window.resimExplore = { show: show };
  var runs = JSON.parse($("resim-data").textContent);
  show(runs[0], runs[1]);
})();
