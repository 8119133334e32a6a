//! Running a scenario: build the world for a seed, run it within its limits, report.

use crate::error::ScenarioError;
use crate::figures::RunMeta;
use crate::report::Report;
use crate::schema::Scenario;
use crate::validate::validate;
use crate::world::{Net, World};
use sim_core::{Limits, Seed, Sim, SimDuration, SimTime, TraceRecord};

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
}

/// Runs `scenario` (read from `file`) with the overrides in `options`. Overrides are
/// validated like the file itself: a duration shorter than a fault's start is an error.
pub fn run(
    scenario: &Scenario,
    file: &str,
    options: &RunOptions,
) -> Result<RunOutput, ScenarioError> {
    let mut s = scenario.clone();
    if let Some(d) = options.duration {
        s.duration = d;
    }
    if let Some(b) = options.bucket {
        s.bucket = b;
    }
    if let Some(m) = options.max_events {
        s.max_events = m;
    }
    validate(&s).map_err(|error| ScenarioError::Invalid {
        file: file.to_string(),
        error,
    })?;
    let seed = options.seed.unwrap_or(s.seed);
    let mut world = World::new(&s, Seed(seed), s.bucket);
    if let Some((from, to)) = options.trace_window {
        world.trace_window(SimTime::ZERO + from, SimTime::ZERO + to);
    }
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
    let stop = sim.run();
    let end = sim.now().min(SimTime::ZERO + s.duration);
    let meta = RunMeta {
        file: file.to_string(),
        seed,
        digest: sim.digest().value(),
        events: sim.events_executed(),
        stop,
    };
    let trace = sim.trace().to_vec();
    let (world, net) = sim.entity_and_shared(id);
    world.check_invariants();
    let in_flight = world.in_flight();
    let figures = world.figures(end, net);
    let requests_in_flight = figures.requests_in_flight;
    let report = Report::build(&s, &meta, &figures);
    Ok(RunOutput {
        report,
        trace,
        in_flight,
        requests_in_flight,
    })
}
