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
        /// Calls in flight at once. Zero is valid, as Netflix's `FixedLimit.of(0)` is: every
        /// call is refused, a kill switch.
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

/// The limits of a Netflix algorithm: `min` (if it has one) may be 0, `initial` may lie
/// outside `[min, max]` (the builders only warn: see [`initial_warnings`]), `max` is at least
/// 1 and at least `min`.
fn netflix_limits(
    min: Option<(&str, u32)>,
    initial: (&str, u32),
    max: (&str, u32),
) -> Result<(), ConfigError> {
    if let Some((field, value)) = min {
        limit_in(field, value, 0)?;
    }
    if !(1..=CONCURRENCY_LIMIT_MAX).contains(&initial.1) {
        return Err(ConfigError::new(
            initial.0,
            format!(
                "must be in [1, {CONCURRENCY_LIMIT_MAX}], got {} (an adaptive limit that starts \
                 at 0 admits no call and so never learns; for a kill switch use kind: \"fixed\", \
                 limit: 0)",
                initial.1
            ),
        ));
    }
    limit_in(max.0, max.1, 1)?;
    if let Some((field, value)) = min
        && value > max.1
    {
        return Err(ConfigError::new(
            max.0,
            format!("must be at least {field} ({value}), got {}", max.1),
        ));
    }
    Ok(())
}

/// What Netflix's builders log when the initial limit lies outside `[min, max]`: the limit
/// starts there, and the first update moves it inside.
fn initial_warnings(
    min: Option<(&str, u32)>,
    initial: (&str, u32),
    max: (&str, u32),
) -> Vec<String> {
    let mut warnings = Vec::new();
    if initial.1 > max.1 {
        warnings.push(format!(
            "{}: {} is above {} ({}); the limit starts at {} and the first update lowers it",
            initial.0, initial.1, max.0, max.1, initial.1
        ));
    }
    if let Some((field, value)) = min
        && initial.1 < value
    {
        warnings.push(format!(
            "{}: {} is below {field} ({value}); the limit starts at {} and the first update \
             raises it",
            initial.0, initial.1, initial.1
        ));
    }
    if let Some((field, 0)) = min {
        warnings.push(format!(
            "{field}: 0 lets the limit fall to 0, and with no call in flight nothing raises it \
             again (every call is refused from then on); set at least 1 unless that is meant"
        ));
    }
    warnings
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
            ConcurrencyConfig::Fixed { limit } => limit_in("limit", *limit, 0),
            ConcurrencyConfig::Aimd(c) => c.validate(),
            ConcurrencyConfig::Vegas(c) => c.validate(),
            ConcurrencyConfig::Gradient2(c) => c.validate(),
            ConcurrencyConfig::EnvoyGradient(c) => c.validate(),
        }
    }

    /// What is valid but probably not meant, one `field: message` line each (the field
    /// relative to the algorithm's config, as in a [`ConfigError`]): where Netflix's builders
    /// log a warning, so do we.
    pub fn warnings(&self) -> Vec<String> {
        match self {
            ConcurrencyConfig::Fixed { .. } | ConcurrencyConfig::EnvoyGradient(_) => Vec::new(),
            ConcurrencyConfig::Aimd(c) => c.warnings(),
            ConcurrencyConfig::Vegas(c) => c.warnings(),
            ConcurrencyConfig::Gradient2(c) => c.warnings(),
        }
    }
}

/// AIMD (Netflix `AIMDLimit`): grow by one per sample while at least half the limit is in use,
/// shrink by `backoff_ratio` on a drop or a sample slower than `timeout`; every update is
/// clamped into `[min_limit, max_limit]`.
///
/// # Differences from Netflix concurrency-limits
///
/// - `initial_limit` must be at least 1: a limit that starts at 0 admits nothing, so it never
///   gets a sample to grow from (use a fixed limit of 0 for a kill switch).
/// - `max_limit` must be at least 1 and at least `min_limit`; upstream accepts both and then
///   pins every update to `max_limit`.
/// - Besides upstream's warnings (an initial limit outside `[min_limit, max_limit]`), `min_limit:
///   0` gets one: the limit can reach 0 and stay there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AimdConfig {
    /// Where the limit starts. Default 20. May lie outside `[min_limit, max_limit]`, as
    /// upstream allows with a warning (see [`AimdConfig::warnings`]); the first sample clamps it.
    pub initial_limit: u32,
    /// The lowest limit an update sets. Default 20. May be 0, as upstream.
    pub min_limit: u32,
    /// The highest limit an update sets. Default 200.
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
    /// Checks the limits, the backoff ratio and the timeout.
    pub fn validate(&self) -> Result<(), ConfigError> {
        netflix_limits(
            Some(("min_limit", self.min_limit)),
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

    /// `AIMDLimit.Builder.build`'s warnings (an initial limit above `max_limit` or below
    /// `min_limit`), and ours for `min_limit: 0`; `field: message` each.
    pub fn warnings(&self) -> Vec<String> {
        initial_warnings(
            Some(("min_limit", self.min_limit)),
            ("initial_limit", self.initial_limit),
            ("max_limit", self.max_limit),
        )
    }
}

/// Vegas (Netflix `VegasLimit`): estimate the queue as `limit × (1 − rtt_noload / rtt)` and
/// grow or shrink by log10-based steps.
///
/// # Differences from Netflix concurrency-limits
///
/// - The alpha, beta, threshold, increase and decrease functions are upstream's defaults
///   (3·log10, 6·log10, log10, ± log10 of the limit) and cannot be replaced.
/// - `initial_limit` and `max_limit` must be at least 1; `smoothing_ratio` must be in (0, 1]
///   and `probe_multiplier` at least 1 (upstream checks none of them: a smoothing of 0 freezes
///   the limit, and a multiplier of 0 makes every sample a probe, so the limit never moves).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VegasConfig {
    /// Where the limit starts. Default 20. May be above `max_limit`, as upstream allows with a
    /// warning (see [`VegasConfig::warnings`]).
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
        netflix_limits(
            None,
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

    /// `VegasLimit.Builder.build`'s warning: an initial limit above `max_limit`.
    pub fn warnings(&self) -> Vec<String> {
        initial_warnings(
            None,
            ("initial_limit", self.initial_limit),
            ("max_limit", self.max_limit),
        )
    }
}

/// Gradient2 (Netflix `Gradient2Limit`): the ratio of a long-term RTT average to the current
/// RTT, `max(0.5, min(1, rtt_tolerance × long / short))`, scales the limit, plus a fixed queue
/// allowance, smoothed; every update is clamped into `[min_limit, max_limit]`. When the
/// long-term RTT is more than twice the current one it decays by 0.95, so it follows a latency
/// that has fallen back.
///
/// # Differences from Netflix concurrency-limits
///
/// - `queue_size` is a constant; upstream also takes a function of the limit.
/// - `initial_limit` must be at least 1, and `max_limit` at least 1 and at least `min_limit`
///   (see [`AimdConfig`]); `smoothing_ratio` must be in (0, 1] and `long_window` at least 1
///   (upstream checks neither: a smoothing of 0 freezes the limit, a window of 0 makes the
///   long-term average diverge).
/// - Besides upstream's warnings (an initial limit outside `[min_limit, max_limit]`), `min_limit:
///   0` gets one: with a `queue_size` of 0 the limit can reach 0 and stay there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Gradient2Config {
    /// Where the limit starts. Default 20. May lie outside `[min_limit, max_limit]`, as
    /// upstream allows with a warning (see [`Gradient2Config::warnings`]).
    pub initial_limit: u32,
    /// The lowest limit an update sets. Default 20. May be 0, as upstream.
    pub min_limit: u32,
    /// The highest limit an update sets. Default 200 (`maxConcurrency`).
    pub max_limit: u32,
    /// Weight of a new estimate (`smoothing`), in (0, 1]. Default 0.2.
    pub smoothing_ratio: f64,
    /// How far the limit may grow per sample while latency holds. Default 4.
    pub queue_size: u32,
    /// Samples in the long-term RTT's exponential average (after a 10-sample warm-up).
    /// Default 600.
    pub long_window: u32,
    /// How much slower than the long-term RTT a sample may be before the limit shrinks, as a
    /// ratio: 2 accepts twice the latency (`rttTolerance`). At least 1. Default 1.5.
    pub rtt_tolerance: f64,
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
            rtt_tolerance: 1.5,
        }
    }
}

impl Gradient2Config {
    /// Checks the limits, smoothing, queue size, window and tolerance.
    pub fn validate(&self) -> Result<(), ConfigError> {
        netflix_limits(
            Some(("min_limit", self.min_limit)),
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
        // Upstream's own check (`Preconditions.checkArgument(rttTolerance >= 1.0)`): below 1 a
        // steady latency would read as a rise.
        if !(self.rtt_tolerance.is_finite() && self.rtt_tolerance >= 1.0) {
            return Err(ConfigError::new(
                "rtt_tolerance",
                format!(
                    "must be at least 1 (1 cuts the limit on any rise above the long-term RTT), got {}",
                    self.rtt_tolerance
                ),
            ));
        }
        Ok(())
    }

    /// `Gradient2Limit.Builder.build`'s warnings (an initial limit above `max_limit` or below
    /// `min_limit`), and ours for `min_limit: 0`; `field: message` each.
    pub fn warnings(&self) -> Vec<String> {
        initial_warnings(
            Some(("min_limit", self.min_limit)),
            ("initial_limit", self.initial_limit),
            ("max_limit", self.max_limit),
        )
    }
}

/// Envoy's adaptive-concurrency gradient controller (`GradientControllerConfig`, flattened:
/// `min_rtt_calc_params.interval` is `min_rtt_calc_interval`, `.jitter` is
/// `min_rtt_calc_jitter_percent`, `.request_count` is `min_rtt_calc_request_count`, `.buffer` is
/// `min_rtt_buffer_percent`).
///
/// # Differences from Envoy
///
/// - The sample RTT is the nearest-rank percentile of the window's latencies; Envoy estimates
///   it from a log-linear histogram, so the two can differ by a few percent.
/// - `min_rtt_calc_interval` must be positive: Envoy's 0 turns re-measuring off in favour of a
///   `fixed_value` minRTT, which is not modelled. Nor is `min_concurrency_limit`:
///   `min_concurrency` is both the measuring limit and the floor, as in Envoy when that field is
///   unset.
/// - `concurrency_update_interval` defaults to 100ms (Envoy requires it and has no default).
/// - `max_concurrency_limit` must be at least `min_concurrency`; Envoy accepts a lower one and
///   keeps the limit at `min_concurrency`. `min_rtt_calc_request_count` is at most 10,000 (the
///   samples are kept until the measurement ends).
/// - Durations are nanoseconds; Envoy works in milliseconds and draws the jitter in whole ones.
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
    /// Latency allowance above minRTT before the limit shrinks, as a percentage of minRTT, in
    /// [0, 100] (Envoy's `Percent`). Default 25%.
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
        percent("min_rtt_buffer_percent", self.min_rtt_buffer_percent, 100.0)?;
        limit_in("min_concurrency", self.min_concurrency, 1)?;
        limit_in("max_concurrency_limit", self.max_concurrency_limit, 1)?;
        if self.min_concurrency > self.max_concurrency_limit {
            return Err(ConfigError::new(
                "max_concurrency_limit",
                format!(
                    "must be at least min_concurrency ({}), got {}",
                    self.min_concurrency, self.max_concurrency_limit
                ),
            ));
        }
        Ok(())
    }
}
