//! One replication of splitting, on whole runs or on excursions from the basin: independent
//! of every other (its own seeds, its own stream of choices), so that replications run in
//! parallel, in shares on several machines, and combine into an interval.
//!
//! - **Whole runs**: `N` runs from fresh seeds, split by AMS up to the event; the
//!   replication's estimate is AMS's.
//! - **Excursions**: one run in the basin (its seed, to the basin's length), counting its
//!   exits from the basin and keeping copies of the states it left in; `N` of those copies,
//!   chosen uniformly and each branched onto fresh numbers, are split by AMS until they reach
//!   the event or return to the basin. The replication's estimate is a rate: the exits per
//!   second times the probability that an exit reaches the event.

use super::Setup;
use super::path::Path;
use serde::{Deserialize, Serialize};
use sim_core::splitting::{self, AmsConfig, AmsStop, Branch, Start, Trajectory};
use sim_core::{RngStream, Seed, SimDuration, SimTime};

/// Where the roots of splitting's runs start among the seeds: past any plain run's, so that
/// changing the budget of plain runs moves no replication.
pub const WHOLE_SEEDS_FROM: u64 = 1_000_000;
/// Where the basin runs' seeds start.
pub const BASIN_SEEDS_FROM: u64 = 2_000_000;

/// How a replication splits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", deny_unknown_fields)]
pub enum Split {
    /// Whole runs from fresh seeds.
    Whole,
    /// Excursions from the basin `importance ≤ floor`, leaving it at `floor + 1`, counted
    /// over a basin run of `basin_ns`.
    Excursions {
        /// The basin's top.
        floor: u64,
        /// How long the basin run is, in nanoseconds.
        basin_ns: u64,
    },
}

/// A path that reached the event: its seed and branches, and when it reached it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Witness {
    /// The seed of its run.
    pub seed: u64,
    /// Its branch points, in order.
    pub branches: Vec<(u64, u32, u64)>,
    /// When it reached the event, in nanoseconds of simulated time.
    pub at_ns: u64,
}

/// What one basin run saw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BasinFigures {
    /// Exits from the basin.
    pub exits: u64,
    /// Of them, in the first half of the run.
    pub exits_first_half: u64,
    /// The run's length, in nanoseconds.
    pub time_ns: u64,
    /// The longest excursion, in nanoseconds.
    pub longest_excursion_ns: u64,
    /// Whether the basin run reached the event itself.
    pub hit: bool,
}

/// One replication's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replication {
    /// Its index.
    pub index: u64,
    /// Its estimate: a probability (whole runs) or a rate per second (excursions).
    pub estimate: f64,
    /// Events it executed, replays and the basin run included.
    pub events: u64,
    /// Its levels: the score of each and the share of trajectories that went on past it.
    pub levels: Vec<(u64, f64)>,
    /// Why its splitting stopped: `reached`, `extinct`, `budget` or `top`.
    pub stop: String,
    /// The basin run, for excursions.
    pub basin: Option<BasinFigures>,
    /// A path that reached the event, if one did.
    pub witness: Option<Witness>,
}

fn stop_name(stop: AmsStop) -> &'static str {
    match stop {
        AmsStop::Reached => "reached",
        AmsStop::Extinct => "extinct",
        AmsStop::Budget => "budget",
        AmsStop::Top => "top",
        AmsStop::Stopped => "stopped",
    }
}

/// How many states a basin run keeps to start excursions from, per trajectory: enough that
/// the `N` starts are spread over the whole run.
const KEPT_PER_PARTICLE: usize = 4;

/// Where one replication's trajectories start: their states, the seeds of their runs, and
/// the basin run's figures and events (excursions).
type Begun<'s> = (Vec<Start<Path<'s>>>, Vec<u64>, Option<BasinFigures>, u64);

/// Whole runs from fresh seeds, one a trajectory.
fn whole_starts(setup: &Setup, particles: usize, index: u64) -> Result<Begun<'_>, String> {
    let first = setup.seeds.0 + WHOLE_SEEDS_FROM + index * particles as u64;
    let starts = (0..particles)
        .map(|i| {
            Ok(Start {
                state: Path::start(setup, first + i as u64)?,
                score: 0,
                origin: i,
                branches: Vec::new(),
            })
        })
        .collect::<Result<_, String>>()?;
    let seeds = (0..particles).map(|i| first + i as u64).collect();
    Ok((starts, seeds, None, 0))
}

/// A basin run, and copies of it at its exits as the trajectories' starts, each on a branch
/// of its own; a replication of rate zero when it never left the basin.
fn basin_starts<'s>(
    setup: &'s Setup,
    floor: u64,
    basin_ns: u64,
    particles: usize,
    index: u64,
    choice: &mut RngStream,
) -> Result<Result<Begun<'s>, Replication>, String> {
    let seed = setup.seeds.0 + BASIN_SEEDS_FROM + index;
    let until = SimTime::ZERO + SimDuration::from_nanos(basin_ns);
    let b = splitting::basin(
        Path::start(setup, seed)?,
        floor,
        floor + 1,
        until,
        KEPT_PER_PARTICLE * particles,
    );
    let figures = BasinFigures {
        exits: b.exits,
        exits_first_half: b.exits_first_half,
        time_ns: b.time.as_nanos(),
        longest_excursion_ns: b.longest_excursion.as_nanos(),
        hit: b.hit,
    };
    if b.kept.is_empty() {
        // Never left the basin: no excursion, a rate of zero measured over the run.
        return Ok(Err(Replication {
            index,
            estimate: 0.0,
            events: b.events,
            levels: Vec::new(),
            stop: "extinct".to_string(),
            basin: Some(figures),
            witness: None,
        }));
    }
    let starts = (0..particles)
        .map(|i| {
            let (state, score) = &b.kept[(choice.next_u64() % b.kept.len() as u64) as usize];
            let mut state = state.clone();
            state.branch(0, i as u64);
            Start {
                branches: vec![Branch {
                    events: state.events(),
                    level: 0,
                    index: i as u64,
                }],
                state,
                score: *score,
                origin: 0,
            }
        })
        .collect();
    Ok(Ok((starts, vec![seed], Some(figures), b.events)))
}

/// Runs replication `index` of `split` with `particles` trajectories and at most
/// `events_max` events of splitting.
pub fn run(
    setup: &Setup,
    split: Split,
    particles: usize,
    index: u64,
    events_max: u64,
) -> Result<Replication, String> {
    let mut choice = Seed(setup.seeds.0).indexed_stream("risk/choice", index);
    let config = AmsConfig {
        particles,
        floor: None,
        events_max,
        level_max: None,
    };
    let (starts, seeds, basin, basin_events) = match split {
        Split::Whole => whole_starts(setup, particles, index)?,
        Split::Excursions { floor, basin_ns } => {
            match basin_starts(setup, floor, basin_ns, particles, index, &mut choice)? {
                Ok(begun) => begun,
                Err(done) => return setup.not_cancelled().map(|()| done),
            }
        }
    };
    let config = match split {
        Split::Whole => config,
        Split::Excursions { floor, .. } => AmsConfig {
            floor: Some(floor),
            ..config
        },
    };
    let out = splitting::ams(starts, config, &mut choice);
    // Cancelled (AmsStop::Stopped): the estimate is not one.
    setup.not_cancelled()?;
    let n = particles as f64;
    let estimate = match (&basin, split) {
        (Some(b), Split::Excursions { .. }) => {
            out.estimate * b.exits as f64 / SimDuration::from_nanos(b.time_ns).as_secs_f64()
        }
        _ => out.estimate,
    };
    let witness = out.witness.as_ref().map(|(origin, branches)| Witness {
        seed: seeds[*origin],
        branches: branches
            .iter()
            .map(|b| (b.events, b.level, b.index))
            .collect(),
        at_ns: out.witness_time.map_or(0, SimTime::as_nanos),
    });
    Ok(Replication {
        index,
        estimate,
        events: basin_events + out.events,
        levels: out
            .levels
            .iter()
            .map(|l| (l.score, (n - l.dropped as f64) / n))
            .collect(),
        stop: stop_name(out.stop).to_string(),
        basin,
        witness,
    })
}
