//! [`AdaptiveThrottle`]: client-side adaptive throttling (Google SRE book, "Handling Overload").

use crate::ConfigError;
use rand_core::Rng;
use serde::{Deserialize, Serialize};
use sim_core::sample::bernoulli;
use sim_core::{SimDuration, SimTime};

/// Adaptive throttling's parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdaptiveThrottleConfig {
    /// K: how many requests per accepted one the client lets through before throttling
    /// itself. Lower is more aggressive. Default 2 (the SRE book's suggestion).
    pub accepts_multiplier: f64,
    /// The history the counts cover. Default 2 minutes.
    pub window: SimDuration,
    /// Buckets the window is kept in; history leaves one bucket at a time. Default 60.
    pub bucket_count: u32,
}

impl Default for AdaptiveThrottleConfig {
    fn default() -> Self {
        AdaptiveThrottleConfig {
            accepts_multiplier: 2.0,
            window: SimDuration::from_secs(120),
            bucket_count: 60,
        }
    }
}

impl AdaptiveThrottleConfig {
    /// Checks K (finite, at least 1), the window (at least one nanosecond per bucket) and the
    /// bucket count (1 to 3600).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let k = self.accepts_multiplier;
        if !(k.is_finite() && k >= 1.0) {
            return Err(ConfigError::new(
                "accepts_multiplier",
                format!(
                    "must be finite and at least 1 (below 1 throttles a healthy backend), got {k}"
                ),
            ));
        }
        if !(1..=3600).contains(&self.bucket_count) {
            return Err(ConfigError::new(
                "bucket_count",
                format!("must be in [1, 3600], got {}", self.bucket_count),
            ));
        }
        if self.window.as_nanos() < u64::from(self.bucket_count) {
            return Err(ConfigError::new(
                "window",
                format!(
                    "must be at least bucket_count ({}) nanoseconds, got {}",
                    self.bucket_count, self.window
                ),
            ));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    index: u64,
    requests: u64,
    accepts: u64,
}

/// Client-side throttling: rejects locally with probability
/// `max(0, (requests − K × accepts) / (requests + 1))` over the window, where `requests`
/// counts every request the application tried (including the ones rejected locally) and
/// `accepts` the ones the backend accepted.
#[derive(Debug, Clone)]
pub struct AdaptiveThrottle {
    k: f64,
    width: u64,
    buckets: Vec<Bucket>,
    last: SimTime,
}

impl AdaptiveThrottle {
    /// Empty history; fails if the config does not validate.
    pub fn new(config: &AdaptiveThrottleConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(AdaptiveThrottle {
            k: config.accepts_multiplier,
            width: config.window.as_nanos() / u64::from(config.bucket_count),
            buckets: vec![Bucket::default(); config.bucket_count as usize],
            last: SimTime::ZERO,
        })
    }

    fn bucket(&mut self, now: SimTime) -> &mut Bucket {
        self.last = self.last.max(now);
        let index = self.last.as_nanos() / self.width;
        let n = self.buckets.len() as u64;
        let b = &mut self.buckets[(index % n) as usize];
        if b.index != index {
            *b = Bucket {
                index,
                requests: 0,
                accepts: 0,
            };
        }
        b
    }

    /// (requests, accepts) over the window ending at `now`.
    pub fn counts(&self, now: SimTime) -> (u64, u64) {
        let index = now.max(self.last).as_nanos() / self.width;
        let n = self.buckets.len() as u64;
        self.buckets
            .iter()
            .filter(|b| b.index.saturating_add(n) > index && b.index <= index)
            .fold((0, 0), |(r, a), b| (r + b.requests, a + b.accepts))
    }

    /// The local rejection probability at `now`.
    pub fn drop_probability(&self, now: SimTime) -> f64 {
        let (requests, accepts) = self.counts(now);
        drop_probability(requests, accepts, self.k)
    }

    /// The application wants to send a request at `now`: counts it, and returns false when the
    /// client should reject it locally (drawn from `rng`).
    pub fn try_send<R: Rng + ?Sized>(&mut self, now: SimTime, rng: &mut R) -> bool {
        let p = self.drop_probability(now);
        self.bucket(now).requests += 1;
        !(p > 0.0 && bernoulli(rng, p))
    }

    /// The backend accepted a request at `now`.
    pub fn on_accepted(&mut self, now: SimTime) {
        self.bucket(now).accepts += 1;
    }
}

/// `max(0, (requests − k × accepts) / (requests + 1))`.
pub fn drop_probability(requests: u64, accepts: u64, k: f64) -> f64 {
    let requests = requests as f64;
    ((requests - k * accepts as f64) / (requests + 1.0)).max(0.0)
}
