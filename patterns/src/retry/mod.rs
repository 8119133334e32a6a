//! The retry policy: whether, and after how long, a failed attempt is tried again.
//!
//! [`RetryConfig`] is the serde form (upstream names and defaults: 3 attempts as in
//! resilience4j and Polly, gRPC's backoff, no budget); [`RetryPolicy`] is the machine a
//! client holds, with its [`Backoff`](crate::backoff::Backoff) and
//! [`RetryBudget`](crate::budget::RetryBudget); [`RetryRequest`] is the per-request state.
//!
//! ```
//! use patterns::retry::{Failure, RetryConfig, RetryDecision, RetryPolicy, Safety};
//! use sim_core::{Seed, SimDuration, SimTime};
//!
//! let mut policy = RetryPolicy::new(RetryConfig::default()).unwrap();
//! let mut rng = Seed(7).stream("client/retries");
//! let now = SimTime::ZERO;
//! let deadline = SimTime::from_secs(10);
//! let mut request = policy.begin(now, Some(deadline), Safety::Idempotent);
//! // The first attempt fails after 100ms with a 503 and `Retry-After: 2s`.
//! let now = now + SimDuration::from_millis(100);
//! let failure = Failure::Status { code: 503, retry_after: Some(SimDuration::from_secs(2)) };
//! match policy.on_failure(now, &mut request, failure, &mut rng) {
//!     RetryDecision::Retry { after, attempt, .. } => {
//!         // The backoff (about 1s) is shorter than what the server asked for.
//!         assert_eq!(after, SimDuration::from_secs(2));
//!         assert_eq!(attempt, 2);
//!     }
//!     RetryDecision::GiveUp { reason } => panic!("gave up: {reason:?}"),
//! }
//! // The second attempt succeeds; the request ends.
//! policy.on_success(now + SimDuration::from_millis(2100), &mut request);
//! assert_eq!(request.outcome(), Some(true));
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
//! | a version conflict of an optimistic write (when `retry_on_conflict`) | retryable |
//! | refused by the caller's own limits before it was sent: without `retry_on_local_rejection` | give up: `NotRetryable` |
//! | refused by the caller's own limits, with `retry_on_local_rejection` (the default) | as the status it stands for (503, 429) |
//! | any other status (all other 4xx, 501, ...) | give up: `NotRetryable` |
//! | the operation is neither idempotent nor carries an idempotency key | give up: `NotIdempotent` |
//! | `max_attempts` reached | give up: `AttemptsExhausted` |
//! | the server's `Retry-After` (429, 503) is longer than `retry_after_max` | give up: `RetryAfterTooLong` |
//! | `now + delay + attempt_duration_min` is after the deadline | give up: `DeadlineExceeded` |
//! | the budget refuses | give up: `BudgetExhausted` |
//! | otherwise | retry after `max(backoff, Retry-After)` |
//!
//! The policy reports every attempt to its budget: successes, retryable failures (which
//! drain gRPC tokens) and other failures (which no budget counts against the dependency).
//! Hedging ([`crate::hedge`]) can spend from the same budget through
//! [`RetryPolicy::budget_mut`].
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
