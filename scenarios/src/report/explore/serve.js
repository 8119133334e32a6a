// What-if from the page: `resim explore FILE --serve` puts this script after
// `window.RESIM_SERVE = {token, knobs: [{path, values, range, value}], run, progress};`.
// It draws one control per knob (a select for a list, a slider for a range, each labelled
// with its path), posts the knobs' values to the server when one changes, polls the run's
// progress (events and simulated time) when it takes over a second, and redraws with
// `window.resimExplore.show(current, previous)`: the new run, and the previous one dashed
// beside it with the difference at the cursor. A change made while a run goes is sent when
// it ends (the server runs one at a time). Nothing here reaches beyond this server.
(function () {
  "use strict";
  var S = window.RESIM_SERVE;
  if (!S || window.__resimServing) { return; }
  window.__resimServing = true;

  var AS_IN_FILE = "as in the file";
  var values = S.knobs.map(function (k) { return k.value; });
  var runs = [];           // {label, digest, data, replay}: the latest last
  var going = false, pending = false;

  function el(tag, attributes, text) {
    var e = document.createElement(tag);
    Object.keys(attributes || {}).forEach(function (a) { e.setAttribute(a, attributes[a]); });
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function label(vals) {
    var words = S.knobs.map(function (k, i) {
      return vals[i] === null ? null : k.path + "=" + vals[i];
    }).filter(function (w) { return w !== null; });
    return words.length ? words.join(" ") : "the file as given";
  }

  // The panel: the knobs, the status line and the progress bar.
  var panel = el("section", { id: "resim-serve", "aria-label": "what if" });
  panel.style.cssText = "position:sticky;top:0;z-index:10;background:#f6f8fa;" +
    "border-bottom:1px solid #ccc;padding:.5em 1em;font:14px system-ui,sans-serif";
  panel.appendChild(el("strong", {}, "What if: "));
  S.knobs.forEach(function (k, i) {
    var id = "resim-knob-" + i;
    var box = el("span", { style: "display:inline-block;margin:0 1.5em .3em 0" });
    box.appendChild(el("label", { "for": id, style: "font-family:monospace" }, k.path + " "));
    var control;
    if (k.range) {
      control = el("input", { id: id, type: "range", min: "0", max: String(k.values.length - 1),
        step: "1" });
      var at = k.value === null ? 0 : Math.max(0, k.values.indexOf(k.value));
      control.value = String(at);
      var shown = el("output", { "for": id, style: "font-family:monospace;margin-left:.4em" },
        k.value === null ? AS_IN_FILE : k.value);
      control.setAttribute("aria-valuetext", shown.textContent);
      control.addEventListener("input", function () {
        shown.textContent = k.values[Number(control.value)];
        control.setAttribute("aria-valuetext", shown.textContent);
      });
      control.addEventListener("change", function () {
        values[i] = k.values[Number(control.value)];
        changed();
      });
      box.appendChild(control);
      box.appendChild(shown);
    } else {
      control = el("select", { id: id });
      control.appendChild(el("option", { value: "" }, AS_IN_FILE));
      k.values.forEach(function (v) {
        var o = el("option", { value: v }, v);
        if (k.value === v) { o.selected = true; }
        control.appendChild(o);
      });
      control.addEventListener("change", function () {
        values[i] = control.value === "" ? null : control.value;
        changed();
      });
      box.appendChild(control);
    }
    panel.appendChild(box);
  });
  var status = el("div", { role: "status", "aria-live": "polite" }, "showing " + label(values));
  var bar = el("progress", { max: "1", value: "0", hidden: "", "aria-label": "run progress" });
  var problem = el("div", { role: "alert", style: "color:#b00020;white-space:pre-wrap" });
  panel.appendChild(status);
  panel.appendChild(bar);
  panel.appendChild(problem);
  document.body.insertBefore(panel, document.body.firstChild);

  function changed() {
    if (going) { pending = true; status.textContent = "a run is going; " + label(values) + " follows"; return; }
    rerun();
  }

  function rerun() {
    going = true;
    pending = false;
    problem.textContent = "";
    var asked = values.slice();
    status.textContent = "running " + label(asked) + "…";
    var since = 0, timer = setInterval(function () {
      since += 250;
      if (since < 1000) { return; }   // a run under a second needs no indicator
      fetch(S.progress).then(function (r) { return r.json(); }).then(function (p) {
        if (!going || !p.running) { return; }
        bar.hidden = false;
        bar.max = p.duration_s || 1;
        bar.value = p.simulated_s;
        status.textContent = "running " + label(asked) + ": " + p.simulated_s.toFixed(1) +
          " s of " + p.duration_s.toFixed(1) + " s simulated, " + p.events.toLocaleString("en") +
          " events";
      }).catch(function () {});
    }, 250);
    var body = {};
    S.knobs.forEach(function (k, i) { body[k.path] = asked[i]; });
    fetch(S.run, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ knobs: body })
    }).then(function (r) {
      return r.ok ? r.json() : r.text().then(function (t) { throw new Error(r.status + ": " + t); });
    }).then(function (answer) {
      var current = { label: label(asked), digest: answer.digest, data: answer.data,
        replay: answer.replay };
      draw(current);
      status.textContent = "showing " + current.label + " (digest " + answer.digest +
        "); replay: " + answer.replay;
    }).catch(function (e) {
      problem.textContent = String(e.message || e).trim();
      status.textContent = "the run of " + label(asked) + " was refused";
    }).then(function () {
      clearInterval(timer);
      bar.hidden = true;
      going = false;
      if (pending) { rerun(); }
    });
  }

  // The new run drawn over the previous one (dashed, with the difference at the cursor):
  // the page's first run is the one it came with.
  function draw(current) {
    var previous = runs.length ? runs[runs.length - 1] :
      { data: JSON.parse(document.getElementById("resim-data").textContent)[0] };
    runs.push(current);
    if (runs.length > 2) { runs.shift(); }
    window.resimExplore.show(current.data, previous.data);
  }
})();
