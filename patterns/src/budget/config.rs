//! The serde forms of the budgets.

use crate::ConfigError;
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;

/// Which retry budget a client uses. In RON: `Throttling(max_tokens: 10, token_ratio: 0.1)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum BudgetConfig {
    /// gRPC retry throttling: a token bucket drained by failures.
    Throttling(ThrottlingConfig),
    /// A percentage of the requests over a sliding window (Google SRE: 10% per client).
    Window(WindowBudgetConfig),
    /// Envoy's retry budget: concurrent retries as a percentage of active requests.
    Concurrency(ConcurrencyBudgetConfig),
    /// tower's / Finagle's TPS budget: deposits per request, a reserve per second, a TTL.
    Tps(TpsConfig),
    /// Brooker's retry circuit breaker: no retries while the failure ratio over a window is
    /// above a threshold.
    RetryBreaker(RetryBreakerConfig),
}

/// gRPC retry throttling (gRFC A6). Defaults: the example of the gRFC, 10 tokens, ratio 0.1.
///
/// # Differences from gRPC
///
/// - `max_tokens` is a whole number; gRPC reads it as a float (with three decimals).
/// - `token_ratio` must be at least 0.001: gRPC accepts any positive ratio but keeps three
///   decimals, so a smaller one would give nothing back on success and throttle for good.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ThrottlingConfig {
    /// Size of the bucket, 1..1000; it starts full.
    pub max_tokens: u32,
    /// Tokens a success gives back, in [0.001, 1000]; precision 0.001 (finer is ignored, as
    /// in gRPC). It may exceed `max_tokens`, as in gRPC: a success then refills the bucket.
    pub token_ratio: f64,
}

impl Default for ThrottlingConfig {
    fn default() -> Self {
        ThrottlingConfig {
            max_tokens: 10,
            token_ratio: 0.1,
        }
    }
}

/// A percentage of requests over a sliding window. Defaults: 10% (Google SRE), 10s, and a
/// floor of 3 retries per window so that a client with little traffic can still retry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WindowBudgetConfig {
    /// Retries allowed per 100 requests in the window, 0..100.
    pub budget_percent: f64,
    /// Length of the sliding window, 10ms..1h.
    pub window: SimDuration,
    /// Retries allowed per window on top of the percentage.
    pub min_retries_per_window: u32,
}

impl Default for WindowBudgetConfig {
    fn default() -> Self {
        WindowBudgetConfig {
            budget_percent: 10.0,
            window: SimDuration::from_secs(10),
            min_retries_per_window: 3,
        }
    }
}

/// Envoy's retry budget. Defaults are Envoy's: 20% and 3.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConcurrencyBudgetConfig {
    /// Concurrent retries allowed per 100 active requests, 0..100.
    pub budget_percent: f64,
    /// Concurrent retries allowed whatever the number of active requests.
    pub min_retry_concurrency: u32,
}

impl Default for ConcurrencyBudgetConfig {
    fn default() -> Self {
        ConcurrencyBudgetConfig {
            budget_percent: 20.0,
            min_retry_concurrency: 3,
        }
    }
}

/// tower's `TpsBudget`. Defaults are tower's: ttl 10s, 10 retries per second, ratio 0.2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TpsConfig {
    /// How long a deposit counts, 1s..60s.
    pub ttl: SimDuration,
    /// Retries per second allowed without any deposit (the reserve is `min_per_sec · ttl`).
    pub min_per_sec: u32,
    /// Retries allowed per request, 0..1000 (above 1 a request allows several retries).
    pub retry_ratio: f64,
}

impl Default for TpsConfig {
    fn default() -> Self {
        TpsConfig {
            ttl: SimDuration::from_secs(10),
            min_per_sec: 10,
            retry_ratio: 0.2,
        }
    }
}

/// Marc Brooker's retry circuit breaker ("Fixing retries with token buckets and circuit
/// breakers", 2022): while more than `failure_rate_threshold` percent of the attempts that
/// ended in the last `window` failed, no retry is made; below it, retries are as the policy
/// says. First attempts are never refused (a budget is asked only for retries and hedges).
///
/// Names are resilience4j's circuit-breaker names (`failure_rate_threshold` a percentage,
/// `minimum_number_of_calls`) with the windowed budgets' `window`.
///
/// Defaults: a threshold of 10%, Brooker's (`breaker_10pct` in the simulation behind his
/// post); a window of 10s, the Google SRE budget's window here, which is also the length of
/// Brooker's simulated runs (his breaker counts over a client's whole life); at least 10
/// attempts in the window before the ratio is judged, the fewest in which a single failure is
/// not already above the default threshold.
///
/// # Differences from Brooker's simulation
///
/// - The ratio is failed attempts over ended attempts in a sliding window (successes and
///   retryable failures; failures that say nothing about the dependency are not counted),
///   where his divides every failure, retries' included, by first tries since the client
///   started. Ours estimates the dependency's failure ratio whatever the retries; his runs
///   slightly above it while retries are made.
/// - `minimum_number_of_calls`: his breaker judges from the first call, so a client's first
///   failure stops its retries (what his post calls tripping early, for small clients).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetryBreakerConfig {
    /// No retries while more than this percentage of the window's attempts failed, in
    /// (0, 100]. Default 10.
    pub failure_rate_threshold: f64,
    /// Length of the sliding window, 10ms..1h. Default 10s.
    pub window: SimDuration,
    /// Below this many ended attempts in the window the ratio is not judged and retries are
    /// allowed, 1..1,000,000. Default 10.
    pub minimum_number_of_calls: u32,
}

impl Default for RetryBreakerConfig {
    fn default() -> Self {
        RetryBreakerConfig {
            failure_rate_threshold: 10.0,
            window: SimDuration::from_secs(10),
            minimum_number_of_calls: 10,
        }
    }
}

fn check_window(window: SimDuration) -> Result<(), ConfigError> {
    if window < SimDuration::from_millis(10) || window > SimDuration::from_secs(3600) {
        return Err(ConfigError::new(
            "window",
            format!("must be in [10ms, 1h], got {window}"),
        ));
    }
    Ok(())
}

fn check_percent(field: &str, x: f64) -> Result<(), ConfigError> {
    if !(x.is_finite() && (0.0..=100.0).contains(&x)) {
        return Err(ConfigError::new(
            field,
            format!("must be in [0, 100], got {x}"),
        ));
    }
    Ok(())
}

impl ThrottlingConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=1000).contains(&self.max_tokens) {
            return Err(ConfigError::new(
                "max_tokens",
                format!("must be in [1, 1000] as in grpc, got {}", self.max_tokens),
            ));
        }
        // gRPC asks only for a positive ratio and keeps three decimals of it; below 0.001 a
        // success would give nothing back. The top is gRPC's own bound on the bucket: a larger
        // ratio could do no more than refill it.
        let r = self.token_ratio;
        if !(r.is_finite() && (0.001..=1000.0).contains(&r)) {
            return Err(ConfigError::new(
                "token_ratio",
                format!(
                    "must be in [0.001, 1000] (gRPC keeps three decimals, so a smaller ratio \
                     would give nothing back on success), got {r}"
                ),
            ));
        }
        Ok(())
    }
}

impl WindowBudgetConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_percent("budget_percent", self.budget_percent)?;
        check_window(self.window)
    }
}

impl RetryBreakerConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let x = self.failure_rate_threshold;
        if !(x.is_finite() && x > 0.0 && x <= 100.0) {
            return Err(ConfigError::new(
                "failure_rate_threshold",
                format!(
                    "must be in (0, 100], got {x} (at 0 the failure being retried would refuse \
                     its own retry: for no retries at all, say max_attempts: 1)"
                ),
            ));
        }
        check_window(self.window)?;
        let m = self.minimum_number_of_calls;
        if !(1..=1_000_000).contains(&m) {
            return Err(ConfigError::new(
                "minimum_number_of_calls",
                format!("must be in [1, 1000000], got {m}"),
            ));
        }
        Ok(())
    }
}

impl ConcurrencyBudgetConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_percent("budget_percent", self.budget_percent)
    }
}

impl TpsConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.ttl < SimDuration::from_secs(1) || self.ttl > SimDuration::from_secs(60) {
            return Err(ConfigError::new(
                "ttl",
                format!("must be in [1s, 60s] as in tower, got {}", self.ttl),
            ));
        }
        let r = self.retry_ratio;
        if !(r.is_finite() && (0.0..=1000.0).contains(&r)) {
            return Err(ConfigError::new(
                "retry_ratio",
                format!("must be in [0, 1000], got {r}"),
            ));
        }
        Ok(())
    }
}

impl BudgetConfig {
    /// Checks the chosen budget; field paths start with the variant's name.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self {
            BudgetConfig::Throttling(c) => c.validate().map_err(|e| e.at("Throttling")),
            BudgetConfig::Window(c) => c.validate().map_err(|e| e.at("Window")),
            BudgetConfig::Concurrency(c) => c.validate().map_err(|e| e.at("Concurrency")),
            BudgetConfig::Tps(c) => c.validate().map_err(|e| e.at("Tps")),
            BudgetConfig::RetryBreaker(c) => c.validate().map_err(|e| e.at("RetryBreaker")),
        }
    }
}
