//! Bucket limiters: token bucket, leaky bucket (meter and queue forms), GCRA.
//!
//! All four keep their state in integer nanoseconds: one unit of cost is worth one emission
//! interval `T = 1 / rate` (rounded to the nanosecond), and a burst of `B` units is `B × T`
//! nanoseconds of credit. Integer state is what makes the token bucket and GCRA agree exactly,
//! not just approximately.

use super::decision::{Cost, RateDecision, RateLimiter, assert_decision};
use crate::ConfigError;
use serde::{Deserialize, Serialize};
use sim_core::{Rate, SimDuration, SimTime};

/// A sustained `rate` with bursts of up to `burst` units: token bucket, leaky meter and GCRA.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BucketConfig {
    /// Refill (token bucket), leak (leaky bucket) or emission (GCRA) rate, e.g. `"100/s"`.
    pub rate: Rate,
    /// The bucket size: the most units admitted at one instant after a quiet spell.
    pub burst: u64,
}

impl Default for BucketConfig {
    /// 100/s with a burst of 100.
    fn default() -> Self {
        BucketConfig {
            rate: Rate::per_second(100.0),
            burst: 100,
        }
    }
}

/// Checks a rate and returns its emission interval (at least 1 ns).
fn emission_interval(field: &str, rate: Rate) -> Result<u64, ConfigError> {
    let per_second = rate.as_per_second();
    if per_second <= 0.0 {
        return Err(ConfigError::new(
            field,
            "must be positive, got 0/s (to refuse everything, use a fallback instead)",
        ));
    }
    let interval = rate.interval().as_nanos();
    if interval == 0 {
        return Err(ConfigError::new(
            field,
            format!("must be at most 1000000000/s (one per nanosecond), got {per_second}/s"),
        ));
    }
    Ok(interval)
}

/// Checks a size that is multiplied by the interval; returns `size × interval`.
fn capacity_nanos(field: &str, size: u64, interval: u64) -> Result<u64, ConfigError> {
    if size == 0 {
        return Err(ConfigError::new(field, "must be at least 1, got 0"));
    }
    size.checked_mul(interval).ok_or_else(|| {
        ConfigError::new(
            field,
            format!("is too large for the rate: {size} × {interval}ns overflows; lower it"),
        )
    })
}

impl BucketConfig {
    /// Checks the rate (positive, at most one per nanosecond) and the burst (at least 1).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.parts().map(|_| ())
    }

    /// (interval ns, capacity ns).
    fn parts(&self) -> Result<(u64, u64), ConfigError> {
        let interval = emission_interval("rate", self.rate)?;
        let capacity = capacity_nanos("burst", self.burst, interval)?;
        Ok((interval, capacity))
    }
}

/// Token bucket: tokens refill at `rate` up to `burst`; a request takes `cost` tokens.
///
/// Starts full.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    burst: u64,
    interval: u64,
    capacity: u64,
    /// Credit in nanoseconds of refill, at most `capacity`.
    credit: u64,
    last: SimTime,
}

impl TokenBucket {
    /// A full bucket; fails if the config does not validate.
    pub fn new(config: &BucketConfig) -> Result<Self, ConfigError> {
        let (interval, capacity) = config.parts()?;
        Ok(TokenBucket {
            burst: config.burst,
            interval,
            capacity,
            credit: capacity,
            last: SimTime::ZERO,
        })
    }

    fn credit_at(&self, now: SimTime) -> (SimTime, u64) {
        let now = now.max(self.last);
        let earned = now.as_nanos() - self.last.as_nanos();
        (now, self.credit.saturating_add(earned).min(self.capacity))
    }
}

impl RateLimiter for TokenBucket {
    fn peek(&self, now: SimTime, cost: Cost) -> RateDecision {
        let (now, credit) = self.credit_at(now);
        let full_in = |credit: u64| SimDuration::from_nanos(self.capacity - credit);
        let d = if cost.units() > self.burst {
            RateDecision::too_costly(
                cost,
                self.burst,
                credit / self.interval,
                now.saturating_add(full_in(credit)),
            )
        } else {
            let need = cost.units() * self.interval;
            if need <= credit {
                let left = credit - need;
                RateDecision::admit(
                    self.burst,
                    left / self.interval,
                    now.saturating_add(full_in(left)),
                )
            } else {
                RateDecision::exceeded(
                    self.burst,
                    credit / self.interval,
                    SimDuration::from_nanos(need - credit),
                    now.saturating_add(full_in(credit)),
                )
            }
        };
        assert_decision(&d, now);
        d
    }

    fn acquire(&mut self, now: SimTime, cost: Cost) -> RateDecision {
        let d = self.peek(now, cost);
        let (now, credit) = self.credit_at(now);
        self.last = now;
        self.credit = credit;
        if d.allowed() {
            self.credit -= cost.units() * self.interval;
        }
        assert!(
            self.credit <= self.capacity,
            "token bucket above its capacity"
        );
        d
    }

    fn at_rest(&self, now: SimTime) -> bool {
        self.credit_at(now).1 == self.capacity
    }
}

/// Generic cell rate algorithm: one timestamp, the theoretical arrival time (TAT).
///
/// A request of cost `c` at `now` is admitted if `max(TAT, now) + c·T − now ≤ burst·T`, and
/// then `TAT` becomes `max(TAT, now) + c·T`. With the same rate and burst it admits exactly what
/// a [`TokenBucket`] admits: the token bucket's credit is `burst·T − max(0, TAT − now)`.
#[derive(Debug, Clone)]
pub struct Gcra {
    burst: u64,
    interval: u64,
    /// Burst tolerance plus one interval: `burst × T`.
    tolerance: u64,
    tat: SimTime,
    last: SimTime,
}

impl Gcra {
    /// A limiter at rest; fails if the config does not validate.
    pub fn new(config: &BucketConfig) -> Result<Self, ConfigError> {
        let (interval, tolerance) = config.parts()?;
        Ok(Gcra {
            burst: config.burst,
            interval,
            tolerance,
            tat: SimTime::ZERO,
            last: SimTime::ZERO,
        })
    }

    /// (effective now, max(TAT, now)).
    fn base(&self, now: SimTime) -> (SimTime, SimTime) {
        let now = now.max(self.last);
        (now, self.tat.max(now))
    }
}

impl RateLimiter for Gcra {
    fn peek(&self, now: SimTime, cost: Cost) -> RateDecision {
        let (now, base) = self.base(now);
        let backlog = base.as_nanos() - now.as_nanos();
        let remaining = (self.tolerance - backlog.min(self.tolerance)) / self.interval;
        let d = if cost.units() > self.burst {
            RateDecision::too_costly(cost, self.burst, remaining, base)
        } else {
            // In u128: a tolerance near the end of u64 must not wrap.
            let new_backlog = u128::from(backlog) + u128::from(cost.units() * self.interval);
            if new_backlog <= u128::from(self.tolerance) {
                let new_backlog = new_backlog as u64;
                RateDecision::admit(
                    self.burst,
                    (self.tolerance - new_backlog) / self.interval,
                    now.saturating_add(SimDuration::from_nanos(new_backlog)),
                )
            } else {
                RateDecision::exceeded(
                    self.burst,
                    remaining,
                    SimDuration::from_nanos((new_backlog - u128::from(self.tolerance)) as u64),
                    base,
                )
            }
        };
        assert_decision(&d, now);
        d
    }

    fn acquire(&mut self, now: SimTime, cost: Cost) -> RateDecision {
        let d = self.peek(now, cost);
        let (now, base) = self.base(now);
        self.last = now;
        if d.allowed() {
            self.tat = base.saturating_add(SimDuration::from_nanos(cost.units() * self.interval));
        }
        assert!(
            self.tat.saturating_duration_since(now).as_nanos() <= self.tolerance,
            "gcra backlog above its tolerance"
        );
        d
    }

    fn at_rest(&self, now: SimTime) -> bool {
        self.tat <= now.max(self.last)
    }
}

/// Leaky bucket as a meter: each request pours `cost` units in, the bucket leaks at `rate`, and
/// a request that would overflow `burst` units is refused.
///
/// The mirror image of the token bucket (its level is the token bucket's missing tokens), kept
/// as its own type because users know it under this name. Starts empty.
#[derive(Debug, Clone)]
pub struct LeakyMeter {
    burst: u64,
    interval: u64,
    capacity: u64,
    /// Water in nanoseconds of leaking, at most `capacity`.
    level: u64,
    last: SimTime,
}

impl LeakyMeter {
    /// An empty bucket; fails if the config does not validate.
    pub fn new(config: &BucketConfig) -> Result<Self, ConfigError> {
        let (interval, capacity) = config.parts()?;
        Ok(LeakyMeter {
            burst: config.burst,
            interval,
            capacity,
            level: 0,
            last: SimTime::ZERO,
        })
    }

    fn level_at(&self, now: SimTime) -> (SimTime, u64) {
        let now = now.max(self.last);
        let leaked = now.as_nanos() - self.last.as_nanos();
        (now, self.level.saturating_sub(leaked))
    }
}

impl RateLimiter for LeakyMeter {
    fn peek(&self, now: SimTime, cost: Cost) -> RateDecision {
        let (now, level) = self.level_at(now);
        let room = |level: u64| (self.capacity - level) / self.interval;
        let d = if cost.units() > self.burst {
            RateDecision::too_costly(
                cost,
                self.burst,
                room(level),
                now.saturating_add(SimDuration::from_nanos(level)),
            )
        } else {
            // In u128: a bucket sized near the end of u64 must not wrap.
            let poured = u128::from(level) + u128::from(cost.units() * self.interval);
            if poured <= u128::from(self.capacity) {
                let poured = poured as u64;
                RateDecision::admit(
                    self.burst,
                    room(poured),
                    now.saturating_add(SimDuration::from_nanos(poured)),
                )
            } else {
                RateDecision::exceeded(
                    self.burst,
                    room(level),
                    SimDuration::from_nanos((poured - u128::from(self.capacity)) as u64),
                    now.saturating_add(SimDuration::from_nanos(level)),
                )
            }
        };
        assert_decision(&d, now);
        d
    }

    fn acquire(&mut self, now: SimTime, cost: Cost) -> RateDecision {
        let d = self.peek(now, cost);
        let (now, level) = self.level_at(now);
        self.last = now;
        self.level = level;
        if d.allowed() {
            self.level += cost.units() * self.interval;
        }
        assert!(self.level <= self.capacity, "leaky bucket overflowed");
        d
    }

    fn at_rest(&self, now: SimTime) -> bool {
        self.level_at(now).1 == 0
    }
}

/// A queue drained at `rate`, holding at most `queue_capacity` units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeakyQueueConfig {
    /// Release rate, e.g. `"100/s"`.
    pub rate: Rate,
    /// Units that may wait, counting the one being released.
    pub queue_capacity: u64,
}

impl Default for LeakyQueueConfig {
    /// 100/s with room for 100 units.
    fn default() -> Self {
        LeakyQueueConfig {
            rate: Rate::per_second(100.0),
            queue_capacity: 100,
        }
    }
}

impl LeakyQueueConfig {
    /// Checks the rate (positive, at most one per nanosecond) and the capacity (at least 1).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let interval = emission_interval("rate", self.rate)?;
        capacity_nanos("queue_capacity", self.queue_capacity, interval).map(|_| ())
    }
}

/// Leaky bucket as a queue: shapes traffic to a steady `rate` instead of refusing bursts.
///
/// An admitted request is released after [`RateDecision::delay`]; one unit of cost holds the
/// outlet for one interval. A request is refused when the units not yet leaked (the one being
/// released included) plus its cost would exceed `queue_capacity`.
#[derive(Debug, Clone)]
pub struct LeakyQueue {
    queue_capacity: u64,
    interval: u64,
    /// When the outlet is free again.
    next_free: SimTime,
    last: SimTime,
}

impl LeakyQueue {
    /// An empty queue; fails if the config does not validate.
    pub fn new(config: &LeakyQueueConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(LeakyQueue {
            queue_capacity: config.queue_capacity,
            interval: emission_interval("rate", config.rate)?,
            next_free: SimTime::ZERO,
            last: SimTime::ZERO,
        })
    }

    /// (effective now, backlog ns, units not yet leaked).
    fn backlog_at(&self, now: SimTime) -> (SimTime, u64, u64) {
        let now = now.max(self.last);
        let backlog = self.next_free.saturating_duration_since(now).as_nanos();
        (now, backlog, backlog.div_ceil(self.interval))
    }
}

impl RateLimiter for LeakyQueue {
    fn peek(&self, now: SimTime, cost: Cost) -> RateDecision {
        let (now, backlog, queued) = self.backlog_at(now);
        let drained_at = now.saturating_add(SimDuration::from_nanos(backlog));
        let room = self.queue_capacity - queued.min(self.queue_capacity);
        let d = if cost.units() > self.queue_capacity {
            RateDecision::too_costly(cost, self.queue_capacity, room, drained_at)
        } else if cost.units() <= room {
            let mut d = RateDecision::admit(
                self.queue_capacity,
                room - cost.units(),
                drained_at.saturating_add(SimDuration::from_nanos(cost.units() * self.interval)),
            );
            d.delay = SimDuration::from_nanos(backlog);
            d
        } else {
            // The backlog has to shrink to (capacity − cost) intervals.
            let allowed = (self.queue_capacity - cost.units()) * self.interval;
            RateDecision::exceeded(
                self.queue_capacity,
                room,
                SimDuration::from_nanos(backlog - allowed),
                drained_at,
            )
        };
        assert_decision(&d, now);
        d
    }

    fn acquire(&mut self, now: SimTime, cost: Cost) -> RateDecision {
        let d = self.peek(now, cost);
        let (now, _, _) = self.backlog_at(now);
        self.last = now;
        if d.allowed() {
            self.next_free = self
                .next_free
                .max(now)
                .saturating_add(SimDuration::from_nanos(cost.units() * self.interval));
        }
        let (_, _, queued) = self.backlog_at(now);
        assert!(
            queued <= self.queue_capacity,
            "leaky queue over its capacity"
        );
        d
    }

    fn at_rest(&self, now: SimTime) -> bool {
        self.backlog_at(now).1 == 0
    }
}
