//! What every rate limiter answers: [`RateDecision`], and the [`Cost`] of a request.

use crate::ConfigError;
use core::num::NonZeroU64;
use sim_core::{SimDuration, SimTime};

/// The cost of one request in limiter units: at least 1.
///
/// A cost of zero would let a caller through without charging anything, which is never what a
/// caller means; it is refused when the cost is built ([`Cost::new`]) rather than when a
/// limiter sees it, so every limiter method can take a cost without returning an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cost(NonZeroU64);

impl Cost {
    /// A cost of one unit, the usual case.
    pub const ONE: Cost = Cost(NonZeroU64::MIN);

    /// A cost of `units`; zero is an argument error naming the field `cost`.
    pub fn new(units: u64) -> Result<Cost, ConfigError> {
        match NonZeroU64::new(units) {
            Some(n) => Ok(Cost(n)),
            None => Err(ConfigError::new(
                "cost",
                "must be at least 1, got 0 (a free request needs no limiter)",
            )),
        }
    }

    /// The number of units.
    pub const fn units(self) -> u64 {
        self.0.get()
    }
}

/// Whether a request may go, and if not, why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateOutcome {
    /// The request is admitted and charged.
    Admit,
    /// The request is refused and nothing was charged.
    Reject(RateRejection),
}

/// Why a rate limiter refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateRejection {
    /// The limit is used up for now; `retry_after` says when the same cost would pass.
    LimitExceeded,
    /// The cost is larger than the limiter could ever admit at once, so retrying cannot help.
    CostAboveCapacity {
        /// The cost asked for.
        cost: u64,
        /// The most this limiter admits at one instant.
        capacity: u64,
    },
    /// A keyed registry is full of keys that are still in use and is set to refuse new ones.
    TooManyKeys {
        /// The configured cap.
        max_keys: usize,
    },
}

/// A rate limiter's answer, with what `X-RateLimit-Limit`, `X-RateLimit-Remaining`,
/// `X-RateLimit-Reset` and `Retry-After` need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateDecision {
    /// Admit or reject (with the reason).
    pub outcome: RateOutcome,
    /// The limit a client sees (`X-RateLimit-Limit`): the most units admitted at one instant.
    pub limit: u64,
    /// Units that would still be admitted right now after this decision (`X-RateLimit-Remaining`).
    pub remaining: u64,
    /// On a rejection, how long until the same cost would be admitted if nothing else arrives
    /// (`Retry-After`); `None` when admitted or when waiting cannot help. Positive, except at
    /// the very end of representable time, where it saturates to zero.
    pub retry_after: Option<SimDuration>,
    /// When the limiter is back to its full limit if nothing else arrives (`X-RateLimit-Reset`).
    pub reset_at: SimTime,
    /// How long an admitted request waits before it is released; zero except for the queue form
    /// of the leaky bucket, which shapes traffic instead of refusing it.
    pub delay: SimDuration,
}

impl RateDecision {
    /// True when the request is admitted.
    pub fn allowed(&self) -> bool {
        self.outcome == RateOutcome::Admit
    }

    /// `retry_after` rounded up to whole seconds, the unit of the HTTP `Retry-After` header.
    pub fn retry_after_secs_ceil(&self) -> Option<u64> {
        self.retry_after
            .map(|d| d.as_nanos().div_ceil(1_000_000_000))
    }

    pub(crate) fn admit(limit: u64, remaining: u64, reset_at: SimTime) -> Self {
        RateDecision {
            outcome: RateOutcome::Admit,
            limit,
            remaining,
            retry_after: None,
            reset_at,
            delay: SimDuration::ZERO,
        }
    }

    pub(crate) fn exceeded(
        limit: u64,
        remaining: u64,
        retry_after: SimDuration,
        reset_at: SimTime,
    ) -> Self {
        RateDecision {
            outcome: RateOutcome::Reject(RateRejection::LimitExceeded),
            limit,
            remaining,
            retry_after: Some(retry_after),
            reset_at,
            delay: SimDuration::ZERO,
        }
    }

    pub(crate) fn too_costly(cost: Cost, limit: u64, remaining: u64, reset_at: SimTime) -> Self {
        RateDecision {
            outcome: RateOutcome::Reject(RateRejection::CostAboveCapacity {
                cost: cost.units(),
                capacity: limit,
            }),
            limit,
            remaining,
            retry_after: None,
            reset_at,
            delay: SimDuration::ZERO,
        }
    }
}

/// The interface every rate limiter offers.
///
/// `peek` decides without charging; `acquire` decides and charges on admit. The pair is what a
/// composite limiter needs: it peeks every layer and charges them only if all admit, so a
/// refusal in one layer never uses up another layer's limit.
///
/// Time that goes backwards (a `now` earlier than one already seen) is treated as the latest
/// time seen: it earns no credit and never panics.
pub trait RateLimiter {
    /// The decision `acquire` would make at `now`, without changing any state.
    fn peek(&self, now: SimTime, cost: Cost) -> RateDecision;

    /// Decide at `now`, and charge `cost` if admitted.
    fn acquire(&mut self, now: SimTime, cost: Cost) -> RateDecision;

    /// True when the limiter at `now` is in the same state as a fresh one, so forgetting it
    /// (as a keyed registry does with idle keys) changes no future decision.
    fn at_rest(&self, now: SimTime) -> bool;
}

/// Sanity checks shared by every decision: a helper for the machines' invariant asserts.
pub(crate) fn assert_decision(d: &RateDecision, now: SimTime) {
    assert!(d.remaining <= d.limit, "remaining above limit: {d:?}");
    assert!(d.reset_at >= now, "reset in the past: {d:?} at {now}");
    match d.outcome {
        RateOutcome::Admit => assert!(d.retry_after.is_none(), "admit with retry: {d:?}"),
        RateOutcome::Reject(RateRejection::LimitExceeded) => {
            // Only at the end of representable time (2^64 ns, about 584 years) can the retry
            // time not be later than now.
            assert!(
                d.retry_after
                    .is_some_and(|r| !r.is_zero() || d.reset_at == SimTime::MAX),
                "limit exceeded without a positive retry_after: {d:?}"
            )
        }
        RateOutcome::Reject(_) => assert!(d.retry_after.is_none(), "hopeless with retry: {d:?}"),
    }
}
