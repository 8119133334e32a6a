//! The calibration report of a trace import (`--report FILE.json`, and a table on stderr):
//! what the scenario written rests on. Span counts per edge and the share of them failed,
//! retried or ended for want of time, the spans that could not be paired, how each measured
//! distribution was written and how far it is from the values, where a service's work grows
//! with its load, and where the spans disagree with the scenario's policies.

use serde::Serialize;

/// What the import rests on: span counts per edge, spans it could not pair, and how each
/// distribution was written.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Calibration {
    /// Traces read.
    pub traces: u64,
    /// Spans read.
    pub spans: u64,
    /// Client spans that reached no server span and name no peer.
    pub unpaired: u64,
    /// Spans whose parent is not in the trace (truncated traces).
    pub orphans: u64,
    /// Traces left out as truncated (several roots: spans lost between them).
    pub truncated: u64,
    /// Calls of a service to itself, left out.
    pub self_calls: u64,
    /// The share of requests traced the rates were scaled by.
    pub sampling: f64,
    /// Each edge, caller to callee.
    pub edges: Vec<EdgeRow>,
    /// Each measured distribution.
    pub distributions: Vec<DistributionRow>,
    /// Each service's self time at its quietest and busiest, where the traces tell.
    pub load: Vec<super::load::LoadRow>,
    /// Where the retries and timeouts the spans show disagree with the scenario's policies, a line each.
    pub disagreements: Vec<String>,
}

/// One edge of the calibration report.
#[derive(Debug, Clone, Serialize)]
pub struct EdgeRow {
    /// The calling service.
    pub caller: String,
    /// The called one.
    pub callee: String,
    /// Client spans to it.
    pub spans: u64,
    /// The caller's jobs making it.
    pub jobs: u64,
    /// Of the caller's jobs.
    pub call_ratio: f64,
    /// Leaves per call.
    pub fan_out: f64,
    /// Failed client spans, a ratio.
    pub error_ratio: f64,
    /// A producer/consumer or `FOLLOWS_FROM` edge.
    pub asynchronous: bool,
    /// The callee recorded no spans.
    pub virtual_callee: bool,
    /// The share of the caller's jobs making it that sent it more than once (retried).
    pub retried: f64,
    /// The most attempts one job's call took.
    pub attempts_max: u64,
    /// The share of its client spans that ended for want of time (a timeout, a deadline).
    pub deadline_ratio: f64,
    /// How long those lasted, the median, in nanoseconds: where the timeout that ended them
    /// is.
    pub deadline_after_ns: Option<u64>,
    /// The longest successful client span, in nanoseconds (of a sample of at most 2,000).
    pub longest_success_ns: Option<u64>,
    /// The successful client spans' durations, sorted (that sample): the share a timeout
    /// would have cut.
    #[serde(skip)]
    pub successes: Vec<u64>,
}

impl EdgeRow {
    /// The share of the successful client spans that lasted longer than `limit`.
    pub fn longer_than(&self, limit: u64) -> f64 {
        let above = self.successes.len() - self.successes.partition_point(|&d| d <= limit);
        above as f64 / self.successes.len().max(1) as f64
    }
}

/// One measured distribution of the calibration report.
#[derive(Debug, Clone, Serialize)]
pub struct DistributionRow {
    /// The field written (`services.api.work`).
    pub path: String,
    /// Values measured, and kept (a uniform sample of at most 20,000).
    pub values: u64,
    /// The form written (`Histogram`, `Constant`).
    pub form: String,
    /// The largest distance between the CDF of the values kept and the one written
    /// (Kolmogorov–Smirnov's D).
    pub distance: f64,
}

impl Calibration {
    /// The report as a table for stderr.
    pub fn text(&self) -> String {
        let mut out = format!(
            "traces: {} traces, {} spans; {} truncated traces left out ({} spans without their parent); {} client spans unpaired; {} self-calls left out; rates scaled by sampling {}\n",
            self.traces,
            self.spans,
            self.truncated,
            self.orphans,
            self.unpaired,
            self.self_calls,
            self.sampling
        );
        out.push_str(
            "  edge                                   spans   ratio  fan-out  errors  retried  timed out\n",
        );
        for e in &self.edges {
            let edge = format!(
                "{} -> {}{}",
                e.caller,
                e.callee,
                if e.asynchronous { " (async)" } else { "" }
            );
            out.push_str(&format!(
                "  {edge:<38} {:>6}  {:>6.4}  {:>7.2}  {:>5.2}%  {:>6.2}%  {:>8.2}%\n",
                e.spans,
                e.call_ratio,
                e.fan_out,
                100.0 * e.error_ratio,
                100.0 * e.retried,
                100.0 * e.deadline_ratio
            ));
        }
        out.push_str("  distribution                           values  form       D\n");
        for d in &self.distributions {
            out.push_str(&format!(
                "  {:<38} {:>6}  {:<9}  {:.4}\n",
                d.path, d.values, d.form, d.distance
            ));
        }
        for line in &self.disagreements {
            out.push_str(line);
            out.push('\n');
        }
        for row in self.load.iter().filter(|r| r.warned) {
            out.push_str(&row.warning());
            out.push('\n');
        }
        out
    }
}
