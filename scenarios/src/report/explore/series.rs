//! The report's series as columns: each figure the explorer charts is a [`Line`] of one value
//! per bucket, keyed by what it is (`latency_ms_p99`, `service/api/queue`,
//! `call/clients.users.call/timeouts`), in the chart ([`ChartSpec`]) that draws it. The
//! topology view reads the same lines by key.

use super::super::{CallPoint, LimiterPoint, Report, SeriesRow, ServicePoint, round3};
use serde::Serialize;

/// A chart of the page.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ChartSpec {
    /// Its id, which its lines name.
    pub id: &'static str,
    /// Its title.
    pub title: &'static str,
    /// The unit of its values.
    pub unit: &'static str,
}

/// One figure by bucket.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Line {
    /// What it is, unique in the page (`service/api/queue`).
    pub key: String,
    /// The chart that draws it.
    pub chart: &'static str,
    /// Its name in the chart's legend.
    pub label: String,
    /// Its value in each bucket (`null`: the report has none there).
    pub values: Vec<Option<f64>>,
}

/// The charts of the page, in order.
const CHARTS: [ChartSpec; 7] = [
    ChartSpec {
        id: "requests",
        title: "Requests offered, attempts and outcomes per bucket (by bucket of offer)",
        unit: "",
    },
    ChartSpec {
        id: "success",
        title: "Success ratio of the requests offered in each bucket",
        unit: "",
    },
    ChartSpec {
        id: "latency",
        title: "Latency of the successes offered in each bucket",
        unit: "ms",
    },
    ChartSpec {
        id: "busy",
        title: "Busy workers per service (mean over the bucket), and workers up",
        unit: "",
    },
    ChartSpec {
        id: "queue",
        title: "Jobs waiting per service, summed over replicas (mean and most)",
        unit: "",
    },
    ChartSpec {
        id: "refused",
        title: "Attempts refused or failed by each service, by reason",
        unit: "",
    },
    ChartSpec {
        id: "calls",
        title: "Attempts, retries and timeouts per call site",
        unit: "",
    },
];

/// The charts of a service's limiters, beside the refusals; a page has them only when a
/// service has such a limiter.
const LIMITER_CHARTS: [ChartSpec; 2] = [
    ChartSpec {
        id: "limits",
        title: "Concurrency limit per service and the requests its limiters hold (mean over the bucket)",
        unit: "",
    },
    ChartSpec {
        id: "shed",
        title: "Drop probability of each service's PID shedder (mean over the bucket)",
        unit: "",
    },
];

/// The charts and their lines of `report`. A chart with nothing to draw (no retries
/// anywhere, say) keeps its lines: the topology reads them, and the page leaves the chart out.
pub fn columns(report: &Report) -> (Vec<ChartSpec>, Vec<Line>) {
    let mut lines = run_lines(&report.series);
    lines.extend(service_lines(report));
    lines.extend(call_lines(report));
    let mut charts = CHARTS.to_vec();
    for spec in LIMITER_CHARTS {
        if lines.iter().any(|l| l.chart == spec.id) {
            // Beside the refusals, which say what the limiters refused.
            let at = charts
                .iter()
                .position(|c| c.id == "refused")
                .map_or(0, |i| i + 1);
            let at = at + usize::from(spec.id == "shed" && charts.iter().any(|c| c.id == "limits"));
            charts.insert(at, spec);
        }
    }
    (charts, lines)
}

/// A line of `f` over `rows`, rounded for display.
fn line(
    rows: &[SeriesRow],
    (key, chart, label): (String, &'static str, String),
    f: impl Fn(&SeriesRow) -> Option<f64>,
) -> Line {
    Line {
        key,
        chart,
        label,
        values: rows.iter().map(|r| f(r).map(round3)).collect(),
    }
}

/// The lines of all clients together: requests, success ratio, latency.
fn run_lines(rows: &[SeriesRow]) -> Vec<Line> {
    let named = |key: &str, chart, label: &str| (key.to_string(), chart, label.to_string());
    let count = |f: fn(&SeriesRow) -> u64| move |r: &SeriesRow| Some(f(r) as f64);
    vec![
        line(
            rows,
            named("offered", "requests", "offered"),
            count(|r| r.offered),
        ),
        line(
            rows,
            named("attempts", "requests", "attempts"),
            count(|r| r.attempts),
        ),
        line(
            rows,
            named("successes", "requests", "successes"),
            count(|r| r.successes),
        ),
        line(
            rows,
            named("failures", "requests", "failures"),
            count(|r| r.failures),
        ),
        line(
            rows,
            named("goodput_ratio", "success", "success ratio"),
            |r| Some(r.goodput_ratio),
        ),
        line(rows, named("latency_ms_p50", "latency", "p50"), |r| {
            r.latency_ms_p50
        }),
        line(rows, named("latency_ms_p99", "latency", "p99"), |r| {
            r.latency_ms_p99
        }),
        line(rows, named("latency_ms_max", "latency", "max"), |r| {
            r.latency_ms_max
        }),
    ]
}

/// Each service's busy workers, workers up, queue (mean and most) and refusals.
fn service_lines(report: &Report) -> Vec<Line> {
    type Figure = fn(&ServicePoint) -> f64;
    let figures: [(&str, &'static str, &str, Figure); 5] = [
        ("busy", "busy", "busy", |p| p.busy_workers_mean),
        ("capacity", "busy", "workers up", |p| {
            p.capacity_workers_mean
        }),
        ("queue", "queue", "mean", |p| p.queue_total_mean),
        ("queue_max", "queue", "most", |p| p.queue_total_max as f64),
        // The total, for the topology and the table; the chart draws it by reason.
        ("refused", "", "refused", |p| {
            p.failed_by_reason.values().sum::<u64>() as f64
        }),
    ];
    let mut out = Vec::new();
    for (i, s) in report.services.iter().enumerate() {
        let name = s.name.as_str();
        for (key, chart, label, f) in figures {
            let named = (
                format!("service/{name}/{key}"),
                chart,
                format!("{name} {label}"),
            );
            out.push(line(&report.series, named, |r| {
                r.services.get(i).filter(|p| p.name == name).map(f)
            }));
        }
        out.extend(reason_lines(report, i, name));
        out.extend(limiter_lines(report, i, name));
    }
    out
}

/// A service's limiters: its concurrency limit and the requests its limiters hold, its PID
/// shedder's drop probability; only those it has.
fn limiter_lines(report: &Report, i: usize, name: &str) -> Vec<Line> {
    type Figure = fn(&LimiterPoint) -> Option<f64>;
    let figures: [(&str, &'static str, &str, Figure); 3] = [
        ("limit", "limits", "limit", |p| p.concurrency_limit_mean),
        ("in_flight", "limits", "in flight", |p| {
            p.concurrency_in_flight_mean
        }),
        ("drop_ratio", "shed", "drop probability", |p| {
            p.pid_drop_ratio_mean
        }),
    ];
    fn point<'r>(r: &'r SeriesRow, i: usize, name: &str) -> Option<&'r LimiterPoint> {
        let p = r.services.get(i).filter(|p| p.name == name)?;
        p.limiters.as_deref()
    }
    let Some(first) = report.series.iter().find_map(|r| point(r, i, name)) else {
        return Vec::new();
    };
    figures
        .into_iter()
        .filter(|(_, _, _, f)| f(first).is_some())
        .map(|(key, chart, label, f)| {
            let named = (
                format!("service/{name}/{key}"),
                chart,
                format!("{name} {label}"),
            );
            line(&report.series, named, |r| point(r, i, name).and_then(f))
        })
        .collect()
}

/// A service's refusals and failures by reason (`queue_full`, `concurrency_limited`,
/// `rate_limited`…), one line for each reason the run saw at it: what refused the attempts,
/// its limiters' included, which the chart draws and the topology names.
fn reason_lines(report: &Report, i: usize, name: &str) -> Vec<Line> {
    fn point<'r>(r: &'r SeriesRow, i: usize, name: &str) -> Option<&'r ServicePoint> {
        r.services.get(i).filter(|p| p.name == name)
    }
    let mut reasons: Vec<&str> = report
        .series
        .iter()
        .filter_map(|r| point(r, i, name))
        .flat_map(|p| p.failed_by_reason.iter())
        .filter(|(_, n)| **n > 0)
        .map(|(reason, _)| reason.as_str())
        .collect();
    reasons.sort_unstable();
    reasons.dedup();
    reasons
        .into_iter()
        .map(|reason| {
            let named = (
                format!("service/{name}/refused/{reason}"),
                "refused",
                format!("{name} {reason}"),
            );
            line(&report.series, named, |r| {
                point(r, i, name)
                    .map(|p| p.failed_by_reason.get(reason).copied().unwrap_or(0) as f64)
            })
        })
        .collect()
}

/// Each call site's attempts, retries and timeouts.
fn call_lines(report: &Report) -> Vec<Line> {
    type Figure = fn(&CallPoint) -> u64;
    let figures: [(&str, Figure); 3] = [
        ("attempts", |p| p.attempts),
        ("retries", |p| p.retries),
        ("timeouts", |p| p.timeouts),
    ];
    let mut out = Vec::new();
    for (i, c) in report.calls.iter().enumerate() {
        let path = c.path.as_str();
        for (key, f) in figures {
            let named = (
                format!("call/{path}/{key}"),
                "calls",
                format!("{} → {} {key}", c.caller, c.target),
            );
            out.push(line(&report.series, named, |r| {
                let p = r.calls.get(i).filter(|p| &*p.path == path);
                p.map(|p| f(p) as f64)
            }));
        }
    }
    out
}
