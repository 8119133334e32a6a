//! `resim compare`: two scenarios (two files, or a file and its variants) run on the same seeds,
//! and [`Comparison`]: their key figures side by side with the paired differences and their
//! 95% confidence intervals.
//!
//! The same seed gives both sides the same random numbers wherever they draw from the same
//! named stream (a client's arrivals, a service's work times), so the differences are paired:
//! most of the seed-to-seed noise cancels, and fewer seeds show a real difference (common
//! random numbers). A difference is marked significant when its 95% t-interval leaves out zero.
//!
//! [`render`] prints the table, [`render_json`] the same figures for a program, and
//! [`Comparison::first`] keeps the two runs of the first seed, whose time series
//! `resim compare --svg` draws on the same axes (one seed rather than an average: an average
//! of runs whose storms start at different moments would draw a storm no run had).

use super::Control;
use super::Opener;
use super::stats::{Moments, t_interval};
use crate::format::limits::RunLimits;
use crate::format::overrides::Overrides;
use crate::report::Report;
use crate::report::metastability::WindowFigures;
use crate::{RunOptions, run};
use rayon::prelude::*;
use sim_core::SimDuration;
use std::collections::BTreeMap;
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
    /// How many runs of each side got each metastability verdict (empty: the scenario has no
    /// trigger that ends, so no verdict and no recovery time).
    pub verdicts: (BTreeMap<String, u64>, BTreeMap<String, u64>),
    /// The reports of both sides' runs of the first seed, for charts.
    pub first: Option<Box<(Report, Report)>>,
    /// Per side, the shortest and longest recovery time over the seeds (of the runs that
    /// recovered or never degraded), in seconds.
    pub recovery_spread: (Spread, Spread),
    /// Per side, the stretches the `trigger` and `after` rows cover in its first seed's run:
    /// the trigger's start and end and the end of the stretch after it, in seconds.
    pub windows: (Stretches, Stretches),
}

/// The shortest and longest of some times, in seconds (`None`: there were none).
pub type Spread = Option<(f64, f64)>;

/// The trigger rows' stretch (start, end) and the after rows' end, in seconds.
pub type Stretches = Option<(f64, f64, Option<f64>)>;

/// The figures of one run that a comparison reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Successes per simulated second.
    pub goodput_per_s: f64,
    /// Successes per offered request (1 when nothing was offered).
    pub success_ratio: f64,
    /// The 99th percentile of request latency, when any request succeeded.
    pub p99_ms: Option<f64>,
    /// Client attempts per request.
    pub amplification: f64,
    /// Worker seconds spent, over all services, on requests whose callers had given up.
    pub wasted_work_s: f64,
    /// Seconds from the end of the trigger until the run was healthy again, by its
    /// metastability verdict: 0 when it never degraded, `None` when it did not recover (or
    /// collapsed, or has no trigger that ends).
    pub recovery_s: Option<f64>,
    /// The metastability verdict (`never_degraded`, `recovered`, `metastable`, `collapsed`),
    /// when the run has a trigger that ends.
    pub verdict: Option<String>,
    /// Whether every expectation held.
    pub passed: bool,
    /// The figures during the triggers, when the run has a trigger that ends.
    pub during: Option<WindowFigures>,
    /// The figures after the triggers, when the run goes on after them.
    pub after: Option<WindowFigures>,
}

impl Sample {
    /// The figures of `report`.
    pub fn of(report: &Report) -> Sample {
        let s = &report.summary;
        Sample {
            goodput_per_s: s.goodput_per_s,
            success_ratio: if s.offered == 0 {
                1.0
            } else {
                s.successes as f64 / s.offered as f64
            },
            p99_ms: s.latency_ms.as_ref().map(|l| l.p99),
            amplification: s.amplification,
            wasted_work_s: report.services.iter().map(|x| x.wasted_work_s).sum(),
            recovery_s: report
                .metastability
                .as_ref()
                .and_then(|m| match m.verdict.as_str() {
                    "never_degraded" => Some(0.0),
                    _ => m.recovered_after_s,
                }),
            verdict: report.metastability.as_ref().map(|m| m.verdict.clone()),
            passed: report.passed(),
            during: report.metastability.as_ref().and_then(|m| m.during.clone()),
            after: report.metastability.as_ref().and_then(|m| m.after.clone()),
        }
    }
}

/// How a figure is read from a run's sample (`None`: the run has no such figure).
type Figure = fn(&Sample) -> Option<f64>;

/// The name of the recovery time's row.
const RECOVERY: &str = "recovery s";

/// The figures a comparison shows, with how each is read from a sample. The recovery time
/// counts only the runs that recovered (or never degraded); its paired difference only the
/// seeds on which both sides did, and the `n` of each side says how many.
///
/// The `trigger` and `after` rows are the same figures over the stretches the metastability
/// verdict reads (from the first trigger's start to the last one's end, and from there to the
/// run's end; see [`WindowFigures`]), shown when a side has them: an effect during a fault
/// is not diluted by the healthy rest of the run.
const FIGURES: [(&str, Figure); 12] = [
    ("goodput/s", |r| Some(r.goodput_per_s)),
    ("success %", |r| Some(100.0 * r.success_ratio)),
    ("p99 ms", |r| r.p99_ms),
    ("amplification", |r| Some(r.amplification)),
    ("wasted work s", |r| Some(r.wasted_work_s)),
    (RECOVERY, |r| r.recovery_s),
    ("trigger goodput/s", |r| {
        r.during.as_ref().map(|w| w.goodput_per_s)
    }),
    ("trigger success %", |r| {
        r.during.as_ref()?.success_ratio.map(|x| 100.0 * x)
    }),
    ("trigger p99 ms", |r| r.during.as_ref()?.latency_ms_p99),
    ("after goodput/s", |r| {
        r.after.as_ref().map(|w| w.goodput_per_s)
    }),
    ("after success %", |r| {
        r.after.as_ref()?.success_ratio.map(|x| 100.0 * x)
    }),
    ("after p99 ms", |r| r.after.as_ref()?.latency_ms_p99),
];

/// Whether a row is one of the window rows, shown only when a side has its figure.
fn windowed(name: &str) -> bool {
    name.starts_with("trigger ") || name.starts_with("after ")
}

/// Runs `scenario` once per seed on `jobs` threads, each counted done in `control`: the
/// samples in seed order, and the report of the first seed.
fn run_side(
    scenario: &crate::Scenario,
    file: &str,
    seeds: (u64, u64),
    duration: Option<SimDuration>,
    (jobs, control): (Option<usize>, &Control),
) -> Result<(Vec<Sample>, Report), String> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.unwrap_or(0))
        .build()
        .map_err(|e| format!("{file}: cannot start the worker threads: {e}"))?;
    let seeds: Vec<u64> = (seeds.0..=seeds.1).collect();
    let runs: Vec<Result<(Sample, Option<Report>), String>> = pool.install(|| {
        seeds
            .par_iter()
            .map(|&seed| {
                let options = RunOptions {
                    seed: Some(seed),
                    duration,
                    cancel: control.cancel.clone(),
                    ..RunOptions::default()
                };
                let ran = run(scenario, file, &options);
                control.done();
                let report = ran.map_err(|e| e.to_string())?.report;
                let sample = Sample::of(&report);
                Ok((sample, (seed == seeds[0]).then_some(report)))
            })
            .collect()
    });
    // `collect` keeps the order of the seeds, whatever the number of threads.
    let mut samples = Vec::with_capacity(runs.len());
    let mut first = None;
    for r in runs {
        let (sample, report) = r?;
        samples.push(sample);
        first = first.or(report);
    }
    Ok((samples, first.expect("at least one seed")))
}

/// Runs both sides on `seeds` (on `jobs` threads) and compares them; `open` reads each side's
/// file. `control` stops it early (a Python caller's Ctrl-C) and counts its runs, both sides'
/// asked for at the start (the command line gives an empty one).
pub fn compare(
    sides: &[Side; 2],
    seeds: (u64, u64),
    duration: Option<SimDuration>,
    (jobs, control): (Option<usize>, &Control),
    open: Opener<'_>,
    limits: &RunLimits,
) -> Result<Comparison, String> {
    if seeds.1 < seeds.0 {
        return Err(format!(
            "seeds {}..{}: the range ends before it starts",
            seeds.0, seeds.1
        ));
    }
    control.asked(2 * (seeds.1 - seeds.0 + 1));
    let mut samples = Vec::with_capacity(2);
    let mut firsts = Vec::with_capacity(2);
    for side in sides {
        let scenario = open(&side.file)
            .and_then(|source| source.apply_each(limits, std::slice::from_ref(&side.overrides)))
            .map_err(|e| e.to_string())?
            .remove(0);
        let (s, first) = run_side(&scenario, &side.file, seeds, duration, (jobs, control))?;
        samples.push(s);
        firsts.push(first);
    }
    let (a, b) = (&samples[0], &samples[1]);
    let rows = rows(a, b);
    let passed = |r: &[Sample]| r.iter().filter(|r| r.passed).count() as u64;
    let verdicts = |r: &[Sample]| {
        let mut counts = BTreeMap::new();
        for v in r.iter().filter_map(|r| r.verdict.clone()) {
            *counts.entry(v).or_insert(0) += 1;
        }
        counts
    };
    let second = firsts.pop().expect("two sides");
    let first = firsts.pop().expect("two sides");
    let stretches = |r: &Report| {
        let m = r.metastability.as_ref()?;
        let during = m.during.as_ref()?;
        Some((during.from_s, during.to_s, m.after.as_ref().map(|a| a.to_s)))
    };
    Ok(Comparison {
        recovery_spread: (spread(a), spread(b)),
        windows: (stretches(&first), stretches(&second)),
        labels: (sides[0].label.clone(), sides[1].label.clone()),
        seeds,
        passed: (passed(a), passed(b)),
        verdicts: (verdicts(a), verdicts(b)),
        rows,
        first: Some(Box::new((first, second))),
    })
}

/// The rows of the table: each figure over both sides' samples, and its paired differences
/// (the window rows only when a side has them).
fn rows(a: &[Sample], b: &[Sample]) -> Vec<Row> {
    FIGURES
        .iter()
        .map(|(name, figure)| {
            let differences: Vec<f64> = a
                .iter()
                .zip(b)
                .filter_map(|(ra, rb)| Some(figure(rb)? - figure(ra)?))
                .collect();
            Row {
                name,
                a: Moments::of(a.iter().filter_map(figure)),
                b: Moments::of(b.iter().filter_map(figure)),
                difference: Moments::of(differences.iter().copied()),
                interval: t_interval(&differences),
            }
        })
        .filter(|row| !windowed(row.name) || row.a.count + row.b.count > 0)
        .collect()
}

/// The shortest and longest recovery time of `samples`, if any recovered.
fn spread(samples: &[Sample]) -> Spread {
    samples
        .iter()
        .filter_map(|r| r.recovery_s)
        .fold(None, |acc, x| match acc {
            None => Some((x, x)),
            Some((lo, hi)) => Some((f64::min(lo, x), f64::max(hi, x))),
        })
}

/// The comparison as one JSON object (indented, keys in alphabetical order): the sides, the
/// seeds, how many runs passed, the verdict counts, the range of recovery times and the
/// stretches of the trigger and after rows, and per figure each side's mean, standard
/// deviation and count, the mean paired difference, its 95% interval (`null` with fewer than
/// two seeds) and whether it is significant.
pub fn render_json(c: &Comparison) -> String {
    let moments = |m: &Moments| {
        let some = |x: f64| (m.count > 0).then_some(x).and_then(finite);
        serde_json::json!({ "mean": some(m.mean), "sd": some(m.sd()), "count": m.count })
    };
    let figures: Vec<serde_json::Value> = c
        .rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "figure": r.name,
                "a": moments(&r.a),
                "b": moments(&r.b),
                "difference": moments(&r.difference),
                "interval": r.interval.map(|(lo, hi)| [finite(lo), finite(hi)]),
                "significant": r.significant(),
            })
        })
        .collect();
    let value = serde_json::json!({
        "a": c.labels.0,
        "b": c.labels.1,
        "seeds": [c.seeds.0, c.seeds.1],
        "passed": { "a": c.passed.0, "b": c.passed.1 },
        "verdicts": { "a": c.verdicts.0, "b": c.verdicts.1 },
        "recovery_s_range": { "a": c.recovery_spread.0, "b": c.recovery_spread.1 },
        "stretches": { "a": stretch_json(&c.windows.0), "b": stretch_json(&c.windows.1) },
        "figures": figures,
    });
    let mut text = serde_json::to_string_pretty(&value).expect("a JSON value prints");
    text.push('\n');
    text
}

/// The stretches of the trigger and after rows as JSON: `{"trigger": [from, to], "after":
/// [from, to]}` in seconds, or `null` without a trigger that ends.
fn stretch_json(s: &Stretches) -> serde_json::Value {
    match s {
        None => serde_json::Value::Null,
        Some((from, to, after)) => serde_json::json!({
            "trigger": [from, to],
            "after": after.map(|end| [*to, end]),
        }),
    }
}

/// JSON has no NaN: a figure without a value is `null`.
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// The page of `resim compare --html`: the table and the charts of the first seed, inline.
pub fn render_html(c: &Comparison, charts: &[crate::report::render::Chart]) -> String {
    let escape = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut out = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>resim compare</title></head><body>\n",
    );
    let _ = writeln!(
        out,
        "<h1>{} vs {}</h1>\n<pre>{}</pre>",
        escape(&c.labels.0),
        escape(&c.labels.1),
        escape(&render(c))
    );
    for chart in charts {
        let _ = writeln!(out, "<h2>{}</h2>\n{}", escape(&chart.title), chart.svg);
    }
    out.push_str("</body></html>\n");
    out
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
        "\n  {:<17} {:>18} {:>18} {:>12}  {:<24}",
        "", "A", "B", "B − A", "95% interval of B − A"
    );
    let no_verdicts = c.verdicts.0.is_empty() && c.verdicts.1.is_empty();
    for r in c
        .rows
        .iter()
        .filter(|r| !(no_verdicts && r.name == RECOVERY))
    {
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
            "  {:<17} {:>18} {:>18} {:>12}  {:<24}{mark}",
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
        "  {:<17} {:>18} {:>18}",
        "passed",
        format!("{} of {runs}", c.passed.0),
        format!("{} of {runs}", c.passed.1)
    );
    out.push_str(&notes(c, runs, no_verdicts));
    // The last column is padded; a line ends at its last character.
    out.lines().map(|l| format!("{}\n", l.trim_end())).collect()
}

/// The lines under the table: which runs a partial figure comes from, the verdicts with the
/// spread of recovery times, and the seconds the window rows cover.
fn notes(c: &Comparison, runs: u64, no_verdicts: bool) -> String {
    let mut out = String::new();
    // A figure some runs lack (no successes, no recovery) is the mean of those that have it.
    let verdicts = |v: &BTreeMap<String, u64>| {
        v.iter()
            .map(|(k, n)| format!("{n} {}", k.replace('_', " ")))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for r in c
        .rows
        .iter()
        .filter(|r| r.a.count < runs || r.b.count < runs)
    {
        if r.name != RECOVERY {
            let _ = writeln!(
                out,
                "  {}: from {} of A's {runs} runs and {} of B's (the others have none)",
                r.name, r.a.count, r.b.count
            );
        }
    }
    if !no_verdicts {
        let side = |v: &BTreeMap<String, u64>, spread: Option<(f64, f64)>| match spread {
            Some((lo, hi)) => format!("{} (recovery {lo:.2}s to {hi:.2}s)", verdicts(v)),
            None => verdicts(v),
        };
        let _ = writeln!(
            out,
            "  verdicts: A: {}; B: {}; {RECOVERY} is over the runs that recovered (never degraded counts 0)",
            side(&c.verdicts.0, c.recovery_spread.0),
            side(&c.verdicts.1, c.recovery_spread.1)
        );
    }
    if let Some(line) = stretches_line(&c.windows) {
        out.push_str(&line);
    }
    out
}

/// The note under the table that says which seconds the `trigger` and `after` rows cover
/// (each side's, when they differ).
fn stretches_line(windows: &(Stretches, Stretches)) -> Option<String> {
    let words = |s: &Stretches| {
        let (from, to, after) = (*s)?;
        Some(match after {
            Some(end) => format!("trigger {from}s to {to}s, after {to}s to {end}s"),
            None => format!("trigger {from}s to {to}s"),
        })
    };
    let (a, b) = (words(&windows.0), words(&windows.1));
    let sides = match (a, b) {
        (None, None) => return None,
        (Some(a), Some(b)) if a == b => a,
        (a, b) => format!(
            "A: {}; B: {}",
            a.as_deref().unwrap_or("no trigger that ends"),
            b.as_deref().unwrap_or("no trigger that ends")
        ),
    };
    Some(format!(
        "  trigger and after rows: {sides} (whole buckets, from the first trigger's start to the last one's end, then to the run's last bucket)\n"
    ))
}

/// The two sides a command line names: two files (each with the `--set` overrides), or one
/// file with two of its variants, or with one (against the file as written).
pub fn sides(
    files: &[String],
    variants: &[String],
    sets: &[crate::format::overrides::Override],
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
