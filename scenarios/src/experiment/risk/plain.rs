//! Plain runs: each seed run to the horizon (or to the event, when it ends a run), counted as
//! reaching the event or not. What `resim risk` does where the event is frequent enough, and
//! its pilot: the first runs tell how often the event happens, what a run costs and where
//! the importance function usually sits.

use super::Setup;
use super::path::Path;
use crate::run::CANCEL_CHECK_EVENTS;
use serde::{Deserialize, Serialize};
use sim_core::splitting::{Position, Trajectory};
use std::collections::BTreeMap;

/// One plain run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlainRun {
    /// Its index among the plain runs of the estimate (its seed is the first seed plus it).
    pub index: u64,
    /// Its seed.
    pub seed: u64,
    /// Whether it reached the event.
    pub reached: bool,
    /// Events it executed.
    pub events: u64,
    /// When it ended (the event, or the horizon), in nanoseconds of simulated time.
    pub end_ns: u64,
    /// Whether it ran to its end; `false` when it was stopped at its share of the pilot's
    /// budget first (a run too long to be one of many).
    pub finished: bool,
}

/// Runs seed `first + index` to its end, or until it has executed `events_max` events; with
/// `seen`, counts the events at each value of the importance function.
pub fn run(
    setup: &Setup,
    index: u64,
    events_max: u64,
    mut seen: Option<&mut BTreeMap<u64, u64>>,
) -> Result<PlainRun, String> {
    let seed = setup.seeds.0 + index;
    let mut path = Path::start(setup, seed)?;
    let (reached, finished) = loop {
        let events = path.events();
        if events >= events_max {
            break (false, false);
        }
        if events % CANCEL_CHECK_EVENTS == 0 {
            setup.not_cancelled()?;
        }
        match path.step() {
            Position::At(importance) => {
                if let Some(seen) = seen.as_deref_mut() {
                    *seen.entry(importance).or_default() += 1;
                }
            }
            Position::Hit => break (true, true),
            Position::End { reached } => break (reached, true),
        }
    };
    Ok(PlainRun {
        index,
        seed,
        reached,
        events: path.events(),
        end_ns: path.time().as_nanos(),
        finished,
    })
}
