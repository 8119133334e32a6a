//! The margin: for each finalist of the race, the highest stress on the `--stress` grid at
//! which it is shown, with the stated confidence, to hold, read two ways ([`Search`]):
//! **stability** (P(metastable or degraded before the trigger) ≤ `--threshold`) and
//! **expectations** (P(an expectation fails) ≤ `--threshold`). A level's seeds and its two
//! verdicts are a [`Level`]; a level takes more seeds while one of its verdicts is undecided,
//! up to `--margin-seeds-max` ([`super::level`]).
//!
//! Each of the two is a bisection: the ends of the grid first, then the midpoint between the
//! highest level shown to hold and the lowest not shown to (one that breaks, or stays
//! undecided), so that the margin is a level the evidence supports. Both searches of every
//! finalist go in step: each step is the set of levels they ask for, run in batches of seeds
//! until each of them is settled, all finalists and levels in one parallel batch at a time.
//! A level settled once is never run again, so both verdicts of a level rest on the same
//! seeds. Every level is a point `k` of the grid (`0..=steps`, the midpoint of two rounded
//! down) and every seed is from the first of `--seeds` on, which is what lets a split tune
//! make every run the searches could ask for beforehand.
//!
//! With `--minimize PATH --margin-at-least PATH=VALUE` the grid is that one value
//! ([`at_least`]): the finalists are tried there in order of cost, the cheapest first, until
//! some hold it.

use super::level::{Decision, Level, Looks, Tally};
use super::race::Race;
use super::{Candidate, Job, Runner, Stress, Tune, TuneRun};
use crate::format::limits::RunLimits;
use crate::format::overrides::{LOAD, Overrides, Source, load_overrides};
use crate::format::schema::Scenario;
use crate::format::verdict::window;
use std::collections::BTreeMap;

/// The first batch of seeds of a level, unless `--margin-seeds` says otherwise.
pub const MARGIN_SEEDS: u64 = 5;

/// The most seeds of a level, unless `--margin-seeds-max` says otherwise: enough to show that
/// a level with no failure holds at the default threshold and confidence (60 seeds put the
/// upper bound of none at 7.4%, at 99% a side over the 5 looks).
pub const MARGIN_SEEDS_MAX: u64 = 60;

/// The most a level's P(metastable) or P(an expectation fails) may be to hold, unless
/// `--threshold` says otherwise.
pub const THRESHOLD: f64 = 0.1;

/// The confidence of each verdict, unless `--confidence` says otherwise.
pub const CONFIDENCE: f64 = 0.95;

/// The seeds a level may run: from the first of `--seeds`, `--margin-seeds-max` of them.
pub fn seeds(command: &Tune) -> (u64, u64) {
    let first = command.seeds.0;
    (first, first + command.margin_seeds_max.max(1) - 1)
}

/// The looks of `command`'s levels.
pub fn looks(command: &Tune) -> Looks {
    Looks::of(command.margin_seeds, command.margin_seeds_max)
}

/// One of a finalist's two searches: the highest level shown to hold, and the lowest level
/// above it not shown to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Search {
    /// The highest grid point shown to hold (`None`: not even the first).
    pub holds: Option<u64>,
    /// The lowest grid point above it that did not (`None`: it held to the end of the grid).
    pub fails: Option<u64>,
    /// Whether the ends of the grid have been tried.
    started: bool,
}

impl Search {
    /// The levels it needs next (none when it is done).
    fn wants(&self, steps: u64) -> Vec<u64> {
        if !self.started {
            return if steps == 0 { vec![0] } else { vec![0, steps] };
        }
        match (self.holds, self.fails) {
            (Some(lo), Some(hi)) if hi - lo > 1 => vec![lo + (hi - lo) / 2],
            _ => Vec::new(),
        }
    }

    /// Takes what the levels it wanted showed (`held(k)`).
    fn learn(&mut self, steps: u64, held: impl Fn(u64) -> bool) {
        if !self.started {
            self.started = true;
            if !held(0) {
                self.fails = Some(0);
            } else if held(steps) {
                self.holds = Some(steps);
            } else {
                (self.holds, self.fails) = (Some(0), Some(steps));
            }
            return;
        }
        if let (Some(lo), Some(hi)) = (self.holds, self.fails)
            && hi - lo > 1
        {
            let mid = lo + (hi - lo) / 2;
            if held(mid) {
                self.holds = Some(mid);
            } else {
                self.fails = Some(mid);
            }
        }
    }
}

/// A finalist's margin, read both ways.
#[derive(Debug, Clone, PartialEq)]
pub struct Margin {
    /// The candidate.
    pub candidate: usize,
    /// Stability: metastable or degraded at most the threshold.
    pub stable: Search,
    /// Expectations: a failure at most the threshold.
    pub expectations: Search,
}

impl Margin {
    /// The highest level at which both hold (`None`: they do not both hold at the first).
    pub fn both(&self) -> Option<u64> {
        self.stable
            .holds
            .zip(self.expectations.holds)
            .map(|(a, b)| a.min(b))
    }
}

/// Every finalist's margin, the levels tried and the runs made to find them.
#[derive(Debug, Clone)]
pub struct Margins {
    /// In the order of the finalists (those tried, with `--margin-at-least`).
    pub margins: Vec<Margin>,
    /// Every level tried, by candidate and grid point.
    pub levels: BTreeMap<(usize, u64), Level>,
    /// The seeds a level may run.
    pub seeds: (u64, u64),
    /// When a level is judged.
    pub looks: Looks,
    /// Every run, in the order they were made.
    pub runs: Vec<TuneRun>,
}

impl Margins {
    /// The margin of candidate `c`, when it was tried.
    pub fn of(&self, c: usize) -> Option<&Margin> {
        self.margins.iter().find(|m| m.candidate == c)
    }

    /// Candidate `c`'s level at grid point `k`, when it was tried.
    pub fn level(&self, c: usize, k: u64) -> Option<&Level> {
        self.levels.get(&(c, k))
    }
}

/// Checks, before anything runs, the margin's settings and that each candidate at the lowest
/// stress reads, validates and has a metastability verdict.
pub fn check(
    command: &Tune,
    stress: &Stress,
    candidates: &[Candidate],
    (source, limits): (&Source, &RunLimits),
) -> Result<(), String> {
    let file = &command.file;
    let ratio = |x: f64| x > 0.0 && x < 1.0;
    if !ratio(command.threshold) {
        return Err(format!(
            "{file}: --threshold {}: a probability above 0 and below 1, e.g. 0.1",
            command.threshold
        ));
    }
    if !ratio(command.confidence) {
        return Err(format!(
            "{file}: --confidence {}: a probability above 0 and below 1, e.g. 0.95",
            command.confidence
        ));
    }
    if command.margin_seeds > command.margin_seeds_max {
        return Err(format!(
            "{file}: --margin-seeds {} is more than --margin-seeds-max {}; the first batch is part of the most",
            command.margin_seeds, command.margin_seeds_max
        ));
    }
    reachable(command)?;
    let checked = source.check(limits).map_err(|e| e.to_string())?;
    for c in candidates {
        stressed(command, c, stress, 0, (source, &checked, limits))?;
    }
    Ok(())
}

/// An error when even a level without a failure could not be shown to hold within
/// `--margin-seeds-max`: the margin would be nothing whatever the runs show.
fn reachable(command: &Tune) -> Result<(), String> {
    let looks = looks(command);
    let alpha = looks.alpha(command.confidence);
    if Decision::of(0, looks.max(), command.threshold, alpha) == Decision::Holds {
        return Ok(());
    }
    // The seeds a clean level needs at the last look, and the most that gives that look.
    let need = |max: u64| {
        let looks = Looks::of(command.margin_seeds, max);
        Decision::of(0, max, command.threshold, looks.alpha(command.confidence)) == Decision::Holds
    };
    let enough = (looks.max()..=1_000_000).find(|&m| need(m));
    Err(format!(
        "{}: --threshold {} with --confidence {}: a level without a single failure holds only after {}, more than --margin-seeds-max {}; give --margin-seeds-max {}, a higher threshold or a lower confidence",
        command.file,
        command.threshold,
        command.confidence,
        enough.map_or("more than a million seeds".to_string(), |m| format!(
            "{m} seeds"
        )),
        command.margin_seeds_max,
        enough.map_or("more".to_string(), |m| m.to_string())
    ))
}

/// The search's context: the command, the stress, the candidates, the scenario as read, the
/// runner, and each candidate's baseline success ratio as the file is (from its race runs).
pub struct Context<'a> {
    /// The command.
    pub command: &'a Tune,
    /// The stress.
    pub stress: &'a Stress,
    /// The candidates.
    pub candidates: &'a [Candidate],
    /// The scenario's source, checked, and the limits.
    pub read: (&'a Source, &'a Scenario, &'a RunLimits),
    /// The runner.
    pub runner: &'a Runner<'a>,
    /// Per candidate, the least baseline success ratio a run may have before it counts as
    /// degraded: the verdict's `healthy_ratio` times its race runs' mean baseline.
    pub healthy_min: Vec<Option<f64>>,
}

impl<'a> Context<'a> {
    /// The context of `command`'s margins after `race`.
    pub fn new(
        command: &'a Tune,
        stress: &'a Stress,
        candidates: &'a [Candidate],
        race: &Race,
        read: (&'a Source, &'a Scenario, &'a RunLimits),
        runner: &'a Runner<'a>,
    ) -> Context<'a> {
        let healthy_min = candidates
            .iter()
            .enumerate()
            .map(|(c, candidate)| {
                let mut tally = Tally::default();
                for r in race.runs.iter().filter(|r| r.candidate == c) {
                    tally.add(r, None);
                }
                tally
                    .baseline_mean()
                    .map(|b| b * candidate.scenario.verdict.healthy_ratio)
            })
            .collect();
        Context {
            command,
            stress,
            candidates,
            read,
            runner,
            healthy_min,
        }
    }
}

/// No level tried yet.
pub fn empty(command: &Tune) -> Margins {
    Margins {
        margins: Vec::new(),
        levels: BTreeMap::new(),
        seeds: seeds(command),
        looks: looks(command),
        runs: Vec::new(),
    }
}

/// Searches the margins of `who` (finalists) on the grid, into `all`.
pub fn search(cx: &Context<'_>, who: &[usize], all: &mut Margins) -> Result<(), String> {
    let first = all.margins.len();
    all.margins.extend(who.iter().map(|&c| Margin {
        candidate: c,
        stable: Search::default(),
        expectations: Search::default(),
    }));
    let steps = cx.stress.steps;
    loop {
        let mut wanted: Vec<(usize, u64)> = Vec::new();
        for m in &all.margins[first..] {
            for k in m
                .stable
                .wants(steps)
                .into_iter()
                .chain(m.expectations.wants(steps))
            {
                wanted.push((m.candidate, k));
            }
        }
        wanted.sort_unstable();
        wanted.dedup();
        if wanted.is_empty() {
            return Ok(());
        }
        settle(cx, &wanted, all)?;
        let levels = &all.levels;
        for m in &mut all.margins[first..] {
            let c = m.candidate;
            m.stable
                .learn(steps, |k| levels[&(c, k)].stable == Decision::Holds);
            m.expectations
                .learn(steps, |k| levels[&(c, k)].expectations == Decision::Holds);
        }
    }
}

/// `--margin-at-least`: the finalists `ok` (those that meet the requirement) tried at the one
/// level, a group of equal cost at a time from the cheapest, until some hold it.
pub fn at_least(cx: &Context<'_>, ok: &[usize], all: &mut Margins) -> Result<(), String> {
    let cost = |c: usize| cx.candidates[c].cost.expect("a cost for each candidate");
    let mut order = ok.to_vec();
    order.sort_by(|&a, &b| cost(a).total_cmp(&cost(b)).then(a.cmp(&b)));
    for group in order.chunk_by(|&a, &b| cost(a) == cost(b)) {
        search(cx, group, all)?;
        if group
            .iter()
            .any(|&c| all.of(c).and_then(Margin::both).is_some())
        {
            return Ok(());
        }
    }
    Ok(())
}

/// Runs the levels of `wanted` in batches of seeds until each is settled.
fn settle(cx: &Context<'_>, wanted: &[(usize, u64)], all: &mut Margins) -> Result<(), String> {
    let alpha = all.looks.alpha(cx.command.confidence);
    loop {
        let pending: Vec<(usize, u64, u64, u64)> = wanted
            .iter()
            .filter_map(|&(c, k)| {
                let level = all.levels.get(&(c, k));
                let n = level.map_or(0, |l| l.tally.runs);
                if level.is_some_and(|l| l.settled(&all.looks)) {
                    return None;
                }
                let next = all.looks.next(n)?;
                Some((c, k, n, next))
            })
            .collect();
        if pending.is_empty() {
            return Ok(());
        }
        let mut scenarios: Vec<(Scenario, String)> = Vec::with_capacity(pending.len());
        for &(c, k, _, _) in &pending {
            scenarios.push(stressed(
                cx.command,
                &cx.candidates[c],
                cx.stress,
                k,
                cx.read,
            )?);
        }
        let first = all.seeds.0;
        let jobs: Vec<Job<'_>> = scenarios
            .iter()
            .zip(&pending)
            .flat_map(|((scenario, words), &(c, k, from, to))| {
                (first + from..first + to).map(move |seed| Job {
                    scenario,
                    words,
                    candidate: c,
                    round: 0,
                    stress: Some(k),
                    seed,
                })
            })
            .collect();
        let runs = cx
            .runner
            .batch(&jobs, &format!("margin on {}", cx.stress.path))?;
        for r in &runs {
            let k = r.stress.expect("a margin run has a stress");
            let level = all
                .levels
                .entry((r.candidate, k))
                .or_insert_with(|| Level::new(r.candidate, k));
            level.tally.add(r, cx.healthy_min[r.candidate]);
        }
        for &(c, k, _, _) in &pending {
            let level = all.levels.get_mut(&(c, k)).expect("a level that ran");
            level.decide(cx.command.threshold, alpha);
        }
        all.runs.extend(runs);
    }
}

/// A finalist's scenario at grid point `k` of the stress, with its command-line words; an
/// error when the stressed scenario has no metastability verdict.
pub fn stressed(
    command: &Tune,
    candidate: &Candidate,
    stress: &Stress,
    k: u64,
    (source, checked, limits): (&Source, &Scenario, &RunLimits),
) -> Result<(Scenario, String), String> {
    let mut overrides: Overrides = command.overrides.clone();
    overrides.sets.extend(candidate.sets.iter().cloned());
    if stress.path == LOAD {
        // One override per open-loop client, from the candidate's own rates.
        let scaled =
            load_overrides(&candidate.scenario, stress.at(k), stress.flag).map_err(|m| {
                format!(
                    "{}: {} at {}: {m}",
                    command.file, stress.flag, candidate.label
                )
            })?;
        overrides.sets.extend(scaled);
    } else {
        overrides.sets.push(stress.set(k));
    }
    let scenario = source
        .apply(checked, limits, &overrides)
        .map_err(|e| e.to_string())?;
    window(&scenario, scenario.duration).map_err(|why| {
        format!(
            "{}: at {} {}: no metastability verdict: {why}",
            command.file,
            candidate.label,
            stress.set(k)
        )
    })?;
    Ok((scenario, overrides.command_line()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The levels a search of a grid of `steps` asks for when the levels up to `edge` hold.
    fn path(steps: u64, edge: Option<u64>) -> (Vec<u64>, Search) {
        let mut s = Search::default();
        let mut asked = Vec::new();
        loop {
            let wants = s.wants(steps);
            if wants.is_empty() {
                return (asked, s);
            }
            asked.extend(&wants);
            s.learn(steps, |k| edge.is_some_and(|e| k <= e));
        }
    }

    #[test]
    fn a_search_tries_the_ends_then_bisects_to_the_edge() {
        let (asked, s) = path(16, Some(11));
        assert_eq!(asked, [0, 16, 8, 12, 10, 11]);
        assert_eq!((s.holds, s.fails), (Some(11), Some(12)));
        let (asked, s) = path(16, Some(16));
        assert_eq!(asked, [0, 16]);
        assert_eq!((s.holds, s.fails), (Some(16), None));
        let (asked, s) = path(16, None);
        assert_eq!(asked, [0, 16]);
        assert_eq!((s.holds, s.fails), (None, Some(0)));
        // A grid of one point: the `--margin-at-least` level.
        let (asked, s) = path(0, Some(0));
        assert_eq!(asked, [0]);
        assert_eq!((s.holds, s.fails), (Some(0), None));
    }
}
