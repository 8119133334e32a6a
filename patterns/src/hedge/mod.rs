//! Hedged requests: when an attempt is slow, send another one, keep the first answer and
//! cancel the rest.
//!
//! [`HedgeConfig`] says when a hedge goes out (a fixed delay, or a percentile of recent
//! latency) and how many may go out (`max_hedged_attempts`, not counting the first attempt;
//! Polly's defaults: 2s and 1). [`Hedger`] is the machine a client holds (config and latency
//! window); [`HedgedRequest`] is the per-request state, driven by the caller's timer and the
//! attempts' responses, and answering with a [`HedgeAction`].
//!
//! Every hedge is a retry as far as load goes, so it is **asked of the retry budget**
//! ([`crate::budget::RetryBudget::try_retry`]) before it is sent; pass the same budget the
//! retry policy uses ([`crate::retry::RetryPolicy::budget_mut`]) so that both draw from one
//! pool. A refused hedge is not sent and no further hedges are tried for that request.
//!
//! Hedging runs an operation more than once on purpose, so, like retries, it is only for
//! operations that are idempotent or carry an idempotency key: an
//! [`Unsafe`](crate::retry::Safety::Unsafe) request sends its first attempt and nothing else.
//!
//! When an attempt succeeds, the action names the **losers to cancel**: every other attempt
//! still in flight. A failed attempt does not end the request while others are in flight;
//! when none is, a hedge that is still allowed goes out at once (as gRPC does on a non-fatal
//! status), and otherwise the request fails.
//!
//! ```text
//!  begin ─> [ Running { in_flight: {0}, sent: 1, hedge_at } ]
//!              │ timer at hedge_at, sent ≤ max, budget ok ─> Send { attempt: sent } (in_flight += it)
//!              │ failure of i, others in flight ───────────> Wait
//!              │ failure of the last in flight ────────────> Send (if allowed) or ─> [ Failed ]
//!              └ success of i ──> Done { winner: i, cancel: in_flight − {i} } ─> [ Won { winner } ]
//! ```

mod machine;

pub use machine::{HedgeAction, HedgeConfig, HedgeDelay, HedgedRequest, Hedger};
