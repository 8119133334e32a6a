//! A timeout that follows a latency percentile.

use super::window::LatencyWindow;
use crate::ConfigError;
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;

/// The most latencies an adaptive timeout keeps.
const WINDOW_LIMIT: u32 = 100_000;

/// An adaptive timeout: `clamp(multiplier · percentile, floor, ceiling)`. Defaults: p99 of
/// the last 1000 latencies, times 1.5, within [10ms, 10s], 1s until 20 latencies were seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdaptiveTimeoutConfig {
    /// Which percentile of recent latency to follow, (0, 100].
    pub percentile: f64,
    /// Head room over the percentile, at least 1.
    pub multiplier: f64,
    /// The shortest timeout.
    pub floor: SimDuration,
    /// The longest timeout.
    pub ceiling: SimDuration,
    /// The timeout until `min_samples` latencies were seen; within [floor, ceiling].
    pub initial: SimDuration,
    /// How many recent latencies the percentile is taken over, 1..100000.
    pub window: u32,
    /// Latencies needed before the percentile is trusted, 1..=window.
    pub min_samples: u32,
}

impl Default for AdaptiveTimeoutConfig {
    fn default() -> Self {
        AdaptiveTimeoutConfig {
            percentile: 99.0,
            multiplier: 1.5,
            floor: SimDuration::from_millis(10),
            ceiling: SimDuration::from_secs(10),
            initial: SimDuration::from_secs(1),
            window: 1000,
            min_samples: 20,
        }
    }
}

impl AdaptiveTimeoutConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.percentile.is_finite() && self.percentile > 0.0 && self.percentile <= 100.0) {
            return Err(ConfigError::new(
                "percentile",
                format!("must be in (0, 100], got {}", self.percentile),
            ));
        }
        if !(self.multiplier.is_finite() && (1.0..=100.0).contains(&self.multiplier)) {
            return Err(ConfigError::new(
                "multiplier",
                format!("must be in [1, 100], got {}", self.multiplier),
            ));
        }
        if self.floor.is_zero() {
            return Err(ConfigError::new("floor", "must be greater than 0s"));
        }
        if self.ceiling < self.floor {
            return Err(ConfigError::new(
                "ceiling",
                format!(
                    "must be at least floor ({}), got {}",
                    self.floor, self.ceiling
                ),
            ));
        }
        if self.initial < self.floor || self.initial > self.ceiling {
            return Err(ConfigError::new(
                "initial",
                format!(
                    "must be within [floor, ceiling] = [{}, {}], got {}",
                    self.floor, self.ceiling, self.initial
                ),
            ));
        }
        if !(1..=WINDOW_LIMIT).contains(&self.window) {
            return Err(ConfigError::new(
                "window",
                format!("must be in [1, {WINDOW_LIMIT}], got {}", self.window),
            ));
        }
        if !(1..=self.window).contains(&self.min_samples) {
            return Err(ConfigError::new(
                "min_samples",
                format!(
                    "must be in [1, window = {}], got {}",
                    self.window, self.min_samples
                ),
            ));
        }
        Ok(())
    }
}

/// The adaptive timeout machine.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptiveTimeout {
    config: AdaptiveTimeoutConfig,
    window: LatencyWindow,
    current: SimDuration,
}

impl AdaptiveTimeout {
    /// From a config; fails with its first invalid field.
    pub fn new(config: AdaptiveTimeoutConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(AdaptiveTimeout {
            window: LatencyWindow::new(config.window as usize),
            current: config.initial,
            config,
        })
    }

    /// Records the latency of a finished attempt (its timeout, if it timed out).
    pub fn observe(&mut self, latency: SimDuration) {
        self.window.observe(latency);
        if self.window.seen() >= u64::from(self.config.min_samples) {
            let p = self
                .window
                .percentile(self.config.percentile)
                .unwrap_or(self.config.initial);
            self.current = p
                .mul_f64(self.config.multiplier)
                .clamp(self.config.floor, self.config.ceiling);
        }
        assert!(
            self.config.floor <= self.current && self.current <= self.config.ceiling,
            "adaptive timeout {} outside [{}, {}]",
            self.current,
            self.config.floor,
            self.config.ceiling
        );
    }

    /// The timeout for the next attempt.
    pub fn timeout(&self) -> SimDuration {
        self.current
    }

    /// The latency window, for reports.
    pub fn window(&self) -> &LatencyWindow {
        &self.window
    }
}
