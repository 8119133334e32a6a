//! Outcomes and the tables that read them: how a failure looks to a retry policy, to an
//! adaptive throttle and to a fallback chain. Every place that turns a [`Reason`] into
//! another vocabulary is here, so a new reason is one `match` arm in each table.

pub use crate::figures::{REASONS, Reason};
use patterns::fallback::PrimaryFailure;
use patterns::retry::Failure;
use sim_core::SimDuration;

/// The outcome of an attempt or a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It succeeded.
    Ok,
    /// It failed, and why.
    Fail(Reason),
}

impl Outcome {
    /// A small number for the digest and the trace: 0 for success, 1 + the reason otherwise.
    pub fn code(self) -> u64 {
        match self {
            Outcome::Ok => 0,
            Outcome::Fail(r) => 1 + r as u64,
        }
    }

    /// The name the trace prints.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Fail(r) => r.name(),
        }
    }
}

/// A refusal by a gate or a server: why, and when the refuser said to come back (a
/// limiter's `retry_after`, a breaker's remaining open time, a server's `Retry-After`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Why.
    pub reason: Reason,
    /// When to try again, if the refuser knows.
    pub retry_after: Option<SimDuration>,
}

/// How a failed attempt looks to a retry policy: HTTP-style statuses for what a server
/// answered (with its `Retry-After`, if it sent one), timeouts and connection errors for what
/// the network did, local rejections for what the caller's own gates refused to send (its
/// circuit breaker, bulkhead and rate limiter: the three reasons only a caller's gate gives).
pub fn failure_of(reason: Reason, retry_after: Option<SimDuration>) -> Failure {
    let status = |code| Failure::Status { code, retry_after };
    let local = |code| Failure::LocalRejection { code, retry_after };
    match reason {
        Reason::Timeout | Reason::Deadline => Failure::Timeout,
        Reason::Unavailable => Failure::ConnectionError,
        Reason::RateLimited => status(429),
        Reason::ClientLimited => local(429),
        Reason::BreakerOpen | Reason::BulkheadFull => local(503),
        Reason::QueueFull | Reason::ConcurrencyLimited | Reason::Shed => status(503),
        Reason::Error => status(500),
        Reason::Dependency => status(502),
        Reason::Conflict => status(409),
        Reason::VersionConflict => Failure::Conflict,
        Reason::ClientError => status(400),
        // A connection that could not be had looks like one that could not be made.
        Reason::PoolTimeout | Reason::ConnectionRefused => Failure::ConnectionError,
        // MySQL's lock wait timeout (1205) is an error the server answers; retried as one.
        Reason::LockTimeout => status(503),
    }
}

/// Whether the backend accepted a request, for adaptive throttling: it did unless it refused
/// it for overload or never answered.
pub fn accepted_by_backend(outcome: Outcome) -> bool {
    match outcome {
        Outcome::Ok => true,
        Outcome::Fail(r) => !matches!(
            r,
            Reason::Timeout
                | Reason::Deadline
                | Reason::Unavailable
                | Reason::QueueFull
                | Reason::RateLimited
                | Reason::ConcurrencyLimited
                | Reason::Shed
                | Reason::BreakerOpen
                | Reason::BulkheadFull
                | Reason::ClientLimited
                | Reason::PoolTimeout
                | Reason::ConnectionRefused
        ),
    }
}

/// How a failed call looks to a fallback chain.
pub fn primary_failure(reason: Reason) -> PrimaryFailure {
    match reason {
        Reason::Timeout | Reason::Deadline => PrimaryFailure::Timeout,
        Reason::BreakerOpen | Reason::BulkheadFull | Reason::ClientLimited => {
            PrimaryFailure::Rejected
        }
        _ => PrimaryFailure::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::REASONS;

    /// The status a retry policy sees is the one spans and the reference say.
    #[test]
    fn a_retry_policy_sees_the_status_of_the_reference() {
        for r in REASONS {
            let seen = match failure_of(r, None) {
                Failure::Status { code, .. } | Failure::LocalRejection { code, .. } => Some(code),
                Failure::Conflict => Some(409),
                Failure::Timeout | Failure::ConnectionError => None,
            };
            assert_eq!(seen, r.http_status(), "{}", r.name());
        }
    }
}
