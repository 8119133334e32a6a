//! patterns: resilience patterns as pure state machines.
//!
//! Every pattern here is a configuration (serde, `validate()`, defaults that match what users
//! know from resilience4j, Envoy, gRPC, Polly and Netflix concurrency-limits) and a state
//! machine whose methods take `now` (a [`sim_core::SimTime`]) and, where they need randomness,
//! an RNG (`rand_core::Rng`) as arguments. There is no scheduler, no I/O and no global state
//! in this crate, so the same code runs inside a resim simulation and inside a real service.
//! A decision is data: a rejection says why and, where it can, when to retry.
//!
//! The main types:
//!
//! - admission: [`Limiter`] (any rate limiter from a [`LimiterConfig`]) deciding a
//!   [`RateDecision`], [`Keyed`] per-key registries, [`Breaker`] deciding a [`BreakerDecision`],
//!   [`Bulkhead`], [`ConcurrencyLimiter`], [`CoDelQueue`] and the other shedders in [`shedder`];
//! - recovery: [`RetryPolicy`] deciding a [`RetryDecision`] for each [`Failure`], [`Backoff`],
//!   [`RetryBudget`], [`Timeouts`] and [`AdaptiveTimeout`], [`Hedger`], [`Coalescer`],
//!   [`IdempotencyStore`], [`Fallback`];
//! - [`ConfigError`], returned by every `validate()` and constructor.
//!
//! Words keep one meaning across the crate: a *request* is one logical call as the caller
//! sees it, an *attempt* is one try of it on the wire (the first attempt and each retry or
//! hedge). Budgets count retries against requests, and hedges draw from the retry budget.
//!
//! Module map:
//!
//! | module | what |
//! |---|---|
//! | [`error`] | [`ConfigError`], the one error type of every `validate()` |
//! | [`limiter`] | rate limiters (fixed window, sliding log, sliding counter, token bucket, leaky bucket, GCRA), keyed registry, composite, shadow mode |
//! | [`concurrency`] | concurrency limits: fixed, AIMD, Vegas, Gradient2, Envoy gradient |
//! | [`bulkhead`] | max concurrent calls with a bounded, fair wait queue; in flight per key |
//! | [`breaker`] | circuit breakers: consecutive failures, count and time windows, half-open variants |
//! | [`shedder`] | load shedders: CoDel (RFC 8289), RPC-queue CoDel with adaptive LIFO, PID, priority, a queue by priority level, adaptive throttling |
//! | [`retry`] | retry policy: attempts, classification, idempotency, deadline awareness |
//! | [`backoff`] | backoff (constant, linear, exponential) and jitter (full, equal, decorrelated, proportional) |
//! | [`budget`] | retry budgets: gRPC token bucket, percentage over a window, Envoy concurrency, TPS budget, Brooker's retry breaker |
//! | [`timeout`] | per-attempt timeouts, propagated deadlines, adaptive timeouts |
//! | [`hedge`] | hedged requests |
//! | [`coalesce`] | request coalescing (single flight per key) |
//! | [`idempotency`] | idempotency-key store |
//! | [`fallback`] | fallback chains with a degradation report |

pub mod error;

pub mod breaker;
pub mod bulkhead;
pub mod concurrency;
pub mod limiter;
pub mod shedder;

pub mod backoff;
pub mod budget;
pub mod coalesce;
pub mod fallback;
pub mod hedge;
pub mod idempotency;
pub mod retry;
pub mod timeout;

pub use error::ConfigError;

pub use breaker::{Breaker, BreakerConfig, BreakerDecision};
pub use bulkhead::{Bulkhead, BulkheadConfig};
pub use concurrency::{ConcurrencyConfig, ConcurrencyLimiter};
pub use limiter::{Cost, Keyed, KeyedConfig, Limiter, LimiterConfig, RateDecision, RateLimiter};
pub use shedder::{CoDelConfig, CoDelQueue};

pub use backoff::{Backoff, BackoffConfig};
pub use budget::{BudgetConfig, RetryBudget};
pub use coalesce::Coalescer;
pub use fallback::Fallback;
pub use hedge::{HedgeAction, HedgeConfig, Hedger};
pub use idempotency::IdempotencyStore;
pub use retry::{
    Failure, GiveUpReason, RetryConfig, RetryDecision, RetryPolicy, RetryRequest, Safety,
};
pub use timeout::{AdaptiveTimeout, Deadline, Propagation, TimeoutConfig, Timeouts};
