//! `load`: one factor that scales the arrival rates of every open-loop client (a constant
//! rate, each step, a ramp's two ends, a spike's base and peak), written as one override
//! `clients.NAME.load.rate=…` per client, so that a run it makes replays with ordinary
//! `--set` lines and reads and validates like a file that says the same.

use super::path::segment;
use super::{Flag, Override};
use crate::format::schema::{Load, Scenario, Schedule};
use sim_core::Rate;

/// The path that stands for every open-loop client's rates at once: `--stress load=…` in
/// `resim tune`, `--x load=…` or `--y load=…` in `resim phase`, whose values are factors.
pub const LOAD: &str = "load";

/// The overrides that scale every open-loop client's rates in `scenario` by `factor`, each
/// given as `flag`; an error (the reason alone) for a factor that is not positive or a client
/// whose load is not a rate.
pub fn load_overrides(
    scenario: &Scenario,
    factor: f64,
    flag: Flag,
) -> Result<Vec<Override>, String> {
    if !(factor.is_finite() && factor > 0.0) {
        return Err(format!(
            "load={factor}: the factor must be a positive number, e.g. load=1.5"
        ));
    }
    let mut out = Vec::with_capacity(scenario.clients.len());
    for (name, client) in &scenario.clients {
        let Load::Open { rate } = &client.load else {
            return Err(format!(
                "load scales open-loop rates, and client {name} has a population of users; scale it with clients.{}.load.users instead",
                segment(name)
            ));
        };
        let scaled = scale(rate, factor);
        let value = ron::to_string(&scaled).expect("a schedule is plain data");
        out.push(Override {
            path: format!("clients.{}.load.rate", segment(name)),
            value,
            flag,
        });
    }
    Ok(out)
}

/// `schedule` with every rate multiplied by `factor`, rounded to a thousandth per second so
/// that the override reads as a person would write it (`1500/s`, not `1500.0000000000002/s`).
fn scale(schedule: &Schedule, factor: f64) -> Schedule {
    let r = |rate: &Rate| {
        Rate::per_second(libm::round(rate.as_per_second() * factor * 1000.0) / 1000.0)
    };
    match schedule {
        Schedule::Constant(rate) => Schedule::Constant(r(rate)),
        Schedule::Steps(steps) => Schedule::Steps(
            steps
                .iter()
                .map(|s| crate::format::schema::Step {
                    at: s.at,
                    rate: r(&s.rate),
                })
                .collect(),
        ),
        Schedule::Ramp {
            from,
            to,
            start,
            end,
        } => Schedule::Ramp {
            from: r(from),
            to: r(to),
            start: *start,
            end: *end,
        },
        Schedule::Spike {
            base,
            peak,
            start,
            end,
        } => Schedule::Spike {
            base: r(base),
            peak: r(peak),
            start: *start,
            end: *end,
        },
    }
}
