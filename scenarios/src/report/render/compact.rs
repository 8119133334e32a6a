//! The compact summary: fixed columns and rounded values, one line per component, for the
//! library's snapshots. It names things as the human report does.

use super::super::{LatencyMs, Report};
use super::{Merge, buckets_per_column, call_names, decimal1, join_reasons, sparkline};
use std::fmt::Write as _;

/// The compact summary of `report`.
pub(super) fn render(report: &Report) -> String {
    let mut o = String::new();
    let s = &report.summary;
    let _ = writeln!(
        o,
        "offered {} attempts {} amplification {:.2} ok {} failed {} ({}) in flight {}",
        s.offered,
        s.attempts,
        s.amplification,
        s.successes,
        s.failures,
        join_reasons(&s.failures_by_reason),
        s.requests_in_flight
    );
    let l = |q: fn(&LatencyMs) -> f64| decimal1(s.latency_ms.as_ref().map(q));
    let _ = writeln!(
        o,
        "goodput {:.1}/s latency ms p50 {} p90 {} p99 {} max {}",
        s.goodput_per_s,
        l(|l| l.p50),
        l(|l| l.p90),
        l(|l| l.p99),
        l(|l| l.max)
    );
    for v in &report.services {
        let _ = writeln!(
            o,
            "service {:<10} load {:>6.2} util {:>5.1}% busy {:>7.1} queue mean {:>7.1} max {:>5} (replica max {}) wait ms mean {:>6} wasted {:>7.1}s ejections {}",
            v.name,
            v.load_factor,
            100.0 * v.utilisation,
            v.busy_workers_mean,
            v.queue_depth_total_mean,
            v.queue_depth_total_max,
            v.queue_depth_replica_max,
            decimal1(v.wait_ms_mean),
            v.wasted_work_s,
            v.ejections
        );
        if let Some(sc) = &v.scaling {
            let _ = writeln!(
                o,
                "replicas {:<9} in rotation min {} max {} mean {:.1} scale-outs {} scale-ins {} deploy restarts {} lost at stop {}",
                v.name,
                sc.replicas_min,
                sc.replicas_max,
                sc.replicas_mean,
                sc.scale_outs,
                sc.scale_ins,
                sc.deploy_restarts,
                sc.lost_at_stop
            );
        }
    }
    for v in &report.services {
        if let Some(ce) = &v.capacity_events {
            let _ = writeln!(
                o,
                "capacity {:<9} pauses {} paused {:.1}s zone downs {} probes failed {} liveness restarts {}",
                v.name,
                ce.pauses,
                ce.paused_s,
                ce.zone_downs,
                ce.liveness_probe_failures,
                ce.liveness_restarts
            );
        }
    }
    super::blast::compact(&mut o, report);
    for (c, name) in report.calls.iter().zip(call_names(&report.calls)) {
        let _ = writeln!(
            o,
            "call {:<26} attempts {:>7} amplification {:>5.2} retries {:>7} budget_exhausted {:>6} breaker transitions {}",
            name,
            c.counts.attempts,
            c.amplification,
            c.counts.retries,
            c.counts.budget_exhausted,
            c.breakers.iter().map(|b| b.transitions_total).sum::<u64>()
        );
    }
    super::classes::compact(&mut o, report);
    let _ = writeln!(
        o,
        "success per {} {}",
        match buckets_per_column(report.series.len()) {
            1 => "bucket".to_string(),
            k => format!("{k} buckets"),
        },
        sparkline(
            report.series.iter().map(|r| r.goodput_ratio),
            1.0,
            Merge::Mean
        )
    );
    expectations(&mut o, report);
    if let Some(m) = &report.metastability {
        let clients: Vec<String> = m
            .clients
            .iter()
            .map(|c| match c.recovered_after_s {
                Some(x) => format!("{} recovered after {x}s", c.name),
                None => format!("{} {}", c.name, c.verdict.replace('_', " ")),
            })
            .collect();
        let _ = writeln!(
            o,
            "verdict {} (healthy ≥ {}% of baseline, sustained {}s, trigger ended {}s)",
            clients.join(", "),
            100.0 * m.healthy_ratio,
            m.sustain_s,
            m.trigger_end_s
        );
    }
    let _ = writeln!(
        o,
        "digest {} events {} stop {}",
        report.digest, report.events, report.stop_reason
    );
    o
}

/// Each expectation's verdict on a line, its warning on the next.
fn expectations(o: &mut String, report: &Report) {
    for e in &report.expectations {
        let verdict = if e.pass { "PASS" } else { "FAIL" };
        let _ = writeln!(o, "{verdict} {}: {}", e.expectation, e.observed);
        if let Some(w) = &e.warning {
            let _ = writeln!(o, "  warning: {w}");
        }
    }
}
