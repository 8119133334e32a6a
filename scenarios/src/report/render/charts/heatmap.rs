//! [`HeatMap`]: a grid of cells over two axes of values, each cell split into coloured strips
//! in proportion to how many runs fell in each class (`resim phase` draws the metastable
//! region with it). Drawn with the charts' fonts, sizes, palette and legend, in pixel
//! coordinates laid out here, so the same map gives the same bytes.

use super::panel::{
    Area, DrawResult, FAIL, LEGEND_ROW, LegendItem, PASS, RIGHT_MARGIN, SMALL_SIZE, Swatch,
    TEXT_SIZE, TITLE_SIZE, WIDTH, draw_legend, font, legend_rows, text_width,
};
use super::{Chart, ChartError, Drawing, chart, take};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The classes of a cell, in the order of the counts: green, red, grey.
pub const CLASS_COLORS: [RGBColor; 3] = [PASS, FAIL, RGBColor(110, 110, 110)];

/// What a heat map shows: values along x (columns, left to right) and y (rows, bottom to top),
/// and per cell the count of runs in each class.
#[derive(Debug, Clone, PartialEq)]
pub struct HeatMap {
    /// The chart's title.
    pub title: String,
    /// What the x values are (a field path).
    pub x_name: String,
    /// The x values, as written.
    pub x_values: Vec<String>,
    /// What the y values are.
    pub y_name: String,
    /// The y values, as written (the first at the bottom).
    pub y_values: Vec<String>,
    /// Each class's legend text, in the order of the counts.
    pub classes: [String; 3],
    /// Per cell, row by row from the first y value, the runs of each class.
    pub cells: Vec<[u64; 3]>,
    /// The text written in each cell (same order as `cells`); `\n` starts a second line.
    pub labels: Vec<String>,
    /// A line under the title (e.g. the thresholds).
    pub note: String,
}

/// Left of the cells: the y values and the y axis name.
const LEFT: u32 = 150;
/// Height of one row of cells.
const ROW: u32 = 44;
/// Above the cells: the title and the note.
const TOP: u32 = 62;
/// Below the cells: the x values and the x axis name.
const BOTTOM: u32 = 62;

/// The heat map as an SVG chart named `name`.
pub fn heatmap(name: &str, map: &HeatMap) -> Result<Chart, ChartError> {
    let (nx, ny) = (map.x_values.len(), map.y_values.len());
    assert_eq!(map.cells.len(), nx * ny, "one cell per pair of values");
    let legend = legend(map);
    let legend_h = legend_rows(&legend, WIDTH) * LEGEND_ROW + 10;
    let height = TOP + ROW * ny as u32 + BOTTOM + legend_h;
    chart(name, &map.title, |_| {
        Drawing::new(height, move |root| draw(root, map, &legend))
    })
}

fn legend(map: &HeatMap) -> Vec<LegendItem> {
    map.classes
        .iter()
        .zip(CLASS_COLORS)
        .map(|(text, color)| LegendItem {
            text: text.clone(),
            color,
            swatch: Swatch::Box,
        })
        .collect()
}

fn draw(root: &Area, map: &HeatMap, legend: &[LegendItem]) -> DrawResult<()> {
    let (nx, ny) = (map.x_values.len(), map.y_values.len());
    let plot_w = WIDTH - LEFT - RIGHT_MARGIN;
    let cell_w = f64::from(plot_w) / nx.max(1) as f64;
    root.draw(&Text::new(
        map.title.clone(),
        (LEFT as i32, 6),
        font(TITLE_SIZE).pos(Pos::new(HPos::Left, VPos::Top)),
    ))?;
    root.draw(&Text::new(
        map.note.clone(),
        (LEFT as i32, 32),
        font(SMALL_SIZE).pos(Pos::new(HPos::Left, VPos::Top)),
    ))?;
    let x_px = |x: f64| (f64::from(LEFT) + x * cell_w).round() as i32;
    for (row, y) in (0..ny).rev().enumerate() {
        let top = (TOP + ROW * row as u32) as i32;
        let bottom = top + ROW as i32;
        for x in 0..nx {
            draw_cell(root, map, (y * nx + x, x, cell_w), (top, bottom))?;
        }
        root.draw(&Text::new(
            map.y_values[y].clone(),
            (LEFT as i32 - 8, (top + bottom) / 2),
            font(TEXT_SIZE).pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
    let cells_bottom = (TOP + ROW * ny as u32) as i32;
    for x in 0..nx {
        root.draw(&Text::new(
            map.x_values[x].clone(),
            (x_px(x as f64 + 0.5), cells_bottom + 6),
            font(TEXT_SIZE).pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    root.draw(&Text::new(
        format!("x: {}", map.x_name),
        (x_px(nx as f64 / 2.0), cells_bottom + 32),
        font(TEXT_SIZE).pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    // The y axis's name, upright along the rows when it fits there, else above the values.
    let y_name = format!("y: {}", map.y_name);
    let rows_h = f64::from(ROW) * ny as f64;
    if text_width(&y_name, TEXT_SIZE) < rows_h {
        // Beside the widest value, with room for the text's height.
        let widest = map
            .y_values
            .iter()
            .map(|v| text_width(v, TEXT_SIZE))
            .fold(0.0, f64::max);
        let x = (f64::from(LEFT) - 8.0 - widest - 16.0).max(14.0);
        root.draw(&Text::new(
            y_name,
            (x as i32, (TOP as f64 + rows_h / 2.0) as i32),
            font(TEXT_SIZE)
                .transform(FontTransform::Rotate270)
                .pos(Pos::new(HPos::Center, VPos::Center)),
        ))?;
    } else {
        root.draw(&Text::new(
            y_name,
            (8, TOP as i32 - 4),
            font(SMALL_SIZE).pos(Pos::new(HPos::Left, VPos::Bottom)),
        ))?;
    }
    let (_, below) = take(root, TOP + ROW * ny as u32 + BOTTOM);
    draw_legend(&below, legend)
}

/// Cell `i`, in column `x` of cells `cell_w` pixels wide and between the pixel rows
/// `top..bottom`: a strip per class, as wide as its share of the runs, a white border, and
/// its label.
fn draw_cell(
    root: &Area,
    map: &HeatMap,
    (i, x, cell_w): (usize, usize, f64),
    (top, bottom): (i32, i32),
) -> DrawResult<()> {
    let counts = map.cells[i];
    let total: u64 = counts.iter().sum();
    let x_px = |v: f64| (f64::from(LEFT) + v * cell_w).round() as i32;
    let px = |share: f64| x_px(x as f64 + share);
    let (left, right) = (px(0.0), px(1.0));
    // Strips in the order of the classes, each as wide as its share of the runs.
    let mut seen = 0;
    for (k, &n) in counts.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let from = seen as f64 / total as f64;
        seen += n;
        let to = seen as f64 / total as f64;
        root.draw(&Rectangle::new(
            [(px(from), top), (px(to), bottom)],
            CLASS_COLORS[k].mix(0.85).filled(),
        ))?;
    }
    root.draw(&Rectangle::new(
        [(left, top), (right, bottom)],
        WHITE.stroke_width(2),
    ))?;
    // White text needs a dark cell; an empty cell (no run) takes dark text. A label of
    // several lines is centred as a block.
    let color = if total == 0 { BLACK } else { WHITE };
    let lines: Vec<&str> = map.labels[i].split('\n').collect();
    let step = TEXT_SIZE as i32 + 2;
    let first = (top + bottom) / 2 - step * (lines.len() as i32 - 1) / 2;
    for (n, line) in lines.iter().enumerate() {
        root.draw(&Text::new(
            line.to_string(),
            (px(0.5), first + step * n as i32),
            font(TEXT_SIZE)
                .color(&color)
                .pos(Pos::new(HPos::Center, VPos::Center)),
        ))?;
    }
    Ok(())
}
