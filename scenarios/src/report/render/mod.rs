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

/// The most characters a sparkline takes.
const SPARKLINE_COLUMNS_MAX: usize = 60;

/// How many buckets one character of a sparkline stands for: one, or as many as it takes to
/// fit [`SPARKLINE_COLUMNS_MAX`] characters (the same number for every character).
fn buckets_per_column(buckets: usize) -> usize {
    buckets.div_ceil(SPARKLINE_COLUMNS_MAX).max(1)
}

/// How a sparkline merges the buckets of one character.
#[derive(Clone, Copy)]
enum Merge {
    /// Their mean: ratios, rates, gauges' means.
    Mean,
    /// The largest: quantiles and maxima, which a mean would hide.
    Max,
}

/// One character per bucket, or per [`buckets_per_column`] buckets merged by `merge`, scaled
/// to `top`; NaN values are left out, and a character of only NaN is blank.
fn sparkline(values: impl Iterator<Item = f64>, top: f64, merge: Merge) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let v: Vec<f64> = values.collect();
    v.chunks(buckets_per_column(v.len()))
        .map(|chunk| {
            let known = chunk.iter().copied().filter(|x| !x.is_nan());
            let count = known.clone().count();
            if count == 0 {
                return ' ';
            }
            let value = match merge {
                Merge::Mean => known.sum::<f64>() / count as f64,
                Merge::Max => known.fold(f64::MIN, f64::max),
            };
            let x = if top > 0.0 {
                (value / top).clamp(0.0, 1.0)
            } else {
                0.0
            };
            BARS[libm::round(x * 7.0) as usize]
        })
        .collect()
}

/// A sparkline's peak as its label prints it: two significant digits below 10, so that a
/// full bar never stands beside a peak that reads 0.
fn peak(value: f64) -> String {
    if value >= 10.0 || value == 0.0 {
        format!("{value:.0}")
    } else if value >= 1.0 {
        format!("{value:.1}")
    } else {
        let decimals = 1 - libm::floor(libm::log10(value)) as i32;
        format!("{value:.*}", decimals.clamp(1, 9) as usize)
    }
}

/// What one character of the sparklines stands for: "per bucket of 1s", or "per 2s (2
/// buckets of 1s)" when a run has more buckets than a line has characters.
fn sparkline_unit(report: &Report) -> String {
    let k = buckets_per_column(report.series.len());
    let bucket = seconds(report.bucket_s);
    if k == 1 {
        format!("one character per bucket of {bucket}")
    } else {
        format!(
            "one character per {} ({k} buckets of {bucket})",
            seconds(report.bucket_s * k as f64)
        )
    }
}

/// Seconds as a report prints a duration: `1s`, `250ms`, `2.5s`.
fn seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{}s", libm::round(s * 1e3) / 1e3)
    } else {
        format!("{}ms", libm::round(s * 1e6) / 1e3)
    }
}
