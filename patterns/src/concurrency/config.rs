//! Concurrency-limit configurations: Netflix concurrency-limits' names and defaults (AIMD,
//! Vegas, Gradient2) and Envoy's adaptive-concurrency gradient controller.

use crate::ConfigError;
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;

/// The largest limit any algorithm may reach.
pub const CONCURRENCY_LIMIT_MAX: u32 = 1_000_000;

/// The algorithm and its parameters, tagged by `kind` in scenario files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ConcurrencyConfig {
    /// A fixed limit.
    Fixed {
        /// Calls in flight at once.
        limit: u32,
    },
    /// Additive increase, multiplicative decrease.
    Aimd(AimdConfig),
    /// TCP Vegas-style queue estimate.
    Vegas(VegasConfig),
    /// Netflix's Gradient2: long-term against short-term RTT.
    Gradient2(Gradient2Config),
    /// Envoy's gradient controller: periodic minRTT against sampled RTT.
    EnvoyGradient(EnvoyGradientConfig),
}

impl Default for ConcurrencyConfig {
    /// Gradient2 with Netflix's defaults.
    fn default() -> Self {
        ConcurrencyConfig::Gradient2(Gradient2Config::default())
    }
}

fn limit_in(field: &str, value: u32, low: u32) -> Result<(), ConfigError> {
    if (low..=CONCURRENCY_LIMIT_MAX).contains(&value) {
        Ok(())
    } else {
        Err(ConfigError::new(
            field,
            format!("must be in [{low}, {CONCURRENCY_LIMIT_MAX}], got {value}"),
        ))
    }
}

fn ordered(min: (&str, u32), initial: (&str, u32), max: (&str, u32)) -> Result<(), ConfigError> {
    limit_in(min.0, min.1, 1)?;
    limit_in(max.0, max.1, 1)?;
    if min.1 > max.1 {
        return Err(ConfigError::new(
            max.0,
            format!("must be at least {} ({}), got {}", min.0, min.1, max.1),
        ));
    }
    if !(min.1..=max.1).contains(&initial.1) {
        return Err(ConfigError::new(
            initial.0,
            format!(
                "must be in [{}, {}] ({} to {}), got {}",
                min.0, max.0, min.1, max.1, initial.1
            ),
        ));
    }
    Ok(())
}

fn ratio(field: &str, value: f64, low_open: bool) -> Result<(), ConfigError> {
    let ok = value.is_finite() && value <= 1.0 && if low_open { value > 0.0 } else { value >= 0.0 };
    if ok {
        Ok(())
    } else {
        let range = if low_open { "(0, 1]" } else { "[0, 1]" };
        Err(ConfigError::new(
            field,
            format!("must be in {range}, got {value}"),
        ))
    }
}

fn positive(field: &str, d: SimDuration) -> Result<(), ConfigError> {
    if d.is_zero() {
        Err(ConfigError::new(field, "must be positive, got 0s"))
    } else {
        Ok(())
    }
}

impl ConcurrencyConfig {
    /// Checks the chosen algorithm's parameters.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self {
            ConcurrencyConfig::Fixed { limit } => limit_in("limit", *limit, 1),
            ConcurrencyConfig::Aimd(c) => c.validate(),
            ConcurrencyConfig::Vegas(c) => c.validate(),
            ConcurrencyConfig::Gradient2(c) => c.validate(),
            ConcurrencyConfig::EnvoyGradient(c) => c.validate(),
        }
    }
}

/// AIMD (Netflix `AIMDLimit`): grow by one per sample while at least half the limit is in use,
/// shrink by `backoff_ratio` on a drop or a sample slower than `timeout`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AimdConfig {
    /// Default 20.
    pub initial_limit: u32,
    /// Default 20.
    pub min_limit: u32,
    /// Default 200.
    pub max_limit: u32,
    /// Multiplier on a drop, in [0.5, 1). Default 0.9.
    pub backoff_ratio: f64,
    /// A sample slower than this counts as a drop. Default 5s.
    pub timeout: SimDuration,
}

impl Default for AimdConfig {
    fn default() -> Self {
        AimdConfig {
            initial_limit: 20,
            min_limit: 20,
            max_limit: 200,
            backoff_ratio: 0.9,
            timeout: SimDuration::from_secs(5),
        }
    }
}

impl AimdConfig {
    /// Checks limits in order, the backoff ratio and the timeout.
    pub fn validate(&self) -> Result<(), ConfigError> {
        ordered(
            ("min_limit", self.min_limit),
            ("initial_limit", self.initial_limit),
            ("max_limit", self.max_limit),
        )?;
        if !(self.backoff_ratio >= 0.5 && self.backoff_ratio < 1.0) {
            return Err(ConfigError::new(
                "backoff_ratio",
                format!("must be in [0.5, 1), got {}", self.backoff_ratio),
            ));
        }
        positive("timeout", self.timeout)
    }
}

/// Vegas (Netflix `VegasLimit`): estimate the queue as `limit × (1 − rtt_noload / rtt)` and
/// grow or shrink by log10-based steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VegasConfig {
    /// Default 20.
    pub initial_limit: u32,
    /// Default 1000 (`maxConcurrency`).
    pub max_limit: u32,
    /// Weight of a new estimate, in (0, 1]. Default 1.
    pub smoothing_ratio: f64,
    /// Re-measure the no-load RTT every `probe_multiplier × limit` samples (jittered by a
    /// factor drawn in [0.5, 1)). Default 30.
    pub probe_multiplier: u32,
}

impl Default for VegasConfig {
    fn default() -> Self {
        VegasConfig {
            initial_limit: 20,
            max_limit: 1000,
            smoothing_ratio: 1.0,
            probe_multiplier: 30,
        }
    }
}

impl VegasConfig {
    /// Checks the limits, the smoothing ratio and the probe multiplier.
    pub fn validate(&self) -> Result<(), ConfigError> {
        ordered(
            ("initial_limit", 1),
            ("initial_limit", self.initial_limit),
            ("max_limit", self.max_limit),
        )?;
        ratio("smoothing_ratio", self.smoothing_ratio, true)?;
        if self.probe_multiplier == 0 {
            return Err(ConfigError::new(
                "probe_multiplier",
                "must be at least 1, got 0",
            ));
        }
        Ok(())
    }
}

/// Gradient2 (Netflix `Gradient2Limit`): the ratio of a long-term RTT average to the current
/// RTT scales the limit, plus a fixed queue allowance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Gradient2Config {
    /// Default 20.
    pub initial_limit: u32,
    /// Default 20.
    pub min_limit: u32,
    /// Default 200 (`maxConcurrency`).
    pub max_limit: u32,
    /// Weight of a new estimate, in (0, 1]. Default 0.2.
    pub smoothing_ratio: f64,
    /// How far the limit may grow per sample while latency holds. Default 4.
    pub queue_size: u32,
    /// Samples in the long-term RTT's exponential average (after a 10-sample warm-up).
    /// Default 600.
    pub long_window: u32,
}

impl Default for Gradient2Config {
    fn default() -> Self {
        Gradient2Config {
            initial_limit: 20,
            min_limit: 20,
            max_limit: 200,
            smoothing_ratio: 0.2,
            queue_size: 4,
            long_window: 600,
        }
    }
}

impl Gradient2Config {
    /// Checks the limits, smoothing, queue size and window.
    pub fn validate(&self) -> Result<(), ConfigError> {
        ordered(
            ("min_limit", self.min_limit),
            ("initial_limit", self.initial_limit),
            ("max_limit", self.max_limit),
        )?;
        ratio("smoothing_ratio", self.smoothing_ratio, true)?;
        if self.queue_size > CONCURRENCY_LIMIT_MAX {
            return Err(ConfigError::new(
                "queue_size",
                format!(
                    "must be at most {CONCURRENCY_LIMIT_MAX}, got {}",
                    self.queue_size
                ),
            ));
        }
        if self.long_window == 0 {
            return Err(ConfigError::new("long_window", "must be at least 1, got 0"));
        }
        Ok(())
    }
}

/// Envoy's adaptive-concurrency gradient controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EnvoyGradientConfig {
    /// Percentile of the window's latencies taken as the sample RTT. Default 50.
    pub sample_aggregate_percentile: f64,
    /// How often the limit is recomputed. Default 100ms (Envoy's documented example).
    pub concurrency_update_interval: SimDuration,
    /// How often minRTT is re-measured. Default 60s.
    pub min_rtt_calc_interval: SimDuration,
    /// Random delay of each re-measurement, as a share of the interval. Default 15%.
    pub min_rtt_calc_jitter_percent: f64,
    /// Requests measured for minRTT. Default 50.
    pub min_rtt_calc_request_count: u32,
    /// The limit while minRTT is measured, and the lowest limit. Default 3.
    pub min_concurrency: u32,
    /// Latency allowance above minRTT before the limit shrinks, as a share of minRTT.
    /// Default 25%.
    pub min_rtt_buffer_percent: f64,
    /// The highest limit. Default 1000.
    pub max_concurrency_limit: u32,
}

impl Default for EnvoyGradientConfig {
    fn default() -> Self {
        EnvoyGradientConfig {
            sample_aggregate_percentile: 50.0,
            concurrency_update_interval: SimDuration::from_millis(100),
            min_rtt_calc_interval: SimDuration::from_secs(60),
            min_rtt_calc_jitter_percent: 15.0,
            min_rtt_calc_request_count: 50,
            min_concurrency: 3,
            min_rtt_buffer_percent: 25.0,
            max_concurrency_limit: 1000,
        }
    }
}

fn percent(field: &str, value: f64, high: f64) -> Result<(), ConfigError> {
    if value.is_finite() && (0.0..=high).contains(&value) {
        Ok(())
    } else {
        Err(ConfigError::new(
            field,
            format!("must be in [0, {high}], got {value}"),
        ))
    }
}

impl EnvoyGradientConfig {
    /// Checks percentages, intervals and limits.
    pub fn validate(&self) -> Result<(), ConfigError> {
        percent(
            "sample_aggregate_percentile",
            self.sample_aggregate_percentile,
            100.0,
        )?;
        positive(
            "concurrency_update_interval",
            self.concurrency_update_interval,
        )?;
        positive("min_rtt_calc_interval", self.min_rtt_calc_interval)?;
        percent(
            "min_rtt_calc_jitter_percent",
            self.min_rtt_calc_jitter_percent,
            100.0,
        )?;
        if !(1..=10_000).contains(&self.min_rtt_calc_request_count) {
            return Err(ConfigError::new(
                "min_rtt_calc_request_count",
                format!(
                    "must be in [1, 10000], got {}",
                    self.min_rtt_calc_request_count
                ),
            ));
        }
        percent(
            "min_rtt_buffer_percent",
            self.min_rtt_buffer_percent,
            1000.0,
        )?;
        ordered(
            ("min_concurrency", self.min_concurrency),
            ("min_concurrency", self.min_concurrency),
            ("max_concurrency_limit", self.max_concurrency_limit),
        )
    }
}
