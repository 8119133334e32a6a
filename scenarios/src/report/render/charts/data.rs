//! What the charts plot, read from the report's series: the columns of a chart (report
//! buckets, merged when there are more than a chart can show) and the figures per column.
//!
//! Counts become rates over their column's own length (a partial last bucket is not
//! diluted); gauges are averaged weighted by length; the quantiles of merged buckets are
//! their largest (an upper envelope, as the report has no finer data), which a chart with
//! merged columns says in its title.

use super::super::super::{Report, SeriesRow, TimelineWindow};
use std::ops::Range;

/// The most columns a chart draws: about one per pixel and a half of its plot.
pub const COLUMNS_MAX: usize = 600;

/// The columns of a chart: groups of consecutive report buckets.
pub struct Frame {
    /// The buckets of each column.
    pub groups: Vec<Range<usize>>,
    /// Each column's length in seconds.
    pub len_s: Vec<f64>,
    /// Each column's midpoint in seconds.
    pub mid_s: Vec<f64>,
    /// Where the run ends, in seconds.
    pub end_s: f64,
    /// Buckets per column (1 unless the run has more than [`COLUMNS_MAX`] buckets).
    pub merged: usize,
    /// The faults and load spikes to shade.
    pub timeline: Vec<TimelineWindow>,
}

impl Frame {
    /// The columns of `report`.
    pub fn of(report: &Report) -> Frame {
        let n = report.series.len();
        let merged = n.div_ceil(COLUMNS_MAX).max(1);
        let end_s = report.simulated_s.max(1e-9);
        let start = |i: usize| report.series.get(i).map_or(end_s, |r| r.t_s);
        let groups: Vec<Range<usize>> = (0..n)
            .step_by(merged)
            .map(|i| i..(i + merged).min(n))
            .collect();
        let len_s: Vec<f64> = groups
            .iter()
            .map(|g| (start(g.end).min(end_s) - start(g.start)).max(1e-9))
            .collect();
        let mid_s = groups
            .iter()
            .zip(&len_s)
            .map(|(g, len)| start(g.start) + len / 2.0)
            .collect();
        Frame {
            groups,
            len_s,
            mid_s,
            end_s,
            merged,
            timeline: report.timeline.clone(),
        }
    }

    /// A note for titles when columns merge buckets.
    pub fn merged_note(&self, bucket_s: f64) -> String {
        if self.merged > 1 {
            format!(
                " (columns of {} buckets: {}s)",
                self.merged,
                super::panel::tick_label(bucket_s * self.merged as f64)
            )
        } else {
            String::new()
        }
    }

    /// Per column, the sum of `count` over its buckets per second of the column.
    pub fn rate(&self, report: &Report, count: impl Fn(&SeriesRow) -> u64) -> Vec<Option<f64>> {
        self.groups
            .iter()
            .zip(&self.len_s)
            .map(|(g, len)| {
                let sum: u64 = report.series[g.clone()].iter().map(&count).sum();
                Some(sum as f64 / len)
            })
            .collect()
    }

    /// Per column, the mean of `gauge` over its buckets weighted by their lengths.
    pub fn mean(&self, report: &Report, gauge: impl Fn(&SeriesRow) -> f64) -> Vec<Option<f64>> {
        self.groups
            .iter()
            .map(|g| {
                let rows = &report.series[g.clone()];
                if rows.len() == 1 {
                    return Some(gauge(&rows[0]));
                }
                let (mut sum, mut total) = (0.0, 0.0);
                for (i, r) in rows.iter().enumerate() {
                    let next = rows
                        .get(i + 1)
                        .map_or(report.simulated_s, |n| n.t_s)
                        .min(report.simulated_s);
                    let w = (next - r.t_s).max(0.0);
                    sum += gauge(r) * w;
                    total += w;
                }
                Some(if total > 0.0 { sum / total } else { 0.0 })
            })
            .collect()
    }

    /// Per column, the largest value of `figure` over its buckets (`None` when none has one).
    pub fn max(
        &self,
        report: &Report,
        figure: impl Fn(&SeriesRow) -> Option<f64>,
    ) -> Vec<Option<f64>> {
        self.groups
            .iter()
            .map(|g| {
                report.series[g.clone()]
                    .iter()
                    .filter_map(&figure)
                    .reduce(f64::max)
            })
            .collect()
    }

    /// Per column, `part / whole` of two sums over its buckets (`None` when `whole` is 0).
    pub fn ratio(
        &self,
        report: &Report,
        part: impl Fn(&SeriesRow) -> u64,
        whole: impl Fn(&SeriesRow) -> u64,
    ) -> Vec<Option<f64>> {
        self.groups
            .iter()
            .map(|g| {
                let rows = &report.series[g.clone()];
                let w: u64 = rows.iter().map(&whole).sum();
                let p: u64 = rows.iter().map(&part).sum();
                (w > 0).then(|| p as f64 / w as f64)
            })
            .collect()
    }
}

/// Whether any value of `values` is above zero.
pub fn any(values: &[Option<f64>]) -> bool {
    values.iter().flatten().any(|v| *v > 0.0)
}
