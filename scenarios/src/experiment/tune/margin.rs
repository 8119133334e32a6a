//! The margin: for each finalist of the race, the highest stress on the `--stress` grid at
//! which it still holds on the margin's seeds (the first `--margin-seeds` of the range, by
//! default [`MARGIN_SEEDS`]): every
//! expectation passes and the metastability verdict is stable (never degraded, or recovered).
//! The ends of the grid are tried first; between them a bisection, all finalists in step so
//! that each step is one parallel batch. Every point it tries is a point `k` of the grid
//! (`0..=steps`, the midpoint of two rounded down), which is what lets a split tune make every
//! run the bisection could ask for beforehand.

use super::super::phase::Class;
use super::race::Race;
use super::{Candidate, Job, Runner, Stress, Tune, TuneRun};
use crate::format::limits::RunLimits;
use crate::format::overrides::{Flag, LOAD, Overrides, Source, load_overrides};
use crate::format::schema::Scenario;
use crate::format::verdict::window;

/// The seeds each stress is tried on, unless `--margin-seeds` says otherwise.
pub const MARGIN_SEEDS: u64 = 5;

/// The first and last seed each stress is tried on: the first `--margin-seeds` of the range
/// (all of it if it is shorter).
pub fn seeds(command: &Tune) -> (u64, u64) {
    let count = command
        .margin_seeds
        .max(1)
        .min(command.seeds.1 - command.seeds.0 + 1);
    (command.seeds.0, command.seeds.0 + count - 1)
}

/// How a finalist breaks: at the lowest stress that failed, the worst class among its seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct Break {
    /// The grid point.
    pub k: u64,
    /// The worst verdict among the seeds (a run with no verdict counts as collapsed).
    pub class: Class,
    /// Seeds that failed.
    pub failed: u64,
    /// Seeds tried.
    pub tried: u64,
    /// The first failing seed's replay command.
    pub replay: String,
}

/// A finalist's margin.
#[derive(Debug, Clone, PartialEq)]
pub struct Margin {
    /// The candidate.
    pub candidate: usize,
    /// The highest grid point that held (`None`: it broke at the start).
    pub holds: Option<u64>,
    /// Where it broke (`None`: it held to the end of the grid).
    pub breaks: Option<Break>,
}

/// Every finalist's margin, and the runs made to find them.
#[derive(Debug, Clone)]
pub struct Margins {
    /// In the order of the finalists.
    pub margins: Vec<Margin>,
    /// Seeds per stress.
    pub seeds: (u64, u64),
    /// Every run of the bisection, in the order they were made.
    pub runs: Vec<TuneRun>,
}

/// Checks, before anything runs, that each candidate at the lowest stress reads, validates
/// and has a metastability verdict.
pub fn check(
    command: &Tune,
    stress: &Stress,
    candidates: &[Candidate],
    (source, limits): (&Source, &RunLimits),
) -> Result<(), String> {
    let checked = source.check(limits).map_err(|e| e.to_string())?;
    for c in candidates {
        stressed(command, c, stress, 0, (source, &checked, limits))?;
    }
    Ok(())
}

/// Bisects the stress for each finalist of `race`.
pub fn margins(
    command: &Tune,
    stress: &Stress,
    candidates: &[Candidate],
    race: &Race,
    (source, limits): (&Source, &RunLimits),
    runner: &Runner<'_>,
) -> Result<Margins, String> {
    let finalists = race.finalists();
    let checked = source.check(limits).map_err(|e| e.to_string())?;
    let read = (source, &checked, limits);
    let mut all = Margins {
        margins: finalists
            .iter()
            .map(|&c| Margin {
                candidate: c,
                holds: None,
                breaks: None,
            })
            .collect(),
        seeds: seeds(command),
        runs: Vec::new(),
    };
    // Each finalist's interval: (highest k that held, lowest k that broke).
    let tried = try_points(
        command,
        stress,
        candidates,
        &finalists,
        &[0, stress.steps],
        read,
        runner,
        &mut all,
    )?;
    let mut open = ends(&mut all, stress, tried);
    loop {
        open.retain(|&(_, lo, hi)| hi - lo > 1);
        if open.is_empty() {
            return Ok(all);
        }
        let who: Vec<usize> = open.iter().map(|&(i, _, _)| finalists[i]).collect();
        let mids: Vec<u64> = open.iter().map(|&(_, lo, hi)| lo + (hi - lo) / 2).collect();
        let tried = try_each(
            command, stress, candidates, &who, &mids, read, runner, &mut all,
        )?;
        for ((slot, mid), result) in open.iter_mut().zip(&mids).zip(tried) {
            let m = &mut all.margins[slot.0];
            match result {
                Ok(()) => {
                    m.holds = Some(*mid);
                    slot.1 = *mid;
                }
                Err(b) => {
                    m.breaks = Some(b);
                    slot.2 = *mid;
                }
            }
        }
    }
}

/// Records what the ends of the grid showed; returns the finalists (by position) still to
/// bisect, with the highest grid point that held and the lowest that broke.
fn ends(
    all: &mut Margins,
    stress: &Stress,
    tried: Vec<Result<(), Break>>,
) -> Vec<(usize, u64, u64)> {
    let mut open = Vec::new();
    for (i, pair) in tried.chunks(2).enumerate() {
        let m = &mut all.margins[i];
        match (pair[0].clone(), pair[1].clone()) {
            (Err(b), _) => m.breaks = Some(b),
            (Ok(()), Ok(())) => m.holds = Some(stress.steps),
            (Ok(()), Err(b)) => {
                m.holds = Some(0);
                m.breaks = Some(b);
                open.push((i, 0, stress.steps));
            }
        }
    }
    open
}

/// Tries every point of `points` for each of `who` (finalist-major).
#[allow(clippy::too_many_arguments)]
fn try_points(
    command: &Tune,
    stress: &Stress,
    candidates: &[Candidate],
    who: &[usize],
    points: &[u64],
    read: (&Source, &Scenario, &RunLimits),
    runner: &Runner<'_>,
    all: &mut Margins,
) -> Result<Vec<Result<(), Break>>, String> {
    let each: Vec<usize> = who
        .iter()
        .flat_map(|&c| points.iter().map(move |_| c))
        .collect();
    let ks: Vec<u64> = who.iter().flat_map(|_| points.iter().copied()).collect();
    try_each(command, stress, candidates, &each, &ks, read, runner, all)
}

/// Tries candidate `who[i]` at grid point `ks[i]` on the margin's seeds, all in one batch.
#[allow(clippy::too_many_arguments)]
fn try_each(
    command: &Tune,
    stress: &Stress,
    candidates: &[Candidate],
    who: &[usize],
    ks: &[u64],
    read: (&Source, &Scenario, &RunLimits),
    runner: &Runner<'_>,
    all: &mut Margins,
) -> Result<Vec<Result<(), Break>>, String> {
    let mut scenarios: Vec<(Scenario, String)> = Vec::with_capacity(who.len());
    for (&c, &k) in who.iter().zip(ks) {
        scenarios.push(stressed(command, &candidates[c], stress, k, read)?);
    }
    let (a, b) = all.seeds;
    let jobs: Vec<Job<'_>> = scenarios
        .iter()
        .zip(who.iter().zip(ks))
        .flat_map(|((scenario, words), (&c, &k))| {
            (a..=b).map(move |seed| Job {
                scenario,
                words,
                candidate: c,
                round: 0,
                stress: Some(k),
                seed,
            })
        })
        .collect();
    let runs = runner.batch(&jobs, &format!("margin on {}", stress.path))?;
    let per = (b - a + 1) as usize;
    let verdicts = runs
        .chunks(per)
        .zip(ks)
        .map(|(seeds, &k)| verdict(seeds, k))
        .collect();
    all.runs.extend(runs);
    Ok(verdicts)
}

/// Whether a point held on every seed, or how it broke.
fn verdict(seeds: &[TuneRun], k: u64) -> Result<(), Break> {
    let holds = |r: &TuneRun| r.passed() && r.class == Some(Class::Stable);
    let failing: Vec<&TuneRun> = seeds.iter().filter(|r| !holds(r)).collect();
    let Some(first) = failing.first() else {
        return Ok(());
    };
    let rank = |c: Option<Class>| match c {
        Some(Class::Stable) => 0,
        Some(Class::Metastable) => 1,
        Some(Class::Collapsed) | None => 2,
    };
    let worst = failing
        .iter()
        .map(|r| r.class)
        .max_by_key(|c| rank(*c))
        .flatten();
    Err(Break {
        k,
        class: worst.unwrap_or(Class::Collapsed),
        failed: failing.len() as u64,
        tried: seeds.len() as u64,
        replay: first.record.replay.clone(),
    })
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
        let scaled = load_overrides(&candidate.scenario, stress.at(k), Flag::Stress)
            .map_err(|m| format!("{}: --stress at {}: {m}", command.file, candidate.label))?;
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
