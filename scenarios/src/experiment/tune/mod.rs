//! `resim tune`: which settings meet a scenario's expectations, found by racing the candidate
//! settings on common random numbers, and, with `--maximize-margin`, how much stress each
//! finalist takes before it breaks, with the confidence of each verdict.
//!
//! | module | what |
//! |---|---|
//! | [`race`] | the race: rounds of common seeds, the requirement and the sign test that put candidates out |
//! | [`level`] | one stress level: its seeds in batches, its runs' outcomes, its two verdicts with their confidence |
//! | [`margin`] | the two bisections over the stress (stability, expectations) for each finalist, and `--margin-at-least` |
//! | [`choice`] | the recommendation by the objective's rules, and the tie with the rule that broke it |
//! | [`render`] | what `resim tune` prints |
//! | [`files`] | its `--out` lines and `--svg` drawing |
//! | [`split`] | `--partition`: every run the race and the margins could ask for, this share of them |
//! | [`stress`] | `--stress` and `--margin-at-least`: the stress grid, its values and overrides |
//!
//! A [`Tune`] names the knobs (`--param`, each a [`GridAxis`]; the candidates are their
//! product, the first varying slowest), the seeds, the budget, the requirement (every seed
//! passes, or a pass rate with its Wilson bound) and the [`Objective`]. Every run goes through
//! [`Runner::batch`]: a batch of runs in parallel on the command's threads, its results in the
//! batch's order, so every decision is made on the same results whatever `-j` is.
//!
//! # Decisions
//!
//! - Racing (F-Race, Birattari et al. 2002; irace) rather than a model-based search: the knobs
//!   are small discrete sets (counts, durations, enum variants), where racing evaluates every
//!   candidate and spends seeds only where they are needed; a model (SMAC, TPE) pays off for
//!   continuous spaces of many dimensions. No maintained Rust crate implements racing or an
//!   exact sign test (statrs has the binomial distribution, behind a linear-algebra
//!   dependency, for what is a sum of a dozen terms here): [`super::stats::sign_test`] is ours,
//!   checked against the binomial tails.
//! - The requirement is absolute, so it is what puts candidates out first: with "every seed
//!   passes", one failing seed is enough (the run is deterministic, its replay shows it). The
//!   paired sign test against the best candidate is used only when the objective is the pass
//!   rate itself; with a cost or a margin to optimise, a candidate that meets the requirement
//!   less often than another but still meets it stays in.
//! - The margin is a bisection on the stress grid (`START..END:STEP`), which assumes that a
//!   setting that breaks at some stress also breaks at every higher one; the table shows
//!   each level tried with its P(metastable) and P(an expectation fails) and their bounds, so
//!   a reader can check it with `resim phase`. A level holds when the probability is shown to
//!   be at most `--threshold` with `--confidence` (exact bounds, sequential batches of seeds:
//!   [`level`]); three to ten seeds that all held are compatible with a 60% chance of
//!   failing, which is why a level runs up to 60 seeds by default.
//! - Stability and expectations are two verdicts with a margin each, said separately: a
//!   setting may keep its latency objective up to a load where it already fails to recover
//!   from a spike, or the other way round.

pub mod choice;
pub mod files;
pub mod level;
pub mod margin;
pub mod race;
pub mod render;
pub mod split;
pub mod stress;

pub use stress::Stress;

use super::command::Outcome;
use super::part::{self, Indexed};
use super::phase::{AXIS_VALUES_MAX, Class, parse_axis_of};
use super::plan::{GridAxis, Partition, Plan};
use super::sweep::RunRecord;
use super::{Control, Opener};
use crate::export::{self, TargetFormat};
use crate::format::limits::RunLimits;
use crate::format::overrides::{Flag, Override, Overrides, Source, split_override};
use crate::format::schema::Scenario;
use crate::{RunOptions, run};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::IsTerminal as _;

/// The most candidates one tune races.
pub const CANDIDATES_MAX: usize = 1_000;

/// What `resim tune` was asked. What decides the answer is serialised into the header of each
/// part of a split tune; how this process runs it (threads, files, share) is not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tune {
    /// A file or a library scenario.
    pub file: String,
    /// The knobs: `--param` axes.
    pub params: Vec<GridAxis>,
    /// First and last seed the race may use.
    pub seeds: (u64, u64),
    /// `--budget`: the most runs the race makes (`None`: every seed for every candidate).
    pub budget: Option<u64>,
    /// `--pass-rate`: the share of seeds that must pass (1: every seed).
    #[serde(with = "super::part::exact_f64")]
    pub pass_rate: f64,
    /// What makes one candidate better than another.
    pub objective: Objective,
    /// `--variant` and `--set`, for every run.
    pub overrides: Overrides,
    /// `--margin-seeds`: the first batch of seeds of each stress level, from the first seed.
    pub margin_seeds: u64,
    /// `--margin-seeds-max`: the most seeds a stress level runs while a verdict is undecided.
    pub margin_seeds_max: u64,
    /// `--threshold`: the most P(metastable) or P(an expectation fails) a level holds at.
    #[serde(with = "super::part::exact_f64")]
    pub threshold: f64,
    /// `--confidence`: of each verdict on a level.
    #[serde(with = "super::part::exact_f64")]
    pub confidence: f64,
    /// `--margin-at-least PATH=VALUE`, with `--minimize`: the one stress level every
    /// recommendation must hold.
    pub margin_at_least: Option<Stress>,
    /// `-j`: threads (`None`: one per core).
    #[serde(skip)]
    pub jobs: Option<usize>,
    /// `--out`: where to write every run.
    #[serde(skip)]
    pub out: Option<String>,
    /// `--svg`: where to draw the margins.
    #[serde(skip)]
    pub svg: Option<String>,
    /// `--partition K/N`: make only this share of every run the tune could ask for, into
    /// `--out`.
    #[serde(skip)]
    pub partition: Option<Partition>,
    /// `--export FORMAT --call PATH`: the recommended call stack, also in that format.
    #[serde(skip)]
    pub export: Option<(TargetFormat, String)>,
}

impl Tune {
    /// The stress the margins are searched on: `--stress`, or `--margin-at-least`'s one level.
    pub fn stress(&self) -> Option<&Stress> {
        match &self.objective {
            Objective::Margin(s) => Some(s),
            _ => self.margin_at_least.as_ref(),
        }
    }
}

/// What the recommendation optimises among the candidates that meet the requirement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Objective {
    /// The highest pass rate (no `--minimize`, no `--maximize-margin`).
    PassRate,
    /// `--minimize PATH`: the least value of one of the `--param` paths (with
    /// [`Tune::margin_at_least`], among those that hold it).
    Minimize(String),
    /// `--maximize-margin --stress …`: the highest stress that still holds.
    Margin(Stress),
}

/// `--param PATH=V1,V2,…` or `PATH=START..END[:STEP]` (step 1 when left out); the error is
/// the reason alone.
pub fn parse_param(text: &str) -> Result<GridAxis, String> {
    let ranged = split_override(text).and_then(|(_, v)| {
        let (a, b) = v.split_once("..")?;
        let numeric = |t: &str| t.trim().parse::<f64>().is_ok();
        (numeric(a) && numeric(b)).then_some(())
    });
    if ranged.is_some() {
        return parse_axis_of(Flag::Param, &format!("{text}:1"));
    }
    let axis = parse_axis_of(Flag::Param, text)?;
    if axis.values.len() > AXIS_VALUES_MAX {
        return Err(format!(
            "{} values; at most {AXIS_VALUES_MAX} per --param",
            axis.values.len()
        ));
    }
    Ok(axis)
}

/// One setting of the knobs.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Its `--param` values.
    pub sets: Vec<Override>,
    /// How it reads: `services.api.workers=3 clients.users.timeout=1s`.
    pub label: String,
    /// The scenario with the command's overrides and these values.
    pub scenario: Scenario,
    /// The command-line words of every override it runs with (for a replay).
    pub words: String,
    /// The value of the `--minimize` path, when there is one.
    pub cost: Option<f64>,
}

/// The figures `resim tune` keeps of one run.
#[derive(Debug, Clone)]
pub struct TuneRun {
    /// Which candidate.
    pub candidate: usize,
    /// The race round (from 1), or 0 for a run of the margin's bisection.
    pub round: usize,
    /// The stress's grid point, for a run of the bisection.
    pub stress: Option<u64>,
    /// The metastability verdict's class, when the run has one.
    pub class: Option<Class>,
    /// The least of its clients' baseline success ratios, before the first trigger.
    pub baseline: Option<f64>,
    /// The run's figures and replay command.
    pub record: RunRecord,
}

impl TuneRun {
    /// Whether every expectation held.
    pub fn passed(&self) -> bool {
        self.record.passed
    }
}

/// One run a batch makes.
pub struct Job<'a> {
    /// The scenario to run.
    pub scenario: &'a Scenario,
    /// Its overrides as command-line words.
    pub words: &'a str,
    /// Which candidate.
    pub candidate: usize,
    /// The round, or 0 in the bisection.
    pub round: usize,
    /// The stress's grid point.
    pub stress: Option<u64>,
    /// The seed.
    pub seed: u64,
}

/// Where a batch's results come from: runs made now on the command's threads, or the runs
/// of a split tune's parts, looked up by candidate, stress point and seed (`resim merge`
/// replays the race on them).
enum Results {
    Made(rayon::ThreadPool),
    Recorded(BTreeMap<(usize, Option<u64>, u64), TunePartRun>),
}

/// Makes batches of runs on the command's threads, with a progress bar on a terminal, or
/// reads them from the parts of a split tune.
pub struct Runner<'a> {
    file: &'a str,
    results: Results,
    bar: indicatif::ProgressBar,
    /// Stops the runs early and counts them (a Python caller's Ctrl-C and progress bar).
    control: Control,
}

impl<'a> Runner<'a> {
    fn new(file: &'a str, jobs: Option<usize>, control: Control) -> Result<Runner<'a>, String> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(jobs.unwrap_or(0))
            .build()
            .map_err(|e| format!("{file}: cannot start the worker threads: {e}"))?;
        let bar = if std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::new(0);
            bar.set_style(
                indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} runs  {msg}")
                    .expect("a valid template"),
            );
            bar
        } else {
            indicatif::ProgressBar::hidden()
        };
        Ok(Runner {
            file,
            results: Results::Made(pool),
            bar,
            control,
        })
    }

    /// A runner that makes no run: each is looked up among `runs`.
    fn recorded(file: &'a str, runs: Vec<TunePartRun>) -> Runner<'a> {
        let runs = runs
            .into_iter()
            .map(|r| ((r.candidate, r.stress, r.record.seed), r))
            .collect();
        Runner {
            file,
            results: Results::Recorded(runs),
            bar: indicatif::ProgressBar::hidden(),
            control: Control::default(),
        }
    }

    /// Runs `jobs` in parallel; the results are in the order of `jobs`, whatever the threads.
    pub fn batch(&self, jobs: &[Job<'_>], stage: &str) -> Result<Vec<TuneRun>, String> {
        let pool = match &self.results {
            Results::Made(pool) => pool,
            Results::Recorded(runs) => return jobs.iter().map(|j| self.look_up(runs, j)).collect(),
        };
        self.bar.inc_length(jobs.len() as u64);
        self.control.asked(jobs.len() as u64);
        self.bar.set_message(stage.to_string());
        let runs: Vec<Result<TuneRun, String>> = pool.install(|| {
            jobs.par_iter()
                .map(|job| {
                    let kept = self.one(job);
                    self.bar.inc(1);
                    self.control.done();
                    kept
                })
                .collect()
        });
        runs.into_iter().collect()
    }

    fn look_up(
        &self,
        runs: &BTreeMap<(usize, Option<u64>, u64), TunePartRun>,
        job: &Job<'_>,
    ) -> Result<TuneRun, String> {
        let r = runs
            .get(&(job.candidate, job.stress, job.seed))
            .ok_or_else(|| {
                format!(
                    "{}: the parts hold no run of candidate {} at seed {} (stress point {:?}); make the parts with this resim",
                    self.file,
                    job.candidate + 1,
                    job.seed,
                    job.stress
                )
            })?;
        Ok(TuneRun {
            candidate: job.candidate,
            round: job.round,
            stress: job.stress,
            class: r.class,
            baseline: r.baseline,
            record: r.record.clone(),
        })
    }

    fn one(&self, job: &Job<'_>) -> Result<TuneRun, String> {
        let options = RunOptions {
            seed: Some(job.seed),
            cancel: self.control.cancel.clone(),
            ..RunOptions::default()
        };
        let report = run(job.scenario, self.file, &options)
            .map_err(|e| e.to_string())?
            .report;
        let label = job.words.replace(" --set ", " ").replace('\'', "");
        Ok(TuneRun {
            candidate: job.candidate,
            round: job.round,
            stress: job.stress,
            class: report
                .metastability
                .as_ref()
                .map(|m| Class::of(m.verdict())),
            baseline: report.metastability.as_ref().and_then(|m| {
                m.clients
                    .iter()
                    .filter_map(|c| c.baseline_success_ratio)
                    .min_by(f64::total_cmp)
            }),
            record: RunRecord::of(&report, self.file, label.trim().to_string(), job.words),
        })
    }
}

/// The candidates of `command`, each read and validated, with its cost.
fn candidates(
    command: &Tune,
    source: &Source,
    limits: &RunLimits,
) -> Result<Vec<Candidate>, String> {
    let plan = Plan::new(&command.params, (0, 0), None)?;
    if plan.points.len() > CANDIDATES_MAX {
        return Err(format!(
            "{}: the --param values make {} candidates; at most {CANDIDATES_MAX}",
            command.file,
            plan.points.len()
        ));
    }
    let each = plan.overrides_each(&command.overrides);
    let scenarios = source
        .apply_each(limits, &each)
        .map_err(|e| e.to_string())?;
    let mut out = Vec::with_capacity(scenarios.len());
    for ((point, scenario), overrides) in plan.points.iter().zip(scenarios).zip(&each) {
        let label = point
            .iter()
            .map(Override::to_string)
            .collect::<Vec<_>>()
            .join(" ");
        let cost = match &command.objective {
            Objective::Minimize(path) => Some(cost_of(&command.file, path, point)?),
            _ => None,
        };
        out.push(Candidate {
            sets: point.clone(),
            label,
            scenario,
            words: overrides.command_line(),
            cost,
        });
    }
    Ok(out)
}

/// The value of `path` among a candidate's overrides, as a number (a duration in seconds).
fn cost_of(file: &str, path: &str, point: &[Override]) -> Result<f64, String> {
    let o = point.iter().find(|o| o.path == path).ok_or_else(|| {
        format!(
            "{file}: --minimize {path}: not one of the --param paths; minimise a knob that is tuned"
        )
    })?;
    let text = o.value.trim_matches('"');
    if let Ok(v) = text.parse::<f64>() {
        return Ok(v);
    }
    if let Ok(d) = text.parse::<sim_core::SimDuration>() {
        return Ok(d.as_secs_f64());
    }
    stress::number_and_unit(text).map(|(v, _)| v).ok_or_else(|| {
        format!("{file}: --minimize {path}: the value {} is not a number, a duration or a rate; minimise a numeric knob", o.value)
    })
}

/// `resim tune`: the race, the margins if asked, the table and the recommendation. It passes
/// when a candidate meets the requirement. With `--partition`, only the share's runs of
/// every run the tune could ask for, into `--out` ([`split`]).
pub fn tune_command(
    command: &Tune,
    open: Opener<'_>,
    limits: &RunLimits,
) -> Result<Outcome, String> {
    tune_answer(command, open, limits, Control::default()).map(|a| a.outcome)
}

/// What a tune found, for a caller that reads it as data (Python's `resim.tune`).
#[derive(Debug, Clone)]
pub struct TuneAnswer {
    /// What `resim tune` prints, and whether a candidate met the requirement.
    pub outcome: Outcome,
    /// Every run and every stress level tried: the lines `--out` writes (empty for a share of
    /// a split tune).
    pub runs: String,
    /// The recommendation ([`choice::to_json`]); `None` when no candidate qualifies.
    pub recommendation: Option<serde_json::Value>,
}

/// [`tune_command`], with what it found as data; `control` stops it early and counts its runs
/// (a Python caller's Ctrl-C and progress bar).
pub fn tune_answer(
    command: &Tune,
    open: Opener<'_>,
    limits: &RunLimits,
    control: Control,
) -> Result<TuneAnswer, String> {
    if !(command.pass_rate > 0.0 && command.pass_rate <= 1.0) {
        return Err(format!(
            "{}: --pass-rate {}: a ratio above 0 and at most 1, e.g. 0.95",
            command.file, command.pass_rate
        ));
    }
    let source = open(&command.file).map_err(|e| e.to_string())?;
    let candidates = candidates(command, &source, limits)?;
    // A call that cannot be exported is said before the race, not after it.
    exported(command, &candidates[0])?;
    if let Some(stress) = command.stress() {
        margin::check(command, stress, &candidates, (&source, limits))?;
    }
    let runner = Runner::new(&command.file, command.jobs, control)?;
    if let Some(share) = command.partition {
        let outcome = split::part(command, share, &candidates, (&source, limits), &runner)?;
        return Ok(TuneAnswer {
            outcome,
            runs: String::new(),
            recommendation: None,
        });
    }
    answer(command, &candidates, (&source, limits), &runner)
}

/// The race and the margins on `runner`'s runs, and what `resim tune` prints of them.
fn answer(
    command: &Tune,
    candidates: &[Candidate],
    (source, limits): (&Source, &RunLimits),
    runner: &Runner<'_>,
) -> Result<TuneAnswer, String> {
    let raced = race::race(command, candidates, runner)?;
    let margins = match command.stress() {
        Some(stress) => {
            let checked = source.check(limits).map_err(|e| e.to_string())?;
            let read = (source, &checked, limits);
            let cx = margin::Context::new(command, stress, candidates, &raced, read, runner);
            let mut all = margin::empty(command);
            if command.margin_at_least.is_some() {
                let ok: Vec<usize> = raced
                    .finalists()
                    .into_iter()
                    .filter(|&c| {
                        let (runs, passed) = raced.tally(c);
                        race::meets_requirement(passed, runs, command.pass_rate)
                    })
                    .collect();
                margin::at_least(&cx, &ok, &mut all)?;
            } else {
                margin::search(&cx, &raced.finalists(), &mut all)?;
            }
            Some(all)
        }
        None => None,
    };
    runner.bar.finish_and_clear();
    let result = render::Tuned {
        command,
        candidates,
        race: &raced,
        margins: margins.as_ref(),
    };
    let runs = files::jsonl(&result);
    if let Some(path) = &command.out {
        std::fs::write(path, &runs).map_err(|e| format!("{path}: cannot write: {e}"))?;
    }
    if let Some(path) = &command.svg {
        std::fs::write(path, files::svg(&result)?)
            .map_err(|e| format!("{path}: cannot write: {e}"))?;
    }
    let choice = choice::choose(&result);
    let mut text = render::text(&result, choice.as_ref());
    if let Some(c) = &choice {
        text.push_str(&exported(command, &candidates[c.recommended])?);
    }
    Ok(TuneAnswer {
        outcome: Outcome {
            text,
            passed: choice.is_some(),
        },
        runs,
        recommendation: choice.as_ref().map(|c| choice::to_json(&result, c)),
    })
}

/// What every part of a split tune says it belongs to: the tune, and the scenario's
/// fingerprint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuneSetup {
    /// The tune (what decides its answer).
    pub tune: Tune,
    /// [`Source::fingerprint`] of the scenario's text.
    pub fingerprint: String,
}

/// One run of a split tune: a line of a part after its header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunePartRun {
    /// Its index among every run the tune could ask for ([`split::Universe`]).
    pub index: u64,
    /// The candidate, from 0 in the order of the `--param` values.
    pub candidate: usize,
    /// The stress's grid point, for a run of the margin.
    pub stress: Option<u64>,
    /// The metastability verdict's class, when the run has one.
    pub class: Option<Class>,
    /// The least of its clients' baseline success ratios, before the first trigger.
    pub baseline: Option<f64>,
    /// The run's figures and replay command.
    pub record: RunRecord,
}

impl Indexed for TunePartRun {
    fn index(&self) -> u64 {
        self.index
    }
}

/// `resim merge` of the parts of a split tune: the scenario is read again (it must be the
/// file the parts ran), and the race and the margins are replayed on the parts' runs, so the
/// answer is what `resim tune` prints on one machine.
pub fn merge(
    files: &[(String, String)],
    svg: Option<&str>,
    open: Opener<'_>,
    limits: &RunLimits,
) -> Result<Outcome, String> {
    let (setup, runs): (TuneSetup, Vec<TunePartRun>) = part::read_parts("tune", files)?;
    let command = Tune {
        svg: svg.map(str::to_string),
        ..setup.tune
    };
    let source = open(&command.file).map_err(|e| e.to_string())?;
    if source.fingerprint() != setup.fingerprint {
        return Err(format!(
            "{}: not the file the parts ran (its text changed since); merge where the parts' scenario is",
            command.file
        ));
    }
    let candidates = candidates(&command, &source, limits)?;
    let runner = Runner::recorded(&command.file, runs);
    answer(&command, &candidates, (&source, limits), &runner).map(|a| a.outcome)
}

/// The call `--export` names, of `candidate`'s scenario, in its format, with the table of
/// what went where (empty without `--export`).
fn exported(command: &Tune, candidate: &Candidate) -> Result<String, String> {
    let Some((format, call)) = &command.export else {
        return Ok(String::new());
    };
    let out = export::export(&candidate.scenario, &command.file, call, *format, None)
        .map_err(|e| format!("--export {}: {e}", format.name()))?;
    Ok(format!(
        "\nthe recommended {call} as {} configuration:\n{}\n{}",
        format.name(),
        out.text,
        out.table
    ))
}
