//! The request classes and tenants of the clients that declare classes, as the human and
//! compact reports show them: one line per class, then one per reported tenant and one for
//! the others.

use super::super::{ClientReport, Report, TrafficReport};
use super::{decimal1, join_reasons};
use std::fmt::Write as _;

fn line(o: &mut String, indent: &str, name: &str, t: &TrafficReport) {
    let ratio = t
        .success_ratio
        .map_or_else(|| "–".to_string(), |r| format!("{:.1}%", 100.0 * r));
    let _ = writeln!(
        o,
        "  {indent}{:<width$} offered {:>8}  ok {:>8} ({ratio:>6})  goodput {:>8.1}/s  p50 {}ms  p99 {}ms  {}",
        name,
        t.offered,
        t.successes,
        t.goodput_per_s,
        decimal1(t.latency_ms.as_ref().map(|l| l.p50)),
        decimal1(t.latency_ms.as_ref().map(|l| l.p99)),
        join_reasons(&t.failures_by_reason),
        width = 22 - indent.len(),
    );
}

fn client(o: &mut String, c: &ClientReport) {
    for k in &c.classes {
        let name = format!("{}/{} p{} c{}", c.name, k.name, k.priority, k.cost);
        line(o, "", &name, &k.traffic);
        for t in &k.tenants {
            let name = if t.keys == 1 {
                format!("tenant {}", t.tenant)
            } else {
                format!("{} ({} keys)", t.tenant, t.keys)
            };
            line(o, "  ", &name, &t.traffic);
        }
    }
}

/// The classes section, when a client declares classes.
pub(super) fn human(o: &mut String, report: &Report) {
    if report.clients.iter().all(|c| c.classes.is_empty()) {
        return;
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "classes (client/class, p: priority level, c: cost in tokens; tenants: the most popular keys, then the others)"
    );
    for c in &report.clients {
        client(o, c);
    }
}

/// One line per class in the compact summary (tenants are left to the other formats).
pub(super) fn compact(o: &mut String, report: &Report) {
    for c in &report.clients {
        for k in &c.classes {
            let t = &k.traffic;
            let _ = writeln!(
                o,
                "class {}/{} offered {} ok {} p99 {} ({})",
                c.name,
                k.name,
                t.offered,
                t.successes,
                decimal1(t.latency_ms.as_ref().map(|l| l.p99)),
                join_reasons(&t.failures_by_reason)
            );
        }
    }
}
