//! The two charts that are not plain lines: each breaker's state as coloured bands, and each
//! expectation's figure against its bound over its window.

use super::super::super::{ExpectationResult, Report};
use super::data::Frame;
use super::panel::{
    self, DrawResult, FAIL, LEGEND_ROW, LegendItem, Line, PALETTE, PASS, RIGHT_MARGIN, SMALL_SIZE,
    Scale, Swatch, TEXT_SIZE, TITLE_SIZE, WIDTH, YAxis, at, draw_legend, font, legend_rows,
    panel_height, text_width, tick_label, timeline_legend,
};
use super::{Drawing, LinePanel, latency_axis, take};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The most breakers the chart draws a row for.
const BREAKER_ROWS_MAX: usize = 24;
/// Height of one breaker's row.
const ROW: u32 = 26;
/// The strip above the rows where the timeline's windows are named, in rows.
const STRIP: f64 = 0.8;
/// Transitions are drawn as ticks only on rows with at most this many (beyond, the bands
/// alone say more).
const TICKS_MAX: usize = 200;

/// The colour of a breaker state.
fn state_color(state: &str) -> RGBColor {
    match state {
        "closed" => RGBColor(120, 190, 120),
        "open" => RGBColor(215, 60, 50),
        "half_open" => RGBColor(240, 180, 40),
        "forced_open" => RGBColor(130, 20, 20),
        _ => RGBColor(190, 190, 190),
    }
}

/// One row per breaker (a call site's breakers, per replica of the calling service).
pub fn breakers<'r>(title: &str, report: &'r Report, frame: &'r Frame) -> Drawing<'r> {
    let mut rows = Vec::new();
    for (c, name) in report.calls.iter().zip(super::call_titles(&report.calls)) {
        let per_replica = c
            .breakers
            .iter()
            .filter(|b| b.replica == c.breakers[0].replica)
            .count();
        for (k, b) in c.breakers.iter().enumerate() {
            let mut label = name.clone();
            if let Some(r) = b.replica {
                label.push_str(&format!(" r{r}"));
            }
            if per_replica > 1 {
                label.push_str(&format!(" #{}", k % per_replica + 1));
            }
            rows.push((label, b));
        }
    }
    let total = rows.len();
    rows.truncate(BREAKER_ROWS_MAX);
    let mut states: Vec<&str> = vec!["closed", "open", "half_open"];
    for (_, b) in &rows {
        for s in &b.spans {
            if !states.contains(&s.state.as_str()) {
                states.push(s.state.as_str());
            }
        }
    }
    let mut legend: Vec<LegendItem> = states
        .iter()
        .map(|s| LegendItem {
            text: s.replace('_', "-"),
            color: state_color(s),
            swatch: Swatch::Box,
        })
        .collect();
    legend.extend(timeline_legend(&frame.timeline));
    let label_width = rows
        .iter()
        .map(|(l, _)| text_width(l, TEXT_SIZE))
        .fold(60.0, f64::max) as u32
        + 16;
    let plot = ROW * rows.len() as u32 + (f64::from(ROW) * STRIP) as u32;
    let height = panel_height(plot) + legend_rows(&legend, WIDTH) * LEGEND_ROW + 18;
    let title = if total > rows.len() {
        format!(
            "{title}: state of each breaker (first {} of {total})",
            rows.len()
        )
    } else {
        format!("{title}: state of each breaker")
    };
    Drawing::new(height, move |root| {
        let (top, legend_area) = take(root, panel_height(plot));
        let n = rows.len() as f64;
        let mut chart = ChartBuilder::on(&top)
            .caption(&title, font(TITLE_SIZE))
            .margin_top(6)
            .margin_left(8)
            .margin_right(RIGHT_MARGIN)
            .x_label_area_size(44)
            .y_label_area_size(label_width.min(WIDTH / 2))
            .build_cartesian_2d(0.0..frame.end_s.max(1e-9), 0.0..n + STRIP)?;
        let x_label = |v: &f64| tick_label(*v);
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_labels(12)
            .x_desc("time (s, simulated)")
            .x_label_formatter(&x_label)
            .label_style(font(TEXT_SIZE))
            .axis_desc_style(font(TEXT_SIZE))
            .bold_line_style(RGBColor(225, 225, 225))
            .light_line_style(TRANSPARENT)
            .draw()?;
        // Row names, right-aligned against the plot (the area's origin is the chart's).
        for (i, (label, _)) in rows.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(0.0, n - i as f64 - 0.5));
            top.draw(&Text::new(
                label.clone(),
                (x - 8, y),
                font(TEXT_SIZE).pos(Pos::new(HPos::Right, VPos::Center)),
            ))?;
        }
        // Windows first, under the bands (they show between the rows), named in the strip
        // above the first row.
        let mut label_end = f64::NEG_INFINITY;
        for w in &frame.timeline {
            let to = w.to_s.unwrap_or(frame.end_s).max(w.from_s);
            let instant = w.kind == "cache_flush";
            let color = panel::window_color(&w.kind);
            if instant {
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(w.from_s, 0.0), (w.from_s, n + STRIP)],
                    color.stroke_width(2),
                )))?;
            } else {
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(w.from_s, 0.0), (to, n + STRIP)],
                    color.mix(0.3).filled(),
                )))?;
            }
            let (x, y) = chart.backend_coord(&(w.from_s, n + STRIP / 2.0));
            if f64::from(x) > label_end {
                top.draw(&Text::new(
                    w.label.clone(),
                    (x + 3, y),
                    font(SMALL_SIZE)
                        .color(&RGBColor(70, 50, 110))
                        .pos(Pos::new(HPos::Left, VPos::Center)),
                ))?;
                label_end = f64::from(x) + text_width(&w.label, SMALL_SIZE) + 8.0;
            }
        }
        for (i, (_, b)) in rows.iter().enumerate() {
            let (lo, hi) = (n - i as f64 - 0.85, n - i as f64 - 0.15);
            chart.draw_series(b.spans.iter().map(|s| {
                Rectangle::new(
                    [(s.from_s, lo), (s.to_s, hi)],
                    state_color(&s.state).filled(),
                )
            }))?;
            if b.spans.len() <= TICKS_MAX {
                chart.draw_series(b.spans.iter().skip(1).map(|s| {
                    PathElement::new(
                        vec![(s.from_s, lo - 0.07), (s.from_s, hi + 0.07)],
                        RGBColor(40, 40, 40).stroke_width(1),
                    )
                }))?;
            }
        }
        draw_legend(&legend_area, &legend)
    })
}

/// The most expectations the chart draws a panel for.
const EXPECTATION_PANELS_MAX: usize = 8;

/// One panel per expectation: its figure over time, the bound over its window in green
/// (held) or red (failed), and the figure the verdict read.
pub fn expectations<'r>(_title: &str, report: &'r Report, frame: &'r Frame) -> Drawing<'r> {
    let shown: Vec<&ExpectationResult> = report
        .expectations
        .iter()
        .take(EXPECTATION_PANELS_MAX)
        .collect();
    let panels: Vec<(LinePanel, &ExpectationResult, Vec<LegendItem>)> = shown
        .iter()
        .map(|e| {
            let p = expectation_panel(e, report, frame);
            let mut legend = panel::line_legend(&p.lines);
            legend.push(LegendItem {
                text: format!(
                    "bound, {} ({})",
                    e.threshold.bound.replace('_', " "),
                    if e.pass { "held" } else { "failed" }
                ),
                color: if e.pass { PASS } else { FAIL },
                swatch: Swatch::Line,
            });
            legend.extend(timeline_legend(&frame.timeline));
            (p, *e, legend)
        })
        .collect();
    let panel_total = |legend: &[LegendItem]| {
        panel_height(super::PLOT) + legend_rows(legend, WIDTH) * LEGEND_ROW + 10
    };
    let height = panels.iter().map(|(_, _, l)| panel_total(l)).sum::<u32>() + 8;
    let more = report.expectations.len().saturating_sub(shown.len());
    Drawing::new(height, move |root| {
        let mut area = root.clone();
        for (k, (p, e, legend)) in panels.iter().enumerate() {
            let (this, rest) = take(&area, panel_total(legend));
            area = rest;
            let (plot_area, legend_area) = take(&this, panel_height(super::PLOT));
            let title = if k == 0 && more > 0 {
                format!("{} (and {more} more, not drawn)", p.title)
            } else {
                p.title.clone()
            };
            let mut plot = panel::panel(&plot_area, frame, &title, &p.y)?;
            for line in &p.lines {
                panel::draw_line(&mut plot, frame, p.y.scale, line)?;
            }
            bound(&mut plot, frame, p.y.scale, e)?;
            draw_legend(&legend_area, legend)?;
        }
        Ok(())
    })
}

/// An expectation's title, cut to fit the chart's width.
fn expectation_title(e: &ExpectationResult) -> String {
    let verdict = if e.pass { "PASS" } else { "FAIL" };
    let full = format!("{verdict} {}: {}", e.expectation, e.observed);
    let room = (f64::from(WIDTH - 40) / text_width("x", TITLE_SIZE)) as usize;
    if full.chars().count() <= room {
        full
    } else {
        let cut: String = full.chars().take(room.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

fn expectation_panel(e: &ExpectationResult, report: &Report, frame: &Frame) -> LinePanel {
    let t = &e.threshold;
    let title = expectation_title(e);
    let client = t.client.clone().unwrap_or_default();
    let index = report.clients.iter().position(|c| c.name == client);
    match t.metric.as_str() {
        "class_success_ratio" => {
            // `client` is `client/class` for this metric.
            let k = report
                .series
                .first()
                .and_then(|r| r.classes.iter().position(|p| p.class == client));
            let values = match k {
                Some(k) => frame
                    .ratio(report, |r| r.classes[k].successes, |r| r.classes[k].offered)
                    .into_iter()
                    .map(|v| v.map(|x| 100.0 * x))
                    .collect(),
                None => vec![None; frame.groups.len()],
            };
            LinePanel {
                title,
                y: YAxis {
                    desc: "success (% of the class's requests offered)".to_string(),
                    scale: Scale::Linear,
                    max: 100.0,
                    min: 0.0,
                    exact: true,
                },
                lines: vec![Line {
                    name: format!("{client} success ratio, by bucket of offer"),
                    color: PALETTE[0],
                    dashed: false,
                    values,
                }],
                note: None,
            }
        }
        "success_ratio" | "recovery" => {
            let values = match index {
                Some(k) => frame
                    .ratio(report, |r| r.clients[k].successes, |r| r.clients[k].offered)
                    .into_iter()
                    .map(|v| v.map(|x| 100.0 * x))
                    .collect(),
                None => vec![None; frame.groups.len()],
            };
            LinePanel {
                title,
                y: YAxis {
                    desc: "success (% of requests offered)".to_string(),
                    scale: Scale::Linear,
                    max: 100.0,
                    min: 0.0,
                    exact: true,
                },
                lines: vec![Line {
                    name: format!("{client} success ratio, by bucket of offer"),
                    color: PALETTE[0],
                    dashed: false,
                    values,
                }],
                note: None,
            }
        }
        "lost_all_ratio" => {
            // `client` is the service for this metric.
            let service = report.services.iter().position(|s| s.name == client);
            let units = service
                .and_then(|i| report.services[i].blast_radius.as_ref())
                .map_or(1, |b| b.units.max(1)) as f64;
            let values = match service {
                Some(i) => frame.max(report, |r| {
                    r.services[i]
                        .units_without_replicas_max
                        .map(|n| 100.0 * n as f64 / units)
                }),
                None => vec![None; frame.groups.len()],
            };
            LinePanel {
                title,
                y: YAxis {
                    desc: "caller units (% of all)".to_string(),
                    scale: Scale::Linear,
                    max: 100.0,
                    min: 0.0,
                    exact: true,
                },
                lines: vec![Line {
                    name: format!("{client}: units without a replica up, most at once"),
                    color: PALETTE[3],
                    dashed: false,
                    values,
                }],
                note: None,
            }
        }
        "latency_ms_p99" => {
            let single = report.clients.len() == 1;
            let lines = vec![Line {
                name: if single {
                    format!("{client} p99 per bucket")
                } else {
                    "p99 per bucket, all clients".to_string()
                },
                color: PALETTE[1],
                dashed: false,
                values: frame.max(report, |r| r.latency_ms_p99),
            }];
            let mut y = latency_axis(&lines);
            y.max = y.max.max(t.value).max(t.observed.unwrap_or(0.0));
            y.min = y.min.min(t.value);
            LinePanel {
                title,
                y,
                lines,
                note: None,
            }
        }
        _ => {
            let values = frame.ratio(report, |r| r.attempts, |r| r.offered);
            let lines = vec![Line {
                name: "client attempts per request offered, per bucket".to_string(),
                color: PALETTE[1],
                dashed: false,
                values,
            }];
            let mut y = super::linear("attempts per request", &lines);
            y.max = y.max.max(t.value * 1.2);
            LinePanel {
                title,
                y,
                lines,
                note: None,
            }
        }
    }
}

/// The bound of `e` over its window, the window shaded in the verdict's colour, and for a
/// recovery its deadline and the time it recovered; for a run-wide figure, the value read.
fn bound(
    plot: &mut panel::Plot,
    frame: &Frame,
    scale: Scale,
    e: &ExpectationResult,
) -> DrawResult<()> {
    let t = &e.threshold;
    let color = if e.pass { PASS } else { FAIL };
    let percent = matches!(
        t.metric.as_str(),
        "success_ratio" | "recovery" | "class_success_ratio" | "lost_all_ratio"
    );
    let v = at(scale, if percent { 100.0 * t.value } else { t.value });
    let recovery = t.metric == "recovery";
    let to = if recovery {
        frame.end_s
    } else {
        t.to_s.unwrap_or(frame.end_s)
    };
    let (y_range, x_from) = (plot.y_range(), t.from_s);
    plot.draw_series(std::iter::once(Rectangle::new(
        [(x_from, y_range.start), (to, y_range.end)],
        color.mix(0.07).filled(),
    )))?;
    plot.draw_series(std::iter::once(PathElement::new(
        vec![(x_from, v), (to, v)],
        color.stroke_width(3),
    )))?;
    let mut marker = |x: f64, text: String| -> DrawResult<()> {
        plot.draw_series(DashedLineSeries::new(
            vec![(x, y_range.start), (x, y_range.end)],
            5,
            4,
            color.stroke_width(2),
        ))?;
        let (x_px, _) = plot.plotting_area().get_pixel_range();
        let right = x / frame.end_s.max(1e-9) * f64::from(x_px.end - x_px.start);
        let fits = right + text_width(&text, SMALL_SIZE) + 8.0 < f64::from(x_px.end - x_px.start);
        let pos = if fits {
            Pos::new(HPos::Left, VPos::Bottom)
        } else {
            Pos::new(HPos::Right, VPos::Bottom)
        };
        let y = y_range.start + 0.04 * (y_range.end - y_range.start);
        plot.draw_series(std::iter::once(Text::new(
            format!(" {text} "),
            (x, y),
            font(SMALL_SIZE).color(&color).pos(pos),
        )))?;
        Ok(())
    };
    if recovery {
        if let Some(d) = t.to_s {
            marker(d, "deadline".to_string())?;
        }
        if let Some(took) = t.observed {
            marker(t.from_s + took, "recovered".to_string())?;
        }
    } else if t.metric != "success_ratio"
        && let Some(o) = t.observed
    {
        let o = if percent { 100.0 * o } else { o };
        let y = at(scale, o);
        plot.draw_series(DashedLineSeries::new(
            vec![(0.0, y), (frame.end_s, y)],
            3,
            3,
            RGBColor(60, 60, 60).stroke_width(1),
        ))?;
        let unit = if t.metric == "latency_ms_p99" {
            "ms"
        } else if percent {
            "%"
        } else {
            ""
        };
        plot.draw_series(std::iter::once(Text::new(
            format!("over the run: {}{unit}", tick_label(o)),
            (frame.end_s, y),
            font(SMALL_SIZE).pos(Pos::new(HPos::Right, VPos::Bottom)),
        )))?;
    }
    Ok(())
}
