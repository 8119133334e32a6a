//! The run's figures over two stretches the verdict names: [`WindowFigures`] *during* the
//! triggers (from the first trigger's start to the last one's end) and *after* them (to the
//! run's end), over all clients, so that an effect during a fault is not diluted by the
//! healthy rest of the run.
//!
//! Both stretches are whole report buckets, as the verdict reads them: from the bucket the
//! first trigger starts in, to the first bucket that starts at or after the last trigger's
//! end; then from there to the run's last bucket, which is left out because it holds the
//! requests still in flight when the run stopped (they would count as failures).

use super::round3;
use crate::figures::Figures;
use serde::Serialize;
use sim_core::SimDuration;
use sim_core::metrics::LatencyHistogram;
use std::ops::Range;

/// What the clients got over one stretch of the run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WindowFigures {
    /// Where the stretch starts, in seconds (a bucket's start).
    pub from_s: f64,
    /// Where it ends, in seconds (a bucket's start).
    pub to_s: f64,
    /// Requests offered in it.
    pub offered: u64,
    /// Of those, the share that succeeded (`null` when none was offered).
    pub success_ratio: Option<f64>,
    /// Successes that completed in it, per second, whenever they were offered.
    pub goodput_per_s: f64,
    /// The 99th percentile latency of the successes among the requests offered in it, in
    /// milliseconds (two significant digits; `null` without successes, and in a run that
    /// kept only its clients' series, `Series::Clients`).
    pub latency_ms_p99: Option<f64>,
}

/// The figures over buckets `buckets` (`None` when the range is empty).
pub(super) fn over(figures: &Figures, buckets: Range<usize>) -> Option<WindowFigures> {
    if buckets.is_empty() {
        return None;
    }
    let (mut offered, mut successes, mut completed) = (0, 0, 0);
    for c in &figures.clients {
        for i in buckets.clone() {
            let b = c.bucket(i);
            offered += b.offered;
            successes += b.successes;
            completed += b.completed_ok;
        }
    }
    let mut latency = LatencyHistogram::compact();
    let mut latency_max = 0;
    // The run's buckets may stop short of the run (missing ones saw no success).
    let recorded = buckets.start.min(figures.buckets.len())..buckets.end.min(figures.buckets.len());
    for b in &figures.buckets[recorded] {
        latency.merge(&b.latency);
        latency_max = latency_max.max(b.latency_max_ns);
    }
    // A run that kept only its clients' series has no latencies per bucket: no p99.
    debug_assert!(
        !figures.series_kept() || latency.count() == successes,
        "one latency per success"
    );
    let at = |i: usize| figures.bucket * i as u64;
    let length = at(buckets.end) - at(buckets.start);
    Some(WindowFigures {
        from_s: round3(at(buckets.start).as_secs_f64()),
        to_s: round3(at(buckets.end).as_secs_f64()),
        offered,
        success_ratio: (offered > 0).then(|| round3(successes as f64 / offered as f64)),
        goodput_per_s: round3(completed as f64 / length.as_secs_f64()),
        // A bin's upper edge can lie above every latency in it: no quantile exceeds the max.
        latency_ms_p99: (latency.count() > 0).then(|| {
            let p99 = latency
                .quantile(0.99)
                .min(SimDuration::from_nanos(latency_max));
            round3(p99.as_secs_f64() * 1e3)
        }),
    })
}
