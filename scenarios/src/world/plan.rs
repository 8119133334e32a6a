//! A service's call stages as its jobs run them: compiled once, when the world is built, from
//! [`Service::call_stages`](crate::format::schema::Service::call_stages) (so `call_mode`
//! reaches the world as the stages it stands for, and the world runs one form). It owns the
//! two draws a stage makes: which call a `Pick` stage takes (from the service's `route`
//! stream, as `call_mode: Pick` always drew), and whether a call whose `call_ratio` is below 1
//! is made (from a stream of that call's own, which only such a call has: a file without one
//! draws nothing new). [`super::downstream`] runs the stages; this says what each one makes.

use crate::format::limits::CALLS_MAX;
use crate::format::schema::{CallStage, Service as Config};
use sim_core::sample::{bernoulli, unit_f64};
use sim_core::{RngStream, Seed};
use std::ops::Range;

/// The stages of one service's calls.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Each stage: how it runs and where its calls are in `members`.
    stages: Box<[Run]>,
    /// The calls of every stage, by index in the service's `calls`, stage after stage.
    members: Box<[u16]>,
    /// For each call, its place in its stage: the slot a job keeps it in while it runs.
    slots: Box<[u16]>,
    /// The most calls one stage may run at once: the slots a job needs.
    width: u16,
    /// For each call whose `call_ratio` is below 1, its ratio and stream (empty when no call
    /// has one).
    ratios: Box<[Option<Box<Ratio>>]>,
    /// Each call's weight (empty without a `Pick` stage).
    weights: Box<[f64]>,
}

/// One stage: `members[start..end]`, all of them or one picked from a total weight.
#[derive(Debug, Clone, Copy)]
struct Run {
    start: u16,
    end: u16,
    /// A `Pick` stage's total weight.
    pick: Option<f64>,
}

/// A call made on a share of the requests that reach it.
#[derive(Debug, Clone)]
struct Ratio {
    ratio: f64,
    rng: RngStream,
}

const _: () = assert!(CALLS_MAX <= u16::MAX as usize, "call indices are u16");

impl Plan {
    /// The plan of service `name` (validated: every call in one stage, a `Pick` with weight).
    pub fn new(name: &str, config: &Config, seed: Seed) -> Plan {
        let stages = config.call_stages();
        let (mut runs, mut members) = (Vec::with_capacity(stages.len()), Vec::new());
        let mut slots = vec![0u16; config.calls.len()];
        let mut width = 0;
        for stage in stages.iter() {
            let start = members.len() as u16;
            // A `Pick` stage runs one call: every call of it takes slot 0.
            let picks = matches!(stage, CallStage::Pick(_));
            for (slot, &c) in stage.calls().iter().enumerate() {
                members.push(c as u16);
                slots[c as usize] = if picks { 0 } else { slot as u16 };
            }
            let pick = match stage {
                CallStage::All(calls) => {
                    width = width.max(calls.len());
                    None
                }
                CallStage::Pick(calls) => {
                    width = width.max(1);
                    // The sum in the order `pick` subtracts in, as `call_mode: Pick` always did.
                    Some(calls.iter().map(|&c| config.calls[c as usize].weight).sum())
                }
            };
            let end = members.len() as u16;
            runs.push(Run { start, end, pick });
        }
        let ratios: Box<[Option<Box<Ratio>>]> = if config.calls.iter().all(|c| c.call_ratio >= 1.0)
        {
            Box::new([])
        } else {
            let stream = |i: usize| seed.stream(&format!("services/{name}/calls/{i}/ratio"));
            (config.calls.iter().enumerate())
                .map(|(i, c)| {
                    (c.call_ratio < 1.0).then(|| {
                        Box::new(Ratio {
                            ratio: c.call_ratio,
                            rng: stream(i),
                        })
                    })
                })
                .collect()
        };
        let weights = if runs.iter().any(|r| r.pick.is_some()) {
            config.calls.iter().map(|c| c.weight).collect()
        } else {
            Box::new([]) as Box<[f64]>
        };
        Plan {
            weights,
            stages: runs.into_boxed_slice(),
            members: members.into_boxed_slice(),
            slots: slots.into_boxed_slice(),
            width: width as u16,
            ratios,
        }
    }

    /// How many stages there are (0: the service makes no calls).
    pub fn stages(&self) -> usize {
        self.stages.len()
    }

    /// The most calls one stage may run at once.
    pub fn width(&self) -> usize {
        usize::from(self.width)
    }

    /// The slot call `call` is kept in while it runs: its place in its stage.
    pub fn slot(&self, call: usize) -> usize {
        usize::from(self.slots[call])
    }

    /// Where in the members the calls stage `stage` takes are, before their ratios are drawn:
    /// all its calls, or the one its pick draws from `route`.
    pub fn take(&self, stage: usize, route: &mut RngStream) -> Range<usize> {
        let run = self.stages[stage];
        let (start, end) = (usize::from(run.start), usize::from(run.end));
        let Some(total) = run.pick else {
            return start..end;
        };
        let mut u = unit_f64(route) * total;
        for k in start..end {
            let w = self.weights[usize::from(self.members[k])];
            if u < w {
                return k..k + 1;
            }
            u -= w;
        }
        end - 1..end
    }

    /// The call at place `k` of the members (see [`Plan::take`]).
    pub fn member(&self, k: usize) -> usize {
        usize::from(self.members[k])
    }

    /// Which of the calls at `taken` (see [`Plan::take`]) are made, in order: `None` when all
    /// are, with no draw (no call among them has a `call_ratio` below 1); else a draw for each
    /// call that has one, from its own stream.
    pub fn draw(&mut self, taken: Range<usize>) -> Option<Vec<bool>> {
        let members = &self.members[taken];
        let ratios = &mut self.ratios;
        if ratios.is_empty() || !members.iter().any(|&c| ratios[usize::from(c)].is_some()) {
            return None;
        }
        let made = members.iter().map(|&c| match &mut ratios[usize::from(c)] {
            Some(r) => bernoulli(&mut r.rng, r.ratio),
            None => true,
        });
        Some(made.collect())
    }

    /// Gives the ratio draws fresh randomness from `seed` (a branch's).
    pub fn reseed(&mut self, seed: Seed) {
        for r in self.ratios.iter_mut().flatten() {
            r.rng.reseed(seed);
        }
    }
}
