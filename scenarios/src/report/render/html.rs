//! One self-contained HTML page of a run: the report's tables (summary, clients, services,
//! calls, expectations), why it failed (each window once), every chart as inline SVG under
//! its caption, and the readable report (without the why it already showed). No
//! script, no stylesheet or font from elsewhere: the file opens the same offline. It names
//! the `resim explore` command of the same run, whose page adds the hand on the run (hover,
//! zoom, topology, requests, why by window, compare): the static page stays the small,
//! script-free summary to print or mail, rather than becoming the explorer's default view,
//! which needs a script, a second run and several times the size.

use super::super::{LatencyMs, Report};
use super::charts::Chart;
use super::{call_names, decimal1, join_reasons};
use std::fmt::Write as _;

/// Text with `&`, `<`, `>` and `"` escaped.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

// The page takes the window's width (charts side by side where they fit, two at 1400px);
// each chart's caption is its heading, above it.
const STYLE: &str = "body{font-family:sans-serif;margin:1.5em 2em;color:#222}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}h3{font-size:1em}\
h4{font-size:.95em;margin:.6em 0 .2em}\
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}\
th,td{padding:.25em .6em;border-bottom:1px solid #eee;text-align:right}\
th:first-child,td:first-child{text-align:left}th{background:#f5f5f5}\
.pass{color:#00783c;font-weight:bold}.fail{color:#c81e1e;font-weight:bold}\
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,620px),1fr));gap:1.5em}\
figure{margin:0}figcaption{font-weight:bold;margin:0 0 .4em}svg{width:100%;height:auto}\
.window{margin:1em 0;padding:.2em 1em;border-left:4px solid #c81e1e;background:#fafafa}\
pre{font-size:.8em;overflow-x:auto}code{background:#f5f5f5;padding:.1em .3em}";

/// A table: a header row and rows of cells (already escaped).
fn table(o: &mut String, header: &[&str], rows: &[Vec<String>]) {
    o.push_str("<table><tr>");
    for h in header {
        let _ = write!(o, "<th>{}</th>", esc(h));
    }
    o.push_str("</tr>\n");
    for row in rows {
        o.push_str("<tr>");
        for cell in row {
            let _ = write!(o, "<td>{cell}</td>");
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n");
}

/// The command that explores the same run. This page stays a static, script-free summary;
/// the explorer is one command away.
fn explore_link(o: &mut String, report: &Report) {
    let command = format!(
        "{} -o explore.html",
        report
            .replay_command()
            .replacen("resim run ", "resim explore ", 1)
    );
    let _ = writeln!(
        o,
        "<p>To hover, zoom, scrub the topology and open the requests behind a bucket: \
         <code>{}</code></p>",
        esc(&command)
    );
}

/// The page of `report` with `charts` (as [`super::charts()`] draws them).
pub fn html(report: &Report, charts: &[Chart]) -> String {
    let mut o = String::new();
    let title = format!("resim · {} · seed {}", report.scenario, report.seed);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        esc(&title),
        esc(&title)
    );
    let _ = writeln!(
        o,
        "<p>{}s simulated · {} events · stopped: {} · digest <code>{}</code> · replay: \
         <code>{}</code></p>",
        report.simulated_s,
        report.events,
        esc(&report.stop_reason),
        esc(&report.digest),
        esc(&report.replay_command())
    );
    explore_link(&mut o, report);
    summary(&mut o, report);
    if !report.expectations.is_empty() {
        o.push_str("<h2>Expectations</h2>\n");
        let rows: Vec<Vec<String>> = report
            .expectations
            .iter()
            .map(|e| {
                let (class, word) = if e.pass {
                    ("pass", "PASS")
                } else {
                    ("fail", "FAIL")
                };
                vec![
                    format!("<span class=\"{class}\">{word}</span>"),
                    esc(&e.expectation),
                    match &e.warning {
                        Some(w) => format!("{}<br><em>warning: {}</em>", esc(&e.observed), esc(w)),
                        None => esc(&e.observed),
                    },
                ]
            })
            .collect();
        table(&mut o, &["verdict", "expectation", "observed"], &rows);
    }
    metastability(&mut o, report);
    why(&mut o, report);
    components(&mut o, report);
    o.push_str("<h2>Charts</h2>\n<div class=\"charts\">\n");
    for c in charts {
        let _ = writeln!(
            o,
            "<figure id=\"{}\">\n<figcaption>{}</figcaption>\n{}\n</figure>",
            esc(&c.name),
            esc(&c.title),
            c.svg.trim()
        );
    }
    o.push_str("</div>\n");
    let _ = writeln!(
        o,
        "<h2>The readable report</h2>\n<pre>{}</pre>\n</body></html>",
        esc(&super::human::page(report, false))
    );
    o
}

/// The metastability verdict, per client.
fn metastability(o: &mut String, report: &Report) {
    if let Some(m) = &report.metastability {
        let _ = writeln!(
            o,
            "<h2>Metastability</h2>\n<p>{}<br>thresholds: {}</p>",
            esc(&m.trigger_words()),
            esc(&m.thresholds())
        );
        let rows: Vec<Vec<String>> = m
            .clients
            .iter()
            .map(|c| {
                let class = match c.verdict.as_str() {
                    "never_degraded" | "recovered" => "pass",
                    _ => "fail",
                };
                vec![
                    esc(&c.name),
                    format!("<span class=\"{class}\">{}</span>", esc(&c.verdict)),
                    esc(&c.summary),
                ]
            })
            .collect();
        table(o, &["client", "verdict", "in words"], &rows);
    }
}

/// The "why" section: what failed, once, then each window that explains it, with its
/// findings as lists (nothing when nothing failed).
fn why(o: &mut String, report: &Report) {
    if report.why.is_empty() {
        return;
    }
    o.push_str("<h2 id=\"why\">Why</h2>\n");
    for w in &report.why {
        let _ = writeln!(o, "<div class=\"window\">\n<h3>{}</h3>", esc(&w.heading()));
        if !w.failed.is_empty() {
            let failed: Vec<String> = w.failed.iter().map(|f| esc(&f.text)).collect();
            let _ = writeln!(o, "<p class=\"fail\">{}</p>", failed.join("<br>"));
        }
        let context: Vec<String> = w.context().iter().map(|l| esc(l)).collect();
        let _ = writeln!(o, "<p>{}</p>", context.join("<br>"));
        for (title, findings) in w.sections() {
            let _ = writeln!(o, "<h4>{}</h4>\n<ul>", esc(title));
            for f in findings {
                let _ = writeln!(o, "<li>{}</li>", esc(&f.text));
            }
            o.push_str("</ul>\n");
        }
        if w.sections().is_empty() {
            let _ = writeln!(o, "<p>{}</p>", esc(super::super::why::Why::NO_FINDING));
        }
        o.push_str("</div>\n");
    }
}

fn summary(o: &mut String, report: &Report) {
    let s = &report.summary;
    o.push_str("<h2>Summary</h2>\n");
    let l = |q: fn(&LatencyMs) -> f64| decimal1(s.latency_ms.as_ref().map(q));
    let rows = vec![
        vec![
            "offered".to_string(),
            format!("{} ({:.1}/s)", s.offered, s.offered_per_s),
        ],
        vec![
            "attempts".to_string(),
            format!(
                "{} (amplification {:.2} client attempts per request)",
                s.attempts, s.amplification
            ),
        ],
        vec![
            "successes".to_string(),
            format!("{} (goodput {:.1}/s)", s.successes, s.goodput_per_s),
        ],
        vec![
            "failures".to_string(),
            format!(
                "{} ({})",
                s.failures,
                esc(&join_reasons(&s.failures_by_reason))
            ),
        ],
        vec![
            "in flight at the end".to_string(),
            s.requests_in_flight.to_string(),
        ],
        vec![
            "latency ms".to_string(),
            format!(
                "p50 {} · p90 {} · p99 {} · p999 {} · max {}",
                l(|l| l.p50),
                l(|l| l.p90),
                l(|l| l.p99),
                l(|l| l.p999),
                l(|l| l.max)
            ),
        ],
    ];
    table(o, &["figure", "value"], &rows);
}

fn components(o: &mut String, report: &Report) {
    if report.clients.len() > 1 {
        o.push_str("<h2>Clients</h2>\n");
        let rows: Vec<Vec<String>> = report
            .clients
            .iter()
            .map(|c| {
                vec![
                    esc(&c.name),
                    c.offered.to_string(),
                    c.successes.to_string(),
                    format!("{:.1}", c.goodput_per_s),
                    decimal1(c.latency_ms.as_ref().map(|l| l.p99)),
                    esc(&join_reasons(&c.failures_by_reason)),
                ]
            })
            .collect();
        table(
            o,
            &["client", "offered", "ok", "goodput/s", "p99 ms", "failures"],
            &rows,
        );
    }
    o.push_str("<h2>Services</h2>\n");
    let rows: Vec<Vec<String>> = report
        .services
        .iter()
        .map(|v| {
            vec![
                esc(&v.name),
                format!("{:.2}", v.load_factor),
                format!("{:.1}%", 100.0 * v.utilisation),
                format!("{:.1}", v.busy_workers_mean),
                format!("{:.1}", v.queue_depth_total_mean),
                v.queue_depth_total_max.to_string(),
                format!("{:.1}", v.queue_depth_replica_mean),
                v.queue_depth_replica_max.to_string(),
                v.arrivals.to_string(),
                v.ok.to_string(),
                esc(&join_reasons(&v.failed_by_reason)),
            ]
        })
        .collect();
    table(
        o,
        &[
            "service",
            "load",
            "util",
            "busy",
            "queue mean (all replicas)",
            "queue max (all replicas)",
            "queue mean (one replica)",
            "queue max (one replica)",
            "arrivals",
            "ok",
            "failed",
        ],
        &rows,
    );
    o.push_str("<h2>Calls</h2>\n");
    let rows: Vec<Vec<String>> = report
        .calls
        .iter()
        .zip(call_names(&report.calls))
        .map(|(c, name)| {
            let n = &c.counts;
            let transitions: u64 = c.breakers.iter().map(|b| b.transitions_total).sum();
            vec![
                esc(&name),
                n.calls.to_string(),
                n.attempts.to_string(),
                format!("{:.2}", c.amplification),
                n.retries.to_string(),
                n.budget_exhausted.to_string(),
                n.timeouts.to_string(),
                esc(&join_reasons(&c.rejected_by_reason)),
                transitions.to_string(),
            ]
        })
        .collect();
    table(
        o,
        &[
            "call",
            "calls",
            "attempts",
            "amplification",
            "retries",
            "budget exhausted",
            "timeouts",
            "rejected by the stack",
            "breaker transitions",
        ],
        &rows,
    );
}
