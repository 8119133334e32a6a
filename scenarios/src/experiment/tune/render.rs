//! What `resim tune` prints: the requirement and objective, the race round by round, the
//! finalists (settings, runs, pass rate with its interval, cost or margin), the recommendation
//! as `--set` lines, and the run that decided it, with its replay command; and `--out`, one
//! JSON line per run.

use super::super::phase::Class;
use super::super::plan::GridAxis;
use super::super::stats::wilson;
use super::margin::{Margin, Margins};
use super::race::{Out, Race, meets_requirement};
use super::{Candidate, Objective, Stress, Tune};
use crate::format::error::one_line;
use serde::Serialize;
use std::fmt::Write as _;

/// The most candidates the list of those out names.
const OUT_SHOWN_MAX: usize = 20;

/// Everything a tune found.
pub struct Tuned<'a> {
    /// The command.
    pub command: &'a Tune,
    /// The candidates.
    pub candidates: &'a [Candidate],
    /// The race.
    pub race: &'a Race,
    /// The margins, with `--maximize-margin`.
    pub margins: Option<&'a Margins>,
}

impl Tuned<'_> {
    fn margin(&self, c: usize) -> Option<&Margin> {
        self.margins?.margins.iter().find(|m| m.candidate == c)
    }

    /// How candidate `c` reads in the tables: each knob by its [`short_paths`].
    fn short_label(&self, c: usize) -> String {
        let short = short_paths(&self.command.params);
        let words: Vec<String> = self.candidates[c]
            .sets
            .iter()
            .zip(&short)
            .map(|(o, name)| format!("{name}={}", one_line(&o.value)))
            .collect();
        words.join(" ")
    }

    fn meets(&self, c: usize) -> bool {
        let (runs, passed) = self.race.tally(c);
        meets_requirement(passed, runs, self.command.pass_rate)
    }
}

/// Each knob's shortest path suffix, in whole segments, that no other knob's path ends with
/// (`max_attempts` for `clients.users.call.stack[0].max_attempts`), so that the tables stay
/// narrow; the header says once what each stands for.
fn short_paths(params: &[GridAxis]) -> Vec<String> {
    let paths: Vec<&str> = params.iter().map(|p| p.path.as_str()).collect();
    paths
        .iter()
        .map(|&path| {
            let segments: Vec<&str> = path.split('.').collect();
            (1..=segments.len())
                .map(|n| segments[segments.len() - n..].join("."))
                .find(|suffix| {
                    !paths.iter().any(|&other| {
                        other != path && (other == suffix || other.ends_with(&format!(".{suffix}")))
                    })
                })
                .unwrap_or_else(|| path.to_string())
        })
        .collect()
}

/// The recommended candidate: among the finalists that meet the requirement, the cheapest
/// (`--minimize`), the one with the widest margin (then the one that failed on fewer seeds
/// where it broke), or the one that passed most; ties go to the one that passed most, then to
/// the first in the order of the `--param` values.
pub fn recommended(t: &Tuned<'_>) -> Option<usize> {
    let ok: Vec<usize> = t
        .race
        .finalists()
        .into_iter()
        .filter(|&c| t.meets(c))
        .collect();
    match &t.command.objective {
        Objective::Minimize(_) => ok.into_iter().min_by(|&a, &b| {
            let cost = |c: usize| t.candidates[c].cost.expect("a cost for each candidate");
            cost(a).total_cmp(&cost(b)).then(a.cmp(&b))
        }),
        Objective::Margin(_) => ok.into_iter().max_by_key(|&c| {
            let m = t.margin(c);
            let held = m.and_then(|m| m.holds).map_or(0, |k| k + 1);
            let failed = m.and_then(|m| m.breaks.as_ref()).map_or(0, |b| b.failed);
            let passed = t.race.tally(c).1;
            (
                held,
                std::cmp::Reverse(failed),
                passed,
                std::cmp::Reverse(c),
            )
        }),
        Objective::PassRate => ok
            .into_iter()
            .max_by_key(|&c| (t.race.tally(c).1, std::cmp::Reverse(c))),
    }
}

/// The candidate whose elimination decided the answer: with `--minimize`, the costliest of
/// those cheaper than the recommendation that are out; otherwise (or when none is), the last
/// one out (ties: the one that passed most, then the first).
fn decisive(t: &Tuned<'_>, recommended: Option<usize>) -> Option<usize> {
    let out: Vec<usize> = (0..t.candidates.len())
        .filter(|&c| t.race.out[c].is_some())
        .collect();
    let last_out = |list: &[usize]| {
        list.iter().copied().max_by_key(|&c| {
            let round = t.race.out[c].as_ref().map_or(0, |(r, _)| *r);
            (round, t.race.tally(c).1, std::cmp::Reverse(c))
        })
    };
    if let (Objective::Minimize(_), Some(r)) = (&t.command.objective, recommended) {
        let cost = |c: usize| t.candidates[c].cost.expect("a cost for each candidate");
        let cheaper: Vec<usize> = out.iter().copied().filter(|&c| cost(c) < cost(r)).collect();
        if let Some(top) = cheaper.iter().map(|&c| cost(c)).max_by(f64::total_cmp) {
            let costliest: Vec<usize> = cheaper.into_iter().filter(|&c| cost(c) == top).collect();
            return last_out(&costliest);
        }
    }
    last_out(&out)
}

/// The printed answer.
pub fn text(t: &Tuned<'_>, recommended: Option<usize>) -> String {
    let mut o = header(t);
    rounds(&mut o, t);
    finalists(&mut o, t, recommended);
    eliminated(&mut o, t);
    answer(&mut o, t, recommended);
    o
}

fn header(t: &Tuned<'_>) -> String {
    let c = t.command;
    let mut o = String::new();
    let name = t
        .candidates
        .first()
        .map_or("", |c| c.scenario.name.as_str());
    let _ = writeln!(
        o,
        "tune of {name}: {} candidates, seeds {}..{}, budget {} runs",
        t.candidates.len(),
        c.seeds.0,
        c.seeds.1,
        t.race.budget
    );
    let requirement = if c.pass_rate >= 1.0 {
        "every seed passes its expectations".to_string()
    } else {
        format!(
            "a pass rate of at least {}% (out when its 95% Wilson interval ends below; meets it when the interval starts above)",
            100.0 * c.pass_rate
        )
    };
    let _ = writeln!(o, "requirement: {requirement}");
    let objective = match &c.objective {
        Objective::PassRate => "the highest pass rate (out when a sign test on the common seeds says it passes less often than the best, p < 0.05)".to_string(),
        Objective::Minimize(path) => format!("the least {path}"),
        Objective::Margin(s) => format!(
            "the widest margin: the highest {} in {}..{} (step {}) at which every expectation holds and the metastability verdict is stable, on seeds {}..{}",
            s.path,
            s.value(0),
            s.value(s.steps),
            trim(&format!("{:.3}", s.step)),
            t.margins.map_or(0, |m| m.seeds.0),
            t.margins.map_or(0, |m| m.seeds.1)
        ),
    };
    let _ = writeln!(o, "objective: {objective}");
    let named: Vec<String> = short_paths(&c.params)
        .iter()
        .zip(&c.params)
        .filter(|(short, p)| **short != p.path)
        .map(|(short, p)| format!("{short} is {}", p.path))
        .collect();
    if !named.is_empty() {
        let _ = writeln!(o, "knobs in the tables: {}", named.join(", "));
    }
    o.push('\n');
    o
}

fn trim(text: &str) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text.to_string()
    }
}

fn rounds(o: &mut String, t: &Tuned<'_>) {
    let _ = writeln!(o, "round  seeds         candidates  out");
    for (i, r) in t.race.rounds.iter().enumerate() {
        let out: Vec<String> = r.out.iter().map(|&c| t.short_label(c)).collect();
        let out = if out.is_empty() {
            "–".to_string()
        } else if out.len() > OUT_SHOWN_MAX {
            format!("{} candidates", out.len())
        } else {
            out.join(", ")
        };
        let seeds = format!("{}..{}", r.seeds.0, r.seeds.1);
        let _ = writeln!(o, "{:>5}  {seeds:<12}  {:>10}  {out}", i + 1, r.candidates);
    }
    let runs = t.race.runs.len();
    let margin = t.margins.map_or(String::new(), |m| {
        format!(", then {} to find the margins", m.runs.len())
    });
    let _ = writeln!(o, "{runs} runs in the race{margin}\n");
}

fn finalists(o: &mut String, t: &Tuned<'_>, recommended: Option<usize>) {
    let list = t.race.finalists();
    if list.is_empty() {
        let _ = writeln!(o, "no finalist: every candidate is out\n");
        return;
    }
    let width = list
        .iter()
        .map(|&c| t.short_label(c).chars().count())
        .max()
        .unwrap_or(0)
        .max(8);
    let last = match &t.command.objective {
        Objective::Minimize(_) => "cost",
        Objective::Margin(_) => "margin",
        Objective::PassRate => "",
    };
    let header = format!(
        "{:<width$}  {:>5}  {:<22}  {last}",
        "finalist", "runs", "pass rate [95%]"
    );
    let _ = writeln!(o, "{}", header.trim_end());
    for c in list {
        let (runs, passed) = t.race.tally(c);
        let (lo, hi) = wilson(passed, runs);
        let rate = format!(
            "{:.1}% [{:.1}, {:.1}]",
            100.0 * passed as f64 / runs as f64,
            100.0 * lo,
            100.0 * hi
        );
        let value = match &t.command.objective {
            Objective::Minimize(_) => trim(&format!("{:.3}", t.candidates[c].cost.unwrap_or(0.0))),
            Objective::Margin(s) => t.margin(c).map_or(String::new(), |m| margin_text(s, m)),
            Objective::PassRate => String::new(),
        };
        let mark = match (Some(c) == recommended, t.meets(c)) {
            (true, _) => "  ← recommended",
            (false, true) => "",
            (false, false) => "  (requirement not yet shown: give more seeds or budget)",
        };
        let label = t.short_label(c);
        let line = format!("{label:<width$}  {runs:>5}  {rate:<22}  {value}{mark}");
        let _ = writeln!(o, "{}", line.trim_end());
    }
    o.push('\n');
}

/// `holds 2400/s, breaks at 2500/s: metastable on 3 of 5 seeds`.
fn margin_text(s: &Stress, m: &Margin) -> String {
    let holds = m.holds.map(|k| format!("holds {}", s.value(k)));
    let breaks = m.breaks.as_ref().map(|b| {
        format!(
            "breaks at {}: {} on {} of {} seeds",
            s.value(b.k),
            class_name(Some(b.class)),
            b.failed,
            b.tried
        )
    });
    match (holds, breaks) {
        (Some(h), Some(b)) => format!("{h}, {b}"),
        (Some(h), None) => format!("{h} (the whole range)"),
        (None, Some(b)) => b,
        (None, None) => "–".to_string(),
    }
}

/// A class as the table says it; a broken run whose verdict is stable failed an expectation.
fn class_name(c: Option<Class>) -> &'static str {
    match c {
        Some(Class::Stable) => "stable (an expectation failed)",
        Some(Class::Metastable) => "metastable",
        Some(Class::Collapsed) => "collapsed",
        None => "no verdict",
    }
}

fn eliminated(o: &mut String, t: &Tuned<'_>) {
    let out: Vec<usize> = (0..t.candidates.len())
        .filter(|&c| t.race.out[c].is_some())
        .collect();
    if out.is_empty() {
        return;
    }
    let _ = writeln!(o, "out ({}):", out.len());
    for &c in out.iter().take(OUT_SHOWN_MAX) {
        let _ = writeln!(o, "  {}: {}", t.candidates[c].label, why_out(t, c));
    }
    if out.len() > OUT_SHOWN_MAX {
        let _ = writeln!(
            o,
            "  and {} more (every run is in --out)",
            out.len() - OUT_SHOWN_MAX
        );
    }
    o.push('\n');
}

fn why_out(t: &Tuned<'_>, c: usize) -> String {
    let (round, why) = t.race.out[c].as_ref().expect("a candidate that is out");
    let (runs, passed) = t.race.tally(c);
    match why {
        Out::Requirement { seed } => {
            format!("after round {round}, {passed} of {runs} seeds passed; seed {seed} failed")
        }
        Out::Worse { than, p, seed } => format!(
            "after round {round}, passes less often than {} (sign test p = {p:.4}); seed {seed} failed where it passed",
            t.candidates[*than].label
        ),
    }
}

fn answer(o: &mut String, t: &Tuned<'_>, recommended: Option<usize>) {
    match recommended {
        Some(r) => {
            let _ = writeln!(o, "recommended: {}", t.candidates[r].label);
            for s in &t.candidates[r].sets {
                let _ = writeln!(o, "  --set '{s}'");
            }
        }
        None => {
            let _ = writeln!(
                o,
                "no candidate meets the requirement on the seeds run; widen the --param values, or give more seeds (--seeds) or runs (--budget)"
            );
        }
    }
    if let Some(d) = decisive(t, recommended) {
        let seed = t.race.out[d].as_ref().expect("out").1.seed();
        let _ = writeln!(
            o,
            "decisive run: {} is out: {}",
            t.candidates[d].label,
            why_out(t, d)
        );
        let _ = writeln!(
            o,
            "  {}",
            t.race.replay(d, seed).expect("the race ran that seed")
        );
    }
    if let (Some(r), Objective::Margin(s)) = (recommended, &t.command.objective)
        && let Some(b) = t.margin(r).and_then(|m| m.breaks.as_ref())
    {
        let _ = writeln!(
            o,
            "where it breaks: {} at {}={}",
            class_name(Some(b.class)),
            s.path,
            s.value(b.k)
        );
        let _ = writeln!(o, "  {}", b.replay);
    }
}

/// One line of `resim tune --out`.
#[derive(Serialize)]
struct Line<'a> {
    /// `race` or `margin`.
    stage: &'static str,
    /// The race's round (0 in the margin's bisection).
    round: usize,
    /// The candidate's settings.
    candidate: &'a str,
    /// The stress's value, in the bisection.
    stress: Option<String>,
    /// The metastability verdict's class.
    class: Option<&'static str>,
    #[serde(flatten)]
    record: super::super::sweep::RunRecord,
}

/// Every run, the race's then the bisection's, one JSON object a line, numbered in that order.
pub fn jsonl(t: &Tuned<'_>) -> String {
    let margin_runs = t.margins.map_or(&[][..], |m| &m.runs[..]);
    let all: Vec<&super::TuneRun> = t.race.runs.iter().chain(margin_runs).collect();
    let stress = match &t.command.objective {
        Objective::Margin(s) => Some(s),
        _ => None,
    };
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
            record: super::super::sweep::RunRecord {
                index: i as u64,
                runs: all.len() as u64,
                ..r.record.clone()
            },
        };
        out.push_str(&serde_json::to_string(&line).expect("a line is plain data"));
        out.push('\n');
    }
    out
}

/// `--svg`: each finalist's margin drawn like the phase map: one row per finalist, one column
/// per stress the bisection tried, each cell split by how its seeds went.
pub fn svg(t: &Tuned<'_>) -> Result<String, String> {
    let (Some(margins), Objective::Margin(stress)) = (t.margins, &t.command.objective) else {
        return Err(format!(
            "{}: --svg draws the margins: give --maximize-margin and --stress",
            t.command.file
        ));
    };
    let mut ks: Vec<u64> = margins.runs.iter().filter_map(|r| r.stress).collect();
    ks.sort_unstable();
    ks.dedup();
    let rows: Vec<usize> = margins.margins.iter().map(|m| m.candidate).collect();
    let cells = margin_cells(margins, &rows, &ks);
    let labels = cells.iter().map(cell_label).collect();
    let name = t
        .candidates
        .first()
        .map_or("", |c| c.scenario.name.as_str());
    let data = crate::report::render::charts::heatmap::HeatMap {
        title: format!(
            "Margins of {name}'s finalists on seeds {}..{}",
            margins.seeds.0, margins.seeds.1
        ),
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
            "H holds (expectations met, stable)".to_string(),
            "B breaks (metastable, or an expectation failed)".to_string(),
            "C collapsed (unhealthy before the trigger)".to_string(),
        ],
        cells,
        labels,
        note: "only the stresses the bisection tried; blank cells were not run".to_string(),
    };
    crate::report::render::charts::heatmap::heatmap("tune", &data)
        .map(|c| c.svg)
        .map_err(|e| e.to_string())
}

/// `H2 B1`: the classes of a cell that occurred, with their counts.
fn cell_label(counts: &[u64; 3]) -> String {
    let parts: Vec<String> = counts
        .iter()
        .zip(['H', 'B', 'C'])
        .filter(|(n, _)| **n > 0)
        .map(|(n, l)| format!("{l}{n}"))
        .collect();
    parts.join(" ")
}

/// Per finalist (row) and stress (column), its margin runs by how they went: held, broke
/// (metastable, or an expectation failed), collapsed.
fn margin_cells(margins: &Margins, rows: &[usize], ks: &[u64]) -> Vec<[u64; 3]> {
    let mut cells: Vec<[u64; 3]> = Vec::with_capacity(rows.len() * ks.len());
    for &c in rows {
        for &k in ks {
            let mut counts = [0u64; 3];
            for r in margins
                .runs
                .iter()
                .filter(|r| r.candidate == c && r.stress == Some(k))
            {
                let slot = match r.class {
                    Some(Class::Stable) if r.passed() => 0,
                    Some(Class::Stable | Class::Metastable) => 1,
                    Some(Class::Collapsed) | None => 2,
                };
                counts[slot] += 1;
            }
            cells.push(counts);
        }
    }
    cells
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::overrides::Flag;

    fn shortened(paths: &[&str]) -> Vec<String> {
        let params: Vec<GridAxis> = paths
            .iter()
            .map(|p| GridAxis {
                path: p.to_string(),
                values: vec!["1".to_string()],
                flag: Flag::Param,
            })
            .collect();
        short_paths(&params)
    }

    #[test]
    fn each_knob_is_named_by_its_shortest_unambiguous_suffix() {
        assert_eq!(shortened(&["services.api.workers"]), ["workers"]);
        assert_eq!(
            shortened(&[
                "clients.users.call.stack[0].max_attempts",
                "clients.users.call.stack[0].budget.budget_percent"
            ]),
            ["max_attempts", "budget_percent"]
        );
        assert_eq!(
            shortened(&["services.api.workers", "services.db.workers", "duration"]),
            ["api.workers", "db.workers", "duration"]
        );
    }
}
