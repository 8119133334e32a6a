//! [`Shadow`]: run a limiter without enforcing it, to see what it would refuse.

use super::decision::{Cost, RateDecision, RateLimiter, RateOutcome};
use sim_core::SimTime;

/// Counts of what a shadowed limiter decided.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShadowStats {
    /// Decisions taken.
    pub decisions: u64,
    /// Decisions that the limiter would have refused (all were allowed).
    pub would_reject: u64,
}

/// Shadow mode: decide with the inner limiter, record the decision, allow the request.
///
/// The inner limiter is charged exactly as it would be when enforcing (only for requests it
/// would admit), so the recorded refusals are the ones enforcement would produce.
#[derive(Debug, Clone)]
pub struct Shadow<L> {
    inner: L,
    stats: ShadowStats,
}

impl<L: RateLimiter> Shadow<L> {
    /// Shadows `inner`.
    pub fn new(inner: L) -> Self {
        Shadow {
            inner,
            stats: ShadowStats::default(),
        }
    }

    /// Decide and record: returns (the enforced decision, always an admit; what the inner
    /// limiter decided).
    pub fn acquire_observed(&mut self, now: SimTime, cost: Cost) -> (RateDecision, RateDecision) {
        let observed = self.inner.acquire(now, cost);
        self.stats.decisions += 1;
        if !observed.allowed() {
            self.stats.would_reject += 1;
        }
        (allowing(observed), observed)
    }

    /// What has been recorded so far.
    pub fn stats(&self) -> ShadowStats {
        self.stats
    }

    /// The shadowed limiter.
    pub fn inner(&self) -> &L {
        &self.inner
    }
}

fn allowing(mut d: RateDecision) -> RateDecision {
    d.outcome = RateOutcome::Admit;
    d.retry_after = None;
    d
}

impl<L: RateLimiter> RateLimiter for Shadow<L> {
    fn peek(&self, now: SimTime, cost: Cost) -> RateDecision {
        allowing(self.inner.peek(now, cost))
    }

    fn acquire(&mut self, now: SimTime, cost: Cost) -> RateDecision {
        self.acquire_observed(now, cost).0
    }

    fn at_rest(&self, now: SimTime) -> bool {
        self.inner.at_rest(now)
    }
}
