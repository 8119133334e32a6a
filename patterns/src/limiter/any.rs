//! [`LimiterConfig`], the tagged choice of algorithm a scenario file names, and [`Limiter`],
//! the machine it builds.

use super::bucket::{BucketConfig, Gcra, LeakyMeter, LeakyQueue, LeakyQueueConfig, TokenBucket};
use super::decision::{Cost, RateDecision, RateLimiter};
use super::window::{FixedWindow, FixedWindowConfig, SlidingCounter, SlidingLog, WindowConfig};
use crate::ConfigError;
use serde::{Deserialize, Serialize};
use sim_core::SimTime;

/// One rate-limiting algorithm and its parameters, tagged by `kind` in scenario files:
/// `(kind: "token_bucket", rate: "100/s", burst: 20)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LimiterConfig {
    /// [`FixedWindow`].
    FixedWindow(FixedWindowConfig),
    /// [`SlidingLog`].
    SlidingLog(WindowConfig),
    /// [`SlidingCounter`].
    SlidingCounter(WindowConfig),
    /// [`TokenBucket`].
    TokenBucket(BucketConfig),
    /// [`LeakyMeter`].
    LeakyMeter(BucketConfig),
    /// [`LeakyQueue`].
    LeakyQueue(LeakyQueueConfig),
    /// [`Gcra`].
    Gcra(BucketConfig),
}

impl Default for LimiterConfig {
    /// A token bucket of 100/s with a burst of 100.
    fn default() -> Self {
        LimiterConfig::TokenBucket(BucketConfig::default())
    }
}

impl LimiterConfig {
    /// Checks the parameters of the chosen algorithm.
    pub fn validate(&self) -> Result<(), ConfigError> {
        Limiter::new(self).map(|_| ())
    }
}

/// Any of the limiters, built from a [`LimiterConfig`].
#[derive(Debug, Clone)]
pub enum Limiter {
    /// Fixed window counter.
    FixedWindow(FixedWindow),
    /// Sliding window log.
    SlidingLog(SlidingLog),
    /// Sliding window counter.
    SlidingCounter(SlidingCounter),
    /// Token bucket.
    TokenBucket(TokenBucket),
    /// Leaky bucket, meter form.
    LeakyMeter(LeakyMeter),
    /// Leaky bucket, queue form.
    LeakyQueue(LeakyQueue),
    /// Generic cell rate algorithm.
    Gcra(Gcra),
}

impl Limiter {
    /// A fresh limiter; fails with the offending field if the config does not validate.
    pub fn new(config: &LimiterConfig) -> Result<Self, ConfigError> {
        Ok(match config {
            LimiterConfig::FixedWindow(c) => Limiter::FixedWindow(FixedWindow::new(c)?),
            LimiterConfig::SlidingLog(c) => Limiter::SlidingLog(SlidingLog::new(c)?),
            LimiterConfig::SlidingCounter(c) => Limiter::SlidingCounter(SlidingCounter::new(c)?),
            LimiterConfig::TokenBucket(c) => Limiter::TokenBucket(TokenBucket::new(c)?),
            LimiterConfig::LeakyMeter(c) => Limiter::LeakyMeter(LeakyMeter::new(c)?),
            LimiterConfig::LeakyQueue(c) => Limiter::LeakyQueue(LeakyQueue::new(c)?),
            LimiterConfig::Gcra(c) => Limiter::Gcra(Gcra::new(c)?),
        })
    }

    fn inner(&self) -> &dyn RateLimiter {
        match self {
            Limiter::FixedWindow(l) => l,
            Limiter::SlidingLog(l) => l,
            Limiter::SlidingCounter(l) => l,
            Limiter::TokenBucket(l) => l,
            Limiter::LeakyMeter(l) => l,
            Limiter::LeakyQueue(l) => l,
            Limiter::Gcra(l) => l,
        }
    }
}

impl RateLimiter for Limiter {
    fn peek(&self, now: SimTime, cost: Cost) -> RateDecision {
        self.inner().peek(now, cost)
    }

    fn acquire(&mut self, now: SimTime, cost: Cost) -> RateDecision {
        match self {
            Limiter::FixedWindow(l) => l.acquire(now, cost),
            Limiter::SlidingLog(l) => l.acquire(now, cost),
            Limiter::SlidingCounter(l) => l.acquire(now, cost),
            Limiter::TokenBucket(l) => l.acquire(now, cost),
            Limiter::LeakyMeter(l) => l.acquire(now, cost),
            Limiter::LeakyQueue(l) => l.acquire(now, cost),
            Limiter::Gcra(l) => l.acquire(now, cost),
        }
    }

    fn at_rest(&self, now: SimTime) -> bool {
        self.inner().at_rest(now)
    }
}
