//! The serde form of a backoff schedule and its validation.

use crate::ConfigError;
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;

/// The longest delay a strategy may be configured with (one day); longer waits are almost
/// certainly a unit mistake in a scenario file.
pub(crate) const DELAY_LIMIT: SimDuration = SimDuration::from_secs(86_400);

/// How the delay grows with the number of retries, before jitter.
///
/// In RON: `Exponential(delay_initial: "1s", multiplier: 1.6, delay_max: "120s")`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Strategy {
    /// The same delay before every retry.
    Constant {
        /// The delay.
        delay: SimDuration,
    },
    /// `delay_initial + n · step`, capped at `delay_max`.
    Linear {
        /// The delay before the first retry.
        delay_initial: SimDuration,
        /// What each further retry adds.
        step: SimDuration,
        /// The cap.
        delay_max: SimDuration,
    },
    /// `delay_initial · multiplier^n`, capped at `delay_max` (gRPC: 1s, 1.6, 120s).
    Exponential {
        /// The delay before the first retry.
        delay_initial: SimDuration,
        /// The growth factor per retry; at least 1.
        multiplier: f64,
        /// The cap.
        delay_max: SimDuration,
    },
}

/// How randomness spreads the delays of many clients apart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Jitter {
    /// The strategy's value as is (synchronised clients stay synchronised).
    None,
    /// Uniform on `[0, v]` (AWS "full jitter").
    Full,
    /// Uniform on `[v/2, v]` (AWS "equal jitter").
    Equal,
    /// `min(cap, uniform(base, 3 · previous))` (AWS "decorrelated jitter").
    Decorrelated,
    /// Uniform on `v · [1 − s, 1 + s]` with `s = spread_percent / 100` (gRPC: 20).
    Proportional {
        /// The spread either side of the value, in percent (0..100).
        spread_percent: f64,
    },
}

/// A backoff schedule: strategy and jitter. The default is gRPC's connection backoff:
/// exponential from 1s, multiplier 1.6, capped at 120s, jitter ±20%.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackoffConfig {
    /// How the delay grows.
    #[serde(default = "default_strategy")]
    pub strategy: Strategy,
    /// How the delay is randomised.
    #[serde(default = "default_jitter")]
    pub jitter: Jitter,
}

fn default_strategy() -> Strategy {
    Strategy::Exponential {
        delay_initial: SimDuration::from_secs(1),
        multiplier: 1.6,
        delay_max: SimDuration::from_secs(120),
    }
}

fn default_jitter() -> Jitter {
    Jitter::Proportional {
        spread_percent: 20.0,
    }
}

impl Default for BackoffConfig {
    fn default() -> Self {
        BackoffConfig {
            strategy: default_strategy(),
            jitter: default_jitter(),
        }
    }
}

fn check_delay(field: &str, d: SimDuration) -> Result<(), ConfigError> {
    if d > DELAY_LIMIT {
        return Err(ConfigError::new(
            field,
            format!("must be at most 1 day, got {d}; check the unit"),
        ));
    }
    Ok(())
}

/// The checks a growing strategy shares: both ends within the limit, in order.
fn check_growth(delay_initial: SimDuration, delay_max: SimDuration) -> Result<(), ConfigError> {
    check_delay("delay_initial", delay_initial)?;
    check_delay("delay_max", delay_max)?;
    if delay_max < delay_initial {
        return Err(ConfigError::new(
            "delay_max",
            format!("must be at least delay_initial ({delay_initial}), got {delay_max}"),
        ));
    }
    Ok(())
}

impl Strategy {
    /// The first delay (`base` of decorrelated jitter).
    pub fn delay_base(&self) -> SimDuration {
        match self {
            Strategy::Constant { delay } => *delay,
            Strategy::Linear { delay_initial, .. }
            | Strategy::Exponential { delay_initial, .. } => *delay_initial,
        }
    }

    /// The cap on the value before jitter.
    pub fn delay_cap(&self) -> SimDuration {
        match self {
            Strategy::Constant { delay } => *delay,
            Strategy::Linear { delay_max, .. } | Strategy::Exponential { delay_max, .. } => {
                *delay_max
            }
        }
    }

    /// Checks the strategy alone; field names are relative to `strategy`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self {
            Strategy::Constant { delay } => check_delay("delay", *delay),
            Strategy::Linear {
                delay_initial,
                step,
                delay_max,
            } => {
                check_delay("step", *step)?;
                check_growth(*delay_initial, *delay_max)
            }
            Strategy::Exponential {
                delay_initial,
                multiplier,
                delay_max,
            } => {
                if !(multiplier.is_finite() && *multiplier >= 1.0 && *multiplier <= 100.0) {
                    return Err(ConfigError::new(
                        "multiplier",
                        format!("must be in [1, 100], got {multiplier}"),
                    ));
                }
                check_growth(*delay_initial, *delay_max)
            }
        }
    }
}

impl BackoffConfig {
    /// Checks every field; an invalid config cannot build a [`super::Backoff`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.strategy.validate().map_err(|e| e.at("strategy"))?;
        match &self.jitter {
            Jitter::Proportional { spread_percent } => {
                if !(spread_percent.is_finite() && (0.0..=100.0).contains(spread_percent)) {
                    return Err(ConfigError::new(
                        "jitter.spread_percent",
                        format!("must be in [0, 100], got {spread_percent}"),
                    ));
                }
            }
            Jitter::Decorrelated => {
                if self.strategy.delay_base().is_zero() {
                    return Err(ConfigError::new(
                        "jitter",
                        "decorrelated jitter grows from the initial delay, which is 0s; \
                         set a positive initial delay or pick another jitter",
                    ));
                }
            }
            Jitter::None | Jitter::Full | Jitter::Equal => {}
        }
        Ok(())
    }
}
