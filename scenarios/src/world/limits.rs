//! A service's limiters over time: its concurrency limit and the requests its limiters hold,
//! summed over its replicas, and its PID shedder's drop probability, as gauges of the report
//! buckets ([`LimiterGauges`]), for [`crate::figures::LimiterFigures`].
//!
//! The service tells its gauges after each call into a replica's concurrency limiter (an
//! admission tried, a slot handed back: the only moments a limit or its count changes) and
//! after each PID tick; a replica joining or leaving the serving set recounts the limit. The
//! totals are checked against the replicas after every event in debug builds. Observation
//! only: nothing here is read by the run, so a run with and without it has the same events.

use super::lifecycle::Lifecycle;
use super::replica::Replica;
use crate::figures::LimiterFigures;
use patterns::concurrency::ConcurrencyLimiter;
use sim_core::metrics::GaugeSeries;
use sim_core::{SimDuration, SimTime};

/// The gauges of a service's limiters; built only for a service that has one.
#[derive(Debug, Clone)]
pub struct LimiterGauges {
    concurrency: Option<Concurrency>,
    pid_drop: Option<GaugeSeries>,
}

/// The concurrency limiters' totals and their series.
#[derive(Debug, Clone)]
struct Concurrency {
    /// Σ limit over the replicas that serve (up and in rotation).
    limit: u64,
    /// Σ requests held over every replica.
    in_flight: u64,
    limit_series: GaugeSeries,
    in_flight_series: GaugeSeries,
}

/// A replica limiter's (limit, in flight), read before and after a call into it.
pub type Reading = (u32, u32);

/// What `limiter` holds: its limit and the requests in flight.
pub fn reading(limiter: &ConcurrencyLimiter) -> Reading {
    (limiter.limit(), limiter.inflight())
}

impl LimiterGauges {
    /// The gauges of a service whose replicas are `replicas` and whose slots are `life`, with
    /// a PID shedder or not, in report buckets of `bucket`; `None` without a concurrency limit
    /// or a PID shedder.
    pub fn new(
        bucket: SimDuration,
        replicas: &[Replica],
        life: &Lifecycle,
        pid: bool,
    ) -> Option<LimiterGauges> {
        let concurrent = replicas
            .first()
            .is_some_and(|r| r.concurrency_ref().is_some());
        if !concurrent && !pid {
            return None;
        }
        let mut gauges = LimiterGauges {
            concurrency: concurrent.then(|| Concurrency {
                limit: 0,
                in_flight: 0,
                limit_series: GaugeSeries::new(bucket),
                in_flight_series: GaugeSeries::new(bucket),
            }),
            pid_drop: pid.then(|| GaugeSeries::new(bucket)),
        };
        gauges.recount(SimTime::ZERO, replicas, life);
        Some(gauges)
    }

    /// The limiter of replica `r` read `before` a call into it now reads `after`, at `now`.
    pub fn changed(&mut self, now: SimTime, serves: bool, before: Reading, after: Reading) {
        let c = self
            .concurrency
            .as_mut()
            .expect("a limiter's reading comes from a service with a concurrency limit");
        if serves {
            c.limit = c.limit + u64::from(after.0) - u64::from(before.0);
        }
        c.in_flight = c.in_flight + u64::from(after.1) - u64::from(before.1);
        c.set(now);
    }

    /// Counts the limits again at `now` (a replica joined or left the serving set).
    pub fn recount(&mut self, now: SimTime, replicas: &[Replica], life: &Lifecycle) {
        if let Some(c) = &mut self.concurrency {
            (c.limit, c.in_flight) = totals(replicas, life);
            c.set(now);
        }
    }

    /// The PID shedder set its drop probability to `ratio` at `now`.
    pub fn drop_ratio(&mut self, now: SimTime, ratio: f64) {
        if let Some(g) = &mut self.pid_drop {
            g.set(now, ratio);
        }
    }

    /// Asserts that the totals are what the replicas' limiters hold.
    pub fn check(&self, name: &str, replicas: &[Replica], life: &Lifecycle) {
        if let Some(c) = &self.concurrency {
            assert_eq!(
                (c.limit, c.in_flight),
                totals(replicas, life),
                "{name}: concurrency limit and in-flight gauges"
            );
        }
    }

    /// Closes the series at `end`.
    pub fn finish(&mut self, end: SimTime) -> LimiterFigures {
        let mut f = LimiterFigures::default();
        if let Some(c) = &mut self.concurrency {
            f.concurrency_limit = c.limit_series.finish(end);
            f.concurrency_in_flight = c.in_flight_series.finish(end);
        }
        if let Some(g) = &mut self.pid_drop {
            f.pid_drop_ratio = g.finish(end);
        }
        f
    }
}

impl Concurrency {
    fn set(&mut self, now: SimTime) {
        self.limit_series.set(now, self.limit as f64);
        self.in_flight_series.set(now, self.in_flight as f64);
    }
}

/// Σ limit over the replicas that serve and Σ in flight over all, read from the limiters.
pub fn totals(replicas: &[Replica], life: &Lifecycle) -> (u64, u64) {
    let mut sums = (0, 0);
    for (r, replica) in replicas.iter().enumerate() {
        if let Some(l) = replica.concurrency_ref() {
            if life.serves(r) {
                sums.0 += u64::from(l.limit());
            }
            sums.1 += u64::from(l.inflight());
        }
    }
    sums
}
