//! One panel of a chart: a time axis in simulated seconds, a labelled y axis with ticks we
//! choose ourselves, the timeline's fault windows and load spikes shaded and named, lines
//! with gaps where a figure has no value, threshold segments, and a legend under the plot
//! (never over the data).
//!
//! Text is laid out from an estimate of its width (no font is loaded, so the bytes do not
//! depend on the machine): labels are kept short and spaced by that estimate, with room to
//! spare.

use super::super::super::TimelineWindow;
use super::data::Frame;
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The drawing area of a chart.
pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
/// What drawing can fail with.
pub type DrawResult<T> = Result<T, DrawingAreaErrorKind<std::io::Error>>;
/// A panel's plotting context.
pub type Plot<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Width of every chart, in pixels.
pub const WIDTH: u32 = 960;
/// Font sizes (plotters' units: the SVG says 1/1.24 of it).
pub const TITLE_SIZE: f64 = 19.0;
/// Axis labels and legend text.
pub const TEXT_SIZE: f64 = 15.0;
/// Labels of the shaded windows.
pub const SMALL_SIZE: f64 = 13.0;
/// Left edge of the plotting area (room for the y labels and the axis name).
pub const Y_LABEL_AREA: u32 = 78;
/// Right margin.
pub const RIGHT_MARGIN: u32 = 24;
const X_LABEL_AREA: u32 = 44;
const TITLE_AREA: u32 = 30;
/// Height of one row of the legend.
pub const LEGEND_ROW: u32 = 22;

/// The estimated width in pixels of `text` at plotters size `size`: generous for the sans
/// fonts browsers pick (about 0.55 em per character at 1/1.24 of the size).
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size / 1.24 * 0.58
}

/// A text style.
pub fn font(size: f64) -> TextStyle<'static> {
    ("sans-serif", size)
        .into_font()
        .color(&RGBColor(40, 40, 40))
}

/// The colours of lines, in order: distinct for readers with the common colour blindness
/// (Okabe–Ito), then greys.
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(120, 120, 120),
    RGBColor(0, 0, 0),
];
/// Pass and fail.
pub const PASS: RGBColor = RGBColor(0, 140, 70);
/// Pass and fail.
pub const FAIL: RGBColor = RGBColor(200, 30, 30);
const GRID: RGBColor = RGBColor(225, 225, 225);
const FAULT: RGBColor = RGBColor(150, 110, 200);
const SPIKE: RGBColor = RGBColor(240, 170, 60);

/// A line of a panel: a name for the legend, a colour, a dash, one value per column.
pub struct Line {
    /// Legend text.
    pub name: String,
    /// Colour.
    pub color: RGBColor,
    /// Dashed (a bound or capacity rather than a measurement).
    pub dashed: bool,
    /// One value per column of the frame (`None`: no value, a gap).
    pub values: Vec<Option<f64>>,
}

/// How the y axis maps values.
#[derive(Clone, Copy, PartialEq)]
pub enum Scale {
    /// From zero to a nice number above the largest value.
    Linear,
    /// Decades (values must be positive); for latencies spread over orders of magnitude.
    Log,
}

/// A y axis: its name with the unit, its scale, and the range it must show.
pub struct YAxis {
    /// Name and unit, e.g. `requests/s`.
    pub desc: String,
    /// Linear or log.
    pub scale: Scale,
    /// The largest value to show (at least this; the axis rounds up).
    pub max: f64,
    /// The smallest positive value to show (log scale only).
    pub min: f64,
    /// The axis ends at `max` exactly (e.g. 100%) instead of a nice number above it.
    pub exact: bool,
}

/// An item of a legend: a swatch (line, dashed line or box) and its text.
pub struct LegendItem {
    /// Text.
    pub text: String,
    /// Colour.
    pub color: RGBColor,
    /// How the swatch looks.
    pub swatch: Swatch,
}

/// How a legend swatch looks.
#[derive(Clone, Copy, PartialEq)]
pub enum Swatch {
    /// A line.
    Line,
    /// A dashed line.
    Dashed,
    /// A filled box (a band, a shaded window).
    Box,
}

/// The legend rows `items` need in a chart `width` wide.
pub fn legend_rows(items: &[LegendItem], width: u32) -> u32 {
    let mut rows = 1;
    let mut x = f64::from(Y_LABEL_AREA);
    for item in items {
        let w = legend_item_width(item);
        if x + w > f64::from(width - RIGHT_MARGIN) && x > f64::from(Y_LABEL_AREA) {
            rows += 1;
            x = f64::from(Y_LABEL_AREA);
        }
        x += w;
    }
    if items.is_empty() { 0 } else { rows }
}

fn legend_item_width(item: &LegendItem) -> f64 {
    28.0 + text_width(&item.text, TEXT_SIZE) + 22.0
}

/// Draws a legend in `area` (its top left corner), wrapping rows at the chart's width.
pub fn draw_legend(area: &Area, items: &[LegendItem]) -> DrawResult<()> {
    let (width, _) = area.dim_in_pixel();
    let left = Y_LABEL_AREA as i32;
    let (mut x, mut y) = (left, LEGEND_ROW as i32 / 2);
    for item in items {
        let w = legend_item_width(item) as i32;
        if x + w > (width - RIGHT_MARGIN) as i32 && x > left {
            x = left;
            y += LEGEND_ROW as i32;
        }
        match item.swatch {
            Swatch::Line => area.draw(&PathElement::new(
                vec![(x, y), (x + 22, y)],
                item.color.stroke_width(3),
            ))?,
            Swatch::Dashed => {
                for k in 0..3 {
                    area.draw(&PathElement::new(
                        vec![(x + k * 8, y), (x + k * 8 + 5, y)],
                        item.color.stroke_width(2),
                    ))?
                }
            }
            Swatch::Box => area.draw(&Rectangle::new(
                [(x, y - 6), (x + 22, y + 6)],
                item.color.filled(),
            ))?,
        }
        area.draw(&Text::new(
            item.text.clone(),
            (x + 28, y),
            font(TEXT_SIZE).pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
        x += w;
    }
    Ok(())
}

/// The legend items of the timeline's windows (one per kind of window present).
pub fn timeline_legend(timeline: &[TimelineWindow]) -> Vec<LegendItem> {
    let mut out = Vec::new();
    if timeline.iter().any(|w| w.kind == "load_spike") {
        out.push(LegendItem {
            text: "load spike".to_string(),
            color: SPIKE.mix(0.35).to_rgba().into_rgb(),
            swatch: Swatch::Box,
        });
    }
    if timeline.iter().any(|w| w.kind != "load_spike") {
        out.push(LegendItem {
            text: "fault".to_string(),
            color: FAULT.mix(0.3).to_rgba().into_rgb(),
            swatch: Swatch::Box,
        });
    }
    out
}

/// The colour that shades a window of the timeline of `kind`.
pub fn window_color(kind: &str) -> RGBColor {
    if kind == "load_spike" { SPIKE } else { FAULT }
}

trait IntoRgb {
    fn into_rgb(self) -> RGBColor;
}

impl IntoRgb for RGBAColor {
    /// The colour over white, opaque (legend swatches match the shading they name).
    fn into_rgb(self) -> RGBColor {
        let over = |c: u8| (f64::from(c) * self.3 + 255.0 * (1.0 - self.3)) as u8;
        RGBColor(over(self.0), over(self.1), over(self.2))
    }
}

/// Nice tick values from 0 to at least `max`: about `n` steps of 1, 2, 2.5 or 5 × 10^k.
pub fn linear_ticks(max: f64, n: usize) -> Vec<f64> {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let raw = max / n as f64;
    let decade = libm::pow(10.0, libm::floor(libm::log10(raw)));
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * decade)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * decade);
    let steps = libm::ceil(max / step - 1e-9) as usize;
    (0..=steps.max(1)).map(|i| i as f64 * step).collect()
}

/// A tick label: integers without decimals, thousands as `k`, small values with the digits
/// they need.
pub fn tick_label(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        return "0".to_string();
    }
    if a >= 10_000.0 {
        let k = v / 1000.0;
        return if (k - libm::round(k)).abs() < 1e-9 {
            format!("{}k", libm::round(k))
        } else {
            format!("{k:.1}k")
        };
    }
    let mut s = if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    };
    while s.contains('.') && (s.ends_with('0') || s.ends_with('.')) {
        s.pop();
    }
    s
}

/// Where a value goes on an axis of `scale` (log: its decimal logarithm).
pub fn at(scale: Scale, v: f64) -> f64 {
    match scale {
        Scale::Linear => v,
        Scale::Log => libm::log10(v.max(1e-12)),
    }
}

/// A panel: its area, the frame's columns, its y axis. Draws the axes and the timeline and
/// returns the plot to draw lines on.
pub fn panel<'a, 'b>(
    area: &'a Area<'b>,
    frame: &Frame,
    title: &str,
    y: &YAxis,
) -> DrawResult<Plot<'a, 'b>> {
    let x_end = frame.end_s.max(1e-9);
    // Plotters picks ticks at 1, 2 or 5 times a power of ten within the range, at most the
    // number asked for: a range that ends on such a number ends on a tick.
    let (y_lo, y_hi, y_ticks) = match y.scale {
        Scale::Linear if y.exact && y.max > 0.0 => (0.0, y.max, 6),
        Scale::Linear => {
            let ticks = linear_ticks(y.max * 1.05, 5);
            (0.0, *ticks.last().unwrap_or(&1.0), ticks.len())
        }
        Scale::Log => {
            // At least a factor of two below the smallest value, so that no line lies
            // along the axis.
            let lo = libm::floor(libm::log10(y.min.max(1e-6) / 2.0));
            let hi = libm::ceil(libm::log10(y.max.max(y.min * 10.0)) - 1e-9);
            let hi = hi.max(lo + 1.0);
            (lo, hi, (hi - lo) as usize + 1)
        }
    };
    let mut chart = ChartBuilder::on(area)
        .caption(title, font(TITLE_SIZE))
        .margin_top(6)
        .margin_left(8)
        .margin_right(RIGHT_MARGIN)
        .x_label_area_size(X_LABEL_AREA)
        .y_label_area_size(Y_LABEL_AREA)
        .build_cartesian_2d(0.0..x_end, y_lo..y_hi)?;
    let scale = y.scale;
    let y_label = move |v: &f64| match scale {
        Scale::Linear => tick_label(*v),
        Scale::Log => tick_label(libm::pow(10.0, *v)),
    };
    let x_label = |v: &f64| tick_label(*v);
    chart
        .configure_mesh()
        .x_desc("time (s, simulated)")
        .y_desc(y.desc.as_str())
        .x_labels(12)
        .y_labels(y_ticks)
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .label_style(font(TEXT_SIZE))
        .axis_desc_style(font(TEXT_SIZE))
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(RGBColor(120, 120, 120))
        .draw()?;
    shade_timeline(&mut chart, frame, (y_lo, y_hi))?;
    Ok(chart)
}

/// The height of a panel's title and axes around a plot `plot` pixels high.
pub fn panel_height(plot: u32) -> u32 {
    plot + TITLE_AREA + X_LABEL_AREA + 6
}

/// Shades each window of the timeline and names it at the top of the plot, on the first of
/// three rows where its name does not run into another.
fn shade_timeline(chart: &mut Plot, frame: &Frame, (y_lo, y_hi): (f64, f64)) -> DrawResult<()> {
    let (x_px, _) = chart.plotting_area().get_pixel_range();
    let px_per_s = f64::from(x_px.end - x_px.start) / frame.end_s.max(1e-9);
    let mut rows: Vec<f64> = vec![f64::NEG_INFINITY; 3];
    let span = y_hi - y_lo;
    for w in &frame.timeline {
        let instant = w.kind == "cache_flush";
        let to = if instant {
            w.from_s
        } else {
            w.to_s.unwrap_or(frame.end_s)
        };
        let color = window_color(&w.kind);
        if instant {
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(w.from_s, y_lo), (w.from_s, y_hi)],
                color.mix(0.8).stroke_width(2),
            )))?;
        } else {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(w.from_s, y_lo), (to, y_hi)],
                color
                    .mix(if w.kind == "load_spike" { 0.35 } else { 0.3 })
                    .filled(),
            )))?;
        }
        let left_px = w.from_s * px_per_s + 3.0;
        let width = text_width(&w.label, SMALL_SIZE);
        let row = rows.iter().position(|end| *end < left_px).unwrap_or(0);
        rows[row] = left_px + width + 6.0;
        let y = y_hi - span * (0.02 + 0.075 * row as f64);
        chart.draw_series(std::iter::once(Text::new(
            w.label.clone(),
            (w.from_s, y),
            font(SMALL_SIZE)
                .color(&RGBColor(70, 50, 110))
                .pos(Pos::new(HPos::Left, VPos::Top)),
        )))?;
    }
    Ok(())
}

/// Draws `line` on `plot` at its frame's column midpoints, broken where it has no value; a
/// lone value is a dot.
pub fn draw_line(plot: &mut Plot, frame: &Frame, scale: Scale, line: &Line) -> DrawResult<()> {
    let style = line.color.stroke_width(2);
    let mut run: Vec<(f64, f64)> = Vec::new();
    let flush = |plot: &mut Plot, run: &mut Vec<(f64, f64)>| -> DrawResult<()> {
        match run.len() {
            0 => {}
            1 => {
                plot.draw_series(std::iter::once(Circle::new(run[0], 2, style.filled())))?;
            }
            _ if line.dashed => {
                plot.draw_series(DashedLineSeries::new(run.iter().copied(), 6, 4, style))?;
            }
            _ => {
                plot.draw_series(LineSeries::new(run.iter().copied(), style))?;
            }
        }
        run.clear();
        Ok(())
    };
    for (x, v) in frame.mid_s.iter().zip(&line.values) {
        match v {
            Some(v) if v.is_finite() => run.push((*x, at(scale, *v))),
            _ => flush(plot, &mut run)?,
        }
    }
    flush(plot, &mut run)
}

/// The legend items of `lines`.
pub fn line_legend(lines: &[Line]) -> Vec<LegendItem> {
    lines
        .iter()
        .map(|l| LegendItem {
            text: l.name.clone(),
            color: l.color,
            swatch: if l.dashed {
                Swatch::Dashed
            } else {
                Swatch::Line
            },
        })
        .collect()
}

/// The largest value of `lines` (0 when none).
pub fn max_of(lines: &[Line]) -> f64 {
    lines
        .iter()
        .flat_map(|l| l.values.iter().flatten())
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
}

/// The smallest positive value of `lines` (`None` when none).
pub fn min_positive_of(lines: &[Line]) -> Option<f64> {
    lines
        .iter()
        .flat_map(|l| l.values.iter().flatten())
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0)
        .reduce(f64::min)
}

/// A text note in the middle of an area (for a chart with nothing to draw).
pub fn note(area: &Area, text: &str) -> DrawResult<()> {
    let (w, h) = area.dim_in_pixel();
    area.draw(&Text::new(
        text.to_string(),
        (w as i32 / 2, h as i32 / 2),
        font(TEXT_SIZE).pos(Pos::new(HPos::Center, VPos::Center)),
    ))
}
