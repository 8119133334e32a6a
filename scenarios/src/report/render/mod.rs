//! Renderings of a [`Report`]: one module per format, each a function of the report alone.
//!
//! | format | module | what |
//! |---|---|---|
//! | [`Format::Human`] | `human` | the readable report, ending with the replay command |
//! | [`Format::Compact`] | `compact` | fixed columns and rounded values, for snapshots |
//! | [`Format::Json`] | `json` | one JSON object: the [`Report`] as serde writes it |
//! | [`Format::Csv`] | `csv` | the time series, one row per report bucket |
//!
//! A new format is one new module and one arm of [`Format`] and of [`Format::render`].

mod blast;
pub mod charts;
mod classes;
mod compact;
mod csv;
mod html;
mod human;
mod json;

pub use charts::{Chart, ChartError, charts};
pub use html::html;

use super::{CallReport, Report};
use std::collections::BTreeMap;

/// How to render a report (`resim run --format NAME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The readable report: summary, components, time series, expectations, replay command.
    Human,
    /// One JSON object with every figure.
    Json,
    /// The time series as CSV, one row per report bucket.
    Csv,
    /// A short summary with fixed columns, as the snapshot tests keep it.
    Compact,
}

impl Format {
    /// The report in this format; the text ends with a newline.
    pub fn render(self, report: &Report) -> String {
        match self {
            Format::Human => human::render(report),
            Format::Json => json::render(report),
            Format::Csv => csv::render(report),
            Format::Compact => compact::render(report),
        }
    }
}

/// A figure with one decimal, or "–" where there is none (e.g. the latency of a bucket
/// without successes).
fn decimal1(x: Option<f64>) -> String {
    x.map_or_else(|| "–".to_string(), |v| format!("{v:.1}"))
}

/// Each call site as a reader knows it, in the order of `calls`: `caller → target`, with its
/// place in the file when the caller has several calls to the same target
/// (`api → db (calls[1])`). One pass to count the pairs, so ten thousand clients cost ten
/// thousand lookups, not a hundred million comparisons.
fn call_names(calls: &[CallReport]) -> Vec<String> {
    let mut pairs: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for c in calls {
        *pairs.entry((&c.caller, &c.target)).or_default() += 1;
    }
    calls
        .iter()
        .map(|c| {
            let name = format!("{} → {}", c.caller, c.target);
            if pairs[&(c.caller.as_str(), c.target.as_str())] > 1 {
                let place = c.path.rsplit('.').next().unwrap_or(&c.path);
                format!("{name} ({place})")
            } else {
                name
            }
        })
        .collect()
}

/// The first eight characters of a name, for the sparkline labels.
fn short(name: &str) -> String {
    name.chars().take(8).collect()
}

/// `reason n, reason n`, or `none`.
fn join_reasons(m: &BTreeMap<String, u64>) -> String {
    if m.is_empty() {
        return "none".to_string();
    }
    m.iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One character per value (at most 60, neighbouring values averaged into one column); NaN
/// values are left out, and a column of only NaN is blank.
fn sparkline(values: impl Iterator<Item = f64>, top: f64) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let v: Vec<f64> = values.collect();
    if v.is_empty() {
        return String::new();
    }
    let columns = v.len().min(60);
    (0..columns)
        .map(|c| {
            let from = c * v.len() / columns;
            let to = ((c + 1) * v.len() / columns).max(from + 1);
            let known: Vec<f64> = v[from..to]
                .iter()
                .copied()
                .filter(|x| !x.is_nan())
                .collect();
            if known.is_empty() {
                return ' ';
            }
            let mean = known.iter().sum::<f64>() / known.len() as f64;
            let x = if top > 0.0 {
                (mean / top).clamp(0.0, 1.0)
            } else {
                0.0
            };
            BARS[libm::round(x * 7.0) as usize]
        })
        .collect()
}
