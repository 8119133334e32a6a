//! `resim explore`: the explorer's data of one run ([`build`]): the run itself, keeping its
//! failed examples and slowest successes, then, when it kept some, a second run of the same seed that follows the
//! sampled requests whose trees the page carries (`report::explore::tree_requests`).
//!
//! # Decisions
//!
//! Following many requests at once records their steps in the one pass (the world's follow
//! record holds a list), so the trees cost one more run, not one per request. Recording
//! never changes a run (world/follow.rs): the two runs have one digest, asserted here.

use crate::format::error::ScenarioError;
use crate::format::schema::Scenario;
use crate::report::explore::{ExploreData, Recorded, tree_requests};
use crate::run::{RunOptions, RunOutput, Running};
use sim_core::{SimDuration, SimTime};

/// Events simulated between two calls of [`build_reporting`]'s progress.
pub const PROGRESS_EVENTS: u64 = 50_000;

/// What an explored run is run with, and what it says it ran with.
#[derive(Debug, Clone, Default)]
pub struct ExploreOptions {
    /// The seed (the scenario's own when `None`).
    pub seed: Option<u64>,
    /// The simulated duration (the scenario's own when `None`).
    pub duration: Option<SimDuration>,
    /// The event budget of each run (the scenario's own when `None`).
    pub max_events: Option<u64>,
    /// The variant the scenario was given, for the page to say.
    pub variant: Option<String>,
    /// The `--set`s the scenario was given, as typed, for the page to say.
    pub sets: Vec<String>,
    /// The command-line words after the seed that replay the run (`--variant`, `--set`,
    /// limits), added to the report's own.
    pub replay_flags: String,
}

/// The explorer's data of the run of `scenario` (read from `file`, already changed by its
/// variant and `--set`s) with `options`.
pub fn build(
    scenario: &Scenario,
    file: &str,
    options: &ExploreOptions,
) -> Result<ExploreData, ScenarioError> {
    build_reporting(scenario, file, options, &|_, _| {})
}

/// [`build`], calling `progress(events, now)` every [`PROGRESS_EVENTS`] events of each of its
/// runs (`resim explore --serve` shows it); the runs are the same however they are advanced.
pub fn build_reporting(
    scenario: &Scenario,
    file: &str,
    options: &ExploreOptions,
    progress: &dyn Fn(u64, SimTime),
) -> Result<ExploreData, ScenarioError> {
    let plain = RunOptions {
        seed: options.seed,
        duration: options.duration,
        max_events: options.max_events,
        failed_examples: true,
        ..RunOptions::default()
    };
    let first = run_reporting(scenario, file, &plain, progress)?;
    let requests = tree_requests(&first.failed_examples, &first.slow_examples);
    let followed = if requests.is_empty() {
        Vec::new()
    } else {
        let following = RunOptions {
            follow_requests: requests,
            ..plain
        };
        let second = run_reporting(scenario, file, &following, progress)?;
        assert_eq!(
            second.report.digest, first.report.digest,
            "following requests never changes a run (world/follow.rs)"
        );
        second.followed_requests
    };
    let mut report = first.report;
    report.replay_flags = format!("{}{}", report.replay_flags, options.replay_flags);
    let recorded = Recorded {
        examples: &first.failed_examples,
        slow: &first.slow_examples,
        followed: &followed,
    };
    Ok(ExploreData::new(
        scenario,
        &report,
        recorded,
        options.variant.clone(),
        options.sets.clone(),
    ))
}

/// One run to its end in slices of [`PROGRESS_EVENTS`] events, `progress` called after each: a
/// run stops at the same event however it is advanced, so it is `run::run`'s (without
/// branches, which an explored run has none of).
fn run_reporting(
    scenario: &Scenario,
    file: &str,
    options: &RunOptions,
    progress: &dyn Fn(u64, SimTime),
) -> Result<RunOutput, ScenarioError> {
    let mut running = Running::start(scenario, file, options)?;
    while running.advance_events(PROGRESS_EVENTS).is_none() {
        progress(running.events(), running.now());
    }
    Ok(running.finish())
}
