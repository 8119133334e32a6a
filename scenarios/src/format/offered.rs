//! What the clients offer each service, on average over the run, against the most it can
//! serve: the figures behind `resim check`'s warning that a service is overloaded before
//! anything goes wrong ([`overloaded`]).
//!
//! - **Offered.** Each open-loop client's mean rate over `[0, duration)` (a spike or a step
//!   counts for the time it lasts) reaches its call's target, times the leaves of a fan-out.
//!   A service passes on what reaches it, minus its warm cache's hits, to each of its calls
//!   times the call's `call_ratio` (and to one call of a `Pick` stage, in proportion to the
//!   weights). These are
//!   first attempts only: retries and hedges come on top. Closed-loop and one-shot clients
//!   wait for their requests and cannot overload anything for long; they are left out.
//! - **Capacity.** `replicas × workers / mean work` (the most replicas an autoscaler may run),
//!   from the declared distribution's mean: an upper bound, since a worker is also held while
//!   the request waits on its own calls, and work may grow with load.
//!
//! Offered above capacity is then certain overload: the queue fills and stays full, whatever
//! the seed. The reverse is not a promise of health (capacity is an upper bound).

use crate::format::schema::{CallStage, Load, Scenario, Schedule, Service};
use sim_core::SimDuration;
use std::collections::{BTreeMap, BTreeSet};

/// A service the clients offer more than it can serve.
#[derive(Debug, Clone, PartialEq)]
pub struct Overload {
    /// The service.
    pub service: String,
    /// First attempts per second reaching it, on average over the run.
    pub offered_per_s: f64,
    /// The clients whose requests reach it.
    pub clients: Vec<String>,
    /// The services they pass through on the way (empty when the clients call it directly).
    pub through: Vec<String>,
    /// Its capacity, requests per second.
    pub capacity_per_s: f64,
    /// Its workers per replica.
    pub workers: u32,
    /// Replicas (the most an autoscaler runs).
    pub replicas: u32,
    /// The declared work's mean.
    pub work_mean: SimDuration,
}

/// The services of `s` whose offered rate exceeds their capacity, in name order.
pub fn overloaded(s: &Scenario) -> Vec<Overload> {
    let reach = offered(s);
    let mut out = Vec::new();
    for (name, service) in &s.services {
        let Some(arriving) = reach.get(name) else {
            continue;
        };
        let Some(mean_ns) = service.work.compile().ok().and_then(|w| w.mean_nanos()) else {
            continue;
        };
        let replicas = service
            .autoscale
            .as_ref()
            .map_or(service.replicas, |a| a.max_replicas.max(service.replicas));
        if mean_ns <= 0.0 {
            continue;
        }
        let capacity = f64::from(replicas) * f64::from(service.workers) * 1e9 / mean_ns;
        if arriving.rate > capacity {
            out.push(Overload {
                service: name.clone(),
                offered_per_s: arriving.rate,
                clients: arriving.clients.iter().cloned().collect(),
                through: arriving.through.iter().cloned().collect(),
                capacity_per_s: capacity,
                workers: service.workers,
                replicas,
                work_mean: SimDuration::from_nanos(mean_ns as u64),
            });
        }
    }
    out
}

/// What reaches one service.
#[derive(Debug, Default)]
struct Arriving {
    rate: f64,
    clients: BTreeSet<String>,
    through: BTreeSet<String>,
}

/// First attempts per second reaching each service, by name, with who sends them. Services
/// are visited callers first (Kahn's order over the calls); a service on a cycle of calls,
/// which validation allows only through distinct calls, passes nothing on.
fn offered(s: &Scenario) -> BTreeMap<String, Arriving> {
    let mut reach: BTreeMap<String, Arriving> = BTreeMap::new();
    for (name, c) in &s.clients {
        let Load::Open { rate } = &c.load else {
            continue;
        };
        let leaves = c.call.fan_out.as_ref().map_or(1, |f| f.n);
        let a = reach.entry(c.call.target.clone()).or_default();
        a.rate += mean_rate(rate, s.duration) * f64::from(leaves);
        a.clients.insert(name.clone());
    }
    let mut callers: BTreeMap<&str, usize> = s.services.keys().map(|n| (n.as_str(), 0)).collect();
    for service in s.services.values() {
        for call in &service.calls {
            if let Some(n) = callers.get_mut(call.target.as_str()) {
                *n += 1;
            }
        }
    }
    let mut ready: Vec<&str> = callers
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(name, _)| *name)
        .collect();
    // A stack of services whose callers have all been visited; at most one visit each.
    while let Some(name) = ready.pop() {
        let service = &s.services[name];
        let shares = shares(service);
        let hits = service.cache.as_ref().map_or(0.0, |c| c.hit_ratio);
        let (rate, clients, through) = match reach.get(name) {
            Some(a) => (a.rate, a.clients.clone(), a.through.clone()),
            None => (0.0, BTreeSet::new(), BTreeSet::new()),
        };
        for (call, share) in service.calls.iter().zip(shares) {
            let leaves = call.fan_out.as_ref().map_or(1, |f| f.n);
            if rate > 0.0 {
                let a = reach.entry(call.target.clone()).or_default();
                a.rate += rate * (1.0 - hits) * share * f64::from(leaves);
                a.clients.extend(clients.iter().cloned());
                a.through.extend(through.iter().cloned());
                a.through.insert(name.to_string());
            }
            if let Some(n) = callers.get_mut(call.target.as_str()) {
                *n -= 1;
                if *n == 0 {
                    ready.push(s.services.get_key_value(&call.target).expect("a service").0);
                }
            }
        }
    }
    reach
}

/// The share of the requests a service serves that make each of its calls: its `call_ratio`,
/// times its weight's share of a `Pick` stage's (a stage that runs on every request, since
/// what fails before it is not counted: these are the offered first attempts).
fn shares(service: &Service) -> Vec<f64> {
    let mut shares: Vec<f64> = service.calls.iter().map(|c| c.call_ratio).collect();
    for stage in service.call_stages().iter() {
        if let CallStage::Pick(calls) = stage {
            let weights: f64 = calls
                .iter()
                .map(|&c| service.calls[c as usize].weight)
                .sum();
            for &c in calls {
                let c = c as usize;
                shares[c] *= if weights > 0.0 {
                    service.calls[c].weight / weights
                } else {
                    1.0
                };
            }
        }
    }
    shares
}

/// A schedule's mean rate per second over `[0, duration)`.
pub fn mean_rate(schedule: &Schedule, duration: SimDuration) -> f64 {
    let d = duration.as_secs_f64();
    if d <= 0.0 {
        return 0.0;
    }
    // The time of `t` within the run.
    let at = |t: SimDuration| t.as_secs_f64().min(d);
    let area = match schedule {
        Schedule::Constant(r) => r.as_per_second() * d,
        Schedule::Spike {
            base,
            peak,
            start,
            end,
        } => {
            let spike = (at(*end) - at(*start)).max(0.0);
            base.as_per_second() * (d - spike) + peak.as_per_second() * spike
        }
        Schedule::Ramp {
            from,
            to,
            start,
            end,
        } => {
            let (from, to) = (from.as_per_second(), to.as_per_second());
            let (a, b) = (at(*start), at(*end));
            let span = (*end - *start).as_secs_f64();
            // The rate at the run's end, if the ramp is still climbing then.
            let top = if span > 0.0 {
                from + (to - from) * (b - start.as_secs_f64()) / span
            } else {
                to
            };
            from * a + (from + top) / 2.0 * (b - a) + to * (d - b)
        }
        Schedule::Steps(steps) => steps
            .iter()
            .enumerate()
            .map(|(i, step)| {
                let next = steps.get(i + 1).map_or(d, |n| at(n.at));
                step.rate.as_per_second() * (next - at(step.at)).max(0.0)
            })
            .sum(),
    };
    area / d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::schema::Step;
    use sim_core::Rate;

    fn per_s(r: f64) -> Rate {
        Rate::per_second(r)
    }

    fn secs(s: u64) -> SimDuration {
        SimDuration::from_secs(s)
    }

    #[test]
    fn a_schedule_counts_each_rate_for_the_time_it_lasts() {
        let d = secs(60);
        assert_eq!(mean_rate(&Schedule::Constant(per_s(800.0)), d), 800.0);
        let spike = Schedule::Spike {
            base: per_s(1000.0),
            peak: per_s(2000.0),
            start: secs(10),
            end: secs(15),
        };
        assert!((mean_rate(&spike, d) - (1000.0 * 55.0 + 2000.0 * 5.0) / 60.0).abs() < 1e-9);
        // A ramp from 0 to 1200/s over the whole run averages 600/s; cut at 30s, 300/s.
        let ramp = Schedule::Ramp {
            from: per_s(0.0),
            to: per_s(1200.0),
            start: secs(0),
            end: secs(60),
        };
        assert!((mean_rate(&ramp, d) - 600.0).abs() < 1e-9);
        assert!((mean_rate(&ramp, secs(30)) - 300.0).abs() < 1e-9);
        // Nothing before the first step; the last lasts to the end.
        let steps = Schedule::Steps(vec![
            Step {
                at: secs(30),
                rate: per_s(100.0),
            },
            Step {
                at: secs(45),
                rate: per_s(300.0),
            },
        ]);
        assert!((mean_rate(&steps, d) - (100.0 * 15.0 + 300.0 * 15.0) / 60.0).abs() < 1e-9);
    }

    #[test]
    fn a_call_passes_on_its_ratio_and_a_pick_its_weight() {
        let text = r#"Scenario(name: "t", duration: "10s",
            clients: { "c": (load: Open(rate: Constant("1000/s")), call: (target: "api")) },
            services: {
                "api": (workers: 100, work: Constant(value: "1ms"),
                        calls: [(target: "a", call_ratio: 0.3), (target: "b", weight: 3, call_ratio: 0.5),
                                (target: "c", weight: 1), (target: "d")],
                        stages: [All([0]), Pick([1, 2]), All([3])]),
                "a": (workers: 1, work: Constant(value: "1ms")),
                "b": (workers: 1, work: Constant(value: "1ms")),
                "c": (workers: 1, work: Constant(value: "1ms")),
                "d": (workers: 1, work: Constant(value: "1ms")),
            })"#;
        let s = crate::format::load::parse("t.ron", text).unwrap();
        let reach = offered(&s);
        let rate = |n: &str| reach[n].rate;
        assert!((rate("a") - 300.0).abs() < 1e-9);
        assert!((rate("b") - 375.0).abs() < 1e-9);
        assert!((rate("c") - 250.0).abs() < 1e-9);
        assert!((rate("d") - 1000.0).abs() < 1e-9);
    }
}
