//! A service chart's panels of its limiters' state over time: its concurrency limit beside the
//! requests its limiters hold, and its PID shedder's drop probability; a service without
//! either gets no panel.

use super::super::super::{LimiterPoint, Report, SeriesRow};
use super::data::Frame;
use super::{LinePanel, line, linear};

/// `panels` of service `i`, and after them those of its limiters, under `title`.
pub(super) fn with(
    mut panels: Vec<LinePanel>,
    title: &str,
    report: &Report,
    frame: &Frame,
    i: usize,
) -> Vec<LinePanel> {
    let Some(first) = report
        .series
        .first()
        .and_then(|r| r.services[i].limiters.as_deref())
    else {
        return panels;
    };
    let figure = |f: fn(&LimiterPoint) -> Option<f64>| {
        move |r: &SeriesRow| r.services[i].limiters.as_deref().and_then(f)
    };
    let mean = |f: fn(&LimiterPoint) -> Option<f64>| {
        frame.mean(report, move |r| figure(f)(r).unwrap_or_default())
    };
    if first.concurrency_limit_mean.is_some() {
        let mut limit = line("limit (mean)", 2, mean(|p| p.concurrency_limit_mean));
        limit.dashed = true;
        let lines = vec![
            limit,
            line(
                "in flight (mean)",
                1,
                mean(|p| p.concurrency_in_flight_mean),
            ),
            line(
                "in flight (max)",
                4,
                frame.max(report, figure(|p| p.concurrency_in_flight_max)),
            ),
        ];
        panels.push(LinePanel {
            y: linear("requests", &lines),
            title: format!(
                "{title}: concurrency limit and the requests it holds, over the replicas"
            ),
            lines,
            note: None,
        });
    }
    if first.pid_drop_ratio_mean.is_some() {
        let lines = vec![
            line(
                "drop probability (mean)",
                0,
                mean(|p| p.pid_drop_ratio_mean),
            ),
            line(
                "drop probability (max)",
                3,
                frame.max(report, figure(|p| p.pid_drop_ratio_max)),
            ),
        ];
        panels.push(LinePanel {
            y: linear("probability", &lines),
            title: format!("{title}: the PID shedder's drop probability"),
            lines,
            note: None,
        });
    }
    panels
}
