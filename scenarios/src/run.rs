//! Running a scenario: build the world for a seed, run it within its limits, report.
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
//! figure reached it.

use crate::figures::{Followed, RunMeta};
use crate::format::error::ScenarioError;
use crate::format::footprint::footprint;
use crate::format::limits::Bytes;
use crate::format::overrides::segment;
use crate::format::schema::Scenario;
use crate::format::validate::validate;
use crate::report::Report;
use crate::world::{Live, Net, World};
use sim_core::{EntityId, Limits, Seed, Sim, SimDuration, SimTime, StopReason, TraceRecord};
use std::borrow::Cow;

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
    /// Keep the first failed requests of each bucket by reason, which the report's
    /// explanations name as examples.
    pub failed_examples: bool,
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
}

/// The command-line words after `--seed N` that give a run `options`' duration and event
/// budget (the report's replay command ends with them).
fn replay_flags(options: &RunOptions) -> String {
    let mut words = String::new();
    if let Some(d) = options.duration {
        words.push_str(&format!(" --duration {d}"));
    }
    if let Some(n) = options.max_events {
        words.push_str(&format!(" --max-events {n}"));
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
    s
}

/// Runs `scenario` (read from `file`) with the overrides in `options`. Overrides are
/// validated like the file itself: a duration shorter than a fault's start is an error.
pub fn run(
    scenario: &Scenario,
    file: &str,
    options: &RunOptions,
) -> Result<RunOutput, ScenarioError> {
    let s = with_flags(scenario, options);
    // The file was checked as written: what fails now, the flags made so, and the message
    // names them as typed.
    validate(&s).map_err(|error| ScenarioError::Invalid {
        file: format!("{file}{}", replay_flags(options)),
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
    // Every client and service is a node played by the one world entity; validation built
    // the same network on a scratch entity, so this cannot fail.
    let net = sim
        .entity_mut(id)
        .build_network(&s, Seed(seed), id)
        .expect("the network is validated with the scenario");
    *sim.shared_mut() = net;
    for (t, msg) in initial {
        sim.schedule(t, id, msg);
    }
    // What the file fixes was estimated at validation; what is left of the budget is for
    // what grows while running, checked between slices of events.
    let fixed = footprint(&s)
        .iter()
        .fold(PROGRAM_BYTES, |t, p| t.saturating_add(p.bytes));
    let allowance = s.limits.memory_max.saturating_sub(fixed);
    // One event of a fan-out starts up to `n` calls: checks come `n` times as often.
    let slice = (MEMORY_CHECK_EVENTS / crate::format::schema::distributed::fan_out_max(&s)).max(1)
        + (s.clients.len() + s.services.len()) as u64;
    // What the run held at the last check: the growth since then is expected again before
    // the next one.
    let mut held_last = 0;
    let (stop, stop_detail) = loop {
        if let Some(reason) = sim.run_events(slice) {
            break (reason, None);
        }
        let pending = sim.events_pending();
        let events = (
            sim.events_reserved(0),
            sim.events_reserved(crate::world::GROWTH_MARGIN),
        );
        let (world, net) = sim.entity_and_shared(id);
        let live = world.live();
        let held = net.held_now();
        match over_memory(
            &live,
            (pending, events),
            held,
            held_last,
            allowance,
            &s.limits,
        ) {
            Ok(now) => held_last = now,
            Err(detail) => break (StopReason::MemoryLimit, Some(detail)),
        }
    };
    let meta = RunMeta {
        file: file.to_string(),
        seed,
        digest: sim.digest().value(),
        events: sim.events_executed(),
        stop,
        stop_detail,
        replay_flags: replay_flags(options),
    };
    Ok(output(sim, id, &s, &meta))
}

/// The world of `s` at `seed`, describing and recording what `options` ask for.
fn world(s: &Scenario, seed: u64, options: &RunOptions) -> World {
    let mut world = World::new(s, Seed(seed), s.bucket);
    if let Some((from, to)) = options.trace_window {
        world.trace_window(SimTime::ZERO + from, SimTime::ZERO + to);
    }
    if options.follow_request.is_some() || options.failed_examples {
        world.follow(options.follow_request, options.failed_examples);
    }
    world
}

/// The report of a run that has stopped, with what the world still held.
fn output(mut sim: Sim<World>, id: EntityId, s: &Scenario, meta: &RunMeta) -> RunOutput {
    let end = sim.now().min(SimTime::ZERO + s.duration);
    let trace = sim.trace().to_vec();
    let (world, net) = sim.entity_and_shared(id);
    world.check_invariants();
    let in_flight = world.in_flight();
    let mut figures = world.figures(end, net);
    // The world, the network and the event queue are done with: freed before the report's
    // rows are built, a run's peak is the larger of the two rather than their sum.
    drop(sim);
    let requests_in_flight = figures.requests_in_flight;
    let report = Report::build(s, meta, &figures);
    RunOutput {
        report,
        trace,
        in_flight,
        requests_in_flight,
        followed: figures.followed.take(),
    }
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
