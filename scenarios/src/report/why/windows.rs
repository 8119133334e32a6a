//! [`Span`]: the windows of a run `resim why` explains when it is not given one — each
//! trigger of the file (a fault, a load spike) and the recovery after it, or, in a file
//! without triggers, the stretches where the failures concentrate.
//!
//! # The rules
//!
//! - A **trigger window** is a fault's or a spike's stretch on the report's timeline (to the
//!   run's end when it has none).
//! - The **recovery** after a trigger runs from its end to the first bucket whose failure
//!   ratio (failures over requests offered, by bucket of offer) is back at most at the
//!   healthy level: twice the ratio of the buckets before the first trigger, and at least
//!   [`HEALTHY_RATIO_MIN`]. A run that recovers in the trigger's last bucket has no recovery
//!   window; one that never does has one to the run's end. It stops at the next trigger.
//! - Where the file has no trigger, failures **concentrate** in the maximal runs of
//!   buckets whose failure ratio is at least [`CONCENTRATION_FACTOR`] times the run's
//!   (a gap of one bucket joins two runs). When no bucket stands out, the window is the
//!   whole run.
//!
//! The run's last bucket holds the requests still in flight when it stopped (they count as
//! not succeeded), so no rule reads it, as the metastability verdict does not.

use super::super::{Report, SeriesRow, round3};

/// A bucket concentrates failures at this many times the run's failure ratio.
pub const CONCENTRATION_FACTOR: f64 = 3.0;
/// A bucket counts as healthy up to this failure ratio, whatever the run before the trigger.
pub const HEALTHY_RATIO_MIN: f64 = 0.01;
/// The most windows found in one run (a file may have many faults): the first ones.
pub const WINDOWS_MAX: usize = 12;

/// What a window is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    /// A trigger of the file: a fault or a load spike.
    Trigger,
    /// The stretch after a trigger until the failures are back to the healthy level.
    Recovery,
    /// Buckets where the failures concentrate (a file without triggers).
    Concentrated,
    /// The whole run (failures spread over it).
    Run,
    /// A failed expectation's window that no other window overlaps.
    Expectation,
    /// The stretch after the trigger that the metastability verdict reads.
    Verdict,
    /// The window asked for (`--window`).
    Asked,
}

/// A window of the run, in seconds: `[from_s, to_s)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// What it is.
    pub kind: SpanKind,
    /// In words (`slowdown db ×5`, `after slowdown db ×5`, `failures concentrate`).
    pub label: String,
    /// Start.
    pub from_s: f64,
    /// End.
    pub to_s: f64,
    /// The end of what counts as before it, what the clients did while healthy: a
    /// recovery's trigger's start, the window's start otherwise.
    pub before_s: f64,
}

/// The buckets the rules read: every one but the run's last.
fn rows(report: &Report) -> &[SeriesRow] {
    let n = report.series.len().saturating_sub(1);
    &report.series[..n]
}

/// Failures over requests (0 without requests).
fn failure_ratio((failed, offered): (u64, u64)) -> f64 {
    if offered == 0 {
        0.0
    } else {
        failed as f64 / offered as f64
    }
}

/// A bucket's failure ratio.
fn ratio(r: &SeriesRow) -> f64 {
    failure_ratio((r.failures, r.offered))
}

/// The failures and the requests offered in `rows`.
fn counts<'a>(rows: impl Iterator<Item = &'a SeriesRow>) -> (u64, u64) {
    rows.fold((0, 0), |(f, o), r| (f + r.failures, o + r.offered))
}

/// The failure ratio over `rows`.
fn ratio_over<'a>(rows: impl Iterator<Item = &'a SeriesRow>) -> f64 {
    failure_ratio(counts(rows))
}

/// The end of the buckets the rules read, in seconds.
fn end_s(report: &Report) -> f64 {
    rows(report)
        .last()
        .map_or(0.0, |r| round3(r.t_s + report.bucket_s))
}

/// The windows of `report` by the rules above, in time order (triggers by their start, each
/// followed by its recovery).
pub fn find(report: &Report) -> Vec<Span> {
    let end = end_s(report);
    let mut triggers: Vec<&super::super::TimelineWindow> =
        report.timeline.iter().filter(|t| t.from_s < end).collect();
    triggers.sort_by(|a, b| a.from_s.total_cmp(&b.from_s));
    if triggers.is_empty() {
        return concentrated(report);
    }
    // Triggers over the same stretch (a spike of several clients) make one window.
    let mut same: Vec<(f64, Option<f64>, Vec<&str>)> = Vec::new();
    for t in &triggers {
        match same
            .iter_mut()
            .find(|(f, z, _)| *f == t.from_s && *z == t.to_s)
        {
            Some((_, _, labels)) => labels.push(&t.label),
            None => same.push((t.from_s, t.to_s, vec![&t.label])),
        }
    }
    let first = same[0].0;
    let before = ratio_over(rows(report).iter().filter(|r| r.t_s < first));
    let healthy = (2.0 * before).max(HEALTHY_RATIO_MIN);
    let mut out = Vec::new();
    for (i, (from_s, to_s, labels)) in same.iter().enumerate() {
        let to = to_s.unwrap_or(end).min(end);
        let label = match labels.as_slice() {
            [one] => one.to_string(),
            [one, two] => format!("{one}, {two}"),
            [one, rest @ ..] => format!("{one} and {} more at once", rest.len()),
            [] => unreachable!("a group has a trigger"),
        };
        out.push(Span {
            kind: SpanKind::Trigger,
            label: label.clone(),
            from_s: *from_s,
            to_s: to,
            before_s: *from_s,
        });
        let next = same.get(i + 1).map_or(end, |n| n.0.max(to));
        if let Some(until) = recovered(report, to, next, healthy)
            && until > to
        {
            out.push(Span {
                kind: SpanKind::Recovery,
                label: format!("after {label}"),
                from_s: to,
                to_s: until,
                before_s: *from_s,
            });
        }
    }
    out.truncate(WINDOWS_MAX);
    out
}

/// The start of the first bucket from `from_s` on (before `until_s`) whose failure ratio is
/// at most `healthy`, or `until_s` when none is; `None` when `from_s` is at the run's end.
fn recovered(report: &Report, from_s: f64, until_s: f64, healthy: f64) -> Option<f64> {
    if from_s >= until_s {
        return None;
    }
    // A bucket that starts before the trigger's end but ends after it is the recovery's
    // first: the trigger ended in it.
    let first = rows(report)
        .iter()
        .filter(|r| r.t_s + report.bucket_s > from_s && r.t_s < until_s)
        .find(|r| ratio(r) <= healthy);
    Some(first.map_or(until_s, |r| round3(r.t_s.max(from_s))))
}

/// The runs of buckets where the failures concentrate, or the whole run.
fn concentrated(report: &Report) -> Vec<Span> {
    let rows = rows(report);
    let run = ratio_over(rows.iter());
    if run == 0.0 {
        return Vec::new();
    }
    let high = |r: &SeriesRow| r.failures > 0 && ratio(r) >= CONCENTRATION_FACTOR * run;
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        if !high(r) {
            continue;
        }
        match runs.last_mut() {
            // A gap of one bucket joins two runs.
            Some((_, last)) if i <= *last + 2 => *last = i,
            _ => runs.push((i, i)),
        }
    }
    if runs.is_empty() {
        return vec![Span {
            kind: SpanKind::Run,
            label: "the run: its failures are spread over it".to_string(),
            from_s: 0.0,
            to_s: end_s(report),
            before_s: 0.0,
        }];
    }
    runs.into_iter()
        .take(WINDOWS_MAX)
        .map(|(a, z)| Span {
            kind: SpanKind::Concentrated,
            label: format!(
                "failures concentrate (over {}× the run's {:.1}%)",
                CONCENTRATION_FACTOR,
                100.0 * run
            ),
            from_s: rows[a].t_s,
            to_s: round3(rows[z].t_s + report.bucket_s),
            before_s: rows[a].t_s,
        })
        .collect()
}

/// Failures (and requests) offered in `[from_s, to_s)`.
pub fn failures_in(report: &Report, from_s: f64, to_s: f64) -> (u64, u64) {
    counts(
        rows(report)
            .iter()
            .filter(|r| r.t_s >= from_s && r.t_s < to_s),
    )
}
