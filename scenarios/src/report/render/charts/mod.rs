//! Charts of a run as SVG, drawn with plotters' SVG backend from the [`Report`] alone.
//!
//! [`charts`] gives one [`Chart`] per figure:
//!
//! | name | what |
//! |---|---|
//! | `traffic` | offered, attempts, successes and goodput per second: the amplification made visible |
//! | `latency` | client latency p50, p99 and max per bucket (log scale when it spans decades) |
//! | `service-NAME` | per service: queue depth; busy workers against capacity; refusals by reason; caller units without a replica (when it reports its blast radius) |
//! | `service-NAME` | per service: queue depth; busy workers against capacity; refusals by reason; replicas in rotation (when they join and leave it) |
//! | `service-NAME` | per service: its concurrency limit beside the requests it holds, its PID shedder's drop probability (when it has them) |
//! | `breakers` | each breaker's state as coloured bands, one row per breaker (when there are breakers) |
//! | `calls` | retries, budget refusals and timeouts per call site |
//! | `expectations` | each expectation's figure against its bound over its window, green or red (when there are expectations) |
//!
//! Every time axis is in seconds of simulated time, and every panel shades the scenario's
//! faults and load spikes and names them. The same report gives the same bytes: no font is
//! loaded (plotters' own estimate lays text out), no clock or randomness is read, and float
//! math that could differ between platforms goes through `libm`.
//!
//! | module | what |
//! |---|---|
//! | `data` | the columns a chart plots, from the report's series |
//! | `panel` | axes, ticks, shaded windows, lines, legends |
//! | `marks` | the breaker bands and the expectation panels |
//! | `limiters` | a service's panels of its limiters' state |
//! | [`heatmap`] | a grid of cells split by class (the phase map of `resim phase`), from its own data |
//!
//! # Decisions
//!
//! `plotters` with only its SVG backend and line series, no font features, so no font is loaded
//! and text is laid out by plotters' own width estimate: the same report gives the same bytes
//! on any machine (snapshots in `tests/charts.rs` pin two library scenarios), and the build
//! pulls no font or image libraries. Ticks of log axes, and every other float function, use
//! `libm`. A chart has at most 600 columns: beyond, buckets are merged (counts summed into
//! rates over the merged length, gauges averaged, quantiles taken at their largest, and the
//! title says so). Legends sit under the plot, never over the data; window names sit at the top
//! of the plot, on the first of three rows where they do not run into another. Drawing the
//! charts and the page costs little against the run: under callgrind, `resim run
//! metastable-retry` (60s) executes 1,072.6M instructions, 1,078.5M with `--svg` and `--html`
//! (+0.55%).

mod data;
pub mod heatmap;
mod limiters;
mod marks;
mod panel;

use super::super::{CallReport, Report};
use data::{Frame, any};
use panel::{
    Area, DrawResult, LEGEND_ROW, Line, PALETTE, Scale, WIDTH, YAxis, draw_legend, draw_line,
    legend_rows, line_legend, max_of, min_positive_of, note, panel, panel_height, timeline_legend,
};
use plotters::prelude::*;
use std::fmt;

/// One chart: a name that is also its file stem, a title, and the SVG text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chart {
    /// The file stem (`traffic`, `service-api`).
    pub name: String,
    /// What it shows, for a page heading.
    pub title: String,
    /// The SVG document.
    pub svg: String,
}

/// A chart could not be drawn (plotters reported an error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartError {
    /// The chart.
    pub chart: String,
    /// What plotters said.
    pub message: String,
}

impl fmt::Display for ChartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "chart {}: {}", self.chart, self.message)
    }
}

impl std::error::Error for ChartError {}

/// Every chart of `report`, in the order of the table above.
pub fn charts(report: &Report) -> Result<Vec<Chart>, ChartError> {
    let frame = Frame::of(report);
    let mut out = vec![
        chart("traffic", "Requests per second", |t| {
            traffic(t, report, &frame)
        })?,
        chart("latency", "Client latency", |t| latency(t, report, &frame))?,
    ];
    for (i, s) in report.services.iter().enumerate() {
        let name = format!("service-{}", file_stem(&s.name));
        let title = format!("Service {}", s.name);
        out.push(chart(&name, &title, |t| service(t, report, &frame, i))?);
    }
    if report.calls.iter().any(|c| !c.breakers.is_empty()) {
        out.push(chart("breakers", "Circuit breakers", |t| {
            marks::breakers(t, report, &frame)
        })?);
    }
    out.push(chart(
        "calls",
        "Retries, budget refusals and timeouts",
        |t| calls(t, report, &frame),
    )?);
    if !report.expectations.is_empty() {
        out.push(chart("expectations", "Expectations", |t| {
            marks::expectations(t, report, &frame)
        })?);
    }
    Ok(out)
}

/// A name safe as a file stem: letters, digits, `-` and `_`; anything else becomes `_`.
pub fn file_stem(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// What draws a chart on an area as tall as it asked for.
type Draw<'r> = Box<dyn FnOnce(&Area) -> DrawResult<()> + 'r>;

/// A drawing: the height it needs, and a function that draws it on an area that tall.
pub struct Drawing<'r> {
    height: u32,
    draw: Draw<'r>,
}

impl<'r> Drawing<'r> {
    /// A drawing `height` pixels tall.
    pub fn new(height: u32, draw: impl FnOnce(&Area) -> DrawResult<()> + 'r) -> Self {
        Drawing {
            height,
            draw: Box::new(draw),
        }
    }
}

/// Draws the chart `name` that `make` lays out (given the chart's title) as an SVG document.
fn chart<'r>(
    name: &str,
    title: &str,
    make: impl FnOnce(&str) -> Drawing<'r>,
) -> Result<Chart, ChartError> {
    let drawing = make(title);
    let mut svg = String::new();
    let drawn = (|| {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, drawing.height)).into_drawing_area();
        root.fill(&WHITE)?;
        (drawing.draw)(&root)?;
        root.present()
    })();
    drawn.map_err(|e| ChartError {
        chart: name.to_string(),
        message: e.to_string(),
    })?;
    Ok(Chart {
        name: name.to_string(),
        title: title.to_string(),
        svg,
    })
}

/// Splits `h` pixels off the top of `area`.
pub fn take<'a>(area: &Area<'a>, h: u32) -> (Area<'a>, Area<'a>) {
    area.split_vertically(h)
}

/// One panel of lines with its legend under it (the timeline's entries included).
pub struct LinePanel {
    /// Its title.
    pub title: String,
    /// Its y axis.
    pub y: YAxis,
    /// Its lines.
    pub lines: Vec<Line>,
    /// A note drawn in the plot (e.g. that nothing happened).
    pub note: Option<String>,
}

/// The plot height of a line panel.
pub const PLOT: u32 = 230;

impl LinePanel {
    /// Its legend items.
    fn legend(&self, frame: &Frame) -> Vec<panel::LegendItem> {
        let mut items = line_legend(&self.lines);
        items.extend(timeline_legend(&frame.timeline));
        items
    }

    /// Its height, legend included.
    pub fn height(&self, frame: &Frame) -> u32 {
        panel_height(PLOT) + legend_rows(&self.legend(frame), WIDTH) * LEGEND_ROW + 10
    }

    /// Draws it at the top of `area`; returns the area below it.
    pub fn draw<'a>(&self, area: &Area<'a>, frame: &Frame) -> DrawResult<Area<'a>> {
        let (top, rest) = take(area, self.height(frame));
        let (plot_area, legend_area) = take(&top, panel_height(PLOT));
        let mut plot = panel(&plot_area, frame, &self.title, &self.y)?;
        for line in &self.lines {
            draw_line(&mut plot, frame, self.y.scale, line)?;
        }
        if let Some(text) = &self.note {
            note(&plot.plotting_area().strip_coord_spec(), text)?;
        }
        draw_legend(&legend_area, &self.legend(frame))?;
        Ok(rest)
    }
}

/// A chart made of line panels stacked top to bottom.
fn stacked<'r>(frame: &'r Frame, panels: Vec<LinePanel>) -> Drawing<'r> {
    let height = panels.iter().map(|p| p.height(frame)).sum::<u32>() + 8;
    Drawing::new(height, move |root| {
        let mut area = root.clone();
        for p in &panels {
            area = p.draw(&area, frame)?;
        }
        Ok(())
    })
}

fn line(name: &str, color: usize, values: Vec<Option<f64>>) -> Line {
    Line {
        name: name.to_string(),
        color: PALETTE[color % PALETTE.len()],
        dashed: false,
        values,
    }
}

fn linear(desc: &str, lines: &[Line]) -> YAxis {
    YAxis {
        desc: desc.to_string(),
        scale: Scale::Linear,
        max: max_of(lines),
        min: 0.0,
        exact: false,
    }
}

fn traffic<'r>(title: &str, report: &Report, frame: &'r Frame) -> Drawing<'r> {
    // Offered last and dashed: without retries it is the attempts line, and stays visible.
    let mut offered = line("offered", 7, frame.rate(report, |r| r.offered));
    offered.dashed = true;
    let lines = vec![
        line("attempts (clients)", 1, frame.rate(report, |r| r.attempts)),
        line(
            "successes (by bucket of offer)",
            2,
            frame.rate(report, |r| r.successes),
        ),
        line(
            "goodput (successes completed)",
            0,
            frame.mean(report, |r| r.goodput_per_s),
        ),
        offered,
    ];
    let title = format!("{title}{}", frame.merged_note(report.bucket_s));
    stacked(
        frame,
        vec![LinePanel {
            y: linear("requests per second", &lines),
            title,
            lines,
            note: None,
        }],
    )
}

/// A latency axis: log scale when the values span more than a factor of 30.
fn latency_axis(lines: &[Line]) -> YAxis {
    let max = max_of(lines);
    let min = min_positive_of(lines).unwrap_or(1.0);
    let log = max / min > 30.0;
    YAxis {
        desc: if log {
            "latency (ms, log scale)".to_string()
        } else {
            "latency (ms)".to_string()
        },
        scale: if log { Scale::Log } else { Scale::Linear },
        max,
        min,
        exact: false,
    }
}

fn latency<'r>(title: &str, report: &Report, frame: &'r Frame) -> Drawing<'r> {
    let lines = vec![
        line("p50", 0, frame.max(report, |r| r.latency_ms_p50)),
        line("p99", 1, frame.max(report, |r| r.latency_ms_p99)),
        line("max", 7, frame.max(report, |r| r.latency_ms_max)),
    ];
    let empty = max_of(&lines) == 0.0;
    let title = format!(
        "{title} of successful requests, by bucket of offer{}",
        frame.merged_note(report.bucket_s)
    );
    stacked(
        frame,
        vec![LinePanel {
            y: latency_axis(&lines),
            title,
            lines,
            note: empty.then(|| "no request succeeded".to_string()),
        }],
    )
}

fn service<'r>(title: &str, report: &Report, frame: &'r Frame, i: usize) -> Drawing<'r> {
    let mut queue = vec![
        line(
            "all replicas (mean)",
            0,
            frame.mean(report, |r| r.services[i].queue_total_mean),
        ),
        line(
            "all replicas (max)",
            6,
            frame.max(report, |r| Some(r.services[i].queue_total_max as f64)),
        ),
    ];
    // With several replicas, each has its own queue: the longest of one of them.
    if report.services[i].replicas > 1 {
        let mut one = line(
            "one replica (max)",
            3,
            frame.max(report, |r| Some(r.services[i].queue_replica_max as f64)),
        );
        one.dashed = true;
        queue.push(one);
    }
    let mut capacity = line(
        "capacity (workers of replicas up)",
        7,
        frame.mean(report, |r| r.services[i].capacity_workers_mean),
    );
    capacity.dashed = true;
    let workers = vec![
        line(
            "busy (mean)",
            1,
            frame.mean(report, |r| r.services[i].busy_workers_mean),
        ),
        line(
            "busy (max)",
            4,
            frame.max(report, |r| Some(r.services[i].busy_workers_max)),
        ),
        capacity,
    ];
    let reasons: std::collections::BTreeSet<&String> = report
        .series
        .iter()
        .flat_map(|r| r.services[i].failed_by_reason.keys())
        .collect();
    let refused: Vec<Line> = reasons
        .iter()
        .enumerate()
        .map(|(k, reason)| {
            line(
                reason,
                k,
                frame.rate(report, |r| {
                    r.services[i]
                        .failed_by_reason
                        .get(*reason)
                        .copied()
                        .unwrap_or(0)
                }),
            )
        })
        .collect();
    let note = refused
        .is_empty()
        .then(|| "nothing refused or failed".to_string());
    let merged = frame.merged_note(report.bucket_s);
    let mut panels = vec![
        LinePanel {
            y: linear("requests waiting", &queue),
            title: format!("{title}: jobs waiting in its queues{merged}"),
            lines: queue,
            note: None,
        },
        LinePanel {
            y: linear("workers", &workers),
            title: format!("{title}: busy workers against capacity"),
            lines: workers,
            note: None,
        },
        LinePanel {
            y: linear("attempts per second", &refused),
            title: format!("{title}: attempts refused or failed, by reason"),
            lines: refused,
            note,
        },
    ];
    // A service that reports its blast radius: the caller units left without any replica.
    if let Some(b) = &report.services[i].blast_radius {
        let lines = vec![line(
            "units without a replica up (most at once)",
            3,
            frame.max(report, |r| {
                r.services[i].units_without_replicas_max.map(|n| n as f64)
            }),
        )];
        let note = (!any(&lines[0].values)).then(|| "every unit kept a replica".to_string());
        panels.push(LinePanel {
            y: linear("caller units", &lines),
            title: format!(
                "{title}: caller units that lost every replica, of {} ({})",
                b.units,
                b.isolation.replace('_', " ")
            ),
            lines,
            note,
        });
    }
    // A service whose replicas join and leave rotation: how many are in it.
    if let Some(sc) = &report.services[i].scaling {
        let replicas = vec![line(
            "replicas in rotation",
            2,
            frame.mean(report, |r| {
                r.services[i].replicas_in_rotation_mean.unwrap_or_default()
            }),
        )];
        panels.push(LinePanel {
            y: linear("replicas", &replicas),
            title: format!(
                "{title}: replicas in rotation ({} scale-outs, {} scale-ins, {} deploy restarts)",
                sc.scale_outs, sc.scale_ins, sc.deploy_restarts
            ),
            lines: replicas,
            note: None,
        });
    }
    // A service with liveness probes: the replicas they restarted.
    if let Some(ce) = &report.services[i].capacity_events
        && report
            .series
            .first()
            .is_some_and(|r| r.services[i].liveness_restarts.is_some())
    {
        let restarts = vec![line(
            "liveness restarts",
            0,
            frame.rate(report, |r| {
                r.services[i].liveness_restarts.unwrap_or_default()
            }),
        )];
        panels.push(LinePanel {
            y: linear("restarts/s", &restarts),
            title: format!(
                "{title}: liveness restarts ({} in all, {} probes failed)",
                ce.liveness_restarts, ce.liveness_probe_failures
            ),
            lines: restarts,
            note: None,
        });
    }
    // A service that reports its connections: those open to it against its limit.
    if let Some(c) = &report.services[i].connections {
        let mut lines = vec![line(
            "connections open (most at once)",
            0,
            frame.max(report, |r| {
                r.services[i].connections_open_max.map(f64::from)
            }),
        )];
        if let Some(m) = c.max_connections {
            lines.push(line(
                "max_connections",
                1,
                frame.max(report, |_| Some(f64::from(m))),
            ));
        }
        panels.push(LinePanel {
            y: linear("connections", &lines),
            title: format!(
                "{title}: connections from callers' pools ({} opens refused)",
                c.refused
            ),
            lines,
            note: None,
        });
    }
    stacked(frame, limiters::with(panels, title, report, frame, i))
}

/// The most call sites the `calls` chart draws a panel for.
const CALL_PANELS_MAX: usize = 8;

fn calls<'r>(title: &str, report: &Report, frame: &'r Frame) -> Drawing<'r> {
    let mut panels = Vec::new();
    let mut quiet = 0;
    for (i, name) in call_titles(&report.calls).into_iter().enumerate() {
        let lines = vec![
            line("retries", 1, frame.rate(report, |r| r.calls[i].retries)),
            line(
                "retries refused by the budget",
                3,
                frame.rate(report, |r| r.calls[i].budget_exhausted),
            ),
            line("timeouts", 0, frame.rate(report, |r| r.calls[i].timeouts)),
        ];
        // A call site with an adaptive timeout also draws the timeout it gave.
        let adaptive = report.calls[i].adaptive_timeout.as_ref().map(|a| {
            let timeout = vec![line(
                "adaptive timeout",
                2,
                frame.max(report, |r| r.calls[i].timeout_ms_max.flatten()),
            )];
            LinePanel {
                y: linear("ms", &timeout),
                title: format!(
                    "{title}: {name}: adaptive timeout ({}ms to {}ms)",
                    a.timeout_ms_min, a.timeout_ms_max
                ),
                lines: timeout,
                note: None,
            }
        });
        if !lines.iter().any(|l| any(&l.values)) && adaptive.is_none() {
            quiet += 1;
            continue;
        }
        panels.push(LinePanel {
            y: linear("per second", &lines),
            title: format!("{title}: {name}"),
            lines,
            note: None,
        });
        panels.extend(adaptive);
    }
    let active = panels.len();
    panels.truncate(CALL_PANELS_MAX);
    if let Some(first) = panels.first_mut() {
        let mut notes = Vec::new();
        if quiet > 0 {
            notes.push(format!("{quiet} call sites without any left out"));
        }
        if active > CALL_PANELS_MAX {
            notes.push(format!("first {CALL_PANELS_MAX} of {active} shown"));
        }
        if !notes.is_empty() {
            first.title = format!("{} ({})", first.title, notes.join("; "));
        }
    } else {
        panels.push(LinePanel {
            y: linear("per second", &[]),
            title: title.to_string(),
            lines: Vec::new(),
            note: Some("no retries, budget refusals or timeouts at any call site".to_string()),
        });
    }
    stacked(frame, panels)
}

/// The call sites as the human report names them.
fn call_titles(calls: &[CallReport]) -> Vec<String> {
    super::call_names(calls)
}

/// The charts of `resim compare --svg`: two runs of one seed (side A and side B) on the same
/// axes, `compare-goodput` (goodput per second, by bucket of completion) and `compare-latency`
/// (p99 of successful requests, by bucket of offer), B dashed. The shaded windows are A's. The two
/// reports must have the same buckets; otherwise there is no common time axis and the error
/// says so.
pub fn compare_charts(
    a: &Report,
    b: &Report,
    labels: (&str, &str),
) -> Result<Vec<Chart>, ChartError> {
    if a.series.len() != b.series.len() || a.bucket_s != b.bucket_s {
        return Err(ChartError {
            chart: "compare-goodput".to_string(),
            message: "the two sides have different durations or buckets, so no common time axis; compare runs of the same length".to_string(),
        });
    }
    let frame = Frame::of(a);
    let goodput = |t: &str| {
        let lines = pair(
            line(
                &format!("A: {}", labels.0),
                0,
                frame.mean(a, |r| r.goodput_per_s),
            ),
            line(
                &format!("B: {}", labels.1),
                1,
                frame.mean(b, |r| r.goodput_per_s),
            ),
        );
        stacked(
            &frame,
            vec![LinePanel {
                y: linear("successes per second", &lines),
                title: format!("{t}{}", frame.merged_note(a.bucket_s)),
                lines,
                note: None,
            }],
        )
    };
    let latency = |t: &str| {
        let lines = pair(
            line(
                &format!("A: {}", labels.0),
                0,
                frame.max(a, |r| r.latency_ms_p99),
            ),
            line(
                &format!("B: {}", labels.1),
                1,
                frame.max(b, |r| r.latency_ms_p99),
            ),
        );
        let empty = max_of(&lines) == 0.0;
        stacked(
            &frame,
            vec![LinePanel {
                y: latency_axis(&lines),
                title: format!("{t}{}", frame.merged_note(a.bucket_s)),
                lines,
                note: empty.then(|| "no request succeeded".to_string()),
            }],
        )
    };
    Ok(vec![
        chart(
            "compare-goodput",
            &format!("Goodput, seed {}", a.seed),
            goodput,
        )?,
        chart(
            "compare-latency",
            &format!("Client latency p99, seed {}", a.seed),
            latency,
        )?,
    ])
}

/// A's line solid and B's dashed over it: on common random numbers the two sides often agree
/// until something differs, and a solid B would hide A there.
fn pair(a: Line, mut b: Line) -> Vec<Line> {
    b.dashed = true;
    vec![a, b]
}
