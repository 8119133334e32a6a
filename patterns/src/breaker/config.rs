//! [`BreakerConfig`]: resilience4j's names and defaults, plus the half-open variants.

use crate::ConfigError;
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;

/// How outcomes are collected while closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SlidingWindowType {
    /// The last `sliding_window_size` calls.
    CountBased,
    /// The calls of the last `sliding_window_size` seconds (one bucket per second).
    TimeBased,
}

/// How the half-open state decides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum HalfOpenPolicy {
    /// resilience4j: admit `permitted_number_of_calls_in_half_open_state` calls; once all have
    /// reported, close if the failure and slow-call rates are below their thresholds, else open.
    PermittedCalls {
        /// Calls admitted while half-open. Default 10, as resilience4j's.
        #[serde(default = "default_permitted_calls")]
        permitted_number_of_calls_in_half_open_state: u32,
    },
    /// Hystrix: admit one probe; its success closes, its failure (or slowness) opens.
    SingleProbe,
    /// Admit up to `permitted_calls`; close after `success_threshold` successes, open on the
    /// first failure or slow call.
    SuccessThreshold {
        /// Calls admitted while half-open.
        permitted_calls: u32,
        /// Successes that close the breaker (at most `permitted_calls`).
        success_threshold: u32,
    },
    /// Let a growing share of calls through, from one probe up to all of them over
    /// `ramp_duration`; the first failure or slow call opens, reaching the end closes.
    Ramp {
        /// How long the ramp from 0% to 100% takes.
        ramp_duration: SimDuration,
    },
}

/// Where a half-open state goes when `max_wait_duration_in_half_open_state` passes without a
/// verdict (resilience4j's `transitionToStateAfterWaitDuration`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StateAfterWait {
    /// Open again, with the next (possibly longer) open wait. resilience4j's default.
    Open,
    /// Close, with an empty window.
    Closed,
}

fn default_permitted_calls() -> u32 {
    10
}

impl Default for HalfOpenPolicy {
    /// resilience4j's: 10 permitted calls judged by the thresholds.
    fn default() -> Self {
        HalfOpenPolicy::PermittedCalls {
            permitted_number_of_calls_in_half_open_state: default_permitted_calls(),
        }
    }
}

/// The most calls a count-based window or a half-open state may track.
pub const BREAKER_WINDOW_MAX: u32 = 1_000_000;

/// A circuit breaker's configuration. Field names and defaults follow resilience4j, in snake
/// case; what resilience4j lacks (consecutive failures, backing-off open state, half-open
/// variants) is added under names in the same style.
///
/// # Differences from resilience4j
///
/// - `max_wait_duration_in_half_open_state` must be positive. resilience4j's default, 0, means
///   "wait forever": a half-open breaker whose permitted calls never report back then refuses
///   every call for good. Refusing 0 is our safeguard against that wedge; the default is 60s.
/// - Durations are nanoseconds, so waits shorter than resilience4j's 1ms floor are accepted.
/// - `sliding_window_size` is at most 1,000,000 calls, or 3,600 seconds for a time-based
///   window, so a window's memory is bounded; resilience4j has no upper bound.
/// - The open wait backs off with `wait_duration_in_open_state_multiplier` and `_max` in place
///   of resilience4j's `waitIntervalFunctionInOpenState`; the default (multiplier 1) is
///   resilience4j's fixed wait.
/// - Not modelled: `initialState` (a breaker starts closed; the operator methods move it),
///   `recordExceptions`/`ignoreExceptions`/`recordResult` (the caller classifies each outcome
///   with `on_success`, `on_failure` or `on_ignored`) and `transitionOnResult`.
/// - Added: `consecutive_failure_threshold` and the half-open policies other than
///   `permitted_calls`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BreakerConfig {
    /// Open when the failure rate is at or above this percentage, in (0, 100]. Default 50.
    pub failure_rate_threshold: f64,
    /// Open when the share of slow calls is at or above this percentage, in (0, 100].
    /// Default 100 (only when every call is slow).
    pub slow_call_rate_threshold: f64,
    /// A call that takes longer than this is slow. Default 60s.
    pub slow_call_duration_threshold: SimDuration,
    /// Count-based (default) or time-based window.
    pub sliding_window_type: SlidingWindowType,
    /// Calls (count-based) or seconds (time-based) in the window. Default 100.
    pub sliding_window_size: u32,
    /// Rates are judged only once this many calls are in the window. Default 100. With a
    /// count-based window the effective minimum is at most the window size, as in resilience4j.
    pub minimum_number_of_calls: u32,
    /// Also open after this many failures in a row, whatever the rates. Default none.
    pub consecutive_failure_threshold: Option<u32>,
    /// How long to stay open the first time. Default 60s.
    pub wait_duration_in_open_state: SimDuration,
    /// Each consecutive re-opening (half-open failed) multiplies the open wait by this; 1 keeps
    /// it fixed. Default 1.
    pub wait_duration_in_open_state_multiplier: f64,
    /// The longest open wait when backing off. Default 60s.
    pub wait_duration_in_open_state_max: SimDuration,
    /// Move from open to half-open at the end of the wait even if no call arrives (the
    /// transition is then stamped with the end of the wait); otherwise on the first call after
    /// it. Default false, as in resilience4j.
    pub automatic_transition_from_open_to_half_open_enabled: bool,
    /// How half-open decides.
    pub half_open: HalfOpenPolicy,
    /// Leave a half-open state that has not decided this long after it began, whether or not
    /// it admitted a call (the timer starts when the breaker enters half-open, as in
    /// resilience4j), for `transition_to_state_after_wait_duration`. This is what keeps a call
    /// that never reports back from wedging the breaker, so it must be positive: resilience4j's
    /// 0 (wait forever) is refused. Ramps end by their own clock and ignore it. Default 60s, the
    /// same as the open wait.
    pub max_wait_duration_in_half_open_state: SimDuration,
    /// Where a half-open state that timed out goes. Default open, as in resilience4j.
    pub transition_to_state_after_wait_duration: StateAfterWait,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            failure_rate_threshold: 50.0,
            slow_call_rate_threshold: 100.0,
            slow_call_duration_threshold: SimDuration::from_secs(60),
            sliding_window_type: SlidingWindowType::CountBased,
            sliding_window_size: 100,
            minimum_number_of_calls: 100,
            consecutive_failure_threshold: None,
            wait_duration_in_open_state: SimDuration::from_secs(60),
            wait_duration_in_open_state_multiplier: 1.0,
            wait_duration_in_open_state_max: SimDuration::from_secs(60),
            automatic_transition_from_open_to_half_open_enabled: false,
            half_open: HalfOpenPolicy::default(),
            max_wait_duration_in_half_open_state: SimDuration::from_secs(60),
            transition_to_state_after_wait_duration: StateAfterWait::Open,
        }
    }
}

fn percent(field: &str, value: f64) -> Result<(), ConfigError> {
    if value.is_finite() && value > 0.0 && value <= 100.0 {
        Ok(())
    } else {
        Err(ConfigError::new(
            field,
            format!("must be in (0, 100], got {value}"),
        ))
    }
}

fn count(field: &str, value: u32) -> Result<(), ConfigError> {
    if (1..=BREAKER_WINDOW_MAX).contains(&value) {
        Ok(())
    } else {
        Err(ConfigError::new(
            field,
            format!("must be in [1, {BREAKER_WINDOW_MAX}], got {value}"),
        ))
    }
}

impl BreakerConfig {
    /// A breaker that opens after `threshold` failures in a row and nothing else, with a single
    /// probe half-open. (The rate judge is left on but can only agree: a 100% failure rate
    /// over the last `threshold` calls is `threshold` failures in a row.)
    pub fn consecutive_failures(threshold: u32) -> Self {
        BreakerConfig {
            failure_rate_threshold: 100.0,
            slow_call_rate_threshold: 100.0,
            slow_call_duration_threshold: SimDuration::MAX,
            sliding_window_size: threshold.max(1),
            minimum_number_of_calls: threshold.max(1),
            consecutive_failure_threshold: Some(threshold),
            half_open: HalfOpenPolicy::SingleProbe,
            ..BreakerConfig::default()
        }
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        percent("failure_rate_threshold", self.failure_rate_threshold)?;
        percent("slow_call_rate_threshold", self.slow_call_rate_threshold)?;
        if self.slow_call_duration_threshold.is_zero() {
            return Err(ConfigError::new(
                "slow_call_duration_threshold",
                "must be positive, got 0s (every call would be slow)",
            ));
        }
        count("sliding_window_size", self.sliding_window_size)?;
        if self.sliding_window_type == SlidingWindowType::TimeBased
            && self.sliding_window_size > 3600
        {
            return Err(ConfigError::new(
                "sliding_window_size",
                format!(
                    "must be at most 3600 seconds for a time-based window, got {}",
                    self.sliding_window_size
                ),
            ));
        }
        count("minimum_number_of_calls", self.minimum_number_of_calls)?;
        if let Some(n) = self.consecutive_failure_threshold {
            count("consecutive_failure_threshold", n)?;
        }
        if self.wait_duration_in_open_state.is_zero() {
            return Err(ConfigError::new(
                "wait_duration_in_open_state",
                "must be positive, got 0s",
            ));
        }
        let m = self.wait_duration_in_open_state_multiplier;
        if !(m.is_finite() && (1.0..=100.0).contains(&m)) {
            return Err(ConfigError::new(
                "wait_duration_in_open_state_multiplier",
                format!("must be in [1, 100], got {m}"),
            ));
        }
        if self.wait_duration_in_open_state_max < self.wait_duration_in_open_state {
            return Err(ConfigError::new(
                "wait_duration_in_open_state_max",
                format!(
                    "must be at least wait_duration_in_open_state ({}), got {}",
                    self.wait_duration_in_open_state, self.wait_duration_in_open_state_max
                ),
            ));
        }
        if self.max_wait_duration_in_half_open_state.is_zero() {
            return Err(ConfigError::new(
                "max_wait_duration_in_half_open_state",
                "must be positive, got 0s (in resilience4j 0 means wait forever, which lets half-open calls that never report back wedge the breaker; refused here as a safeguard: set a positive wait, e.g. the default 60s)",
            ));
        }
        match &self.half_open {
            HalfOpenPolicy::PermittedCalls {
                permitted_number_of_calls_in_half_open_state: n,
            } => count("permitted_number_of_calls_in_half_open_state", *n)
                .map_err(|e| e.at("half_open"))?,
            HalfOpenPolicy::SingleProbe => {}
            HalfOpenPolicy::SuccessThreshold {
                permitted_calls,
                success_threshold,
            } => {
                count("permitted_calls", *permitted_calls).map_err(|e| e.at("half_open"))?;
                if *success_threshold == 0 || success_threshold > permitted_calls {
                    return Err(ConfigError::new(
                        "half_open.success_threshold",
                        format!(
                            "must be in [1, permitted_calls = {permitted_calls}], got {success_threshold}"
                        ),
                    ));
                }
            }
            HalfOpenPolicy::Ramp { ramp_duration } => {
                if ramp_duration.is_zero() {
                    return Err(ConfigError::new(
                        "half_open.ramp_duration",
                        "must be positive, got 0s (use single_probe for an instant decision)",
                    ));
                }
            }
        }
        Ok(())
    }
}
