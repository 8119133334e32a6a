//! Running a scenario: build the world for a seed, run it within its limits, report.
//!
//! A run is a value, [`Running`]: started from a scenario ([`Running::start`]), advanced by
//! time or by events, copied (`Clone`: the world, its pending events, the network, every
//! pattern machine and random stream), branched onto fresh randomness
//! ([`Running::branch`]), and finished into its report ([`Running::finish`]). [`run`] is
//! start, advance to the end, finish. A copy continued on the same streams is the original:
//! same events, same digest, same report.
//!
//! **Layer rule:** a run uses the format, the world, `figures.rs` and the report (it builds the
//! report from the figures when the world is done); experiments and the command line use it.
//!
//! The limits of a run: its event budget and time limit (the engine's), and the part of its
//! memory budget that the file does not fix. What grows while running (calls and jobs in
//! flight, queued work, pending events, messages held by the network, idempotency keys) is
//! counted every few thousand events and priced at a measured cost per entry, or at what
//! their tables have reserved when that is more (a table about to double counts its old and
//! new allocation: fan-outs fill tables fast, and a doubled table peaks the heap); a run over
//! what is left of the budget stops with `memory_limit` and a full report that says which
//! figure reached it. The checks come at the same event counts however a run is advanced,
//! so a run advanced in steps stops where the whole run would.

use crate::figures::sampling::Sampling;
use crate::figures::{FailedExample, Followed, RunMeta, SlowExample};
use crate::format::error::ScenarioError;
use crate::format::footprint::footprint;
use crate::format::limits::Bytes;
use crate::format::overrides::segment;
use crate::format::schema::Scenario;
pub use crate::format::schema::Series;
use crate::format::validate::validate;
use crate::report::Report;
pub use crate::world::Probe;
use crate::world::{Live, Net, World};
use sim_core::{
    Digest, EntityId, Limits, Seed, Sim, SimDuration, SimTime, StopReason, TraceRecord,
};
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Command-line overrides of a scenario's settings.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The seed (the scenario's own when `None`).
    pub seed: Option<u64>,
    /// The simulated duration.
    pub duration: Option<SimDuration>,
    /// The report bucket width.
    pub bucket: Option<SimDuration>,
    /// The event budget.
    pub max_events: Option<u64>,
    /// Keep a trace of the first this many events (0: none), for comparing two runs.
    pub trace_capacity: usize,
    /// Describe the events between these two instants in the report, one line each.
    pub trace_window: Option<(SimDuration, SimDuration)>,
    /// Follow the client request with this id (`request #N` in a trace): its steps are in
    /// the output's `followed`.
    pub follow_request: Option<u64>,
    /// Follow these client requests too (the explorer's samples): their steps are in the
    /// output's `followed_requests`.
    pub follow_requests: Vec<u64>,
    /// Keep the first failed requests of each bucket by reason, which the report's
    /// explanations name as examples.
    pub failed_examples: bool,
    /// Where the run's streams take fresh randomness (`--branch`), in the order of their
    /// event counts.
    pub branches: Vec<Branch>,
    /// What the run keeps per report bucket: [`Series::All`] (the default), or
    /// [`Series::Clients`] for a run judged on its expectations and verdict alone, whose
    /// report then has no `series` rows (see [`Series`] for what is dropped). It never
    /// changes the run: the digest is the same.
    pub series: Series,
    /// Follow, whole, about this share (0 to 1) of the client requests, chosen by their
    /// trace ids ([`Sampling`]), and hand each to [`run_streaming`]'s `ended` as soon as
    /// nothing of it is in flight (`resim run --spans`). It never changes the run.
    pub sample_requests: Option<f64>,
    /// Stop when this is cancelled (a Python caller's Ctrl-C): [`run`] then gives
    /// [`ScenarioError::Cancelled`]. Looked at every [`CANCEL_CHECK_EVENTS`] events, between
    /// the engine's slices of events, never inside them: a run that is not cancelled is the
    /// same run, and a run without one costs nothing.
    pub cancel: Option<Cancel>,
}

/// Events between two looks at a run's [`Cancel`]: a few milliseconds of a release build.
pub const CANCEL_CHECK_EVENTS: u64 = 1 << 16;

/// A flag a caller raises from another thread to stop runs and sweeps early (a Python
/// caller's Ctrl-C); clones share it.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// Stops every run that holds this flag at its next look.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// A branch point of a run (`--branch AT:LEVEL:INDEX`): once `at` events have run, every
/// random stream of the world and the network takes the key of
/// `Seed(seed).branch(level, index)` and starts over, keeping its name. A path that
/// multilevel splitting found is the run seed and its branch points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Branch {
    /// Events executed when the branch happens.
    pub at: u64,
    /// The splitting level.
    pub level: u32,
    /// The branch's index at that level.
    pub index: u64,
}

impl fmt::Display for Branch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.at, self.level, self.index)
    }
}

impl std::str::FromStr for Branch {
    type Err = String;

    /// `AT:LEVEL:INDEX`, three whole numbers.
    fn from_str(text: &str) -> Result<Branch, String> {
        let usage = "write a branch as AT:LEVEL:INDEX (events run before it, its level, its index), e.g. 5000:1:0";
        let parts: Vec<&str> = text.split(':').collect();
        let [at, level, index] = parts[..] else {
            return Err(format!("{text:?}: {usage}"));
        };
        let number = |what: &str, t: &str| {
            t.trim()
                .parse::<u64>()
                .map_err(|_| format!("{text:?}: {what} {t:?} is not a whole number; {usage}"))
        };
        let level = number("LEVEL", level)?;
        Ok(Branch {
            at: number("AT", at)?,
            level: u32::try_from(level)
                .map_err(|_| format!("{text:?}: LEVEL is at most {}", u32::MAX))?,
            index: number("INDEX", index)?,
        })
    }
}

/// What a run gives back.
#[derive(Debug)]
pub struct RunOutput {
    /// The report.
    pub report: Report,
    /// The first events, if a trace was asked for.
    pub trace: Vec<TraceRecord>,
    /// Calls and jobs still in flight when the run stopped.
    pub in_flight: (usize, usize),
    /// Client requests still waiting for their outcome when the run stopped: every offered
    /// request is a success, a failure, or one of these.
    pub requests_in_flight: u64,
    /// What the world recorded of the request `RunOptions::follow_request` asked for.
    pub followed: Option<Followed>,
    /// What the world recorded of every request it followed, by id.
    pub followed_requests: Vec<Followed>,
    /// The failed requests kept as examples when `RunOptions::failed_examples` asked.
    pub failed_examples: Vec<FailedExample>,
    /// The slowest successes of each bucket, kept with the failed examples.
    pub slow_examples: Vec<SlowExample>,
}

/// The command-line words after `--seed N` that give a run `options`' duration and event
/// budget, and the branch points it took (the report's replay command ends with them).
fn replay_flags(options: &RunOptions, branches: &[Branch]) -> String {
    let mut words = String::new();
    if let Some(d) = options.duration {
        words.push_str(&format!(" --duration {d}"));
    }
    if let Some(n) = options.max_events {
        words.push_str(&format!(" --max-events {n}"));
    }
    for b in branches {
        words.push_str(&format!(" --branch {b}"));
    }
    words
}

/// `scenario` with what the flags of `options` change in it; copied only when a flag changes
/// it, since a copy of a large scenario stays alive through the run and its report.
fn with_flags<'s>(scenario: &'s Scenario, options: &RunOptions) -> Cow<'s, Scenario> {
    let mut s = Cow::Borrowed(scenario);
    if let Some(d) = options.duration {
        s.to_mut().duration = d;
    }
    if let Some(b) = options.bucket {
        s.to_mut().bucket = b;
    }
    if let Some(m) = options.max_events {
        s.to_mut().max_events = m;
    }
    // A scenario that keeps only its clients' series (`resim risk` sets it) keeps it.
    if options.series != Series::All && options.series != s.series {
        s.to_mut().series = options.series;
    }
    s
}

/// The scenario a run reads when it reports: the caller's, or the copy its flags made,
/// shared by the run's copies (a copy of a run does not copy its scenario).
#[derive(Debug, Clone)]
enum Given<'s> {
    Borrowed(&'s Scenario),
    Changed(Arc<Scenario>),
}

impl std::ops::Deref for Given<'_> {
    type Target = Scenario;

    fn deref(&self) -> &Scenario {
        match self {
            Given::Borrowed(s) => s,
            Given::Changed(s) => s,
        }
    }
}

/// A run in progress: the engine with the world and its network, and what the run needs
/// to check its memory and to report. Cloning it copies the whole state of the run (not the
/// scenario, which the copies share); a copy advanced as the original is advanced gives the
/// same events, digest and report.
#[derive(Clone)]
pub struct Running<'s> {
    sim: Sim<World>,
    id: EntityId,
    scenario: Given<'s>,
    file: Arc<str>,
    seed: u64,
    /// The duration and event budget flags, for the replay command.
    options: (Option<SimDuration>, Option<u64>),
    /// The branch points taken so far.
    branches: Vec<Branch>,
    /// The memory budget left for what grows while running.
    allowance: u64,
    /// Events between two memory checks.
    slice: u64,
    /// The event count at which the next memory check comes.
    next_check: u64,
    /// What the run held at the last check: the growth since then is expected again before
    /// the next one.
    held_last: u64,
    /// Why the run stopped, once it has, and the memory limit's detail.
    stopped: Option<(StopReason, Option<String>)>,
}

impl<'s> Running<'s> {
    /// Validates `scenario` (read from `file`) with the overrides in `options` (a duration
    /// shorter than a fault's start is an error, as in the file) and builds its world, ready
    /// for its first event. `options.branches` are [`run`]'s to take, not this one's.
    pub fn start(
        scenario: &'s Scenario,
        file: &str,
        options: &RunOptions,
    ) -> Result<Running<'s>, ScenarioError> {
        let s = with_flags(scenario, options);
        // The file was checked as written: what fails now, the flags made so, and the
        // message names them as typed.
        validate(&s).map_err(|error| ScenarioError::Invalid {
            file: format!("{file}{}", replay_flags(options, &[])),
            error,
        })?;
        let seed = options.seed.unwrap_or(s.seed);
        let mut world = world(&s, seed, options);
        let initial = world.initial_events();
        let mut sim = Sim::new(Net::new(Seed(seed)), Limits::new(s.max_events, s.duration));
        if options.trace_capacity > 0 {
            sim.enable_trace(options.trace_capacity);
        }
        let id = sim.add(world);
        // Every client and service is a node played by the one world entity; validation
        // built the same network on a scratch entity, so this cannot fail.
        let net = sim
            .entity_mut(id)
            .build_network(&s, Seed(seed), id)
            .expect("the network is validated with the scenario");
        *sim.shared_mut() = net;
        for (t, msg) in initial {
            sim.schedule(t, id, msg);
        }
        // What the file fixes was estimated at validation; what is left of the budget is
        // for what grows while running, checked between slices of events.
        let fixed = footprint(&s)
            .iter()
            .fold(PROGRAM_BYTES, |t, p| t.saturating_add(p.bytes));
        let allowance = s.limits.memory_max.saturating_sub(fixed);
        // One event of a fan-out starts up to `n` calls: checks come `n` times as often.
        let slice = (MEMORY_CHECK_EVENTS / crate::format::schema::distributed::fan_out_max(&s))
            .max(1)
            + (s.clients.len() + s.services.len()) as u64;
        Ok(Running {
            sim,
            id,
            scenario: match s {
                Cow::Borrowed(s) => Given::Borrowed(s),
                Cow::Owned(s) => Given::Changed(Arc::new(s)),
            },
            file: file.into(),
            seed,
            options: (options.duration, options.max_events),
            branches: Vec::new(),
            allowance,
            slice,
            next_check: slice,
            held_last: 0,
            stopped: None,
        })
    }

    /// Runs until `time` (the run goes on: `None`), or until it stops first: why.
    pub fn advance_until(&mut self, time: SimTime) -> Option<StopReason> {
        self.advance(time, u64::MAX)
    }

    /// Runs `count` more events (the run goes on: `None`), or until it stops first: why.
    pub fn advance_events(&mut self, count: u64) -> Option<StopReason> {
        self.advance(SimTime::MAX, count)
    }

    /// Runs one event (see [`Running::advance_events`]).
    pub fn step(&mut self) -> Option<StopReason> {
        self.advance_events(1)
    }

    /// Runs to the end: the time limit, the event budget, the memory budget, or no event
    /// left. Why it stopped.
    pub fn advance_to_end(&mut self) -> StopReason {
        loop {
            if let Some(reason) = self.advance_events(u64::MAX) {
                return reason;
            }
        }
    }

    /// Runs until `until` or `count` more events, whichever comes first, checking memory at
    /// every multiple of the slice. Why the run stopped, if it did.
    fn advance(&mut self, until: SimTime, count: u64) -> Option<StopReason> {
        if let Some((reason, _)) = self.stopped {
            return Some(reason);
        }
        let end = self.sim.events_executed().saturating_add(count);
        loop {
            let executed = self.sim.events_executed();
            if executed >= end {
                return None;
            }
            let events = end.min(self.next_check) - executed;
            match self.sim.run_events_until(until, events) {
                Some(StopReason::Reached) => return None,
                Some(reason) => return self.stop(reason, None),
                None => {}
            }
            if self.sim.events_executed() == self.next_check {
                if let Err(detail) = self.check_memory() {
                    return self.stop(StopReason::MemoryLimit, Some(detail));
                }
                self.next_check += self.slice;
            }
        }
    }

    /// Ends the run for `reason`. A run that ran out of events before its time limit is at
    /// its time limit, as a whole run would be.
    fn stop(&mut self, reason: StopReason, detail: Option<String>) -> Option<StopReason> {
        if reason == StopReason::Idle {
            self.sim.run();
        }
        self.stopped = Some((reason, detail));
        Some(reason)
    }

    /// Whether what the run holds now leaves room to go on: what it holds, or why not.
    fn check_memory(&mut self) -> Result<(), String> {
        let pending = self.sim.events_pending();
        let events = (
            self.sim.events_reserved(0),
            self.sim.events_reserved(crate::world::GROWTH_MARGIN),
        );
        let (world, net) = self.sim.entity_and_shared(self.id);
        let live = world.live();
        let held = net.held_now();
        let now = over_memory(
            &live,
            (pending, events),
            held,
            self.held_last,
            self.allowance,
            &self.scenario.limits,
        )?;
        self.held_last = now;
        Ok(())
    }

    /// Gives every random stream of the world and its network fresh randomness from
    /// `Seed(seed).branch(level, index)`, each stream keeping its name, and records the
    /// branch point for the replay command. What the streams drew before is kept; what they
    /// draw next is the branch's.
    pub fn branch(&mut self, level: u32, index: u64) {
        let seed = Seed(self.seed).branch(level, index);
        self.sim.entity_mut(self.id).reseed(seed);
        self.sim.shared_mut().reseed(seed);
        self.branches.push(Branch {
            at: self.sim.events_executed(),
            level,
            index,
        });
    }

    /// The branch points taken so far, in order.
    pub fn branches(&self) -> &[Branch] {
        &self.branches
    }

    /// The virtual time.
    pub fn now(&self) -> SimTime {
        self.sim.now()
    }

    /// Events executed so far.
    pub fn events(&self) -> u64 {
        self.sim.events_executed()
    }

    /// The digest of the history so far.
    pub fn digest(&self) -> Digest {
        self.sim.digest()
    }

    /// Why the run stopped, if it has.
    pub fn stopped(&self) -> Option<StopReason> {
        self.stopped.as_ref().map(|(reason, _)| *reason)
    }

    /// The run's seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The world, for observables read between events (a service's queue, the failures so
    /// far).
    pub fn world(&self) -> &World {
        self.sim.entity(self.id)
    }

    /// The count `probe` names, now (see [`World::probe`]).
    #[inline]
    pub fn probe(&self, probe: Probe) -> u64 {
        self.world().probe(probe)
    }

    /// The index of the service called `name`, for a [`Probe`].
    pub fn service_index(&self, name: &str) -> Option<usize> {
        self.world().service_named(name)
    }

    /// The index of the client called `name`, for a [`Probe`].
    pub fn client_index(&self, name: &str) -> Option<usize> {
        self.world().client_named(name)
    }

    /// The network.
    pub fn network(&self) -> &Net {
        self.sim.shared()
    }

    /// The report of the run as it stands: stopped, or cut here (`reached`).
    pub fn finish(self) -> RunOutput {
        let Running {
            mut sim,
            id,
            scenario,
            file,
            seed,
            options: (duration, max_events),
            branches,
            stopped,
            ..
        } = self;
        let (stop, stop_detail) = stopped.unwrap_or((StopReason::Reached, None));
        let flags = RunOptions {
            duration,
            max_events,
            ..RunOptions::default()
        };
        let meta = RunMeta {
            file: file.to_string(),
            seed,
            digest: sim.digest().value(),
            events: sim.events_executed(),
            stop,
            stop_detail,
            replay_flags: replay_flags(&flags, &branches),
        };
        let s: &Scenario = &scenario;
        let end = sim.now().min(SimTime::ZERO + s.duration);
        let trace = sim.trace().to_vec();
        let (world, net) = sim.entity_and_shared(id);
        world.check_invariants();
        let in_flight = world.in_flight();
        let mut figures = world.figures(end, net);
        // The world, the network and the event queue are done with: freed before the
        // report's rows are built, a run's peak is the larger of the two rather than their
        // sum.
        drop(sim);
        let requests_in_flight = figures.requests_in_flight;
        let report = Report::build(s, &meta, &figures);
        RunOutput {
            report,
            trace,
            in_flight,
            requests_in_flight,
            followed: figures.followed.take(),
            followed_requests: std::mem::take(&mut figures.followed_requests),
            failed_examples: std::mem::take(&mut figures.failed_examples),
            slow_examples: std::mem::take(&mut figures.slow_examples),
        }
    }
}

/// Runs `scenario` (read from `file`) with the overrides in `options`: start, advance to the
/// end (branching at `options.branches`), finish. Overrides are validated like the file
/// itself: a duration shorter than a fault's start is an error, and so is a branch point
/// that comes before the one it follows or after the run stopped.
pub fn run(
    scenario: &Scenario,
    file: &str,
    options: &RunOptions,
) -> Result<RunOutput, ScenarioError> {
    run_streaming(scenario, file, options, &mut |_, _| {})
}

/// Events between two hand-overs of the sampled requests that ended: what a run holds of
/// them is the requests in flight and those that ended in the last few thousand events.
const HAND_OVER_EVENTS: u64 = 4096;

/// [`run`], handing each request `options.sample_requests` chose to `ended` as soon as
/// nothing of it is in flight (every few thousand events), then, when the run stops, those
/// still in flight, with the time it stopped at. The run is the one [`run`] runs: same
/// events, same digest, same report (its `followed_requests` are empty: `ended` had them).
pub fn run_streaming(
    scenario: &Scenario,
    file: &str,
    options: &RunOptions,
    ended: &mut dyn FnMut(Followed, Option<SimTime>),
) -> Result<RunOutput, ScenarioError> {
    let mut running = Running::start(scenario, file, options)?;
    let branch_error = |b: &Branch, message: String| ScenarioError::Override {
        file: file.to_string(),
        set: format!("--branch {b}"),
        message,
    };
    for (k, b) in options.branches.iter().enumerate() {
        if let Some(before) = k.checked_sub(1).map(|j| options.branches[j])
            && b.at <= before.at
        {
            return Err(branch_error(
                b,
                format!(
                    "comes after --branch {before}; give the branches in the order they happen, each at more events than the one before"
                ),
            ));
        }
        let left = b.at - running.events();
        if let Some(reason) = running.advance_events(left) {
            return Err(branch_error(
                b,
                format!(
                    "the run stopped ({reason}) after {} events, before the branch; AT must be less than that",
                    running.events()
                ),
            ));
        }
        running.branch(b.level, b.index);
    }
    if options.sample_requests.is_none() {
        match &options.cancel {
            None => {
                running.advance_to_end();
            }
            Some(cancel) => advance_unless_cancelled(&mut running, cancel, file)?,
        }
        return Ok(running.finish());
    }
    // Advancing in steps stops where the whole run stops (the memory checks come at the
    // same event counts), so the hand-overs change nothing of the run.
    loop {
        let stopped = running.advance_events(HAND_OVER_EVENTS);
        for f in running.sim.entity_mut(running.id).take_ended() {
            ended(f, None);
        }
        if options.cancel.as_ref().is_some_and(Cancel::is_cancelled) {
            return Err(ScenarioError::Cancelled { file: file.into() });
        }
        if stopped.is_some() {
            break;
        }
    }
    let stopped_at = running.now();
    let mut out = running.finish();
    for f in std::mem::take(&mut out.followed_requests) {
        ended(f, Some(stopped_at));
    }
    Ok(out)
}

/// Runs to the end in slices of [`CANCEL_CHECK_EVENTS`], which stop where the whole run
/// stops (the memory checks come at the same event counts), looking at `cancel` before each.
fn advance_unless_cancelled(
    running: &mut Running<'_>,
    cancel: &Cancel,
    file: &str,
) -> Result<(), ScenarioError> {
    loop {
        if cancel.is_cancelled() {
            return Err(ScenarioError::Cancelled { file: file.into() });
        }
        if running.advance_events(CANCEL_CHECK_EVENTS).is_some() {
            return Ok(());
        }
    }
}

/// The world of `s` at `seed`, describing and recording what `options` ask for.
fn world(s: &Scenario, seed: u64, options: &RunOptions) -> World {
    let mut world = World::new(s, Seed(seed), s.bucket);
    if let Some((from, to)) = options.trace_window {
        world.trace_window(SimTime::ZERO + from, SimTime::ZERO + to);
    }
    if options.follow_request.is_some()
        || !options.follow_requests.is_empty()
        || options.failed_examples
    {
        world.follow(
            options.follow_request,
            &options.follow_requests,
            options.failed_examples,
        );
    }
    if let Some(ratio) = options.sample_requests {
        world.sample_requests(Sampling::new(seed, ratio));
    }
    world
}

/// The program itself (code, libraries, the scenario, buffers): `resim run` on a small
/// scenario peaks at 3.9 MiB, rounded up. Counted before what the file fixes, so that the
/// whole process stays within the budget.
const PROGRAM_BYTES: u64 = 8 << 20;

/// Events between two checks of a run's memory (plus one per component, so that a check,
/// which reads every service, costs less than one step per event in any topology). Between
/// two checks a run grows by at most a few entries per event: a few hundred KiB.
const MEMORY_CHECK_EVENTS: u64 = 4096;

/// Peak resident memory per entry of what grows while running, measured with release builds
/// of `resim run` (`/usr/bin/time -v`, peak resident set at two event budgets, the
/// difference divided by the difference in entries) and rounded up. Measured: a call and
/// its job queued at an unbounded queue 630 bytes; a queued job alone 192; a call, its job
/// and its message on the way 728; a job and its message held by a clog 248.
mod cost {
    /// A call in flight (one logical call with its permits and retry state).
    pub const CALL: u64 = 512;
    /// A job: an attempt on its way, queued, worked on or waiting downstream.
    pub const JOB: u64 = 256;
    /// A hedged call's race.
    pub const RACE: u64 = 256;
    /// A pending event (a message on its way, a timer).
    pub const EVENT: u64 = 128;
    /// A message held by a clog or a paused node.
    pub const HELD: u64 = 128;
    /// A key in an idempotency store.
    pub const IDEMPOTENCY_KEY: u64 = 128;
}

/// What a run holds now, in bytes, if it may go on: if neither what it holds plus as much
/// again as it grew since the last check (`held_last`), nor what it will hold while one of
/// its tables grows before the next check, passes `allowance` bytes. Otherwise why it must
/// stop: the figure that reached the limit, in the user's words, with the fix.
///
/// A table grows by doubling, and while it moves its entries the old and the new allocation
/// both exist: three times what it held. So a run stops at the last check before such a
/// growth would pass the allowance, having used at least half of the allowance by then (its
/// previous growth fitted).
fn over_memory(
    live: &Live,
    (pending, (events_allocated, events_reserved)): (usize, (u64, u64)),
    held: usize,
    held_last: u64,
    allowance: u64,
    limits: &crate::format::limits::RunLimits,
) -> Result<u64, String> {
    let n = |x: usize| x as u64;
    let priced = n(live.calls) * cost::CALL + n(live.jobs) * cost::JOB + n(live.races) * cost::RACE;
    let parts = |tables: u64, events: u64| {
        [
            priced.max(tables),
            (n(pending) * cost::EVENT).max(events),
            n(held) * cost::HELD,
            n(live.idempotency_keys) * cost::IDEMPOTENCY_KEY,
        ]
    };
    let now = parts(live.allocated, events_allocated);
    let growing = parts(live.reserved, events_reserved);
    let now_total: u64 = now.iter().sum();
    let growing_total = growing
        .iter()
        .sum::<u64>()
        .max(now_total + now_total.saturating_sub(held_last));
    if growing_total <= allowance {
        return Ok(now_total);
    }
    let budget = format!(
        "the {} that the memory budget of {} leaves beside the program and what the file fixes ({})",
        Bytes(allowance),
        Bytes(limits.memory_max),
        Bytes(limits.memory_max - allowance)
    );
    let largest = (0..growing.len()).max_by_key(|&i| growing[i]).unwrap_or(0);
    let (figure, fix) = figure_and_fix(largest, live, pending, held);
    let amount = if now_total > allowance {
        format!("hold about {}, more than {budget}", Bytes(now_total))
    } else {
        format!(
            "hold about {} and would need about {} as they grow, more than {budget}",
            Bytes(now_total),
            Bytes(growing_total)
        )
    };
    Err(format!(
        "{figure} {amount}; {fix}, or raise the budget with --max-memory"
    ))
}

/// What part `largest` of a run's memory is (the parts of [`over_memory`]), and its fix.
fn figure_and_fix(largest: usize, live: &Live, pending: usize, held: usize) -> (String, String) {
    match largest {
        0 => {
            let figure = format!(
                "requests in flight ({} calls and {} jobs",
                thousands(live.calls),
                thousands(live.jobs)
            );
            // Name where most of the jobs are, when one place holds most of them.
            match &live.queued_most {
                Some(q) if q.queued > live.jobs / 2 => (
                    format!(
                        "{figure}, {} of them queued at services.{})",
                        thousands(q.queued),
                        segment(&q.service)
                    ),
                    if q.unbounded {
                        format!(
                            "bound the queue (services.{}.queue.capacity) or give the callers a timeout",
                            segment(&q.service)
                        )
                    } else {
                        format!(
                            "use a smaller queue (services.{}.queue.capacity) or fewer replicas",
                            segment(&q.service)
                        )
                    },
                ),
                _ if held > live.jobs / 2 => (
                    format!(
                        "{figure}, {} messages held by clogs and paused nodes)",
                        thousands(held)
                    ),
                    "end the clog or pause sooner, or offer less load".to_string(),
                ),
                _ => (
                    format!("{figure})"),
                    "offer less load or give the callers shorter timeouts".to_string(),
                ),
            }
        }
        1 => (
            format!("pending events ({})", thousands(pending)),
            "use shorter delays (latencies, backoffs, timeouts) or offer less load".to_string(),
        ),
        2 => (
            format!(
                "messages held by clogs and paused nodes ({})",
                thousands(held)
            ),
            "end the clog or pause sooner, or offer less load".to_string(),
        ),
        _ => (
            format!("idempotency keys ({})", thousands(live.idempotency_keys)),
            "use a smaller idempotency capacity".to_string(),
        ),
    }
}

/// `1234567` as `1,234,567`.
fn thousands(x: usize) -> String {
    let digits = x.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
