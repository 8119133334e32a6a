//! A tune split across machines (`--partition K/N`). The race is adaptive: which runs a round
//! makes depends on whom the rounds before put out, which one share cannot know of the others.
//! So each share makes its part of every run the tune *could* ask for, the [`Universe`]:
//! every candidate on every seed the race could reach, and with `--maximize-margin` (or
//! `--margin-at-least`) every candidate at every point of the stress grid on every seed a
//! level could ask for (`--margin-seeds-max` of them). `resim merge` then
//! replays the race and the bisection on those runs instead of making them
//! ([`super::merge`]): the same decisions on the same results, so the same answer as one
//! machine.
//!
//! # Decisions
//!
//! - The price is the runs that putting candidates out saves on one machine, the grid points
//!   the bisection skips and the seeds a level needs only when it is undecided: a split tune
//!   makes them all (a level that breaks on its first 5 seeds still makes 60 split). Racing in lock step (each round
//!   a split of its own, merged before the next) would make no run in vain, but needs one
//!   scheduler job per round, which the batch engines' arrays do not give.
//! - A run's index is candidate-major (then seed), the race's before the margin's, so that
//!   `index mod N` spreads each candidate's runs over every share.

use super::race::seeds_reachable;
use super::{Candidate, Job, Runner, Tune, TunePartRun, TuneSetup, margin};
use crate::experiment::command::Outcome;
use crate::experiment::part;
use crate::experiment::plan::Partition;
use crate::format::limits::RunLimits;
use crate::format::overrides::Source;
use crate::format::schema::Scenario;
use std::collections::BTreeMap;

/// The margin's scenarios by candidate and stress point, each with its command-line words.
type Stressed = BTreeMap<(usize, u64), (Scenario, String)>;

/// Every run a tune could ask for, each with a stable index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Universe {
    /// The candidates.
    pub candidates: u64,
    /// The first seed of the range.
    pub first_seed: u64,
    /// Seeds per candidate in the race: the most any candidate can reach.
    pub race_seeds: u64,
    /// Points of the stress grid (0 without `--maximize-margin`).
    pub stress_points: u64,
    /// Seeds per stress point.
    pub margin_seeds: u64,
}

/// One run of the universe: a candidate, a stress point for a margin run, a seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// The candidate.
    pub candidate: usize,
    /// The stress's grid point, for a margin run.
    pub stress: Option<u64>,
    /// The seed.
    pub seed: u64,
}

impl Universe {
    /// The universe of `command` over `n` candidates; an error when the budget is too small.
    pub fn of(command: &Tune, n: u64) -> Result<Universe, String> {
        let (points, margin_seeds) = match command.stress() {
            Some(stress) => {
                let (a, b) = margin::seeds(command);
                (stress.steps + 1, b - a + 1)
            }
            None => (0, 0),
        };
        Ok(Universe {
            candidates: n,
            first_seed: command.seeds.0,
            race_seeds: seeds_reachable(command, n)?,
            stress_points: points,
            margin_seeds,
        })
    }

    fn race_runs(&self) -> u64 {
        self.candidates * self.race_seeds
    }

    /// How many runs the universe holds.
    pub fn runs(&self) -> u64 {
        self.race_runs() + self.candidates * self.stress_points * self.margin_seeds
    }

    /// The run at `index` (below [`Universe::runs`]).
    pub fn key(&self, index: u64) -> Key {
        if index < self.race_runs() {
            return Key {
                candidate: (index / self.race_seeds) as usize,
                stress: None,
                seed: self.first_seed + index % self.race_seeds,
            };
        }
        let i = index - self.race_runs();
        let per_candidate = self.stress_points * self.margin_seeds;
        Key {
            candidate: (i / per_candidate) as usize,
            stress: Some(i % per_candidate / self.margin_seeds),
            seed: self.first_seed + i % self.margin_seeds,
        }
    }
}

/// Makes the share `share` of the universe of `command` into `--out`, and says so.
pub fn part(
    command: &Tune,
    share: Partition,
    candidates: &[Candidate],
    (source, limits): (&Source, &RunLimits),
    runner: &Runner<'_>,
) -> Result<Outcome, String> {
    let Some(path) = &command.out else {
        return Err(format!(
            "{}: --partition makes a share of the runs for `resim merge`: give --out FILE.jsonl to write it to",
            command.file
        ));
    };
    let universe = Universe::of(command, candidates.len() as u64)?;
    let keys: Vec<(u64, Key)> = (0..universe.runs())
        .filter(|&i| share.contains(i))
        .map(|i| (i, universe.key(i)))
        .collect();
    let stressed = stressed_of(command, candidates, &keys, (source, limits))?;
    let jobs = jobs_of(&keys, candidates, &stressed);
    let runs = runner.batch(&jobs, &format!("part {share}"))?;
    runner.bar.finish_and_clear();
    let lines: Vec<TunePartRun> = keys
        .iter()
        .zip(runs)
        .map(|((index, _), r)| TunePartRun {
            index: *index,
            candidate: r.candidate,
            stress: r.stress,
            class: r.class,
            baseline: r.baseline,
            record: r.record,
        })
        .collect();
    let setup = TuneSetup {
        tune: command.clone(),
        fingerprint: source.fingerprint(),
    };
    let text = part::to_text("tune", share, universe.runs(), &setup, &lines);
    std::fs::write(path, text).map_err(|e| format!("{path}: cannot write: {e}"))?;
    Ok(Outcome {
        text: format!(
            "tune of {}: part {share}, {} of {} runs (every run the race and the margins could ask for), written to {path}; `resim merge` of every part prints the answer\n",
            candidates[0].scenario.name,
            lines.len(),
            universe.runs()
        ),
        passed: true,
    })
}

/// The jobs of `keys`: a race run with its candidate's scenario, a margin run with the
/// stressed one.
fn jobs_of<'a>(
    keys: &[(u64, Key)],
    candidates: &'a [Candidate],
    stressed: &'a Stressed,
) -> Vec<Job<'a>> {
    keys.iter()
        .map(|(_, key)| {
            let (scenario, words) = match key.stress {
                Some(k) => {
                    let (s, w) = &stressed[&(key.candidate, k)];
                    (s, w.as_str())
                }
                None => {
                    let c = &candidates[key.candidate];
                    (&c.scenario, c.words.as_str())
                }
            };
            Job {
                scenario,
                words,
                candidate: key.candidate,
                round: 0,
                stress: key.stress,
                seed: key.seed,
            }
        })
        .collect()
}

/// The stressed scenarios of the margin runs among `keys`, with their command-line words,
/// each read once.
fn stressed_of(
    command: &Tune,
    candidates: &[Candidate],
    keys: &[(u64, Key)],
    (source, limits): (&Source, &RunLimits),
) -> Result<Stressed, String> {
    let mut stressed = BTreeMap::new();
    let Some(stress) = command.stress() else {
        return Ok(stressed);
    };
    let checked = source.check(limits).map_err(|e| e.to_string())?;
    for (_, key) in keys {
        if let Some(k) = key.stress
            && !stressed.contains_key(&(key.candidate, k))
        {
            let read = (source, &checked, limits);
            let made = margin::stressed(command, &candidates[key.candidate], stress, k, read)?;
            stressed.insert((key.candidate, k), made);
        }
    }
    Ok(stressed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_index_is_one_run_and_the_race_comes_first() {
        let u = Universe {
            candidates: 3,
            first_seed: 11,
            race_seeds: 4,
            stress_points: 5,
            margin_seeds: 2,
        };
        assert_eq!(u.runs(), 12 + 30);
        let keys: Vec<Key> = (0..u.runs()).map(|i| u.key(i)).collect();
        assert_eq!(
            keys[5],
            Key {
                candidate: 1,
                stress: None,
                seed: 12
            }
        );
        assert_eq!(
            keys[12 + 10 + 7],
            Key {
                candidate: 1,
                stress: Some(3),
                seed: 12
            }
        );
        let mut distinct: Vec<(usize, Option<u64>, u64)> = keys
            .iter()
            .map(|k| (k.candidate, k.stress, k.seed))
            .collect();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len() as u64, u.runs());
    }
}
