//! `resim compare`: two scenarios (two files, or a file and its variants) run on the same seeds,
//! and [`Comparison`]: their key figures side by side with the paired differences and their
//! 95% confidence intervals.
//!
//! The same seed gives both sides the same random numbers wherever they draw from the same
//! named stream (a client's arrivals, a service's work times), so the differences are paired:
//! most of the seed-to-seed noise cancels, and fewer seeds show a real difference (common
//! random numbers). A difference is marked significant when its 95% t-interval leaves out zero.

use super::plan::Plan;
use super::stats::{Moments, t_interval};
use super::sweep::{RunRecord, SweepSetup, run_plan};
use crate::library::resolve;
use crate::limits::Limits;
use crate::overrides::Overrides;
use sim_core::SimDuration;
use std::fmt::Write as _;

/// One side of a comparison.
#[derive(Debug, Clone)]
pub struct Side {
    /// How the table names it (the file, or the variant).
    pub label: String,
    /// A file or a library scenario.
    pub file: String,
    /// Its variant and `--set` overrides.
    pub overrides: Overrides,
}

/// One figure compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The figure's name.
    pub name: &'static str,
    /// Over the seeds of side A.
    pub a: Moments,
    /// Over the seeds of side B.
    pub b: Moments,
    /// B − A, seed by seed (only seeds where both have the figure).
    pub difference: Moments,
    /// The 95% t-interval of the mean difference.
    pub interval: Option<(f64, f64)>,
}

impl Row {
    /// Whether the interval leaves out zero.
    pub fn significant(&self) -> bool {
        self.interval.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0)
    }
}

/// Two sides run on the same seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The sides' labels.
    pub labels: (String, String),
    /// The seeds.
    pub seeds: (u64, u64),
    /// Runs whose expectations held, per side.
    pub passed: (u64, u64),
    /// The figures.
    pub rows: Vec<Row>,
}

/// How a figure is read from a run's record (`None`: the run has no such figure).
type Figure = fn(&RunRecord) -> Option<f64>;

/// The figures a comparison shows, with how each is read from a record.
const FIGURES: [(&str, Figure); 4] = [
    ("goodput/s", |r| Some(r.goodput_per_s)),
    ("success %", |r| Some(100.0 * r.success_ratio)),
    ("p99 ms", |r| r.p99_ms),
    ("amplification", |r| Some(r.amplification)),
];

/// Runs both sides on `seeds` (on `jobs` threads) and compares them.
pub fn compare(
    sides: &[Side; 2],
    seeds: (u64, u64),
    duration: Option<SimDuration>,
    jobs: Option<usize>,
    limits: &Limits,
) -> Result<Comparison, String> {
    let plan = Plan::new(&[], seeds, None)?;
    let mut records = Vec::with_capacity(2);
    for side in sides {
        let scenario = resolve(&side.file, limits, &side.overrides).map_err(|e| e.to_string())?;
        let scenarios = [scenario];
        let words = [side.overrides.command_line()];
        let setup = SweepSetup {
            file: &side.file,
            scenarios: &scenarios,
            overrides: &words,
            duration,
        };
        records.push(run_plan(&setup, &plan, jobs, &|| {}).map_err(|e| e.to_string())?);
    }
    let (a, b) = (&records[0], &records[1]);
    let rows = FIGURES
        .iter()
        .map(|(name, figure)| {
            let mut row = Row {
                name,
                a: Moments::of(a.iter().filter_map(figure)),
                b: Moments::of(b.iter().filter_map(figure)),
                difference: Moments::default(),
                interval: None,
            };
            let differences: Vec<f64> = a
                .iter()
                .zip(b)
                .filter_map(|(ra, rb)| Some(figure(rb)? - figure(ra)?))
                .collect();
            row.difference = Moments::of(differences.iter().copied());
            row.interval = t_interval(&differences);
            row
        })
        .collect();
    let passed = |r: &[RunRecord]| r.iter().filter(|r| r.passed).count() as u64;
    Ok(Comparison {
        labels: (sides[0].label.clone(), sides[1].label.clone()),
        seeds,
        passed: (passed(a), passed(b)),
        rows,
    })
}

/// The comparison as `resim compare` prints it.
pub fn render(c: &Comparison) -> String {
    let mut out = String::new();
    let runs = c.seeds.1 - c.seeds.0 + 1;
    let _ = writeln!(
        out,
        "A: {}\nB: {}\nseeds {}..{}, the same for both (common random numbers); mean ± standard deviation over the seeds",
        c.labels.0, c.labels.1, c.seeds.0, c.seeds.1
    );
    let _ = writeln!(
        out,
        "\n  {:<14} {:>18} {:>18} {:>12}  {:<24}",
        "", "A", "B", "B − A", "95% interval of B − A"
    );
    for r in &c.rows {
        let pm = |m: &Moments| {
            if m.count == 0 {
                "–".to_string()
            } else {
                format!("{:.2} ± {:.2}", m.mean, m.sd())
            }
        };
        let (interval, mark) = match r.interval {
            Some((lo, hi)) => (
                format!("[{lo:+.2}, {hi:+.2}]"),
                if r.significant() { "  significant" } else { "" },
            ),
            None => ("–".to_string(), ""),
        };
        let _ = writeln!(
            out,
            "  {:<14} {:>18} {:>18} {:>12}  {:<24}{mark}",
            r.name,
            pm(&r.a),
            pm(&r.b),
            if r.difference.count == 0 {
                "–".to_string()
            } else {
                format!("{:+.2}", r.difference.mean)
            },
            interval
        );
    }
    let _ = writeln!(
        out,
        "  {:<14} {:>18} {:>18}",
        "passed",
        format!("{} of {runs}", c.passed.0),
        format!("{} of {runs}", c.passed.1)
    );
    // The last column is padded; a line ends at its last character.
    out.lines().map(|l| format!("{}\n", l.trim_end())).collect()
}

/// The two sides a command line names: two files (each with the `--set` overrides), or one
/// file with two of its variants, or with one (against the file as written).
pub fn sides(
    files: &[String],
    variants: &[String],
    sets: &[crate::overrides::Override],
) -> Result<[Side; 2], String> {
    let side = |file: &str, variant: Option<&String>| Side {
        label: match variant {
            Some(v) => format!("{file} --variant {v}"),
            None => file.to_string(),
        },
        file: file.to_string(),
        overrides: Overrides {
            variant: variant.cloned(),
            sets: sets.to_vec(),
        },
    };
    match (files, variants) {
        ([a, b], []) => Ok([side(a, None), side(b, None)]),
        ([f], [v]) => Ok([side(f, None), side(f, Some(v))]),
        ([f], [v, w]) => Ok([side(f, Some(v)), side(f, Some(w))]),
        _ => Err(
            "compare two files (resim compare A.ron B.ron), or one file with one or two of its variants (resim compare F.ron --variant A --variant B)"
                .to_string(),
        ),
    }
}
