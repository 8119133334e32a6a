//! Every recovery config: upstream defaults, valid by default, and a RON round trip.

use patterns::backoff::{Backoff, BackoffConfig};
use patterns::budget::{
    BudgetConfig, ConcurrencyBudgetConfig, RetryBreakerConfig, RetryBudget, ThrottlingConfig,
    TpsConfig, WindowBudgetConfig,
};
use patterns::coalesce::{CoalesceConfig, Coalescer};
use patterns::fallback::{Fallback, FallbackConfig};
use patterns::hedge::{HedgeConfig, HedgeDelay, Hedger};
use patterns::idempotency::{IdempotencyConfig, IdempotencyStore, InFlightPolicy};
use patterns::retry::{RetryConfig, RetryPolicy};
use patterns::timeout::{AdaptiveTimeout, AdaptiveTimeoutConfig, TimeoutConfig, Timeouts};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sim_core::SimDuration;
use std::fmt::Debug;

/// `value` written as RON reads back equal, and `()` (every field defaulted) reads as the
/// default.
fn check<T>(value: &T, empty: &str)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug + Default,
{
    let text = ron::to_string(value).unwrap();
    let back: T = ron::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
    assert_eq!(&back, value, "{text}");
    let parsed: T = ron::from_str(empty).unwrap_or_else(|e| panic!("{empty}: {e}"));
    assert_eq!(parsed, T::default());
}

#[test]
fn defaults_build_and_round_trip() {
    check(&BackoffConfig::default(), "()");
    Backoff::new(BackoffConfig::default()).unwrap();
    check(&RetryConfig::default(), "()");
    RetryPolicy::new(RetryConfig::default()).unwrap();
    check(&ThrottlingConfig::default(), "()");
    check(&WindowBudgetConfig::default(), "()");
    check(&ConcurrencyBudgetConfig::default(), "()");
    check(&TpsConfig::default(), "()");
    check(&RetryBreakerConfig::default(), "()");
    for budget in [
        BudgetConfig::Throttling(ThrottlingConfig::default()),
        BudgetConfig::Window(WindowBudgetConfig::default()),
        BudgetConfig::Concurrency(ConcurrencyBudgetConfig::default()),
        BudgetConfig::Tps(TpsConfig::default()),
        BudgetConfig::RetryBreaker(RetryBreakerConfig::default()),
    ] {
        RetryBudget::new(&budget).unwrap();
        let with_budget = RetryConfig {
            budget: Some(budget),
            ..RetryConfig::default()
        };
        check(&with_budget, "()");
    }
    check(&TimeoutConfig::default(), "()");
    Timeouts::new(TimeoutConfig::default()).unwrap();
    check(&AdaptiveTimeoutConfig::default(), "()");
    AdaptiveTimeout::new(AdaptiveTimeoutConfig::default()).unwrap();
    check(&HedgeConfig::default(), "()");
    Hedger::new(HedgeConfig::default()).unwrap();
    check(&CoalesceConfig::default(), "()");
    Coalescer::<u64>::new(CoalesceConfig::default()).unwrap();
    check(&IdempotencyConfig::default(), "()");
    IdempotencyStore::<u64, u64>::new(IdempotencyConfig::default()).unwrap();
    check(&FallbackConfig::default(), "()");
    Fallback::new(FallbackConfig::default()).unwrap();
}

#[test]
fn defaults_are_the_ones_users_know() {
    // resilience4j and Polly: 3 attempts, counting the first.
    assert_eq!(RetryConfig::default().max_attempts, 3);
    // gRFC A6 example.
    let t = ThrottlingConfig::default();
    assert_eq!((t.max_tokens, t.token_ratio), (10, 0.1));
    // Google SRE: 10% of requests.
    assert_eq!(WindowBudgetConfig::default().budget_percent, 10.0);
    // Envoy retry_budget.
    let e = ConcurrencyBudgetConfig::default();
    assert_eq!((e.budget_percent, e.min_retry_concurrency), (20.0, 3));
    // tower TpsBudget::default(): ttl 10s, 10 per second, 20%.
    let tps = TpsConfig::default();
    assert_eq!(
        (tps.ttl, tps.min_per_sec, tps.retry_ratio),
        (SimDuration::from_secs(10), 10, 0.2)
    );
    // Brooker's retry breaker: 10% (`breaker_10pct` in the simulation behind his post).
    assert_eq!(RetryBreakerConfig::default().failure_rate_threshold, 10.0);
    // Polly hedging: one hedge after 2s.
    let h = HedgeConfig::default();
    assert_eq!(h.max_hedged_attempts, 1);
    assert_eq!(
        h.delay,
        HedgeDelay::Fixed {
            delay: SimDuration::from_secs(2)
        }
    );
    // Stripe: keys kept 24 hours, a duplicate in flight gets a conflict.
    let i = IdempotencyConfig::default();
    assert_eq!(i.ttl, SimDuration::from_secs(86_400));
    assert_eq!(i.in_flight, InFlightPolicy::Conflict);
    // resilience4j TimeLimiter: 1s.
    assert_eq!(
        TimeoutConfig::default().attempt_timeout,
        SimDuration::from_secs(1)
    );
}
