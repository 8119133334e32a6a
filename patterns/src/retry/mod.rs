//! The retry policy: whether, and after how long, a failed attempt is tried again.
//!
//! [`RetryConfig`] is the serde form (upstream names and defaults: 3 attempts as in
//! resilience4j and Polly, gRPC's backoff, no budget); [`RetryPolicy`] is the machine a
//! client holds, with its [`Backoff`](crate::backoff::Backoff) and
//! [`RetryBudget`](crate::budget::RetryBudget); [`RetryRequest`] is the per-request state.
//!
//! ```ignore
//! let mut policy = RetryPolicy::new(RetryConfig::default())?;
//! let mut request = policy.begin(now, Some(deadline), Safety::Idempotent);
//! // ... the first attempt fails with a 503 and `Retry-After: 2s`:
//! match policy.on_failure(now, &mut request, Failure::Status { code: 503, retry_after }, &mut rng) {
//!     RetryDecision::Retry { after, attempt, .. } => { /* send attempt `attempt` at now + after */ }
//!     RetryDecision::GiveUp { reason } => { /* report `reason` */ }
//! }
//! // ... or it succeeds:
//! policy.on_success(now, &mut request);
//! ```
//!
//! **`max_attempts` counts the first attempt**: 3 means one try and two retries. Configs may
//! say `max_retries: 2` instead (the same thing); giving both is an error.
//!
//! What is retried (in this order; the first rule that applies decides):
//!
//! | check | decision |
//! |---|---|
//! | the request already ended | give up: `Finished` |
//! | failure class: timeout, connection error, a status in `retry_on_status` (500, 502, 503, 504) | retryable |
//! | 429 (when `retry_on_throttled`) | retryable |
//! | any other status (all other 4xx, 501, ...) | give up: `NotRetryable` |
//! | the operation is neither idempotent nor carries an idempotency key | give up: `NotIdempotent` |
//! | `max_attempts` reached | give up: `AttemptsExhausted` |
//! | the server's `Retry-After` (429, 503) is longer than `retry_after_max` | give up: `RetryAfterTooLong` |
//! | `now + delay + attempt_duration_min` is after the deadline | give up: `DeadlineExceeded` |
//! | the budget refuses | give up: `BudgetExhausted` |
//! | otherwise | retry after `max(backoff, Retry-After)` |
//!
//! Per-request state:
//!
//! ```text
//!   begin ──> [ Attempting { attempt: 1 } ] ──failure: Retry { after }──> [ Attempting { attempt: k + 1 } ]
//!                        │                                                          │
//!                        └──success, or failure: GiveUp──> [ Ended ] <──────────────┘
//! ```
//!
//! A retry's attempt starts `after` the failure; the caller schedules it. Every call on an
//! ended request gives up with `Finished` and changes nothing.

mod config;
mod policy;

pub use config::RetryConfig;
pub use policy::{
    Failure, GiveUpReason, RetryDecision, RetryPolicy, RetryReason, RetryRequest, Safety,
};
