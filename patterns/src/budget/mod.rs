//! Retry budgets: limits on the retries (and hedges) of a whole client, so that a failing
//! dependency sees at most a bounded multiple of the offered load instead of a retry storm.
//!
//! [`BudgetConfig`] picks one of five budgets; [`RetryBudget`] is the machine. The retry
//! policy ([`crate::retry`]) and hedging ([`crate::hedge`]) tell it when a request starts
//! ([`RetryBudget::on_request`]), when an attempt ends ([`RetryBudget::on_attempt_end`]) and
//! when a request ends ([`RetryBudget::on_request_end`]), and ask it before each retry or
//! hedge ([`RetryBudget::try_retry`]), which spends the budget when it says yes.
//!
//! | budget | upstream | allows a retry when | long-run bound with every attempt failing |
//! |---|---|---|---|
//! | [`BudgetConfig::Throttling`] | gRPC retry throttling (gRFC A6) | `tokens > max_tokens / 2`; a retryable failure costs 1 token, a success adds `token_ratio` | `max_tokens / 2` retries in all, then none until successes refill it |
//! | [`BudgetConfig::Window`] | SRE per-client retry budget (10%) | retries in the window `+ 1 ≤ budget_percent% · requests + min_retries_per_window` | `attempts / requests ≤ 1 + budget_percent/100`, plus `min_retries_per_window` per window |
//! | [`BudgetConfig::Concurrency`] | Envoy `retry_budget` | active retries `< max(min_retry_concurrency, budget_percent% · active requests)` | concurrent retries bounded, not their rate |
//! | [`BudgetConfig::Tps`] | tower / Finagle `TpsBudget` | `reserve + Σ deposits − Σ withdrawals ≥ 1` over the last `ttl` | `attempts / requests ≤ 1 + retry_ratio`, plus `min_per_sec · ttl` per `ttl` |
//! | [`BudgetConfig::RetryBreaker`] | Marc Brooker's retry circuit breaker (2022) | `failed ≤ failure_rate_threshold% · ended` over the attempts ended in the last `window`, or fewer than `minimum_number_of_calls` ended there | none once `minimum_number_of_calls` attempts ended in the window: no retries, first attempts untouched |
//!
//! The Envoy budget counts a granted retry as active from the grant (while it waits out its
//! backoff) until its attempt ends, which is slightly stricter than counting it only while
//! in flight, and counts requests from [`RetryBudget::on_request`] to
//! [`RetryBudget::on_request_end`].
//!
//! A "request" is a logical call (its first attempt); retries are not requests, so the ratio
//! attempts / requests is the amplification a dependency sees.
//!
//! The retry breaker counts attempts that end as a success or a retryable failure (the
//! failure being retried is already counted when the retry is asked for); it refuses only
//! while the ratio is strictly above the threshold, as Brooker's does. It spends nothing: a
//! granted retry changes no count until its attempt ends. So below the threshold a client
//! retries exactly as it would without a budget, and above it makes first attempts only.
//!
//! The windowed budgets count in ten slots of `window / 10` (`ttl / 10`); a slot leaves the
//! window whole, so the window covers between 90% and 100% of its nominal length. Ratios are
//! kept in integer parts per million, so `retry_ratio: 0.6` allows 0.6 retries per request,
//! not 1 (tower rounds `1 / 0.6` down to a withdrawal of 1 per deposit of 1).
//!
//! Throttling state, per client (gRFC A6):
//!
//! ```text
//!             retryable failure: tokens -= 1          success: tokens += token_ratio
//!   [ tokens > max/2: retries allowed ] <------------------------------> [ tokens <= max/2: throttled ]
//! ```
//!
//! Retry breaker state, per client (Brooker), judged afresh at each retry asked for:
//!
//! ```text
//!                          failed / ended > threshold, ended >= minimum
//!   [ retrying as the policy says ] ----------------------------------> [ first attempts only ]
//!                                   <----------------------------------
//!                      the window's ratio back at or under the threshold (old slots leave it)
//! ```

mod config;
mod machine;
mod ring;

pub use config::{
    BudgetConfig, ConcurrencyBudgetConfig, RetryBreakerConfig, ThrottlingConfig, TpsConfig,
    WindowBudgetConfig,
};
pub use machine::{AttemptResult, BudgetExhausted, RetryBudget};
