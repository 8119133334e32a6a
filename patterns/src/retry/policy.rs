//! The retry machine.

use super::config::RetryConfig;
use crate::ConfigError;
use crate::backoff::{Backoff, BackoffState};
use crate::budget::{AttemptResult, RetryBudget};
use rand_core::Rng;
use sim_core::{SimDuration, SimTime};

/// Whether an operation may run twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Safety {
    /// Running it twice has the effect of running it once (GET, PUT, DELETE, reads).
    Idempotent,
    /// Not idempotent by itself, but it carries an idempotency key the server deduplicates.
    IdempotencyKey,
    /// Running it twice may do the work twice (a POST without a key): never retried.
    Unsafe,
}

/// Why an attempt failed, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// No answer within the per-attempt timeout.
    Timeout,
    /// The connection could not be made or was lost.
    ConnectionError,
    /// The server answered with an error status, possibly with a `Retry-After`.
    Status {
        /// The HTTP-style status code.
        code: u16,
        /// The server's `Retry-After`, if it sent one.
        retry_after: Option<SimDuration>,
    },
    /// An optimistic write found that the row changed since the attempt read it (a version
    /// conflict); another attempt reads the row again.
    Conflict,
    /// The caller's own limits (a bulkhead, a circuit breaker, a rate limiter) refused the
    /// attempt before it was sent. With `retry_on_local_rejection` it is retried as the
    /// status it stands for; without it, never.
    LocalRejection {
        /// The status it stands for: 503, or 429 for a rate limiter.
        code: u16,
        /// When the refuser said to come back (a breaker's remaining open time, a limiter's
        /// wait), if it knows.
        retry_after: Option<SimDuration>,
    },
}

/// Why the policy retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryReason {
    /// The attempt timed out.
    Timeout,
    /// The connection failed.
    ConnectionError,
    /// A transient status (5xx in `retry_on_status`, or 429) without Retry-After.
    TransientStatus {
        /// The status.
        code: u16,
    },
    /// A 429 or 503 whose Retry-After set (or lengthened) the delay.
    RetryAfter {
        /// The status.
        code: u16,
        /// What the server asked for.
        requested: SimDuration,
    },
    /// A version conflict, with `retry_on_conflict`.
    Conflict,
}

/// Why the policy gives up; the request ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GiveUpReason {
    /// The failure is not one the policy retries (a 4xx other than 429, a 501, ...).
    NotRetryable {
        /// The failure.
        failure: Failure,
    },
    /// The operation is not idempotent and carries no idempotency key.
    NotIdempotent,
    /// `max_attempts` attempts were made.
    AttemptsExhausted {
        /// Attempts made, counting the first.
        attempts: u32,
    },
    /// The server asked to wait longer than `retry_after_max`.
    RetryAfterTooLong {
        /// What the server asked for.
        requested: SimDuration,
    },
    /// The next attempt could not finish before the deadline.
    DeadlineExceeded {
        /// When the next attempt would have started.
        start_at: SimTime,
        /// The deadline.
        deadline: SimTime,
    },
    /// The retry budget refused.
    BudgetExhausted,
    /// The request had already ended (a bug in the caller, reported rather than panicking).
    Finished,
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryDecision {
    /// Send attempt number `attempt` (2 is the first retry) `after` from now.
    Retry {
        /// The wait before the next attempt.
        after: SimDuration,
        /// The number of the next attempt, counting the first as 1.
        attempt: u32,
        /// Why.
        reason: RetryReason,
    },
    /// Stop; the request fails with the last attempt's failure.
    GiveUp {
        /// Why.
        reason: GiveUpReason,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Attempting { attempt: u32 },
    Ended { succeeded: bool },
}

/// The per-request state of a retry policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryRequest {
    phase: Phase,
    deadline: Option<SimTime>,
    safety: Safety,
    backoff: BackoffState,
}

impl RetryRequest {
    /// The attempt in progress (1 for the first), or `None` once the request ended.
    pub fn attempt(&self) -> Option<u32> {
        match self.phase {
            Phase::Attempting { attempt } => Some(attempt),
            Phase::Ended { .. } => None,
        }
    }

    /// `Some(true)` after a success, `Some(false)` after giving up, `None` while running.
    pub fn outcome(&self) -> Option<bool> {
        match self.phase {
            Phase::Attempting { .. } => None,
            Phase::Ended { succeeded } => Some(succeeded),
        }
    }

    /// The overall deadline, if any.
    pub fn deadline(&self) -> Option<SimTime> {
        self.deadline
    }
}

/// A client's retry policy: the config, the backoff schedule and the budget.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    config: RetryConfig,
    backoff: Backoff,
    budget: RetryBudget,
}

impl RetryPolicy {
    /// A policy from its config; fails with the config's first invalid field.
    pub fn new(config: RetryConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let backoff = Backoff::new(config.backoff.clone()).map_err(|e| e.at("backoff"))?;
        let budget = match &config.budget {
            Some(b) => RetryBudget::new(b).map_err(|e| e.at("budget"))?,
            None => RetryBudget::unlimited(),
        };
        Ok(RetryPolicy {
            config,
            backoff,
            budget,
        })
    }

    /// The config.
    pub fn config(&self) -> &RetryConfig {
        &self.config
    }

    /// The budget, for reports, and for hedging that spends the same budget.
    pub fn budget(&self) -> &RetryBudget {
        &self.budget
    }

    /// The budget, mutably: hedging spends from it with `try_retry`.
    pub fn budget_mut(&mut self) -> &mut RetryBudget {
        &mut self.budget
    }

    /// A request starts now; its first attempt is about to be sent.
    pub fn begin(
        &mut self,
        now: SimTime,
        deadline: Option<SimTime>,
        safety: Safety,
    ) -> RetryRequest {
        self.budget.on_request(now);
        RetryRequest {
            phase: Phase::Attempting { attempt: 1 },
            deadline,
            safety,
            backoff: self.backoff.start(),
        }
    }

    /// The attempt in progress succeeded; the request ends.
    pub fn on_success(&mut self, now: SimTime, request: &mut RetryRequest) {
        if let Phase::Attempting { attempt } = request.phase {
            self.budget
                .on_attempt_end(now, AttemptResult::Success, attempt > 1);
            self.budget.on_request_end(now);
            request.phase = Phase::Ended { succeeded: true };
        }
    }

    /// The caller abandons the request (its own caller went away); the request ends.
    pub fn abandon(&mut self, now: SimTime, request: &mut RetryRequest) {
        if let Phase::Attempting { attempt } = request.phase {
            self.budget
                .on_attempt_end(now, AttemptResult::OtherFailure, attempt > 1);
            self.budget.on_request_end(now);
            request.phase = Phase::Ended { succeeded: false };
        }
    }

    /// Whether `failure` is one the policy retries, and why.
    pub fn classify(&self, failure: Failure) -> Option<RetryReason> {
        let c = &self.config;
        match failure {
            Failure::Timeout => c.retry_on_timeout.then_some(RetryReason::Timeout),
            Failure::ConnectionError => c
                .retry_on_connection_error
                .then_some(RetryReason::ConnectionError),
            Failure::Conflict => c.retry_on_conflict.then_some(RetryReason::Conflict),
            Failure::LocalRejection { code, retry_after } => {
                if !c.retry_on_local_rejection {
                    return None;
                }
                self.classify(Failure::Status { code, retry_after })
            }
            Failure::Status { code, retry_after } => {
                let transient =
                    (code == 429 && c.retry_on_throttled) || c.retry_on_status.contains(&code);
                if !transient {
                    return None;
                }
                // Only 429 and 503 define Retry-After as a hint for retries (RFC 9110).
                match retry_after {
                    Some(requested) if code == 429 || code == 503 => {
                        Some(RetryReason::RetryAfter { code, requested })
                    }
                    _ => Some(RetryReason::TransientStatus { code }),
                }
            }
        }
    }

    /// The attempt in progress failed: retry (after how long) or give up.
    pub fn on_failure<R: Rng + ?Sized>(
        &mut self,
        now: SimTime,
        request: &mut RetryRequest,
        failure: Failure,
        rng: &mut R,
    ) -> RetryDecision {
        let Phase::Attempting { attempt } = request.phase else {
            return RetryDecision::GiveUp {
                reason: GiveUpReason::Finished,
            };
        };
        let reason = self.classify(failure);
        let result = if reason.is_some() {
            AttemptResult::RetryableFailure
        } else {
            AttemptResult::OtherFailure
        };
        self.budget.on_attempt_end(now, result, attempt > 1);
        let decision = match self.decide(now, request, attempt, failure, reason, rng) {
            Ok(d) => d,
            Err(reason) => RetryDecision::GiveUp { reason },
        };
        match decision {
            RetryDecision::Retry { attempt: next, .. } => {
                request.phase = Phase::Attempting { attempt: next };
            }
            RetryDecision::GiveUp { .. } => {
                self.budget.on_request_end(now);
                request.phase = Phase::Ended { succeeded: false };
            }
        }
        if let Phase::Attempting { attempt } = request.phase {
            assert!(
                attempt <= self.config.max_attempts,
                "attempt {attempt} beyond max_attempts {}",
                self.config.max_attempts
            );
        }
        decision
    }

    fn decide<R: Rng + ?Sized>(
        &mut self,
        now: SimTime,
        request: &mut RetryRequest,
        attempt: u32,
        failure: Failure,
        reason: Option<RetryReason>,
        rng: &mut R,
    ) -> Result<RetryDecision, GiveUpReason> {
        let reason = reason.ok_or(GiveUpReason::NotRetryable { failure })?;
        if request.safety == Safety::Unsafe {
            return Err(GiveUpReason::NotIdempotent);
        }
        if attempt >= self.config.max_attempts {
            return Err(GiveUpReason::AttemptsExhausted { attempts: attempt });
        }
        let mut after = self.backoff.next(&mut request.backoff, rng);
        if let RetryReason::RetryAfter { requested, .. } = reason {
            if requested > self.config.retry_after_max {
                return Err(GiveUpReason::RetryAfterTooLong { requested });
            }
            after = after.max(requested);
        }
        if let Some(deadline) = request.deadline {
            let start_at = now.saturating_add(after);
            if start_at.saturating_add(self.config.attempt_duration_min) > deadline {
                return Err(GiveUpReason::DeadlineExceeded { start_at, deadline });
            }
        }
        // The budget is asked last, so that it is spent only on retries that happen.
        self.budget
            .try_retry(now)
            .map_err(|_| GiveUpReason::BudgetExhausted)?;
        Ok(RetryDecision::Retry {
            after,
            attempt: attempt + 1,
            reason,
        })
    }
}
