//! The race: every candidate still in runs the same seeds, in rounds of growing size (5, 5,
//! 10, 20, … seeds: each round doubles the seeds seen), until the seeds or the budget are
//! spent or no candidate is left. After each round a candidate is out when
//!
//! - it fails the requirement: with "every seed passes", a failing seed; with
//!   `--pass-rate R`, the upper end of its 95% Wilson interval is below R;
//! - or, when the objective is the pass rate, the exact sign test on the seeds where it and
//!   the best candidate disagree says it passes less often (one-sided, p < [`ALPHA`]).

use super::super::stats::{sign_test, wilson};
use super::{Candidate, Job, Objective, Runner, Tune, TuneRun};

/// The seeds of the first round.
pub const ROUND_SEEDS_FIRST: u64 = 5;

/// The significance level of the sign test.
pub const ALPHA: f64 = 0.05;

/// Why a candidate is out.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// It failed the requirement; `seed` is its first failing seed.
    Requirement {
        /// The first seed it failed.
        seed: u64,
    },
    /// The sign test says it passes less often than `than`.
    Worse {
        /// The best candidate at that round.
        than: usize,
        /// The p-value.
        p: f64,
        /// Its first seed that failed where `than` passed.
        seed: u64,
    },
}

impl Out {
    /// The failing seed that shows why it is out.
    pub fn seed(&self) -> u64 {
        match self {
            Out::Requirement { seed } | Out::Worse { seed, .. } => *seed,
        }
    }
}

/// One round of the race.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    /// Its first and last seed.
    pub seeds: (u64, u64),
    /// The candidates that ran them.
    pub candidates: usize,
    /// The candidates put out after it.
    pub out: Vec<usize>,
}

/// What the race found.
#[derive(Debug, Clone)]
pub struct Race {
    /// The rounds, in order.
    pub rounds: Vec<Round>,
    /// Per candidate: `None` while it is in, else the round (from 1) and why it is out.
    pub out: Vec<Option<(usize, Out)>>,
    /// Per candidate, whether it passed each seed it ran, from the first seed on.
    pub passes: Vec<Vec<bool>>,
    /// Every run, in the order they were made.
    pub runs: Vec<TuneRun>,
    /// The budget the race had.
    pub budget: u64,
}

impl Race {
    /// The candidates still in at the end.
    pub fn finalists(&self) -> Vec<usize> {
        (0..self.out.len())
            .filter(|&c| self.out[c].is_none())
            .collect()
    }

    /// Runs and passes of candidate `c`.
    pub fn tally(&self, c: usize) -> (u64, u64) {
        let p = &self.passes[c];
        (p.len() as u64, p.iter().filter(|&&x| x).count() as u64)
    }

    /// The replay command of candidate `c`'s run at `seed` in the race.
    pub fn replay(&self, c: usize, seed: u64) -> Option<&str> {
        self.runs
            .iter()
            .find(|r| r.candidate == c && r.record.seed == seed && r.stress.is_none())
            .map(|r| r.record.replay.as_str())
    }
}

/// Whether `passed` of `runs` fails the requirement `rate` (1: every seed passes).
pub fn fails_requirement(passed: u64, runs: u64, rate: f64) -> bool {
    if rate >= 1.0 {
        passed < runs
    } else {
        wilson(passed, runs).1 < rate
    }
}

/// Whether `passed` of `runs` meets the requirement `rate`: every seed passed, or the lower
/// end of the 95% Wilson interval is at least `rate`.
pub fn meets_requirement(passed: u64, runs: u64, rate: f64) -> bool {
    runs > 0
        && if rate >= 1.0 {
            passed == runs
        } else {
            wilson(passed, runs).0 >= rate
        }
}

/// The runs the race of `n` candidates may make: `--budget`, or every seed for each; an
/// error when it is less than one run each.
pub fn budget(command: &Tune, n: u64) -> Result<u64, String> {
    let seed_count = command.seeds.1 - command.seeds.0 + 1;
    let budget = command.budget.unwrap_or(n * seed_count);
    if budget < n {
        return Err(format!(
            "{}: --budget {budget}: less than one seed for each of the {n} candidates; give at least {n} runs",
            command.file
        ));
    }
    Ok(budget)
}

/// The most seeds any one of `n` candidates can run in the race, whatever is put out when:
/// every candidate runs the first round, and at most what the others left of the budget
/// after it, within the range of seeds.
pub fn seeds_reachable(command: &Tune, n: u64) -> Result<u64, String> {
    let budget = budget(command, n)?;
    let seed_count = command.seeds.1 - command.seeds.0 + 1;
    let first = ROUND_SEEDS_FIRST.min(seed_count).min(budget / n);
    Ok(seed_count.min(budget - (n - 1) * first))
}

/// Races `candidates` as `command` asks.
pub fn race(command: &Tune, candidates: &[Candidate], runner: &Runner<'_>) -> Result<Race, String> {
    let n = candidates.len() as u64;
    let seed_count = command.seeds.1 - command.seeds.0 + 1;
    let budget = budget(command, n)?;
    let mut race = Race {
        rounds: Vec::new(),
        out: vec![None; candidates.len()],
        passes: vec![Vec::new(); candidates.len()],
        runs: Vec::new(),
        budget,
    };
    let mut used = 0u64;
    loop {
        let alive = race.finalists();
        let seen = race
            .rounds
            .last()
            .map_or(0, |r| r.seeds.1 + 1 - command.seeds.0);
        let size = if seen == 0 { ROUND_SEEDS_FIRST } else { seen };
        let size = size
            .min(seed_count - seen)
            .min((budget - used) / alive.len().max(1) as u64);
        if alive.is_empty() || size == 0 {
            return Ok(race);
        }
        let first = command.seeds.0 + seen;
        let round = race.rounds.len() + 1;
        let jobs: Vec<Job<'_>> = alive
            .iter()
            .flat_map(|&c| {
                (first..first + size).map(move |seed| Job {
                    scenario: &candidates[c].scenario,
                    words: &candidates[c].words,
                    candidate: c,
                    round,
                    stress: None,
                    seed,
                })
            })
            .collect();
        let runs = runner.batch(&jobs, &format!("race, round {round}"))?;
        used += runs.len() as u64;
        for r in &runs {
            race.passes[r.candidate].push(r.passed());
        }
        race.runs.extend(runs);
        let out = eliminate(command, &mut race, &alive, round);
        race.rounds.push(Round {
            seeds: (first, first + size - 1),
            candidates: alive.len(),
            out,
        });
    }
}

/// Puts out the candidates of `alive` that the round's evidence rules out; returns them.
fn eliminate(command: &Tune, race: &mut Race, alive: &[usize], round: usize) -> Vec<usize> {
    let first_seed = command.seeds.0;
    let first_failure = |p: &[bool]| p.iter().position(|x| !x).map(|i| first_seed + i as u64);
    let best = *alive
        .iter()
        .max_by_key(|&&c| (race.tally(c).1, std::cmp::Reverse(c)))
        .expect("a round has candidates");
    let mut out = Vec::new();
    for &c in alive {
        let (runs, passed) = race.tally(c);
        let why = if fails_requirement(passed, runs, command.pass_rate) {
            let seed =
                first_failure(&race.passes[c]).expect("a candidate that fails has a failing seed");
            Some(Out::Requirement { seed })
        } else if command.objective == Objective::PassRate && c != best {
            worse(&race.passes[c], &race.passes[best], first_seed).map(|(p, seed)| Out::Worse {
                than: best,
                p,
                seed,
            })
        } else {
            None
        };
        if let Some(why) = why {
            race.out[c] = Some((round, why));
            out.push(c);
        }
    }
    out
}

/// The sign test of `this` against `best` on their common seeds: the p-value and the first
/// seed `this` failed and `best` passed, when the p-value is below [`ALPHA`].
fn worse(this: &[bool], best: &[bool], first_seed: u64) -> Option<(f64, u64)> {
    assert_eq!(
        this.len(),
        best.len(),
        "candidates still in have run the same seeds"
    );
    let lost = this.iter().zip(best).filter(|(a, b)| !**a && **b).count() as u64;
    let won = this.iter().zip(best).filter(|(a, b)| **a && !**b).count() as u64;
    let p = sign_test(lost, won);
    let seed = this.iter().zip(best).position(|(a, b)| !*a && *b)?;
    (p < ALPHA).then_some((p, first_seed + seed as u64))
}
