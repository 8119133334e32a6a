//! The serde form of a retry policy.

use crate::ConfigError;
use crate::backoff::BackoffConfig;
use crate::budget::BudgetConfig;
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;

/// The most attempts a policy may allow; more is a retry storm by configuration.
const MAX_ATTEMPTS_LIMIT: u32 = 100;

/// A retry policy. Defaults: 3 attempts (resilience4j, Polly), gRPC's backoff, retries on
/// timeouts, connection errors, 500/502/503/504 and 429, Retry-After honoured up to 120s,
/// no budget.
///
/// In RON, `max_attempts: 3` and `max_retries: 2` say the same thing; give one of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawRetryConfig")]
pub struct RetryConfig {
    /// Attempts in all, **counting the first**; 1 means never retry.
    pub max_attempts: u32,
    /// The delays between attempts.
    pub backoff: BackoffConfig,
    /// Retry attempts that timed out.
    pub retry_on_timeout: bool,
    /// Retry attempts that could not connect or lost the connection.
    pub retry_on_connection_error: bool,
    /// Retry 429 Too Many Requests (after its Retry-After, if any).
    pub retry_on_throttled: bool,
    /// Retry a write refused by optimistic concurrency control (the row changed since this
    /// attempt read it): the next attempt reads the row again. Off by default, like every
    /// 4xx: a conflict is only worth retrying when the operation rereads what it writes.
    pub retry_on_conflict: bool,
    /// Retry an attempt that the caller's own limits refused before sending it (a full
    /// bulkhead, an open circuit breaker, its own rate limiter), as the status it stands for
    /// (503, or 429 for a rate limiter). On by default, as resilience4j's `Retry` retries
    /// every exception; Envoy never retries an overflow of its circuit breakers.
    pub retry_on_local_rejection: bool,
    /// The 5xx status codes that are transient (default 500, 502, 503, 504).
    pub retry_on_status: Vec<u16>,
    /// The longest Retry-After the policy waits for; a longer one ends the request.
    pub retry_after_max: SimDuration,
    /// The shortest time an attempt needs; no attempt starts unless it has this much time
    /// before the deadline.
    pub attempt_duration_min: SimDuration,
    /// The client's retry budget, if any.
    pub budget: Option<BudgetConfig>,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: 3,
            backoff: BackoffConfig::default(),
            retry_on_timeout: true,
            retry_on_connection_error: true,
            retry_on_throttled: true,
            retry_on_conflict: false,
            retry_on_local_rejection: true,
            retry_on_status: vec![500, 502, 503, 504],
            retry_after_max: SimDuration::from_secs(120),
            attempt_duration_min: SimDuration::from_millis(1),
            budget: None,
        }
    }
}

/// What a file may say: `max_attempts` or `max_retries`, every field optional.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRetryConfig {
    #[serde(default, deserialize_with = "some")]
    max_attempts: Option<u32>,
    #[serde(default, deserialize_with = "some")]
    max_retries: Option<u32>,
    #[serde(default, deserialize_with = "some")]
    backoff: Option<BackoffConfig>,
    #[serde(default, deserialize_with = "some")]
    retry_on_timeout: Option<bool>,
    #[serde(default, deserialize_with = "some")]
    retry_on_connection_error: Option<bool>,
    #[serde(default, deserialize_with = "some")]
    retry_on_throttled: Option<bool>,
    #[serde(default, deserialize_with = "some")]
    retry_on_conflict: Option<bool>,
    #[serde(default, deserialize_with = "some")]
    retry_on_local_rejection: Option<bool>,
    #[serde(default, deserialize_with = "some")]
    retry_on_status: Option<Vec<u16>>,
    #[serde(default, deserialize_with = "some")]
    retry_after_max: Option<SimDuration>,
    #[serde(default, deserialize_with = "some")]
    attempt_duration_min: Option<SimDuration>,
    #[serde(default)]
    budget: Option<BudgetConfig>,
}

/// Reads a present field as `Some`, so that files write `max_retries: 2`, not `Some(2)`.
fn some<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

impl TryFrom<RawRetryConfig> for RetryConfig {
    type Error = String;

    fn try_from(raw: RawRetryConfig) -> Result<Self, String> {
        let d = RetryConfig::default();
        let max_attempts = match (raw.max_attempts, raw.max_retries) {
            (Some(_), Some(_)) => {
                return Err(
                    "give max_attempts (counting the first attempt) or max_retries \
                            (not counting it), not both"
                        .to_string(),
                );
            }
            (Some(a), None) => a,
            (None, Some(r)) => r.saturating_add(1),
            (None, None) => d.max_attempts,
        };
        Ok(RetryConfig {
            max_attempts,
            backoff: raw.backoff.unwrap_or(d.backoff),
            retry_on_timeout: raw.retry_on_timeout.unwrap_or(d.retry_on_timeout),
            retry_on_connection_error: raw
                .retry_on_connection_error
                .unwrap_or(d.retry_on_connection_error),
            retry_on_throttled: raw.retry_on_throttled.unwrap_or(d.retry_on_throttled),
            retry_on_conflict: raw.retry_on_conflict.unwrap_or(d.retry_on_conflict),
            retry_on_local_rejection: raw
                .retry_on_local_rejection
                .unwrap_or(d.retry_on_local_rejection),
            retry_on_status: raw.retry_on_status.unwrap_or(d.retry_on_status),
            retry_after_max: raw.retry_after_max.unwrap_or(d.retry_after_max),
            attempt_duration_min: raw.attempt_duration_min.unwrap_or(d.attempt_duration_min),
            budget: raw.budget.or(d.budget),
        })
    }
}

impl RetryConfig {
    /// Checks every field; an invalid config cannot build a [`super::RetryPolicy`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=MAX_ATTEMPTS_LIMIT).contains(&self.max_attempts) {
            return Err(ConfigError::new(
                "max_attempts",
                format!(
                    "must be in [1, {MAX_ATTEMPTS_LIMIT}] (it counts the first attempt), got {}",
                    self.max_attempts
                ),
            ));
        }
        self.backoff.validate().map_err(|e| e.at("backoff"))?;
        for (i, code) in self.retry_on_status.iter().enumerate() {
            if !(500..=599).contains(code) {
                return Err(ConfigError::new(
                    format!("retry_on_status[{i}]"),
                    format!(
                        "must be a 5xx status, got {code}; 429 is retried with \
                         retry_on_throttled and other 4xx are never retried"
                    ),
                ));
            }
        }
        if self.retry_after_max > SimDuration::from_secs(86_400) {
            return Err(ConfigError::new(
                "retry_after_max",
                format!("must be at most 1 day, got {}", self.retry_after_max),
            ));
        }
        if let Some(b) = &self.budget {
            b.validate().map_err(|e| e.at("budget"))?;
        }
        Ok(())
    }
}
