//! `resim phase`: a [`PhaseMap`] of where a scenario is stable, metastable or collapsed over
//! two axes of overrides, from the metastability verdict of every run.
//!
//! The grid (`--y` values × `--x` values) × seeds is a [`Plan`] run by [`run_plan_with`], so
//! the runs are parallel and the map is the same whatever `-j` is. Each run's report carries
//! its verdict ([`crate::report::metastability`]); a cell counts its seeds by [`Class`]. The
//! map is printed as a text table (rows are y values, the last on top, as in the SVG) or as
//! JSON, and drawn as an SVG heat map by [`crate::report::render::charts::heatmap`].
//!
//! With several seeds a cell, each cell also says P(metastable), the share of its runs that
//! did not recover, with its exact 95% interval (Clopper–Pearson, [`clopper_pearson`]): three
//! seeds that all recovered leave room for a 71% chance of not recovering, and the map says
//! so beside the counts.

use super::command::Outcome;
use super::part::{self, Indexed};
use super::plan::{GridAxis, Partition, Plan};
use super::stats::clopper_pearson;
use super::sweep::{SweepSetup, run_plan_with};
use super::{Control, Opener};
use crate::format::limits::RunLimits;
use crate::format::overrides::{Flag, LOAD, Override, Overrides, load_overrides};
use crate::format::schema::Scenario;
use crate::format::verdict::window;
use crate::report::metastability::{Verdict, describe};
use crate::report::render::charts::heatmap::{HeatMap, heatmap};
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;
use std::fmt::Write as _;
use std::io::IsTerminal as _;

/// The most values one axis takes.
pub const AXIS_VALUES_MAX: usize = 64;

/// What a run of the map was, by its verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// Never degraded, or recovered within the run.
    Stable,
    /// Did not recover within the run.
    Metastable,
    /// Not healthy before the trigger.
    Collapsed,
}

impl Class {
    /// The class of a verdict.
    pub fn of(v: Verdict) -> Class {
        match v {
            Verdict::NeverDegraded | Verdict::Recovered { .. } => Class::Stable,
            Verdict::Metastable => Class::Metastable,
            Verdict::Collapsed => Class::Collapsed,
        }
    }
}

/// The letters of the classes in a cell, in the order of [`Cell::counts`].
const LETTERS: [char; 3] = ['S', 'M', 'C'];

/// `--x` or `--y`: `PATH=V1,V2,…` as for `--grid`, or a numeric range `PATH=START..END:STEP`
/// (both ends included when the steps reach them). The axis is an `--x`; the error is the
/// reason alone.
pub fn parse_axis(text: &str) -> Result<GridAxis, String> {
    parse_axis_of(Flag::X, text)
}

/// [`parse_axis`] for the axis `flag` (`--x` or `--y`), which errors about its values name.
/// The path `load` takes factors: each must be a positive number.
pub fn parse_axis_of(flag: Flag, text: &str) -> Result<GridAxis, String> {
    let axis = axis_of(flag, text)?;
    if axis.path == LOAD
        && let Some(bad) = axis.values.iter().find(|v| {
            v.trim()
                .parse::<f64>()
                .map_or(true, |f| !(f.is_finite() && f > 0.0))
        })
    {
        return Err(format!(
            "load={bad}: a load multiplier must be a positive number, e.g. load=0.5..3:0.25"
        ));
    }
    Ok(axis)
}

fn axis_of(flag: Flag, text: &str) -> Result<GridAxis, String> {
    let list = || GridAxis::parse(flag, text);
    let Some((path, values)) = crate::format::overrides::split_override(text) else {
        return list();
    };
    let Some((range, step)) = values.split_once(':') else {
        return list();
    };
    let Some((start, end)) = range.split_once("..") else {
        return list();
    };
    let number = |t: &str| t.trim().parse::<f64>().ok().filter(|x| x.is_finite());
    let (Some(a), Some(b), Some(s)) = (number(start), number(end), number(step)) else {
        return list();
    };
    if s <= 0.0 || b < a {
        return Err(format!(
            "a range goes up by a positive step, e.g. {path}=1..3:1"
        ));
    }
    let count = libm::floor((b - a) / s + 1e-9) as usize + 1;
    if count > AXIS_VALUES_MAX {
        return Err(format!(
            "{count} values; at most {AXIS_VALUES_MAX} per axis"
        ));
    }
    // Integers stay integers (a count field refuses `2.0`); other values get the decimals
    // of the step and the start.
    let integral = [a, s].iter().all(|x| x.fract() == 0.0);
    let decimals = [start, step]
        .iter()
        .map(|t| t.trim().split_once('.').map_or(0, |(_, d)| d.len()))
        .max()
        .unwrap_or(0);
    let values: Vec<String> = (0..count)
        .map(|i| {
            let v = a + s * i as f64;
            if integral {
                format!("{}", v as i64)
            } else {
                format!("{v:.decimals$}")
            }
        })
        .collect();
    GridAxis::parse(flag, &format!("{path}={}", values.join(",")))
}

/// A value as a reader reads it: a RON string without its quotes (`2000/s`), anything else
/// as written.
fn shown(value: &str) -> String {
    value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value)
        .to_string()
}

/// What `resim phase` was asked.
#[derive(Debug, Clone)]
pub struct Phase {
    /// A file or a library scenario.
    pub file: String,
    /// The columns.
    pub x: GridAxis,
    /// The rows.
    pub y: GridAxis,
    /// First and last seed.
    pub seeds: (u64, u64),
    /// `--variant` and `--set`, for every run.
    pub overrides: Overrides,
    /// `-j`: threads (`None`: one per core).
    pub jobs: Option<usize>,
    /// `--partition K/N`: make only this share of the runs (`--out` then writes them).
    pub partition: Option<Partition>,
    /// `--out`: where to write the runs, as a part `resim merge` reads.
    pub out: Option<String>,
    /// Stops the map early and counts its runs (a Python caller's Ctrl-C and progress bar;
    /// nothing on the command line).
    pub control: Control,
}

/// One cell: the runs of one (x, y) point by class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// The x value.
    pub x: String,
    /// The y value.
    pub y: String,
    /// Runs that were stable.
    pub stable: u64,
    /// Runs that were metastable.
    pub metastable: u64,
    /// Runs that were collapsed.
    pub collapsed: u64,
    /// The longest recovery among the stable runs that degraded, in seconds.
    pub recovered_after_s_max: Option<f64>,
    /// The exact 95% interval of P(metastable): the lower end.
    pub metastable_low: f64,
    /// The upper end.
    pub metastable_high: f64,
}

impl Cell {
    /// The counts in the order of [`Class`].
    pub fn counts(&self) -> [u64; 3] {
        [self.stable, self.metastable, self.collapsed]
    }

    /// `33% [1, 91]`: P(metastable) with its exact 95% interval, in whole percents.
    pub fn probability(&self) -> String {
        let runs = self.stable + self.metastable + self.collapsed;
        format!(
            "{:.0}% [{:.0}, {:.0}]",
            100.0 * self.metastable as f64 / runs.max(1) as f64,
            100.0 * self.metastable_low,
            100.0 * self.metastable_high
        )
    }

    /// `S3`, `S2 M1`: the classes that occurred with their counts.
    pub fn label(&self) -> String {
        let parts: Vec<String> = self
            .counts()
            .iter()
            .zip(LETTERS)
            .filter(|(n, _)| **n > 0)
            .map(|(n, l)| format!("{l}{n}"))
            .collect();
        parts.join(" ")
    }
}

/// A phase map: the cells row by row from the first y value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseMap {
    /// The scenario's name.
    pub scenario: String,
    /// The x axis's path.
    pub x: String,
    /// Its values.
    pub x_values: Vec<String>,
    /// The y axis's path.
    pub y: String,
    /// Its values.
    pub y_values: Vec<String>,
    /// The first and last seed of every cell.
    pub seeds: (u64, u64),
    /// The verdict's thresholds, in words.
    pub thresholds: String,
    /// Row by row from the first y value, each row from the first x value.
    pub cells: Vec<Cell>,
}

/// What a phase map is, whatever share of its runs a process makes: the header of every part
/// of a split map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseSetup {
    /// The scenario as the command line named it.
    pub file: String,
    /// [`crate::format::overrides::Source::fingerprint`] of its text.
    pub fingerprint: String,
    /// `--variant` and `--set`, as command-line words.
    pub overrides: String,
    /// The map with no cells yet.
    pub map: PhaseMap,
}

/// One run of a map: a line of a part after its header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseRun {
    /// Its index in the whole map: `cell × seeds + seed offset`, cells row by row.
    pub index: u64,
    /// The cell's overrides, `--y` then `--x`.
    pub point: String,
    /// The seed.
    pub seed: u64,
    /// The verdict's class.
    pub class: Class,
    /// For a run that degraded and recovered, after how long (integer nanoseconds).
    pub recovered_after_ns: Option<u64>,
    /// The run's digest.
    pub digest: String,
    /// The command that replays it.
    pub replay: String,
}

impl Indexed for PhaseRun {
    fn index(&self) -> u64 {
        self.index
    }
}

/// A map ready to run: its plan, each cell's scenario and replay words, and its setup.
struct Prepared {
    plan: Plan,
    scenarios: Vec<Scenario>,
    words: Vec<String>,
    setup: PhaseSetup,
}

/// How an axis reads in the map: `load` is a factor, said so.
fn axis_name(axis: &GridAxis) -> String {
    if axis.path == LOAD {
        "load (a multiplier of every client's rates)".to_string()
    } else {
        axis.path.clone()
    }
}

/// Each cell's overrides with a `load` value replaced by the overrides it stands for: every
/// open-loop client's rates, as the cell's other overrides leave them, times the factor.
fn with_load(
    file: &str,
    source: &crate::format::overrides::Source,
    limits: &RunLimits,
    each: Vec<Overrides>,
) -> Result<Vec<Overrides>, String> {
    if !each.iter().any(|o| o.sets.iter().any(|o| o.path == LOAD)) {
        return Ok(each);
    }
    let checked = source.check(limits).map_err(|e| e.to_string())?;
    let mut out = Vec::with_capacity(each.len());
    for mut overrides in each {
        let Some(at) = overrides.sets.iter().position(|o| o.path == LOAD) else {
            out.push(overrides);
            continue;
        };
        let Override { value, flag, .. } = overrides.sets.remove(at);
        let base = source
            .apply(&checked, limits, &overrides)
            .map_err(|e| e.to_string())?;
        // The axis's values were checked to be positive numbers when it was parsed.
        let factor: f64 = value.trim().parse().unwrap_or(f64::NAN);
        let scaled = load_overrides(&base, factor, flag)
            .map_err(|m| format!("{file}: {flag} load={value}: {m}"))?;
        overrides.sets.extend(scaled);
        out.push(overrides);
    }
    Ok(out)
}

/// Reads and validates every cell of the map, each with a trigger that ends, before any run.
fn prepare(command: &Phase, open: Opener<'_>, limits: &RunLimits) -> Result<Prepared, String> {
    if command.x.path == command.y.path {
        return Err(format!(
            "--x and --y both set {}; give the two axes different paths",
            command.x.path
        ));
    }
    let plan = Plan::new(
        &[command.y.clone(), command.x.clone()],
        command.seeds,
        command.partition,
    )?;
    let source = open(&command.file).map_err(|e| e.to_string())?;
    let each = with_load(
        &command.file,
        &source,
        limits,
        plan.overrides_each(&command.overrides),
    )?;
    let scenarios = source
        .apply_each(limits, &each)
        .map_err(|e| e.to_string())?;
    for (i, s) in scenarios.iter().enumerate() {
        window(s, s.duration).map_err(|why| {
            format!(
                "{}: at {}: no metastability verdict: {why}",
                command.file,
                plan.label(i)
            )
        })?;
    }
    let setup = PhaseSetup {
        file: command.file.clone(),
        fingerprint: source.fingerprint(),
        overrides: command.overrides.command_line(),
        map: PhaseMap {
            scenario: scenarios[0].name.clone(),
            x: axis_name(&command.x),
            x_values: command.x.values.iter().map(|v| shown(v)).collect(),
            y: axis_name(&command.y),
            y_values: command.y.values.iter().map(|v| shown(v)).collect(),
            seeds: command.seeds,
            thresholds: describe(&scenarios[0].verdict),
            cells: Vec::new(),
        },
    };
    Ok(Prepared {
        words: each.iter().map(Overrides::command_line).collect(),
        plan,
        scenarios,
        setup,
    })
}

/// Makes the runs of the plan's share on the command's threads, in index order.
fn run_share(command: &Phase, prepared: &Prepared) -> Result<Vec<PhaseRun>, String> {
    let Prepared {
        plan,
        scenarios,
        words,
        ..
    } = prepared;
    let setup = SweepSetup {
        file: &command.file,
        scenarios,
        overrides: words,
        duration: None,
        cancel: command.control.cancel.clone(),
    };
    command.control.asked(plan.specs().len() as u64);
    let bar = if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(plan.specs().len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} runs  {elapsed} elapsed, about {eta} left",
            )
            .expect("a valid template"),
        );
        bar
    } else {
        indicatif::ProgressBar::hidden()
    };
    let progress = || {
        bar.inc(1);
        command.control.done();
    };
    let runs = run_plan_with(&setup, plan, command.jobs, &progress, &|spec, r| {
        let replay = format!("{}{}", r.replay_command(), words[spec.point]);
        let verdict = r.metastability.as_ref().map(|m| m.verdict()).ok_or_else(|| {
            format!(
                "{}: at {} seed {}: the run stopped ({}) at {}s, before its trigger ended: no verdict; replay: {replay}",
                command.file,
                plan.label(spec.point),
                spec.seed,
                r.stop_reason,
                r.simulated_s,
            )
        })?;
        Ok(PhaseRun {
            index: spec.index,
            point: plan.label(spec.point),
            seed: spec.seed,
            class: Class::of(verdict),
            recovered_after_ns: match verdict {
                Verdict::Recovered { after } => Some(after.as_nanos()),
                _ => None,
            },
            digest: r.digest.clone(),
            replay,
        })
    });
    bar.finish_and_clear();
    runs.map_err(|e| e.to_string())?.into_iter().collect()
}

/// The map of `setup` with its cells counted from `runs`: every run of the map, in index
/// order.
fn filled(setup: &PhaseSetup, runs: &[PhaseRun]) -> PhaseMap {
    let map = &setup.map;
    let (a, b) = map.seeds;
    let n = (b - a + 1) as usize;
    let nx = map.x_values.len();
    let cells = runs
        .chunks(n)
        .enumerate()
        .map(|(point, runs)| {
            let mut cell = Cell {
                x: map.x_values[point % nx].clone(),
                y: map.y_values[point / nx].clone(),
                stable: 0,
                metastable: 0,
                collapsed: 0,
                recovered_after_s_max: None,
                metastable_low: 0.0,
                metastable_high: 1.0,
            };
            for r in runs {
                match r.class {
                    Class::Stable => cell.stable += 1,
                    Class::Metastable => cell.metastable += 1,
                    Class::Collapsed => cell.collapsed += 1,
                }
                if let Some(ns) = r.recovered_after_ns {
                    let s = SimDuration::from_nanos(ns).as_secs_f64();
                    cell.recovered_after_s_max =
                        Some(cell.recovered_after_s_max.map_or(s, |m: f64| m.max(s)));
                }
            }
            (cell.metastable_low, cell.metastable_high) =
                clopper_pearson(cell.metastable, runs.len() as u64, 0.025);
            cell
        })
        .collect();
    PhaseMap {
        cells,
        ..map.clone()
    }
}

/// Runs the map of the scenario `open` reads (every run, whatever `command.partition` says).
/// Every grid point is read and validated, and must have a trigger that ends, before any run
/// starts; an error is one line for stderr (exit code 2).
pub fn phase_map(
    command: &Phase,
    open: Opener<'_>,
    limits: &RunLimits,
) -> Result<PhaseMap, String> {
    let whole = Phase {
        partition: None,
        ..command.clone()
    };
    let prepared = prepare(&whole, open, limits)?;
    Ok(filled(&prepared.setup, &run_share(&whole, &prepared)?))
}

/// The map as a text table: a header, then one row per y value (the last on top) with one
/// column per x value.
pub fn render_text(map: &PhaseMap) -> String {
    let mut o = String::new();
    let (a, b) = map.seeds;
    let _ = writeln!(
        o,
        "phase map of {}: seeds {a}..{b} ({} per cell)",
        map.scenario,
        b - a + 1
    );
    let _ = writeln!(
        o,
        "S stable (never degraded, or recovered), M metastable (did not recover within the run), C collapsed (unhealthy before the trigger)"
    );
    let _ = writeln!(o, "verdict: {}", map.thresholds);
    let _ = writeln!(o);
    let labels: Vec<String> = map.cells.iter().map(Cell::label).collect();
    let left = map
        .y_values
        .iter()
        .map(|t| t.chars().count())
        .max()
        .unwrap_or(1)
        .max(3);
    let _ = writeln!(o, "rows: y = {}", map.y);
    let _ = writeln!(o, "columns: x = {}", map.x);
    grid(&mut o, map, &labels, (left, 5));
    if b > a {
        let texts: Vec<String> = map.cells.iter().map(Cell::probability).collect();
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "P(metastable): the share of the cell's runs that did not recover, [its exact 95% interval] (Clopper–Pearson)"
        );
        grid(&mut o, map, &texts, (left, 1));
    }
    o
}

/// `texts`, one per cell, as a table: the x values on top, a row per y value (the last on
/// top), the y values in a column `left` wide, each cell at least `width_min` wide.
fn grid(o: &mut String, map: &PhaseMap, texts: &[String], (left, width_min): (usize, usize)) {
    let nx = map.x_values.len();
    let width = texts
        .iter()
        .chain(&map.x_values)
        .map(|t| t.chars().count())
        .max()
        .unwrap_or(1)
        .max(width_min);
    let _ = write!(o, "{:>left$} │", "y\\x");
    for v in &map.x_values {
        let _ = write!(o, " {v:>width$}");
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "{}─┼{}", "─".repeat(left), "─".repeat((width + 1) * nx));
    for (y, value) in map.y_values.iter().enumerate().rev() {
        let _ = write!(o, "{value:>left$} │");
        for text in &texts[y * nx..(y + 1) * nx] {
            let _ = write!(o, " {text:>width$}");
        }
        let _ = writeln!(o);
    }
}

/// The map as one JSON object.
pub fn render_json(map: &PhaseMap) -> String {
    let mut text = serde_json::to_string(map).expect("a map is plain data");
    text.push('\n');
    text
}

/// The map as an SVG heat map.
pub fn render_svg(map: &PhaseMap) -> Result<String, String> {
    let (a, b) = map.seeds;
    let data = HeatMap {
        title: format!(
            "Phase map of {}: {} seeds per cell ({a}..{b})",
            map.scenario,
            b - a + 1
        ),
        x_name: map.x.clone(),
        x_values: map.x_values.clone(),
        y_name: map.y.clone(),
        y_values: map.y_values.clone(),
        classes: [
            "S stable (never degraded, or recovered)".to_string(),
            "M metastable (did not recover)".to_string(),
            "C collapsed (unhealthy before the trigger)".to_string(),
        ],
        cells: map.cells.iter().map(Cell::counts).collect(),
        labels: map
            .cells
            .iter()
            .map(|c| {
                if b > a {
                    format!("{}\n{}", c.label(), c.probability())
                } else {
                    c.label()
                }
            })
            .collect(),
        note: if b > a {
            format!(
                "verdict: {}; under the counts, P(metastable) [exact 95% interval]",
                map.thresholds
            )
        } else {
            format!("verdict: {}", map.thresholds)
        },
    };
    heatmap("phase", &data)
        .map(|c| c.svg)
        .map_err(|e| e.to_string())
}

/// How `resim phase` (and `resim merge` of its parts) shows the map.
#[derive(Debug, Clone, Default)]
pub struct MapOutput {
    /// One JSON object instead of the table.
    pub json: bool,
    /// Where to draw the SVG heat map, if asked.
    pub svg: Option<String>,
}

/// What `resim phase` prints for `map`, with the SVG written if asked.
pub fn show(map: &PhaseMap, output: &MapOutput) -> Result<Outcome, String> {
    if let Some(path) = &output.svg {
        std::fs::write(path, render_svg(map)?).map_err(|e| format!("{path}: cannot write: {e}"))?;
    }
    Ok(Outcome {
        text: if output.json {
            render_json(map)
        } else {
            render_text(map)
        },
        passed: true,
    })
}

/// `resim phase`: the map as text or JSON, and as SVG if asked; with `--out`, every run as a
/// part `resim merge` reads; with `--partition`, only the share's runs, into `--out`, and a
/// line that says so. It passes whatever the map shows.
pub fn phase_command(
    command: &Phase,
    output: &MapOutput,
    open: Opener<'_>,
    limits: &RunLimits,
) -> Result<Outcome, String> {
    if command.partition.is_some() && command.out.is_none() {
        return Err(format!(
            "{}: --partition makes a share of the runs for `resim merge`: give --out FILE.jsonl to write it to",
            command.file
        ));
    }
    let prepared = prepare(command, open, limits)?;
    let runs = run_share(command, &prepared)?;
    let share = command.partition.unwrap_or(Partition { part: 1, parts: 1 });
    if let Some(path) = &command.out {
        let text = part::to_text("phase", share, prepared.plan.runs(), &prepared.setup, &runs);
        std::fs::write(path, text).map_err(|e| format!("{path}: cannot write: {e}"))?;
    }
    if let (Some(p), Some(path)) = (command.partition, &command.out) {
        return Ok(Outcome {
            text: format!(
                "phase map of {}: part {p}, {} of {} runs, written to {path}; `resim merge` of every part prints the map\n",
                prepared.setup.map.scenario,
                runs.len(),
                prepared.plan.runs()
            ),
            passed: true,
        });
    }
    show(&filled(&prepared.setup, &runs), output)
}

/// `resim merge` of the parts of a phase map: the map the unsplit `resim phase` prints.
pub fn merge(files: &[(String, String)], output: &MapOutput) -> Result<Outcome, String> {
    let (setup, runs): (PhaseSetup, Vec<PhaseRun>) = part::read_parts("phase", files)?;
    show(&filled(&setup, &runs), output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_expand_to_values_and_lists_pass_through() {
        let a = parse_axis("faults[0].kind.factor=1..2:0.5").unwrap();
        assert_eq!(a.values, ["1.0", "1.5", "2.0"]);
        let a = parse_axis("services.api.workers=8..32:8").unwrap();
        assert_eq!(a.values, ["8", "16", "24", "32"]);
        let a = parse_axis("x=1,3,(a: 1)").unwrap();
        assert_eq!(a.values, ["1", "3", "(a: 1)"]);
        assert!(parse_axis("x=3..1:1").is_err());
        assert!(parse_axis("x=1..1000:1").is_err());
    }
}
