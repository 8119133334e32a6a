//! What `resim tune` prints: the requirement and objective, the race round by round, the
//! finalists (settings, runs, pass rate with its interval, cost or margin), each stress level
//! the margins tried with its two probabilities and their bounds, the recommendation as
//! `--set` lines with the tie it broke if any, the run that decided it and where the
//! recommendation breaks, each with its replay command. `--out` and `--svg` are [`super::files`].

use super::super::plan::GridAxis;
use super::super::stats::{clopper_pearson, wilson};
use super::choice::{Choice, meets};
use super::level::{Decision, Level};
use super::margin::{Margin, Margins, Search};
use super::race::{Out, Race};
use super::{Candidate, Objective, Stress, Tune};
use crate::format::error::one_line;
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
    /// Candidate `c`'s margin, when it was searched.
    pub fn margin(&self, c: usize) -> Option<&Margin> {
        self.margins?.of(c)
    }

    /// How candidate `c` reads in the tables: each knob by its `short_paths`.
    pub fn short_label(&self, c: usize) -> String {
        let short = short_paths(&self.command.params);
        let words: Vec<String> = self.candidates[c]
            .sets
            .iter()
            .zip(&short)
            .map(|(o, name)| format!("{name}={}", one_line(&o.value)))
            .collect();
        words.join(" ")
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
pub fn text(t: &Tuned<'_>, choice: Option<&Choice>) -> String {
    let recommended = choice.map(|c| c.recommended);
    let mut o = header(t);
    rounds(&mut o, t);
    finalists(&mut o, t, recommended);
    levels(&mut o, t);
    eliminated(&mut o, t);
    answer(&mut o, t, choice);
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
    let _ = writeln!(o, "objective: {}", objective(c));
    if let Some(m) = t.margins {
        let _ = writeln!(o, "levels: {}", looks_text(c, m));
    }
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

/// What the recommendation optimises, in words.
fn objective(c: &Tune) -> String {
    let shown = format!(
        "P(metastable) and P(an expectation fails) are each shown to be at most {} with {} confidence",
        percent(c.threshold),
        percent(c.confidence)
    );
    match (&c.objective, &c.margin_at_least) {
        (Objective::PassRate, _) => "the highest pass rate (out when a sign test on the common seeds says it passes less often than the best, p < 0.05)".to_string(),
        (Objective::Minimize(path), None) => format!("the least {path}"),
        (Objective::Minimize(path), Some(s)) => format!(
            "the least {path} among those that keep a margin of {}={}, where {shown}",
            s.path,
            s.value(0)
        ),
        (Objective::Margin(s), _) => format!(
            "the widest margin: the highest {} in {}..{} (step {}) at which {shown}",
            s.path,
            s.value(0),
            s.value(s.steps),
            trim(&format!("{:.3}", s.step))
        ),
    }
}

/// `seeds 1..5 first, then 10, 20, 40, 60 in all while a verdict is undecided; …`.
fn looks_text(c: &Tune, m: &Margins) -> String {
    let looks = &m.looks.0;
    let later: Vec<String> = looks[1..].iter().map(u64::to_string).collect();
    let more = if later.is_empty() {
        String::new()
    } else {
        format!(
            ", then {} in all while a verdict is undecided",
            later.join(", ")
        )
    };
    format!(
        "seeds {}..{} first{more}; exact (Clopper–Pearson) bounds at {} a side, the {} confidence shared over the {} looks",
        m.seeds.0,
        m.seeds.0 + looks[0] - 1,
        percent(1.0 - m.looks.alpha(c.confidence)),
        percent(c.confidence),
        looks.len()
    )
}

/// `10%`, `95%`, `99.5%`.
fn percent(x: f64) -> String {
    format!("{}%", trim(&format!("{:.3}", 100.0 * x)))
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
    let last = match (&t.command.objective, &t.command.margin_at_least) {
        (Objective::Minimize(_), None) => "cost".to_string(),
        (Objective::Minimize(_), Some(s)) => format!("cost  at {}={}", s.path, s.value(0)),
        (Objective::Margin(_), _) => "margin".to_string(),
        (Objective::PassRate, _) => String::new(),
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
        let cost = || trim(&format!("{:.3}", t.candidates[c].cost.unwrap_or(0.0)));
        let value = match (&t.command.objective, &t.command.margin_at_least) {
            (Objective::Minimize(_), None) => cost(),
            (Objective::Minimize(_), Some(_)) => {
                let at = match t.margin(c) {
                    Some(m) => at_least_text(t, m),
                    None if meets(t, c) => "not tried: a cheaper one holds it".to_string(),
                    None => "not tried: the requirement is not shown".to_string(),
                };
                format!("{:<4}  {at}", cost())
            }
            (Objective::Margin(s), _) => {
                t.margin(c).map_or(String::new(), |m| margin_text(t, s, m))
            }
            (Objective::PassRate, _) => String::new(),
        };
        let mark = match (Some(c) == recommended, meets(t, c)) {
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

/// `holds to 1.5; metastable at 1.6; an expectation fails at 1.6`.
fn margin_text(t: &Tuned<'_>, s: &Stress, m: &Margin) -> String {
    let held = match m.both() {
        Some(k) if k == s.steps => format!("holds to {}, the end of the range", s.value(k)),
        Some(k) => format!("holds to {}", s.value(k)),
        None => format!("holds at no level from {}", s.value(0)),
    };
    let stable = stable_break(t, m).map_or("stable to the end".to_string(), |(words, k)| {
        format!("{words} at {}", s.value(k))
    });
    let expectations = expectations_break(t, m)
        .map_or("expectations hold to the end".to_string(), |(w, k)| {
            format!("{w} at {}", s.value(k))
        });
    format!("{held}; {stable}; {expectations}")
}

/// Where the stability search stopped holding, and how it reads there: `metastable`,
/// `degraded before the trigger` or `stability undecided`.
fn stable_break(t: &Tuned<'_>, m: &Margin) -> Option<(&'static str, u64)> {
    let k = m.stable.fails?;
    let level = t.margins?.level(m.candidate, k)?;
    let words = match (level.stable, level.mostly_degraded()) {
        (Decision::Undecided, _) => "stability undecided",
        (_, true) => "degraded before the trigger",
        _ => "metastable",
    };
    Some((words, k))
}

/// Where the expectations' search stopped holding: `an expectation fails` or `expectations
/// undecided`.
fn expectations_break(t: &Tuned<'_>, m: &Margin) -> Option<(&'static str, u64)> {
    let k = m.expectations.fails?;
    let level = t.margins?.level(m.candidate, k)?;
    let words = match level.expectations {
        Decision::Undecided => "expectations undecided",
        _ => "an expectation fails",
    };
    Some((words, k))
}

/// `holds` or what broke, at the one level of `--margin-at-least`.
fn at_least_text(t: &Tuned<'_>, m: &Margin) -> String {
    let Some(level) = t.margins.and_then(|all| all.level(m.candidate, 0)) else {
        return String::new();
    };
    if m.both().is_some() {
        return format!("holds ({} seeds)", level.tally.runs);
    }
    let mut why = Vec::new();
    match (level.stable, level.mostly_degraded()) {
        (Decision::Holds, _) => {}
        (Decision::Undecided, _) => why.push("stability undecided"),
        (Decision::Breaks, true) => why.push("degraded before the trigger"),
        (Decision::Breaks, false) => why.push("metastable"),
    }
    match level.expectations {
        Decision::Holds => {}
        Decision::Undecided => why.push("expectations undecided"),
        Decision::Breaks => why.push("an expectation fails"),
    }
    format!(
        "does not hold: {} ({} seeds)",
        why.join(", "),
        level.tally.runs
    )
}

/// Each level the margins tried, per finalist: its seeds, P(metastable) and P(an expectation
/// fails) with the bounds the verdicts read, and the verdicts.
fn levels(o: &mut String, t: &Tuned<'_>) {
    let (Some(all), Some(stress)) = (t.margins, t.command.stress()) else {
        return;
    };
    if all.margins.is_empty() {
        return;
    }
    let threshold = percent(t.command.threshold);
    let _ = writeln!(
        o,
        "levels tried: holds when the bound shows P at most {threshold}, breaks when it shows P above {threshold}, undecided when it shows neither after {} seeds",
        all.looks.max()
    );
    let name = stress.path.rsplit('.').next().unwrap_or(&stress.path);
    for m in &all.margins {
        let _ = writeln!(o, "{}", t.short_label(m.candidate));
        level_table(o, t, (all, stress, name), m.candidate);
    }
    o.push('\n');
}

/// Candidate `c`'s levels, a row each, with a line under a level that had degraded runs.
fn level_table(
    o: &mut String,
    t: &Tuned<'_>,
    (all, stress, name): (&Margins, &Stress, &str),
    c: usize,
) {
    let alpha = all.looks.alpha(t.command.confidence);
    let rows: Vec<&Level> = all.levels.values().filter(|l| l.candidate == c).collect();
    let cells: Vec<[String; 4]> = rows
        .iter()
        .map(|l| {
            let n = l.tally.runs;
            [
                stress.value(l.k),
                n.to_string(),
                probability(l.tally.unstable(), n, alpha, l.stable),
                probability(l.tally.failed, n, alpha, l.expectations),
            ]
        })
        .collect();
    let heads = [
        name,
        "seeds",
        "P(metastable) [bounds]",
        "P(an expectation fails) [bounds]",
    ];
    let w: Vec<usize> = (0..4)
        .map(|i| {
            cells
                .iter()
                .map(|c| c[i].chars().count())
                .chain([heads[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let row = |c: [&str; 4]| {
        let line = format!(
            "  {:>w0$}  {:>w1$}  {:<w2$}  {}",
            c[0],
            c[1],
            c[2],
            c[3],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2]
        );
        line.trim_end().to_string()
    };
    let _ = writeln!(o, "{}", row(heads));
    for (l, c) in rows.iter().zip(&cells) {
        let _ = writeln!(o, "{}", row([&c[0], &c[1], &c[2], &c[3]]));
        if l.tally.degraded > 0 {
            let pad = w[0] + w[1] + 2;
            let _ = writeln!(o, "  {:>pad$}  {}", "", degraded_text(t, l));
        }
    }
}

/// `8.3% [1.0, 27.0] undecided`: `events` of `runs` with the bounds at `alpha` a side.
fn probability(events: u64, runs: u64, alpha: f64, decision: Decision) -> String {
    let (low, high) = clopper_pearson(events, runs, alpha);
    format!(
        "{:.1}% [{:.1}, {:.1}] {}",
        100.0 * events as f64 / runs.max(1) as f64,
        100.0 * low,
        100.0 * high,
        decision.word()
    )
}

/// `3 of 5 degraded before the trigger (counted as metastable); before it, the level's runs
/// succeeded 79.2% on average, 100.0% as the file is`.
fn degraded_text(t: &Tuned<'_>, l: &Level) -> String {
    let mut text = format!(
        "{} of {} degraded before the trigger (counted as metastable)",
        l.tally.degraded, l.tally.runs
    );
    if let Some(b) = l.tally.baseline_mean() {
        let _ = write!(
            text,
            "; before it, the level's runs succeeded {:.1}% on average",
            100.0 * b
        );
        let file = t
            .race
            .runs
            .iter()
            .filter(|r| r.candidate == l.candidate)
            .filter_map(|r| r.baseline)
            .fold((0.0, 0u64), |(s, n), b| (s + b, n + 1));
        if file.1 > 0 {
            let _ = write!(
                text,
                ", {:.1}% as the file is",
                100.0 * file.0 / file.1 as f64
            );
        }
    }
    text
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

fn answer(o: &mut String, t: &Tuned<'_>, choice: Option<&Choice>) {
    let recommended = choice.map(|c| c.recommended);
    match choice {
        Some(c) => {
            let _ = writeln!(o, "recommended: {}", t.candidates[c.recommended].label);
            for s in &t.candidates[c.recommended].sets {
                let _ = writeln!(o, "  --set '{s}'");
            }
            if let (Some(rule), false) = (c.rule, c.tied.is_empty()) {
                let others: Vec<String> = c.tied.iter().map(|&o| t.short_label(o)).collect();
                let why = if c.by_order {
                    " (nothing measured tells them apart)"
                } else {
                    ""
                };
                let _ = writeln!(
                    o,
                    "  a tie on {} with {}; broken by {rule}{why}",
                    c.tie,
                    others.join(", ")
                );
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
        && let Some(m) = t.margin(r)
    {
        breaks(o, t, s, m);
    }
}

/// Where the recommendation turns metastable (or degraded) and where an expectation fails,
/// each with the level's figures and the replay of its first run that did not hold.
fn breaks(o: &mut String, t: &Tuned<'_>, s: &Stress, m: &Margin) {
    let Some(all) = t.margins else {
        return;
    };
    let alpha = all.looks.alpha(t.command.confidence);
    let mut say = |words: &str, search: &Search, events: fn(&Level) -> (u64, Option<&String>)| {
        let Some(level) = search.fails.and_then(|k| all.level(m.candidate, k)) else {
            return;
        };
        let (n, replay) = events(level);
        let runs = level.tally.runs;
        let (low, high) = clopper_pearson(n, runs, alpha);
        let _ = writeln!(
            o,
            "where {words}: {}={}, on {n} of {runs} seeds (P {:.1}% [{:.1}, {:.1}])",
            s.path,
            s.value(level.k),
            100.0 * n as f64 / runs.max(1) as f64,
            100.0 * low,
            100.0 * high
        );
        if let Some(replay) = replay {
            let _ = writeln!(o, "  {replay}");
        }
    };
    let stable = match stable_break(t, m) {
        Some(("degraded before the trigger", _)) => "it is degraded before the trigger",
        Some(("stability undecided", _)) => "its stability is undecided",
        _ => "it turns metastable",
    };
    say(stable, &m.stable, |l| {
        (l.tally.unstable(), l.tally.first_unstable.as_ref())
    });
    let failed = match expectations_break(t, m) {
        Some(("expectations undecided", _)) => "its expectations are undecided",
        _ => "an expectation fails",
    };
    say(failed, &m.expectations, |l| {
        (l.tally.failed, l.tally.first_failed.as_ref())
    });
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
