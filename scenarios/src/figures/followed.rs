//! [`Followed`]: what the world recorded of the one client request a run was asked to follow
//! (`resim why --request ID`), as plain data, and [`FailedExample`]: the first failed
//! requests of each report bucket, by reason, that `resim why` names as examples.
//!
//! A followed request is a list of [`Step`]s in the order they happened: every call made for
//! it (the client's, the downstream calls its attempts make, hedges, fan-out leaves), each
//! attempt's journey to a replica and back, and each caller's decision. The world records a
//! step only for the followed request and only when asked; the report reads the list and
//! says, in its words, what happened and why (`report::why::request`).

use super::Reason;
use sim_core::{SimDuration, SimTime};

/// The followed request's steps, and what the run says about the id that was asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Followed {
    /// The id asked for (`request #N` in a trace).
    pub request: u64,
    /// The steps, in the order they happened (empty when no request has this id).
    pub steps: Vec<Step>,
    /// Steps left out past the world's limit on one recording.
    pub steps_left_out: u64,
    /// Requests the clients offered.
    pub offered: u64,
    /// The smallest and largest request id of the run (absent when none was offered).
    pub ids: Option<(u64, u64)>,
    /// When the id is that of a downstream call, the request that call served.
    pub call_of: Option<u64>,
}

/// Who made a call of the followed request (calls and attempts by their ids and numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Maker {
    /// The client that offered the request.
    Client,
    /// The job of an attempt, as one of its downstream calls.
    Job(Attempt),
    /// A hedged call, as its racing attempt.
    Hedge(Attempt),
    /// A fan-out call (the `u64`), as one of its leaves.
    Leaf(u64),
    /// A distributed limiter deciding on the job of an attempt.
    Limiter(Attempt),
}

/// An attempt: its call's id and its number (1 for the first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    /// The call's id.
    pub call: u64,
    /// The attempt's number.
    pub attempt: u32,
}

/// How a job at its replica ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobEnd {
    /// Answered with this outcome (`None`: success).
    Answered(Option<Reason>),
    /// Its caller's cancellation reached it.
    Cancelled,
    /// Lost on the way, or with its replica in a crash.
    Lost,
}

/// What a caller decided after an attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The call has no retry policy.
    NoPolicy,
    /// Retry after this backoff.
    Retry(SimDuration),
    /// The failure is not one the policy retries.
    NotRetryable,
    /// The operation is not idempotent.
    NotIdempotent,
    /// All its attempts (this many) were made.
    AttemptsExhausted(u32),
    /// The server asked to wait this long, longer than the policy allows.
    RetryAfterTooLong(SimDuration),
    /// The next attempt could not finish before the call's deadline.
    Deadline,
    /// The retry budget refused the retry.
    BudgetExhausted,
}

impl Decision {
    /// Its name in JSON and in spans (`retry`, `attempts_exhausted`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Decision::NoPolicy => "no_retry_policy",
            Decision::Retry(_) => "retry",
            Decision::NotRetryable => "not_retryable",
            Decision::NotIdempotent => "not_idempotent",
            Decision::AttemptsExhausted(_) => "attempts_exhausted",
            Decision::RetryAfterTooLong(_) => "retry_after_too_long",
            Decision::Deadline => "deadline",
            Decision::BudgetExhausted => "budget_exhausted",
        }
    }
}

/// One thing that happened to the followed request: when, to which call, and what.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// When.
    pub at: SimTime,
    /// The id of the call it happened to.
    pub call: u64,
    /// What.
    pub what: What,
}

/// What happened in a [`Step`]. `attempt` is the attempt's number, 1 for the first.
#[derive(Debug, Clone, PartialEq)]
pub enum What {
    /// The call started, made by `maker` at call site `path` for service `target`; it fails
    /// at `deadline`.
    Call {
        /// Who made it.
        maker: Maker,
        /// Its call site's path (`clients.users.call`).
        path: String,
        /// The service it calls.
        target: String,
        /// When it fails with `deadline`, if it has a deadline.
        deadline: Option<SimTime>,
    },
    /// Attempt `attempt` left for replica `replica` of `service`; the caller waits for it
    /// until `timeout_at`.
    Sent {
        /// The attempt's number.
        attempt: u32,
        /// The service.
        service: String,
        /// The replica.
        replica: u32,
        /// When the caller stops waiting for it, if ever.
        timeout_at: Option<SimTime>,
    },
    /// Attempt `attempt` waits in its replica's queue behind `depth` jobs.
    Queued {
        /// The attempt's number.
        attempt: u32,
        /// Jobs waiting before it.
        depth: u64,
    },
    /// A worker started on attempt `attempt` after `waited` in the queue, while the workers
    /// took `taken` other jobs from it, `gone` of them for callers that had already given up.
    Started {
        /// The attempt's number.
        attempt: u32,
        /// Its wait in the queue.
        waited: SimDuration,
        /// Other jobs the workers took from the queue meanwhile.
        taken: u64,
        /// Of those, the ones whose callers had already given up.
        gone: u64,
    },
    /// The job of attempt `attempt` ended at its replica (`end`), after `worked` on a worker
    /// if it had one; `gone`: its caller had already given up.
    Ended {
        /// The attempt's number.
        attempt: u32,
        /// How it ended.
        end: JobEnd,
        /// Its time on a worker, if it had one.
        worked: Option<SimDuration>,
        /// Its caller had already given up.
        gone: bool,
    },
    /// The caller's attempt `attempt` ended with `outcome` (`None`: success; `sent`: it
    /// reached the network, otherwise a gate of the caller's refused it), and the caller
    /// decided `decision` (after a failure).
    Attempted {
        /// The attempt's number.
        attempt: u32,
        /// Its failure (`None`: success).
        outcome: Option<Reason>,
        /// It reached the network (otherwise a gate of the caller's refused it).
        sent: bool,
        /// The caller's decision after a failure.
        decision: Option<Decision>,
    },
    /// Its owner no longer needed the call (a hedge's race was won, its job was cancelled),
    /// which was dropped with its attempt.
    Cancelled,
    /// The call ended with `outcome` (`None`: success; `fell_back`: its fallback answered).
    Finished {
        /// Its failure (`None`: success).
        outcome: Option<Reason>,
        /// Its fallback answered for it.
        fell_back: bool,
    },
}

/// A client request that failed, for `resim why`'s examples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailedExample {
    /// The report bucket of its offer.
    pub bucket: usize,
    /// Why it failed.
    pub reason: Reason,
    /// Its id.
    pub request: u64,
}

/// The most examples kept per report bucket and reason.
pub const EXAMPLES_PER_BUCKET: usize = 2;

/// A client request that succeeded slowly: one of the slowest of its bucket, for the
/// explorer's samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlowExample {
    /// The report bucket of its offer.
    pub bucket: usize,
    /// Its id.
    pub request: u64,
    /// From its offer to its success.
    pub latency: SimDuration,
}

/// The slowest successes kept per report bucket.
pub const SLOW_PER_BUCKET: usize = 2;
