//! [`Report`]: what a run shows, built from the scenario, the run's metadata and its
//! [`Figures`](crate::figures::Figures) ([`Report::build`]), and rendered by [`Format`]: a
//! human report, one JSON object (serde), a CSV of the time series, or a compact summary for
//! snapshots.
//!
//! | module | what |
//! |---|---|
//! | `types` | [`Report`] and the types it is made of: the JSON contract |
//! | `build` | [`Report::build`], from the figures only |
//! | `verdicts` | the verdicts on the scenario's expectations |
//! | [`metastability`] | the metastability verdict of a run with a trigger that ends |
//! | [`why`] | why a run failed: the reasons, what saturated, what held recovery back |
//! | [`explore`] | the explorer's data of a run and its self-contained page (`resim explore`) |
//! | [`render`] | one module per [`Format`]; a renderer sees only the [`Report`] |
//! | [`spans`] | followed requests as traces: OTLP, Jaeger, Zipkin and Perfetto JSON, streamed (`resim run --spans`) |
//!
//! Every figure is a pure function of the run's figures, so two runs with the same digest
//! print the same report. Floats appear only here, rounded for display.
//!
//! **Layer rule:** the report uses the format (the scenario, its verdict settings) and
//! `figures.rs`; never the world (it sees a run only through its figures), runs, experiments
//! or the command line. `run.rs` builds it when the world is done.
//!
//! # Decisions
//!
//! *amplification* is the clients' (attempts their call sites make per offered request, and per
//! call at each call site); what a tier receives per offered request is its service's *load
//! factor*, so a retry storm shows at the tier it hits instead of as one sum over all tiers
//! (DESIGN's `summary.amplification` keeps its key with this meaning). A figure nothing gave a
//! value (the latency of a bucket without successes, the wait at a service where no attempt
//! started) is absent, `null` in JSON and "–" in text, never 0. The series counts outcomes,
//! ratios and latencies by bucket of offer and `goodput_per_s` by bucket of completion. Busy
//! workers are "busy"; "in flight" means admitted and not yet answered. JSON keys name the unit
//! before the qualifier (`latency_ms_p99`); `tests/report.rs` checks every key. What the charts
//! draw is in the report too, so any renderer can draw it: per bucket the clients' attempts,
//! latency p50/p99/max, each client's outcomes, each service's refusals by reason and capacity
//! (workers of the replicas that are up), each call site's attempts, retries, budget refusals
//! and timeouts; each breaker's states as spans; the scenario's faults and load spikes as a
//! `timeline`; each expectation's `threshold` (figure, bound, value, window, observed value).

mod build;
pub mod explore;
pub mod metastability;
pub mod render;
pub mod spans;
mod types;
mod verdicts;
pub mod why;

pub use render::Format;
pub use types::{
    BlastReport, BreakerReport, CallPoint, CallReport, CapacityEventsReport, ClassPoint,
    ClassReport, ClientPoint, ClientReport, ConnectionsReport, ExpectationResult, LatencyMs,
    LimiterPoint, LockReport, PoolReport, RefreshReport, Report, ScalingReport, SeriesRow,
    ServicePoint, ServiceReport, StateSpan, StoreReport, Summary, TenantReport, Threshold,
    TimelineWindow, TrafficReport, Transition,
};

use crate::figures::ReasonCounts;
use std::collections::BTreeMap;

/// Rounded to three decimals, for display.
fn round3(x: f64) -> f64 {
    libm::round(x * 1000.0) / 1000.0
}

/// `a / b`, or 1 when `b` is zero.
fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}

/// The reasons that occurred, by name.
fn reasons(counts: &ReasonCounts) -> BTreeMap<String, u64> {
    counts
        .nonzero()
        .map(|(r, n)| (r.name().to_string(), n))
        .collect()
}
