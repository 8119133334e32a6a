//! The time series as CSV: one row per report bucket, the totals first, then each service's
//! columns prefixed by its name (a service with a keyed store adds `_version_conflicts`, one
//! that reports its blast radius `_units_without_replicas_max`, one that reports the
//! connections of the pools toward it `_connections_open_max`, a locking store `_lock_timeouts`;
//! a pooled call site adds `PATH_connections_open_max`). The columns are the JSON series' keys; as there, outcomes and
//! columns prefixed by its name (a service with a keyed store adds `_version_conflicts`, one whose replicas join and leave rotation `_replicas_in_rotation_mean`). The columns are the JSON series' keys; as there, outcomes and
//! ratios are by bucket of offer and `goodput_per_s` by bucket of completion.

use super::super::Report;
use std::fmt::Write as _;

/// The series of `report` as CSV, with a header row.
pub(super) fn render(report: &Report) -> String {
    let mut o = String::from(
        "t_s,offered,successes,failures,goodput_ratio,goodput_per_s,latency_ms_mean,latency_ms_p99",
    );
    for v in &report.services {
        let n = &v.name;
        let _ = write!(
            o,
            ",{n}_arrivals,{n}_ok,{n}_queue_total_mean,{n}_queue_total_max,{n}_queue_replica_mean,{n}_queue_replica_max,{n}_busy_workers_mean"
        );
        // A service with a keyed store adds its version conflicts per bucket.
        if v.store.is_some() {
            let _ = write!(o, ",{n}_version_conflicts");
        }
        // A locking store adds its lock timeouts per bucket.
        if v.store.as_ref().is_some_and(|s| s.locks.is_some()) {
            let _ = write!(o, ",{n}_lock_timeouts");
        }
        // A service that reports its blast radius adds the units left without a replica.
        if v.blast_radius.is_some() {
            let _ = write!(o, ",{n}_units_without_replicas_max");
        }
        // A service whose replicas join and leave rotation adds them per bucket.
        if v.scaling.is_some() {
            let _ = write!(o, ",{n}_replicas_in_rotation_mean");
        }
        // A service with liveness probes adds the replicas they restarted per bucket.
        if report.series.first().is_some_and(|r| {
            r.services
                .iter()
                .any(|p| p.name == v.name && p.liveness_restarts.is_some())
        }) {
            let _ = write!(o, ",{n}_liveness_restarts");
        }
        // A service that reports its connections adds the most open per bucket.
        if v.connections.is_some() {
            let _ = write!(o, ",{n}_connections_open_max");
        }
    }
    // A pooled call site adds the most connections its pools held open per bucket.
    for c in report.calls.iter().filter(|c| c.pool.is_some()) {
        let _ = write!(o, ",{}_connections_open_max", c.path);
    }
    // Per request class (only when a client declares classes): by bucket of offer.
    if let Some(first) = report.series.first() {
        for k in &first.classes {
            let n = &k.class;
            let _ = write!(o, ",{n}_offered,{n}_successes");
        }
    }
    // Per call site with an adaptive timeout: the longest timeout given in the bucket.
    for c in report.calls.iter().filter(|c| c.adaptive_timeout.is_some()) {
        let _ = write!(o, ",{}_timeout_ms_max", c.path);
    }
    o.push('\n');
    for r in &report.series {
        let _ = write!(
            o,
            "{},{},{},{},{},{},{},{}",
            r.t_s,
            r.offered,
            r.successes,
            r.failures,
            r.goodput_ratio,
            r.goodput_per_s,
            cell(r.latency_ms_mean),
            cell(r.latency_ms_p99)
        );
        for (p, v) in r.services.iter().zip(&report.services) {
            let _ = write!(
                o,
                ",{},{},{},{},{},{},{}",
                p.arrivals,
                p.ok,
                p.queue_total_mean,
                p.queue_total_max,
                p.queue_replica_mean,
                p.queue_replica_max,
                p.busy_workers_mean
            );
            if v.store.is_some() {
                let conflicts = p.failed_by_reason.get("version_conflict").unwrap_or(&0);
                let _ = write!(o, ",{conflicts}");
            }
            if v.store.as_ref().is_some_and(|s| s.locks.is_some()) {
                let timeouts = p.failed_by_reason.get("lock_timeout").unwrap_or(&0);
                let _ = write!(o, ",{timeouts}");
            }
            if v.blast_radius.is_some() {
                let _ = write!(o, ",{}", p.units_without_replicas_max.unwrap_or_default());
            }
            if v.scaling.is_some() {
                let _ = write!(o, ",{}", cell(p.replicas_in_rotation_mean));
            }
            if let Some(n) = p.liveness_restarts {
                let _ = write!(o, ",{n}");
            }
            if v.connections.is_some() {
                let _ = write!(o, ",{}", p.connections_open_max.unwrap_or_default());
            }
        }
        for (p, c) in r.calls.iter().zip(&report.calls) {
            if c.pool.is_some() {
                let _ = write!(o, ",{}", p.connections_open_max.unwrap_or_default());
            }
        }
        for k in &r.classes {
            let _ = write!(o, ",{},{}", k.offered, k.successes);
        }
        for p in &r.calls {
            if let Some(t) = p.timeout_ms_max {
                let _ = write!(o, ",{}", cell(t));
            }
        }
        o.push('\n');
    }
    o
}

/// A figure, or an empty cell where there is none.
fn cell(x: Option<f64>) -> String {
    x.map_or_else(String::new, |v| v.to_string())
}
