//! The validated schedule and the per-request state.

use super::config::{BackoffConfig, Jitter, Strategy};
use crate::ConfigError;
use rand_core::Rng;
use sim_core::SimDuration;
use sim_core::sample::unit_f64;

/// A validated backoff schedule, shared by all requests of a client.
#[derive(Debug, Clone, PartialEq)]
pub struct Backoff {
    config: BackoffConfig,
}

/// The per-request state of a backoff: how many delays were drawn and the last one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackoffState {
    retries: u32,
    previous: SimDuration,
}

impl BackoffState {
    /// How many delays were drawn since the start (or the last reset).
    pub fn retries(&self) -> u32 {
        self.retries
    }

    /// The last delay drawn (the initial delay before the first draw).
    pub fn previous(&self) -> SimDuration {
        self.previous
    }
}

/// Uniform on `[low, high]` in integer nanoseconds (`high ≥ low`).
fn between<R: Rng + ?Sized>(rng: &mut R, low: SimDuration, high: SimDuration) -> SimDuration {
    debug_assert!(low <= high);
    let span = (high - low).as_nanos() as f64;
    // Rounding may reach `high` but never pass it, because u < 1 and `span` is exact below 2^53
    // ns (104 days), far beyond the one-day limit on configured delays.
    low + SimDuration::from_nanos_f64(span * unit_f64(rng)).min(high - low)
}

impl Backoff {
    /// A schedule from a config; fails with the config's first invalid field.
    pub fn new(config: BackoffConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Backoff { config })
    }

    /// The config this schedule was built from.
    pub fn config(&self) -> &BackoffConfig {
        &self.config
    }

    /// A fresh per-request state.
    pub fn start(&self) -> BackoffState {
        BackoffState {
            retries: 0,
            previous: self.config.strategy.delay_base(),
        }
    }

    /// The strategy's value for retry `n` (0-based), capped, before jitter.
    pub fn delay_unjittered(&self, n: u32) -> SimDuration {
        match &self.config.strategy {
            Strategy::Constant { delay } => *delay,
            Strategy::Linear {
                delay_initial,
                step,
                delay_max,
            } => delay_initial
                .saturating_add(step.saturating_mul(u64::from(n)))
                .min(*delay_max),
            Strategy::Exponential {
                delay_initial,
                multiplier,
                delay_max,
            } => {
                // The float only scales; the cap is applied on integers, so no rounding can
                // push the value above it. `from_nanos_f64` clamps infinities to MAX.
                let grown = delay_initial.mul_f64(libm::pow(*multiplier, f64::from(n)));
                grown.min(*delay_max)
            }
        }
    }

    /// Draws the next delay and advances `state`.
    pub fn next<R: Rng + ?Sized>(&self, state: &mut BackoffState, rng: &mut R) -> SimDuration {
        let v = self.delay_unjittered(state.retries);
        let delay = match &self.config.jitter {
            Jitter::None => v,
            Jitter::Full => between(rng, SimDuration::ZERO, v),
            Jitter::Equal => {
                let half = v / 2;
                between(rng, half, v)
            }
            Jitter::Decorrelated => {
                let base = self.config.strategy.delay_base();
                let cap = self.config.strategy.delay_cap();
                let high = state.previous.saturating_mul(3).max(base);
                between(rng, base, high).min(cap)
            }
            Jitter::Proportional { spread_percent } => {
                let s = spread_percent / 100.0;
                let factor = 1.0 + s * (2.0 * unit_f64(rng) - 1.0);
                let low = v.mul_f64(1.0 - s);
                let high = v.mul_f64(1.0 + s);
                v.mul_f64(factor).clamp(low, high)
            }
        };
        state.retries = state.retries.saturating_add(1);
        state.previous = delay;
        self.assert_bounds(v, delay);
        delay
    }

    /// Forgets the history: the next delay is the first one again.
    pub fn reset(&self, state: &mut BackoffState) {
        *state = self.start();
    }

    fn assert_bounds(&self, v: SimDuration, delay: SimDuration) {
        let cap = self.config.strategy.delay_cap();
        match &self.config.jitter {
            Jitter::None | Jitter::Full | Jitter::Equal => {
                assert!(
                    delay <= v && v <= cap,
                    "backoff {delay} above {v} (cap {cap})"
                );
            }
            Jitter::Decorrelated => assert!(
                self.config.strategy.delay_base() <= delay && delay <= cap,
                "decorrelated backoff {delay} outside [base, {cap}]"
            ),
            Jitter::Proportional { .. } => assert!(v <= cap, "backoff {v} above cap {cap}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::Seed;

    #[test]
    fn exponential_grows_then_stays_at_the_cap() {
        let b = Backoff::new(BackoffConfig {
            strategy: Strategy::Exponential {
                delay_initial: SimDuration::from_millis(100),
                multiplier: 2.0,
                delay_max: SimDuration::from_secs(1),
            },
            jitter: Jitter::None,
        })
        .unwrap();
        let mut s = b.start();
        let mut rng = Seed(1).stream("backoff");
        let got: Vec<u64> = (0..6)
            .map(|_| b.next(&mut s, &mut rng).as_millis())
            .collect();
        assert_eq!(got, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(b.delay_unjittered(10_000), SimDuration::from_secs(1));
    }

    #[test]
    fn decorrelated_needs_a_positive_base() {
        let err = Backoff::new(BackoffConfig {
            strategy: Strategy::Constant {
                delay: SimDuration::ZERO,
            },
            jitter: Jitter::Decorrelated,
        })
        .unwrap_err();
        assert_eq!(err.field, "jitter");
    }
}
