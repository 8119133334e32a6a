//! `resim risk`: the probability that an event happens within a horizon of simulated time,
//! with its 95% interval, down to events far too rare to wait for — and one run that reaches
//! it, as a command that replays it.
//!
//! | module | what |
//! |---|---|
//! | [`event`] | the event (`--event`) and the importance function (`--importance`) as written, checked against the scenario |
//! | [`path`] | a run followed event by event: the [`sim_core::splitting::Trajectory`] splitting copies and branches |
//! | [`plain`] | plain runs, and the pilot made of the first ones |
//! | [`replication`] | one replication of splitting, on whole runs or on excursions from the basin |
//! | [`estimate`] | counts to a probability, an interval and a mean time; numbers for a reader |
//! | [`render`] | what `resim risk` prints, as text and JSON |
//! | [`parts`] | the command as the command line runs it, its `--out` parts and `resim merge` of them |
//!
//! # Methods, and how one is chosen
//!
//! - **Plain runs** (crude Monte Carlo): seeds run to the horizon, counted. Exact with no
//!   assumption, but the runs it needs grow as 1/p: chosen when a pilot of plain runs shows
//!   that the budget reaches the target relative error.
//! - **Splitting whole runs**: replications of Adaptive Multilevel Splitting
//!   (`sim_core::splitting`) from fresh seeds to the horizon. Unbiased for any event and any
//!   importance function; chosen when plain runs cannot reach the target and the next method's
//!   premise does not hold (faults or a changing load within the horizon, an event judged at
//!   the end of the run, excursions that are not short).
//! - **Splitting excursions** (the rate of a rare excursion from a steady state, as in
//!   Forward Flux Sampling): a run in the ordinary state (the *basin*: the importance function
//!   at most its usual value, the pilot's median) leaves it often; each exit is an excursion
//!   that almost always comes back, and splitting estimates the probability that one reaches
//!   the event instead. The event's rate is exits per second times that probability, and
//!   P(within T) = 1 − e^(−rate·T), with the mean time 1/rate. This costs the excursions'
//!   microseconds instead of whole horizons. Its premise is checked and reported: a load
//!   and timeline that do not change within the horizon (no fault, constant rates), an event
//!   that ends a run, excursions short against the horizon (the longest under 1/20 of it),
//!   and, when the basin run is shorter than the horizon (a long horizon: the rate is
//!   extrapolated), as many exits in its first half as in its second.
//!
//! Every estimate's interval comes from independent replications (their t interval) or from
//! the plain runs' count (Wilson's), never from a formula that assumes a good importance
//! function.
//!
//! **Determinism.** What runs is decided before anything parallel happens: the pilot's runs
//! are made in fixed batches and looked at in order, and every replication has its own
//! seeds and stream of choices (from `--seeds` and its index). So the same command gives
//! the same estimate whatever `-j`, and the shares of `--partition` merged by `resim merge`
//! give it too: each share makes the same pilot and its own replications (`index mod N`).

pub mod estimate;
pub mod event;
pub mod parts;
pub mod path;
pub mod plain;
pub mod render;
pub mod replication;

use super::partition::Partition;
use super::stats::wilson;
use super::{Control, Opener};
use crate::format::limits::RunLimits;
use crate::format::overrides::{Overrides, Source};
use crate::format::schema::{Load, Scenario, Schedule, Series};
use crate::format::verdict::triggers;
use event::{Event, Importance};
use plain::PlainRun;
use rayon::prelude::*;
use replication::{Replication, Split};
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;
use std::collections::BTreeMap;

/// How much `resim risk` may simulate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Budget {
    /// Events executed, replays included.
    Events(u64),
    /// Runs: plain runs, or trajectories of splitting.
    Runs(u64),
}

impl std::str::FromStr for Budget {
    type Err = String;

    /// `2e8`, `2e8events`, `500runs`.
    fn from_str(text: &str) -> Result<Budget, String> {
        let t = text.trim();
        let (number, runs) = match t.strip_suffix("runs") {
            Some(n) => (n, true),
            None => (t.strip_suffix("events").unwrap_or(t), false),
        };
        let value: f64 = number.trim().parse().map_err(|_| {
            format!("--budget {text:?}: expected a number of events (2e8, 2e8events) or of runs (500runs)")
        })?;
        if !(1.0..1e18).contains(&value) || value.fract() != 0.0 {
            return Err(format!(
                "--budget {text:?}: expected a whole number from 1 to 10¹⁸"
            ));
        }
        Ok(if runs {
            Budget::Runs(value as u64)
        } else {
            Budget::Events(value as u64)
        })
    }
}

/// Which method `--method` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MethodChoice {
    /// Chosen from the pilot (see the module docs).
    Auto,
    /// Plain runs.
    Plain,
    /// Splitting whole runs.
    Splitting,
    /// Splitting excursions from the basin.
    Excursions,
}

/// What `resim risk` was asked. Everything that decides the answer is here (and in every
/// part's header); how this process runs it (threads, files, share) is not.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Risk {
    /// A file or a library scenario.
    pub file: String,
    /// `--event`, as written.
    pub event: String,
    /// `--horizon`.
    pub horizon: SimDuration,
    /// `--seeds`: the first seed and the last plain runs may use.
    pub seeds: (u64, u64),
    /// `--budget`.
    pub budget: Budget,
    /// `--method`.
    pub method: MethodChoice,
    /// `--importance`, as written.
    pub importance: Option<String>,
    /// `--particles`: trajectories per replication of splitting.
    pub particles: usize,
    /// `--replications`: replications of splitting.
    pub replications: u64,
    /// `--rel-error`: the relative error (95% half width over the estimate) plain runs must
    /// reach to be chosen.
    #[serde(with = "super::part::exact_f64")]
    pub relative_error: f64,
    /// `--variant` and `--set`.
    pub overrides: Overrides,
    /// The scenario's fingerprint ([`Source::fingerprint`]), so that parts made from a
    /// changed file are refused.
    pub fingerprint: String,
}

/// What the estimate runs on: the scenario as overridden, the event and the importance
/// function checked against it.
pub struct Setup {
    /// The scenario.
    pub scenario: Scenario,
    /// Its file, as named.
    pub file: String,
    /// The event.
    pub event: Event,
    /// The importance function.
    pub importance: Importance,
    /// The horizon.
    pub horizon: SimDuration,
    /// `--seeds`.
    pub seeds: (u64, u64),
    /// The file's report bucket width. A run for an event that ends it reports in one
    /// bucket (its time series would cost memory in every copy splitting holds, and nothing
    /// reads them), so a spontaneous collapse is judged in buckets of this width instead.
    pub bucket: SimDuration,
    /// What a caller that embeds the estimate (Python) hands it. Its flag stops the estimate
    /// early (a Python caller's Ctrl-C): at a path's start, every `CANCEL_CHECK_EVENTS`
    /// events of a plain run, and before every event of a path splitting follows. Its counts
    /// are the pilot's plain runs, then the plan's plain runs or replications, asked for and
    /// done.
    pub control: Control,
}

/// The method the estimate was made with, and what it was made of.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "method", deny_unknown_fields)]
pub enum Plan {
    /// Plain runs: this many, from the first seed.
    Plain {
        /// How many.
        runs: u64,
    },
    /// Splitting.
    Splitting {
        /// On whole runs or excursions.
        split: Split,
        /// Trajectories per replication.
        particles: usize,
        /// Replications.
        replications: u64,
        /// Events each replication may spend.
        events_per_replication: u64,
    },
}

/// What the pilot saw, and why the plan is what it is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Choice {
    /// The pilot's plain runs (they count in a plan of plain runs).
    pub pilot: Vec<PlainRun>,
    /// The plan.
    pub plan: Plan,
    /// Why, in a sentence or two.
    pub reason: String,
    /// The premise of splitting excursions, each check and whether it held.
    pub premise: Vec<(String, bool)>,
}

/// The whole estimate: the pilot and the plan, then every plain run or replication.
#[derive(Clone, Debug)]
pub struct RiskOutput {
    /// The command.
    pub command: Risk,
    /// The scenario's name.
    pub scenario: String,
    /// The importance function used.
    pub importance: String,
    /// The pilot and the plan.
    pub choice: Choice,
    /// The plain runs of a plan of plain runs, past the pilot's.
    pub runs: Vec<PlainRun>,
    /// The replications of a plan of splitting.
    pub replications: Vec<Replication>,
}

/// The most seeds `--seeds` may give plain runs.
pub const SEEDS_MAX: u64 = 1_000_000_000;

/// The events a basin run of splitting excursions stops at, when its horizon is longer
/// (see [`split_for`]).
const BASIN_EVENTS: f64 = 250_000.0;

/// Plain runs made at once in the pilot: a fixed number, so that what it decides does not
/// depend on the threads.
const PILOT_BATCH: u64 = 8;
/// The pilot stops once it saw the event this often (enough to judge plain runs by).
const PILOT_HITS: u64 = 10;
/// The share of the budget the pilot may spend.
const PILOT_SHARE: u64 = 10;

impl Risk {
    /// Reads the scenario and checks the event and the importance function against it.
    pub fn setup(&self, open: Opener, limits: &RunLimits) -> Result<Setup, String> {
        let source: Source = open(&self.file).map_err(|e| e.to_string())?;
        if !self.fingerprint.is_empty() && source.fingerprint() != self.fingerprint {
            return Err(format!(
                "{}: the file changed since the parts were made; make them again",
                self.file
            ));
        }
        let checked = source.check(limits).map_err(|e| e.to_string())?;
        let mut scenario = source
            .apply(&checked, limits, &self.overrides)
            .map_err(|e| e.to_string())?;
        // The file's timeline as written, up to the horizon: what is judged at the end of a
        // run (expectations, the verdict) is judged there.
        scenario.duration = self.horizon;
        let event = Event::parse(&self.event, &scenario)?;
        let importance = match &self.importance {
            Some(text) => Importance::parse(text, &scenario)?,
            None => event.default_importance(),
        };
        let bucket = scenario.bucket;
        // What risk reads of a run is its events, its expectations and its metastability
        // verdict: the runs keep their clients' counts per bucket and no other series (in
        // every copy splitting holds), which changes their memory, never their digests.
        scenario.series = Series::Clients;
        if event.is_first_passage() {
            // The bucket width changes the report only, never the run: a replay with the
            // file's buckets is the same run.
            scenario.bucket = self.horizon;
        }
        Ok(Setup {
            scenario,
            file: self.file.clone(),
            event,
            importance,
            horizon: self.horizon,
            seeds: self.seeds,
            bucket,
            control: Control::default(),
        })
    }
}

/// Whether nothing on the scenario's timeline changes within the horizon: no fault, and every
/// open-loop client at a constant rate (what splitting excursions assumes: the basin is the
/// same at every instant). The reason it does not, otherwise.
fn steady(scenario: &Scenario) -> Result<(), String> {
    if let Some(t) = triggers(scenario).first() {
        return Err(format!("the timeline has {} at {}", t.label, t.start));
    }
    for (name, c) in &scenario.clients {
        if let Load::Open { rate } = &c.load
            && !matches!(rate, Schedule::Constant(_))
        {
            return Err(format!("client {name}'s rate changes over time"));
        }
    }
    Ok(())
}

/// The events the budget allows in all.
fn events_budget(command: &Risk, cost_of_run: f64) -> u64 {
    match command.budget {
        Budget::Events(e) => e,
        Budget::Runs(r) => (r as f64 * cost_of_run) as u64,
    }
}

/// The pilot: the first plain runs, and the events they spent at each value of the
/// importance function.
struct Pilot {
    runs: Vec<PlainRun>,
    seen: BTreeMap<u64, u64>,
    /// What a plain run may cost before it is stopped: a share of the pilot's budget.
    per_run: u64,
}

impl Pilot {
    fn hits(&self) -> u64 {
        self.runs.iter().filter(|r| r.reached).count() as u64
    }

    fn events(&self) -> u64 {
        self.runs.iter().map(|r| r.events).sum()
    }

    /// The mean events of a plain run, from the pilot's (0 without any).
    fn cost_of_run(&self) -> f64 {
        if self.runs.is_empty() {
            0.0
        } else {
            self.events() as f64 / self.runs.len() as f64
        }
    }

    /// Events per simulated nanosecond over the pilot's runs, finished or stopped (0
    /// without any).
    fn events_per_ns(&self) -> f64 {
        let time: u64 = self.runs.iter().map(|r| r.end_ns).sum();
        if time == 0 {
            0.0
        } else {
            self.events() as f64 / time as f64
        }
    }

    fn unfinished(&self) -> bool {
        self.runs.iter().any(|r| !r.finished)
    }
}

/// The plain runs the budget affords: its events over what a run costs, at most the seeds.
fn affordable(command: &Risk, seeds: u64, cost_of_run: f64) -> f64 {
    match command.budget {
        Budget::Runs(r) => r.min(seeds) as f64,
        Budget::Events(e) if cost_of_run > 0.0 => {
            (e as f64 / cost_of_run).floor().min(seeds as f64)
        }
        Budget::Events(_) => seeds as f64,
    }
}

/// Makes the pilot in batches of [`PILOT_BATCH`] on `pool`: until it saw the event
/// [`PILOT_HITS`] times (enough to judge plain runs by), until even the most the interval
/// allows shows plain runs cannot reach the relative error within the budget, until it spent
/// its share of the budget, or until a run was too long to be one of many.
fn pilot(command: &Risk, setup: &Setup, pool: &rayon::ThreadPool) -> Result<Pilot, String> {
    let seeds = setup.seeds.1 - setup.seeds.0 + 1;
    let share = match command.budget {
        Budget::Events(e) => e / PILOT_SHARE,
        Budget::Runs(_) => u64::MAX,
    };
    let mut pilot = Pilot {
        runs: Vec::new(),
        seen: BTreeMap::new(),
        per_run: share / PILOT_BATCH,
    };
    loop {
        let from = pilot.runs.len() as u64;
        let to = (from + PILOT_BATCH).min(affordable(command, seeds, 0.0) as u64);
        if from >= to {
            return Ok(pilot);
        }
        setup.control.asked(to - from);
        let batch: Vec<(PlainRun, BTreeMap<u64, u64>)> = pool.install(|| {
            (from..to)
                .into_par_iter()
                .map(|i| {
                    let mut seen = BTreeMap::new();
                    let run = plain::run(setup, i, pilot.per_run, Some(&mut seen));
                    setup.control.done();
                    run.map(|r| (r, seen))
                })
                .collect::<Result<_, String>>()
        })?;
        for (run, s) in batch {
            for (k, v) in s {
                *pilot.seen.entry(k).or_default() += v;
            }
            pilot.runs.push(run);
        }
        let (hits, n) = (pilot.hits(), pilot.runs.len() as u64);
        let optimistic = wilson(hits, n).1;
        let fewest = estimate::plain_runs_at(optimistic, command.relative_error);
        let hopeless = fewest > affordable(command, seeds, pilot.cost_of_run());
        if command.method == MethodChoice::Plain
            || hits >= PILOT_HITS
            || pilot.events() >= share
            || pilot.unfinished()
            || hopeless
        {
            return Ok(pilot);
        }
    }
}

/// Why plain runs were not chosen, in a sentence.
fn why_not_plain(pilot: &Pilot, e: f64, needed: f64, affordable: f64) -> String {
    let (hits, n) = (pilot.hits(), pilot.runs.len() as u64);
    if pilot.unfinished() {
        format!(
            "a plain run to the horizon takes more than {} events, its share of the pilot's budget",
            pilot.per_run
        )
    } else if n == 0 {
        "splitting, as --method asked".to_string()
    } else if hits == 0 {
        format!(
            "the pilot's {n} plain runs ({} events) never reached the event: plain runs would need more than the budget",
            pilot.events()
        )
    } else {
        format!(
            "the pilot's {n} plain runs reached the event {hits} times: ±{:.0}% would take {needed:.0} runs, more than the budget's {affordable:.0}",
            e * 100.0
        )
    }
}

/// Makes the pilot on `pool` (unless splitting is asked for an event that ends a run) and
/// chooses the plan from it.
fn choose(command: &Risk, setup: &Setup, pool: &rayon::ThreadPool) -> Result<Choice, String> {
    let splitting_asked = matches!(
        command.method,
        MethodChoice::Splitting | MethodChoice::Excursions
    );
    let pilot = if splitting_asked && setup.event.is_first_passage() {
        Pilot {
            runs: Vec::new(),
            seen: BTreeMap::new(),
            per_run: 0,
        }
    } else {
        self::pilot(command, setup, pool)?
    };
    let seeds = setup.seeds.1 - setup.seeds.0 + 1;
    let (hits, n) = (pilot.hits(), pilot.runs.len() as u64);
    let e = command.relative_error;
    // Planned at the interval's lower end: the pilot's estimate is rough, and plain runs
    // planned at a probability that was too high would miss the relative error.
    let needed = if hits == 0 {
        f64::INFINITY
    } else {
        estimate::plain_runs_at(wilson(hits, n).0, e)
            .ceil()
            .max(n as f64)
    };
    let affordable = affordable(command, seeds, pilot.cost_of_run());
    let forced = command.method == MethodChoice::Plain;
    if forced
        || (command.method == MethodChoice::Auto && !pilot.unfinished() && needed <= affordable)
    {
        let (runs, reason) = if forced {
            (
                (affordable as u64).max(n),
                "plain runs, as --method asked".to_string(),
            )
        } else {
            (
                needed as u64,
                format!(
                    "the pilot's {n} plain runs reached the event {hits} times: {needed:.0} runs reach ±{:.0}% within the budget",
                    e * 100.0
                ),
            )
        };
        return Ok(Choice {
            pilot: pilot.runs,
            plan: Plan::Plain { runs },
            reason,
            premise: Vec::new(),
        });
    }
    let why_not_plain = why_not_plain(&pilot, e, needed, affordable);
    let budget = events_budget(command, pilot.cost_of_run());
    let (split, premise, reason) =
        split_for(command, setup, &pilot.seen, pilot.events_per_ns(), budget)?;
    let left = budget.saturating_sub(pilot.events());
    Ok(Choice {
        pilot: pilot.runs,
        plan: Plan::Splitting {
            split,
            particles: command.particles,
            replications: command.replications,
            events_per_replication: (left / command.replications).max(1),
        },
        reason: format!("{why_not_plain}; {reason}"),
        premise,
    })
}

/// The premise of splitting excursions that the scenario and the event decide: a steady
/// timeline, and an event that ends a run.
fn excursions_premise(setup: &Setup) -> Vec<(String, bool)> {
    let mut premise = Vec::new();
    let steady = steady(&setup.scenario);
    premise.push((
        match &steady {
            Ok(()) => "no fault and a constant load within the horizon".to_string(),
            Err(why) => why.clone(),
        },
        steady.is_ok(),
    ));
    let first_passage = setup.event.is_first_passage();
    premise.push((
        if first_passage {
            "the event ends a run when it happens".to_string()
        } else {
            "the event is judged on the whole run, not when it happens".to_string()
        },
        first_passage,
    ));
    premise
}

/// Splitting whole runs or excursions, with the premise checked, and why.
#[allow(clippy::type_complexity)]
fn split_for(
    command: &Risk,
    setup: &Setup,
    seen: &BTreeMap<u64, u64>,
    events_per_ns: f64,
    budget: u64,
) -> Result<(Split, Vec<(String, bool)>, String), String> {
    if command.method == MethodChoice::Splitting {
        return Ok((
            Split::Whole,
            Vec::new(),
            "splitting whole runs, as --method asked".to_string(),
        ));
    }
    let premise = excursions_premise(setup);
    let held = premise.iter().all(|(_, ok)| *ok);
    if !held && command.method == MethodChoice::Auto {
        return Ok((
            Split::Whole,
            premise,
            "splitting whole runs (excursions from a steady state do not apply)".to_string(),
        ));
    }
    if !held {
        let failed: Vec<&str> = premise
            .iter()
            .filter(|(_, ok)| !ok)
            .map(|(w, _)| w.as_str())
            .collect();
        return Err(format!(
            "--method excursions: its premise does not hold: {}; use --method splitting",
            failed.join("; ")
        ));
    }
    // The basin: the importance function at most its median over the pilot's events.
    let total: u64 = seen.values().sum();
    let mut below = 0;
    let floor = seen
        .iter()
        .find(|&(_, &n)| {
            below += n;
            2 * below >= total
        })
        .map_or(0, |(&v, _)| v);
    // The basin run: the whole horizon, or as long as BASIN_EVENTS events take, or as half
    // the budget allows, whichever is shortest (the rate then extrapolated to the horizon,
    // which the premise's halves check). A basin run measures the rate of exits, which
    // thousands of exits pin down far tighter than splitting pins down their probability
    // of reaching the event: past that, a longer one would only spend the budget.
    let basin_ns = if events_per_ns > 0.0 {
        let allowed = (budget as f64 / 2.0 / command.replications as f64).min(BASIN_EVENTS);
        ((allowed / events_per_ns) as u64).min(setup.horizon.as_nanos())
    } else {
        setup.horizon.as_nanos()
    };
    Ok((
        Split::Excursions { floor, basin_ns },
        premise,
        format!(
            "splitting excursions from the basin {} ≤ {floor}",
            command
                .importance
                .as_deref()
                .unwrap_or(&setup.importance.to_string())
        ),
    ))
}

/// The checks of splitting excursions that need the basin runs: exits enough, excursions
/// short against the horizon, and, when the basin run is shorter than the horizon, exits as
/// frequent in its two halves.
pub fn basin_premise(horizon: SimDuration, replications: &[Replication]) -> Vec<(String, bool)> {
    let basins: Vec<_> = replications
        .iter()
        .filter_map(|r| r.basin.as_ref())
        .collect();
    if basins.is_empty() {
        return Vec::new();
    }
    let exits: u64 = basins.iter().map(|b| b.exits).sum();
    let first: u64 = basins.iter().map(|b| b.exits_first_half).sum();
    let longest = basins
        .iter()
        .map(|b| b.longest_excursion_ns)
        .max()
        .unwrap_or(0);
    let horizon = horizon.as_nanos();
    let mut out = vec![
        (
            format!(
                "{exits} exits from the basin in {} basin runs",
                basins.len()
            ),
            exits >= 30 * basins.len() as u64,
        ),
        (
            format!(
                "the longest excursion lasted {} ({:.2}% of the horizon)",
                estimate::short_span(SimDuration::from_nanos(longest).as_secs_f64()),
                longest as f64 / horizon as f64 * 100.0
            ),
            longest * 20 <= horizon,
        ),
    ];
    if basins.iter().any(|b| b.time_ns < horizon) {
        let second = exits - first;
        let spread = 3.0 * libm::sqrt(exits as f64);
        out.push((
            format!("exits in the basin runs' first and second halves: {first} and {second}"),
            (first as f64 - second as f64).abs() <= spread,
        ));
    }
    out
}

/// Runs the estimate (this process's share of it, with `partition`) on `jobs` threads;
/// `control` stops it early (a Python caller's Ctrl-C) and counts its runs.
pub fn run(
    command: &Risk,
    (open, limits): (Opener, &RunLimits),
    jobs: Option<usize>,
    partition: Option<Partition>,
    control: &Control,
) -> Result<RiskOutput, String> {
    let setup = Setup {
        control: control.clone(),
        ..command.setup(open, limits)?
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.unwrap_or(0))
        .build()
        .map_err(|e| format!("{}: cannot start the worker threads: {e}", command.file))?;
    let choice = choose(command, &setup, &pool)?;
    let mine = |index: u64| partition.is_none_or(|p| p.contains(index));
    let (runs, replications) = match &choice.plan {
        Plan::Plain { runs } => {
            let from = choice.pilot.len() as u64;
            let indices: Vec<u64> = (from..*runs).filter(|&i| mine(i - from)).collect();
            control.asked(indices.len() as u64);
            let runs = pool.install(|| {
                indices
                    .par_iter()
                    .map(|&i| {
                        let run = plain::run(&setup, i, u64::MAX, None);
                        control.done();
                        run
                    })
                    .collect::<Result<Vec<_>, String>>()
            })?;
            (runs, Vec::new())
        }
        Plan::Splitting {
            split,
            particles,
            replications,
            events_per_replication,
        } => {
            let indices: Vec<u64> = (0..*replications).filter(|&i| mine(i)).collect();
            control.asked(indices.len() as u64);
            let done = pool.install(|| {
                indices
                    .par_iter()
                    .map(|&i| {
                        let r = replication::run(
                            &setup,
                            *split,
                            *particles,
                            i,
                            *events_per_replication,
                        );
                        control.done();
                        r
                    })
                    .collect::<Result<Vec<_>, String>>()
            })?;
            (Vec::new(), done)
        }
    };
    Ok(RiskOutput {
        command: command.clone(),
        scenario: setup.scenario.name.clone(),
        importance: setup.importance.to_string(),
        choice,
        runs,
        replications,
    })
}

pub use parts::{Flags, PART_KIND, command, merge, merged, to_part};
