//! What `resim tune` writes besides its answer: `--out`, one JSON line per run (the race's,
//! then the margins') and then one per stress level tried, with its two probabilities and
//! their bounds; and `--svg`, the margins drawn like the phase map, a cell per level tried
//! with its runs by how they went and its P(metastable) with the bounds.

use super::super::phase::Class;
use super::super::stats::clopper_pearson;
use super::super::sweep::RunRecord;
use super::TuneRun;
use super::level::{Level, Tally};
use super::render::Tuned;
use serde::Serialize;

/// One line of `resim tune --out` for a run.
#[derive(Serialize)]
struct Line<'a> {
    /// `race` or `margin`.
    stage: &'static str,
    /// The race's round (0 in the margins).
    round: usize,
    /// The candidate's settings.
    candidate: &'a str,
    /// The stress's value, in the margins.
    stress: Option<String>,
    /// The metastability verdict's class.
    class: Option<&'static str>,
    #[serde(flatten)]
    record: RunRecord,
}

/// One line of `resim tune --out` for a stress level: its runs and its two verdicts.
#[derive(Serialize)]
struct LevelLine<'a> {
    /// `level`.
    stage: &'static str,
    /// The candidate's settings.
    candidate: &'a str,
    /// The stress's value.
    stress: String,
    /// Seeds run.
    seeds: u64,
    /// Runs that did not recover.
    metastable: u64,
    /// Runs degraded before the trigger (counted in `p_metastable`).
    degraded: u64,
    /// Runs where an expectation failed.
    expectations_failed: u64,
    /// The share of runs metastable or degraded, and its bounds.
    p_metastable: f64,
    p_metastable_low: f64,
    p_metastable_high: f64,
    /// `holds`, `breaks` or `undecided`.
    stable: &'static str,
    /// The share of runs where an expectation failed, and its bounds.
    p_expectation_fails: f64,
    p_expectation_fails_low: f64,
    p_expectation_fails_high: f64,
    /// `holds`, `breaks` or `undecided`.
    expectations: &'static str,
    /// Each bound's level, one-sided: the confidence shared over the looks.
    bound_level: f64,
}

/// Every run, the race's then the margins', one JSON object a line, numbered in that order;
/// then every level tried, a line each.
pub fn jsonl(t: &Tuned<'_>) -> String {
    let margin_runs = t.margins.map_or(&[][..], |m| &m.runs[..]);
    let all: Vec<&TuneRun> = t.race.runs.iter().chain(margin_runs).collect();
    let stress = t.command.stress();
    let mut out = String::new();
    for (i, r) in all.iter().enumerate() {
        let line = Line {
            stage: if r.stress.is_some() { "margin" } else { "race" },
            round: r.round,
            candidate: &t.candidates[r.candidate].label,
            stress: r.stress.zip(stress).map(|(k, s)| s.value(k)),
            class: r.class.map(|c| match c {
                Class::Stable => "stable",
                Class::Metastable => "metastable",
                Class::Collapsed => "collapsed",
            }),
            record: RunRecord {
                index: i as u64,
                runs: all.len() as u64,
                ..r.record.clone()
            },
        };
        out.push_str(&serde_json::to_string(&line).expect("a line is plain data"));
        out.push('\n');
    }
    if let (Some(margins), Some(stress)) = (t.margins, stress) {
        let alpha = margins.looks.alpha(t.command.confidence);
        for level in margins.levels.values() {
            let tally = &level.tally;
            let (ml, mh) = clopper_pearson(tally.unstable(), tally.runs, alpha);
            let (fl, fh) = clopper_pearson(tally.failed, tally.runs, alpha);
            let line = LevelLine {
                stage: "level",
                candidate: &t.candidates[level.candidate].label,
                stress: stress.value(level.k),
                seeds: tally.runs,
                metastable: tally.metastable,
                degraded: tally.degraded,
                expectations_failed: tally.failed,
                p_metastable: share(tally.unstable(), tally),
                p_metastable_low: ml,
                p_metastable_high: mh,
                stable: level.stable.word(),
                p_expectation_fails: share(tally.failed, tally),
                p_expectation_fails_low: fl,
                p_expectation_fails_high: fh,
                expectations: level.expectations.word(),
                bound_level: 1.0 - alpha,
            };
            out.push_str(&serde_json::to_string(&line).expect("a line is plain data"));
            out.push('\n');
        }
    }
    out
}

fn share(events: u64, tally: &Tally) -> f64 {
    events as f64 / tally.runs.max(1) as f64
}

/// `--svg`: each finalist's margin drawn like the phase map: one row per finalist, one column
/// per stress level tried, each cell split by how its seeds went, with its P(metastable) and
/// the bounds.
pub fn svg(t: &Tuned<'_>) -> Result<String, String> {
    let (Some(margins), Some(stress)) = (t.margins, t.command.stress()) else {
        return Err(format!(
            "{}: --svg draws the margins: give --maximize-margin and --stress",
            t.command.file
        ));
    };
    let mut ks: Vec<u64> = margins.levels.keys().map(|&(_, k)| k).collect();
    ks.sort_unstable();
    ks.dedup();
    let rows: Vec<usize> = margins.margins.iter().map(|m| m.candidate).collect();
    let alpha = margins.looks.alpha(t.command.confidence);
    let levels: Vec<Option<&Level>> = rows
        .iter()
        .flat_map(|&c| ks.iter().map(move |&k| margins.level(c, k)))
        .collect();
    let name = t
        .candidates
        .first()
        .map_or("", |c| c.scenario.name.as_str());
    let data = crate::report::render::charts::heatmap::HeatMap {
        title: format!("Margins of {name}'s finalists"),
        x_name: stress.path.clone(),
        x_values: ks.iter().map(|&k| stress.value(k)).collect(),
        // The values alone: the paths are long, and said once as the axis's name.
        y_name: t
            .command
            .params
            .iter()
            .map(|p| p.path.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        y_values: rows
            .iter()
            .map(|&c| {
                let values: Vec<&str> = t.candidates[c]
                    .sets
                    .iter()
                    .map(|o| o.value.as_str())
                    .collect();
                values.join(", ")
            })
            .collect(),
        classes: [
            "H holds (stable, expectations met)".to_string(),
            "B breaks (metastable, or an expectation failed)".to_string(),
            "D degraded before the trigger".to_string(),
        ],
        cells: levels.iter().map(|l| cell(*l)).collect(),
        labels: levels.iter().map(|l| label(*l, alpha)).collect(),
        note: format!(
            "each cell: its runs by how they went, and P(metastable) with its bounds at {:.1}% a side; blank: not tried",
            100.0 * (1.0 - alpha)
        ),
    };
    crate::report::render::charts::heatmap::heatmap("tune", &data)
        .map(|c| c.svg)
        .map_err(|e| e.to_string())
}

/// A level's runs by how they went: held, broke (metastable, or an expectation failed),
/// degraded before the trigger.
fn cell(level: Option<&Level>) -> [u64; 3] {
    let Some(level) = level else {
        return [0; 3];
    };
    let t = &level.tally;
    let broke = t.broken - t.degraded;
    [t.runs - t.broken, broke, t.degraded]
}

/// `H55 B5` over `8.3% [1.0, 27.0]`: the classes that occurred with their counts, and the
/// level's P(metastable) with its bounds.
fn label(level: Option<&Level>, alpha: f64) -> String {
    let Some(level) = level else {
        return String::new();
    };
    let t = &level.tally;
    let counts = [t.runs - t.broken, t.broken - t.degraded, t.degraded];
    let parts: Vec<String> = counts
        .iter()
        .zip(['H', 'B', 'D'])
        .filter(|(n, _)| **n > 0)
        .map(|(n, l)| format!("{l}{n}"))
        .collect();
    let (low, high) = clopper_pearson(t.unstable(), t.runs, alpha);
    format!(
        "{}\n{:.0}% [{:.0}, {:.0}]",
        parts.join(" "),
        100.0 * share(t.unstable(), t),
        100.0 * low,
        100.0 * high
    )
}
