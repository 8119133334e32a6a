//! [`Figures`]: what a run hands over when it ends, as plain data — per client, per service,
//! per call site (with its breakers), per network link, and per report bucket.
//!
//! This is the one boundary between the simulated world and everything that reads a run: the
//! world fills these types and drops its state; [`crate::report::Report`] is built from a
//! scenario, the run's metadata and the figures, and never sees the world. Nothing here holds
//! a handle into the simulation, so the figures of a finished run can be kept, compared and
//! sent across threads.
//!
//! **Layer rule:** this file stands between the world and the report: it uses nothing of the
//! crate but the format, and neither it nor the report names the world.
//!
//! Attribution rule: every outcome of a client request is counted in the report bucket in
//! which the request was *offered*, so a bucket's successes never exceed its offered
//! requests, and a bucket's latency is the latency of the requests sent during it. What
//! completed during a bucket, whenever it was offered, is counted apart (`completed_ok`),
//! which is what goodput per second over time means.
//!
//! Memory: a client's figures are a latency histogram (compact, two significant digits grown
//! to the largest latency seen, when a scenario has more than 64 clients) and five counters
//! per bucket; a service's are counters, two histograms, three gauges and its refusals by
//! reason per bucket; a call site's are counters and four counts per bucket (per replica of
//! the calling service while running). Nothing grows with the number of requests.

mod followed;
mod limits;
pub mod sampling;

pub use followed::{
    Attempt, Decision, EXAMPLES_PER_BUCKET, FailedExample, Followed, JobEnd, Maker,
    SLOW_PER_BUCKET, SlowExample, Step, What,
};
pub use limits::LimiterFigures;

use crate::format::grpc_status::GrpcCode;
use patterns::breaker::StateKind;
use sim_core::metrics::{GaugeBucket, LatencyHistogram};
use sim_core::{SimDuration, SimTime};
use sim_net::LinkReport;

/// Why a request, call or attempt failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// The caller stopped waiting for the attempt.
    Timeout,
    /// No time was left before the call's deadline.
    Deadline,
    /// The replica's queue was full.
    QueueFull,
    /// A service's rate limiter rejected it.
    RateLimited,
    /// A service's concurrency limit rejected it.
    ConcurrencyLimited,
    /// A shedder (CoDel queue or PID) dropped it.
    Shed,
    /// The service failed it (an error-rate fault).
    Error,
    /// The replica was down (crashed or starting).
    Unavailable,
    /// A downstream call of the service failed.
    Dependency,
    /// The caller's circuit breaker was open.
    BreakerOpen,
    /// The caller's bulkhead was full.
    BulkheadFull,
    /// The caller's own rate limiter held it back.
    ClientLimited,
    /// Its idempotency key belongs to an attempt still running (409).
    Conflict,
    /// An optimistic write found its row changed since the attempt read it (409).
    VersionConflict,
    /// The service answered with a client error (4xx other than 409 and 429: a
    /// `ClientErrorRate` fault), which no retry policy retries.
    ClientError,
    /// No connection of the caller's pool became free within its `checkout_timeout`.
    PoolTimeout,
    /// The target refused a new connection: it was at its `max_connections`.
    ConnectionRefused,
    /// A row's lock did not come within the store's `wait_timeout` (or its queue was full).
    LockTimeout,
}

/// Every reason, in report order.
pub const REASONS: [Reason; 18] = [
    Reason::Timeout,
    Reason::Deadline,
    Reason::QueueFull,
    Reason::RateLimited,
    Reason::ConcurrencyLimited,
    Reason::Shed,
    Reason::Error,
    Reason::Unavailable,
    Reason::Dependency,
    Reason::BreakerOpen,
    Reason::BulkheadFull,
    Reason::ClientLimited,
    Reason::Conflict,
    Reason::VersionConflict,
    Reason::ClientError,
    Reason::PoolTimeout,
    Reason::ConnectionRefused,
    Reason::LockTimeout,
];

impl Reason {
    /// The snake_case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Reason::Timeout => "timeout",
            Reason::Deadline => "deadline",
            Reason::QueueFull => "queue_full",
            Reason::RateLimited => "rate_limited",
            Reason::ConcurrencyLimited => "concurrency_limited",
            Reason::Shed => "shed",
            Reason::Error => "error",
            Reason::Unavailable => "unavailable",
            Reason::Dependency => "dependency",
            Reason::BreakerOpen => "breaker_open",
            Reason::BulkheadFull => "bulkhead_full",
            Reason::ClientLimited => "client_limited",
            Reason::Conflict => "conflict",
            Reason::VersionConflict => "version_conflict",
            Reason::ClientError => "client_error",
            Reason::PoolTimeout => "pool_timeout",
            Reason::ConnectionRefused => "connection_refused",
            Reason::LockTimeout => "lock_timeout",
        }
    }
}

impl Reason {
    /// The HTTP status a caller sees for it, as the reference's table of failure reasons
    /// says (`None`: no answer, or a connection error). A local rejection has the status it
    /// stands for.
    pub fn http_status(self) -> Option<u16> {
        match self {
            Reason::Timeout
            | Reason::Deadline
            | Reason::Unavailable
            | Reason::PoolTimeout
            | Reason::ConnectionRefused => None,
            Reason::RateLimited | Reason::ClientLimited => Some(429),
            Reason::QueueFull
            | Reason::ConcurrencyLimited
            | Reason::Shed
            | Reason::BreakerOpen
            | Reason::BulkheadFull
            | Reason::LockTimeout => Some(503),
            Reason::Error => Some(500),
            Reason::Dependency => Some(502),
            Reason::Conflict | Reason::VersionConflict => Some(409),
            Reason::ClientError => Some(400),
        }
    }

    /// The gRPC status code a gRPC service would answer with, as the reference's table of
    /// failure reasons says.
    pub fn grpc_code(self) -> GrpcCode {
        match self {
            Reason::Timeout | Reason::Deadline => GrpcCode::DEADLINE_EXCEEDED,
            Reason::QueueFull
            | Reason::RateLimited
            | Reason::ConcurrencyLimited
            | Reason::BulkheadFull
            | Reason::ClientLimited => GrpcCode::RESOURCE_EXHAUSTED,
            Reason::Shed
            | Reason::Unavailable
            | Reason::Dependency
            | Reason::BreakerOpen
            | Reason::PoolTimeout
            | Reason::ConnectionRefused => GrpcCode::UNAVAILABLE,
            Reason::Error => GrpcCode::INTERNAL,
            Reason::Conflict | Reason::VersionConflict | Reason::LockTimeout => GrpcCode::ABORTED,
            Reason::ClientError => GrpcCode::INVALID_ARGUMENT,
        }
    }
}

impl Reason {
    /// What it means in the report's words, as a refusal or a failure of an attempt
    /// (`resim why --request`).
    pub fn words(self) -> &'static str {
        match self {
            Reason::Timeout => "timed out",
            Reason::Deadline => "out of time before its deadline",
            Reason::QueueFull => "refused: queue full",
            Reason::RateLimited => "refused by the rate limiter",
            Reason::ConcurrencyLimited => "refused by the concurrency limit",
            Reason::Shed => "shed by the shedder",
            Reason::Error => "failed with an error",
            Reason::Unavailable => "refused: replica down",
            Reason::Dependency => "failed: a downstream call failed",
            Reason::BreakerOpen => "refused: the caller's breaker was open",
            Reason::BulkheadFull => "refused: the caller's bulkhead was full",
            Reason::ClientLimited => "refused by the caller's rate limiter",
            Reason::Conflict => "refused: its idempotency key was in use (409)",
            Reason::VersionConflict => "failed: its row changed (version conflict)",
            Reason::ClientError => "failed with a client error (4xx)",
            Reason::PoolTimeout => "refused: no connection of the caller's pool came free",
            Reason::ConnectionRefused => "refused: the target was at its max connections",
            Reason::LockTimeout => "failed: its row's lock did not come in time",
        }
    }
}

/// A count per [`Reason`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReasonCounts([u64; REASONS.len()]);

impl ReasonCounts {
    /// Counts one more of `reason`.
    #[inline]
    pub fn add(&mut self, reason: Reason) {
        self.0[reason as usize] += 1;
    }

    /// The count of `reason`.
    pub fn get(&self, reason: Reason) -> u64 {
        self.0[reason as usize]
    }

    /// Adds every count of `other`.
    pub fn absorb(&mut self, other: &ReasonCounts) {
        for (total, n) in self.0.iter_mut().zip(other.0) {
            *total += n;
        }
    }

    /// The sum of all counts.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The reasons that occurred, in report order, with their counts.
    pub fn nonzero(&self) -> impl Iterator<Item = (Reason, u64)> + '_ {
        REASONS
            .iter()
            .zip(self.0)
            .filter(|(_, n)| *n > 0)
            .map(|(r, n)| (*r, n))
    }
}

/// Figures of one call site (a client's call or a service's downstream call), summed over the
/// replicas of the calling service. Serialised as they are (rejections by reason are
/// rendered separately, by name).
#[derive(Debug, Default, Clone, PartialEq, serde::Serialize)]
pub struct CallStats {
    /// Calls started.
    pub calls: u64,
    /// Attempts started (first attempts and retries).
    pub attempts: u64,
    /// Retries scheduled.
    pub retries: u64,
    /// Retries refused by the budget.
    pub budget_exhausted: u64,
    /// Calls or attempts that waited for a bulkhead slot.
    pub bulkhead_waits: u64,
    /// Calls or attempts that a shaping rate limiter (leaky bucket as a queue) held back
    /// before letting them go.
    pub shaped: u64,
    /// Hedges sent (racing calls beyond the first).
    pub hedges: u64,
    /// Hedged calls won by a hedge rather than the first call.
    pub hedge_wins: u64,
    /// Failed calls answered from the last good answer instead.
    pub fallback_cache: u64,
    /// Failed calls answered with the static default instead.
    pub fallback_static: u64,
    /// Attempts the caller stopped waiting for.
    pub timeouts: u64,
    /// Replies that arrived after the caller stopped waiting.
    pub late_replies: u64,
    /// Calls or attempts rejected by a gate of the stack, per reason.
    #[serde(skip)]
    pub rejected: ReasonCounts,
    /// Calls that succeeded.
    pub successes: u64,
    /// Calls that failed.
    pub failures: u64,
}

impl CallStats {
    /// Adds the figures of another instance of the same call site (another replica's).
    pub fn absorb(&mut self, other: &CallStats) {
        let CallStats {
            calls,
            attempts,
            retries,
            budget_exhausted,
            bulkhead_waits,
            shaped,
            hedges,
            hedge_wins,
            fallback_cache,
            fallback_static,
            timeouts,
            late_replies,
            rejected,
            successes,
            failures,
        } = other;
        self.calls += calls;
        self.attempts += attempts;
        self.retries += retries;
        self.budget_exhausted += budget_exhausted;
        self.bulkhead_waits += bulkhead_waits;
        self.shaped += shaped;
        self.hedges += hedges;
        self.hedge_wins += hedge_wins;
        self.fallback_cache += fallback_cache;
        self.fallback_static += fallback_static;
        self.timeouts += timeouts;
        self.late_replies += late_replies;
        self.rejected.absorb(rejected);
        self.successes += successes;
        self.failures += failures;
    }
}

/// One report bucket of a client, by the bucket in which each request was offered.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ClientBucket {
    /// Requests offered in the bucket.
    pub offered: u64,
    /// Of those, the ones that succeeded (whenever they finished).
    pub successes: u64,
    /// Of those, the ones that failed (whenever they finished).
    pub failures: u64,
    /// Sum of the successes' latencies, in nanoseconds.
    pub latency_sum_ns: u64,
    /// Requests that succeeded during the bucket, whenever they were offered.
    pub completed_ok: u64,
}

/// Figures of one client.
#[derive(Debug, Clone)]
pub struct ClientFigures {
    /// Its name.
    pub name: String,
    /// Failed requests per reason.
    pub failed: ReasonCounts,
    /// Latency of its successful requests (three significant digits in a scenario of up to
    /// 64 clients, two beyond).
    pub latency: LatencyHistogram,
    /// One entry per report bucket, by the bucket of the request's offer (see the module
    /// docs); may be shorter than the run (missing buckets are all zero).
    pub buckets: Vec<ClientBucket>,
    /// Per request class, when the client declares classes (empty otherwise).
    pub classes: Vec<ClassFigures>,
    /// A one-shot population's makespan: from the start of the run to the end of its last
    /// request, once every user's request has ended (`None` otherwise, and for other loads).
    pub makespan: Option<SimDuration>,
}

impl ClientFigures {
    /// Requests offered in total.
    pub fn offered(&self) -> u64 {
        self.buckets.iter().map(|b| b.offered).sum()
    }

    /// Requests that succeeded in total.
    pub fn successes(&self) -> u64 {
        self.buckets.iter().map(|b| b.successes).sum()
    }

    /// Requests that failed in total.
    pub fn failures(&self) -> u64 {
        self.buckets.iter().map(|b| b.failures).sum()
    }

    /// Bucket `i` (all zero past the last one recorded).
    pub fn bucket(&self, i: usize) -> ClientBucket {
        self.buckets.get(i).copied().unwrap_or_default()
    }
}

/// Counters of one service, over all its replicas.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ServiceCounts {
    /// Attempts that reached a replica.
    pub arrivals: u64,
    /// Attempts that found every worker busy and waited in the queue.
    pub queued: u64,
    /// Jobs that finished successfully.
    pub ok: u64,
    /// Rejections and failures at the service, per reason.
    pub failed: ReasonCounts,
    /// Jobs dropped at dequeue because their caller's deadline had passed.
    pub dropped_expired: u64,
    /// Jobs stopped by a propagated cancellation.
    pub cancelled: u64,
    /// Jobs that held a worker although their caller had given up.
    pub wasted_jobs: u64,
    /// Worker time held by those jobs.
    pub wasted_ns: u64,
    /// Worker time held in total.
    pub busy_ns: u64,
    /// Cache hits.
    pub cache_hits: u64,
    /// Cache misses that waited for another request's fetch of the same key.
    pub coalesced: u64,
    /// Attempts whose work started although an earlier attempt of the same call already ran
    /// (a non-deduplicated repeat of the operation).
    pub duplicate_executions: u64,
    /// Attempts answered from the idempotency store without running.
    pub replayed: u64,
    /// Attempts a shaping rate limiter (leaky bucket as a queue) delayed before admission.
    pub shaped: u64,
    /// Replica ejections by outlier detection.
    pub ejections: u64,
    /// Crashes.
    pub crashes: u64,
    /// Times active health checks took a replica out of rotation.
    pub marked_unhealthy: u64,
    /// Messages to or from the service lost in the network.
    pub messages_lost: u64,
    /// Requests its shadow-mode rate limits would have refused (all were admitted).
    pub shadow_refusals: u64,
}

/// One report bucket of a service.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct ServiceBucket {
    /// Attempts arriving.
    pub arrivals: u64,
    /// Attempts answered with success.
    pub ok: u64,
    /// Queued jobs summed over the replicas (time-weighted mean and maximum).
    pub queue: GaugeBucket,
    /// The longest queue of one replica at any instant of the bucket.
    pub queue_replica_max: u64,
    /// Busy workers over the replicas (time-weighted mean and maximum).
    pub busy: GaugeBucket,
    /// Workers of the replicas that are up, under any capacity drop (time-weighted mean and
    /// maximum): what `busy` can reach.
    pub capacity: GaugeBucket,
    /// Attempts the service refused or failed, per reason, by the bucket of their answer.
    pub failed: ReasonCounts,
}

/// Figures of one service.
#[derive(Debug, Clone)]
pub struct ServiceFigures {
    /// Its name.
    pub name: String,
    /// Replicas.
    pub replicas: u32,
    /// Workers per replica.
    pub workers: u32,
    /// Its counters.
    pub counts: ServiceCounts,
    /// Time in queue of every attempt that started work (zero for those that found a free
    /// worker), two significant digits.
    pub wait: LatencyHistogram,
    /// The work time given to every job that started (after slowdowns, growth with load and
    /// cold starts), two significant digits.
    pub work: LatencyHistogram,
    /// The highest drop probability its PID shedder reached (0 without one).
    pub pid_drop_ratio_max: f64,
    /// One entry per report bucket, from zero to the end of the run.
    pub buckets: Vec<ServiceBucket>,
    /// Its concurrency limit and PID shedder over time, if it has either.
    pub limiters: Option<Box<LimiterFigures>>,
    /// Its keyed store's figures, if it has a store.
    pub store: Option<StoreFigures>,
    /// Its cache's expiring entries, if the cache has a `ttl`.
    pub refresh: Option<RefreshFigures>,
    /// Its blast radius, if it is isolated or a `Poison` fault aims at it.
    pub blast: Option<BlastFigures>,
    /// Its replicas in rotation over time and the scaler's and deploys' actions, if it
    /// autoscales, cold-starts or is deployed.
    pub scaling: Option<ScalingFigures>,
    /// Its pauses, zone failures and liveness restarts, if a pause aims at it, it has
    /// liveness probes, or it spreads over zones in a scenario with a zone failure.
    pub capacity: Option<CapacityFigures>,
    /// Its connections from callers' pools, if some pool calls it or it sets
    /// `max_connections`.
    pub connections: Option<ConnectionFigures>,
}

/// The blast radius at a service: how many caller units (tenant keys) lost their replicas
/// ([`crate::format::schema::isolation`]).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct BlastFigures {
    /// `none`, `cells` or `shuffle_sharding`.
    pub isolation: &'static str,
    /// Caller units: the scenario's tenant keys.
    pub units: u64,
    /// Replicas each unit may use (all of them without isolation).
    pub replicas_per_unit: u32,
    /// Units whose every replica was down at the same instant at least once.
    pub units_lost_all: u64,
    /// Units that lost part of their replicas at once, never all.
    pub units_lost_some: u64,
    /// Replica crashes caused by poison requests.
    pub poison_crashes: u64,
    /// Per report bucket, the most units that had no replica up at once.
    pub units_down_max: Vec<u64>,
}

/// Replicas joining and leaving rotation ([`crate::format::schema::scaling`]).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ScalingFigures {
    /// Replicas in rotation, per report bucket (time-weighted).
    pub replicas: Vec<GaugeBucket>,
    /// The fewest replicas in rotation at any instant.
    pub replicas_min: u32,
    /// The most replicas in rotation at any instant.
    pub replicas_max: u32,
    /// Scale-out decisions.
    pub scale_outs: u64,
    /// Scale-in decisions.
    pub scale_ins: u64,
    /// Replicas the scaler started.
    pub replicas_added: u64,
    /// Replicas the scaler took out of rotation.
    pub replicas_removed: u64,
    /// Replicas a deploy restarted.
    pub deploy_restarts: u64,
    /// Jobs still held by a replica when its drain ended (lost, their callers see a
    /// connection error).
    pub lost_at_stop: u64,
    /// Work started on a replica still warming up (under its cold start's multiplier).
    pub cold_jobs: u64,
}

/// Capacity events at a service ([`crate::format::schema::capacity`]): pauses, zone failures, liveness
/// probes.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CapacityFigures {
    /// Whether the service has liveness probes.
    pub liveness: bool,
    /// Replica pauses (a pause of three replicas counts three).
    pub pauses: u64,
    /// Time its replicas spent paused, summed over the replicas, in nanoseconds.
    pub paused_ns: u64,
    /// Replicas a zone failure took down.
    pub zone_downs: u64,
    /// Liveness probes sent.
    pub probes: u64,
    /// Liveness probes not answered within their timeout.
    pub probe_failures: u64,
    /// Replicas restarted by their liveness probes.
    pub liveness_restarts: u64,
    /// Liveness restarts per report bucket (shorter than the run when the last buckets
    /// have none).
    pub restarts_per_bucket: Vec<u64>,
}

/// The figures of a cache with a `ttl` (and perhaps XFetch).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RefreshFigures {
    /// Hits that found their entry expired and fetched it again.
    pub expired_misses: u64,
    /// Hits on a live entry that XFetch sent to refetch it early.
    pub early_refreshes: u64,
    /// Refetches that succeeded and made their entry fresh.
    pub refreshes: u64,
}

/// The figures of a service's keyed store (optimistic concurrency).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct StoreFigures {
    /// Rows in the store.
    pub rows: u32,
    /// Reads (attempts that started work).
    pub reads: u64,
    /// Writes that committed.
    pub commits: u64,
    /// Writes refused because the row changed since their read (`version_conflict`).
    pub conflicts: u64,
    /// Commits to the most written row (its version at the end).
    pub hottest_row_commits: u64,
    /// Its locks, if its op is `Locked`.
    pub locks: Option<LockFigures>,
}

/// The row locks of a store whose op is `Locked`.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct LockFigures {
    /// Locks taken.
    pub acquired: u64,
    /// Of those, the ones that waited for another attempt's lock.
    pub waits: u64,
    /// The total time attempts waited for locks (those that got them).
    pub wait_total: SimDuration,
    /// The 99th percentile of the wait for a lock, over the locks taken (zero for those
    /// taken at once); `None` when none was.
    pub wait_p99: Option<SimDuration>,
    /// Waits that ended with `lock_timeout` (full queues included).
    pub timeouts: u64,
    /// Of those, the attempts that found the row's queue full.
    pub queue_full: u64,
    /// The most attempts waiting for one row's lock at once.
    pub queue_max_seen: u32,
}

/// A breaker's change of state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerTransition {
    /// When.
    pub at: SimTime,
    /// From state.
    pub from: StateKind,
    /// To state.
    pub to: StateKind,
}

/// One breaker of a call site.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakerFigures {
    /// The replica of the calling service that holds it (`None` for a client's).
    pub replica: Option<u32>,
    /// State at the end.
    pub state: StateKind,
    /// Transitions in total (the list below may be capped).
    pub transitions_total: u64,
    /// The transitions the breaker kept, oldest first.
    pub transitions: Vec<BreakerTransition>,
}

/// One report bucket of a call site, by the bucket in which each thing happened.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SiteBucket {
    /// Attempts started (first attempts, retries and hedges).
    pub attempts: u64,
    /// Retries scheduled.
    pub retries: u64,
    /// Retries refused by the budget.
    pub budget_exhausted: u64,
    /// Attempts the caller stopped waiting for.
    pub timeouts: u64,
    /// The longest adaptive timeout given to an attempt sent in it, in nanoseconds (0: none
    /// sent, or no `AdaptiveTimeout` layer).
    pub timeout_ns_max: u64,
}

impl SiteBucket {
    /// Adds the counts of another instance of the same call site.
    pub fn absorb(&mut self, other: &SiteBucket) {
        self.attempts += other.attempts;
        self.retries += other.retries;
        self.budget_exhausted += other.budget_exhausted;
        self.timeouts += other.timeouts;
        self.timeout_ns_max = self.timeout_ns_max.max(other.timeout_ns_max);
    }
}

/// What a call site's `Pace` layer did, summed over the instances of the call site.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PaceFigures {
    /// Calls held back until the target's quota reset.
    pub held: u64,
    /// Their time held, in nanoseconds.
    pub held_ns: u64,
    /// Replies that said the quota was used up (`remaining` 0).
    pub exhausted_replies: u64,
    /// Of those, the ones whose reset was beyond `hold_max` (not waited for).
    pub resets_too_far: u64,
}

impl PaceFigures {
    /// Adds the figures of another instance of the same call site.
    pub fn absorb(&mut self, other: &PaceFigures) {
        self.held += other.held;
        self.held_ns += other.held_ns;
        self.exhausted_replies += other.exhausted_replies;
        self.resets_too_far += other.resets_too_far;
    }
}

/// A call site's adaptive timeout, over the instances of the call site.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct AdaptiveTimeoutFigures {
    /// The shortest timeout it reached, in nanoseconds.
    pub timeout_ns_min: u64,
    /// The longest.
    pub timeout_ns_max: u64,
    /// The timeout at the end of the run (the longest over the instances).
    pub timeout_ns_last: u64,
    /// Attempt latencies it learnt from.
    pub observed: u64,
}

impl AdaptiveTimeoutFigures {
    /// Adds the figures of another instance of the same call site.
    pub fn absorb(&mut self, other: &AdaptiveTimeoutFigures) {
        self.timeout_ns_min = self.timeout_ns_min.min(other.timeout_ns_min);
        self.timeout_ns_max = self.timeout_ns_max.max(other.timeout_ns_max);
        self.timeout_ns_last = self.timeout_ns_last.max(other.timeout_ns_last);
        self.observed += other.observed;
    }
}

/// Figures of one call site.
#[derive(Debug, Clone, PartialEq)]
pub struct CallSiteFigures {
    /// Where it is in the file (`clients.web.call`, `services.api.calls[0]`).
    pub path: String,
    /// The caller's name (a client or a service).
    pub caller: String,
    /// The target service's name.
    pub target: String,
    /// Whether the caller is a client (the call sites of clients make the offered requests).
    pub from_client: bool,
    /// Its counters, summed over the replicas of the calling service.
    pub counts: CallStats,
    /// Its breakers, outermost first, one set per replica of the calling service.
    pub breakers: Vec<BreakerFigures>,
    /// One entry per report bucket, summed over the replicas of the calling service; may be
    /// shorter than the run (missing buckets are all zero).
    pub buckets: Vec<SiteBucket>,
    /// Its `Pace` layer's figures, if it has one.
    pub pace: Option<PaceFigures>,
    /// Its `AdaptiveTimeout` layer's figures, if it has one.
    pub adaptive_timeout: Option<AdaptiveTimeoutFigures>,
    /// Its connection pools' figures, if the call has a pool.
    pub pool: Option<PoolFigures>,
}

/// The connection pools of one call site (one per replica of the calling service), summed
/// ([`crate::format::schema::pool`]).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct PoolFigures {
    /// Connections per pool, at most.
    pub size: u32,
    /// Pools: replicas of the calling service.
    pub pools: u32,
    /// Attempts that asked for a connection.
    pub checkouts: u64,
    /// Of those, the ones that found no idle connection and waited.
    pub waits: u64,
    /// The 99th percentile of the time to get a connection, over the checkouts that got one
    /// (zero for those that found one idle); `None` when none did.
    pub wait_p99: Option<SimDuration>,
    /// Waits that ended with `pool_timeout`.
    pub checkout_timeouts: u64,
    /// Connections opened (accepted by the target).
    pub opened: u64,
    /// Opens the target refused (it was at its `max_connections`).
    pub refused_opens: u64,
    /// Connections closed after `idle_timeout`.
    pub closed_idle: u64,
    /// The most connections open (or opening) at once, over the site's pools together.
    pub connections_open_max: u32,
    /// The most connections one pool held or was opening at once (never above `size`).
    pub pool_held_max: u32,
    /// Per report bucket, the most connections open at once over the site's pools.
    pub open_by_bucket: Vec<u32>,
}

/// The connections a service held open for the pools toward it ([`crate::format::schema::pool`]).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ConnectionFigures {
    /// Its limit, if it has one.
    pub max_connections: Option<u32>,
    /// The most connections open (or opening) at once, over every pool toward it.
    pub open_max: u32,
    /// Opens it refused for being at its limit.
    pub refused: u64,
    /// Per report bucket, the most connections open at once.
    pub open_by_bucket: Vec<u32>,
}

/// One report bucket over all clients.
#[derive(Debug, Clone)]
pub struct RunBucket {
    /// Latencies of the successes among the requests offered in the bucket, within 1% (two
    /// significant digits), in a histogram that grows with the largest of them.
    pub latency: LatencyHistogram,
    /// The longest of them, in nanoseconds (0 without successes).
    pub latency_max_ns: u64,
}

impl Default for RunBucket {
    fn default() -> Self {
        RunBucket {
            latency: LatencyHistogram::compact(),
            latency_max_ns: 0,
        }
    }
}

impl RunBucket {
    /// Counts the latency of one success.
    #[inline]
    pub fn record(&mut self, latency: SimDuration) {
        self.latency.record(latency);
        self.latency_max_ns = self.latency_max_ns.max(latency.as_nanos());
    }
}

/// Everything a finished run measured.
#[derive(Debug, Clone)]
pub struct Figures {
    /// Where the figures end: the end of the run, or the time limit.
    pub end: SimTime,
    /// The report bucket width.
    pub bucket: SimDuration,
    /// The width of every figure per bucket but the clients' counts (the services', call
    /// sites', limiters', blast radius', pools' and `buckets`): the report bucket, or
    /// [`SimDuration::MAX`] (one bucket for the whole run) when the run kept only its
    /// clients' series (`Series::Clients`); `buckets` is empty then.
    pub series_bucket: SimDuration,
    /// Latency of every successful client request: the clients' histograms merged.
    pub latency: LatencyHistogram,
    /// The clients, in name order.
    pub clients: Vec<ClientFigures>,
    /// The services, in name order.
    pub services: Vec<ServiceFigures>,
    /// The call sites: the clients' first, then each service's in order.
    pub call_sites: Vec<CallSiteFigures>,
    /// One entry per report bucket, over all clients (may be shorter than the run).
    pub buckets: Vec<RunBucket>,
    /// Per network link that carried something.
    pub links: Vec<LinkReport>,
    /// Network copies ignored because they duplicated a message already handled.
    pub duplicates_ignored: u64,
    /// Client requests still waiting for their outcome when the run stopped.
    pub requests_in_flight: u64,
    /// The events of the trace window, one line each, if one was asked for.
    pub trace: Vec<String>,
    /// Events of the window left out beyond the trace's line limit.
    pub trace_left_out: u64,
    /// Per distributed rate limiter, in service order.
    pub distributed: Vec<DistributedFigures>,
    /// The request the run followed, if it was asked to follow one.
    pub followed: Option<Followed>,
    /// Every request the run followed (the one asked for alone and the others), by id.
    pub followed_requests: Vec<Followed>,
    /// The first failed requests of each bucket by reason, if they were asked for, in the
    /// order they failed.
    pub failed_examples: Vec<FailedExample>,
    /// The slowest successes of each bucket, when examples were asked for.
    pub slow_examples: Vec<SlowExample>,
}

/// The figures of one distributed limiter (the world's `distributed` module fills them).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct DistributedFigures {
    /// Its path, `services.NAME.admission[i]`.
    pub path: String,
    /// Where its state lives: `local`, `central_atomic`, `central_racy`, `lease`.
    pub state: String,
    /// Decisions asked of it.
    pub decisions: u64,
    /// Store calls sent (scripts, reads, writes, leases; not those an open breaker refused).
    pub round_trips: u64,
    /// Decisions that admitted (fail-open ones included).
    pub admitted: u64,
    /// Decisions that refused (fail-closed and cached ones included).
    pub refused: u64,
    /// Refusals made by the local decision cache, without the store.
    pub refused_cached: u64,
    /// Admissions the configured limit, kept exactly at the true time, would have refused.
    pub over_admitted: u64,
    /// Store calls that failed (timeout, open breaker, the store's refusal or error).
    pub store_failures: u64,
    /// Decisions made by `on_store_failure: Open` (admitted without the store).
    pub failed_open: u64,
    /// Decisions made by `on_store_failure: Closed` (refused without the store).
    pub failed_closed: u64,
    /// Tokens the store granted in leases.
    pub lease_tokens: u64,
    /// Per report bucket: admissions charged in it (by the time they were committed).
    pub charged_by_bucket: Vec<u64>,
    /// Per report bucket: over-admissions among them.
    pub over_admitted_by_bucket: Vec<u64>,
}

impl Figures {
    /// The number of report buckets from zero to the end (at least one).
    pub fn bucket_count(&self) -> usize {
        (self.end.as_nanos().div_ceil(self.bucket.as_nanos()) as usize).max(1)
    }

    /// Whether the run kept every series per bucket, not only its clients'.
    pub fn series_kept(&self) -> bool {
        self.series_bucket == self.bucket
    }
}

/// What a report says about the run itself, beside its figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunMeta {
    /// The file the scenario came from (or the library name it was run by).
    pub file: String,
    /// The seed of the run.
    pub seed: u64,
    /// The run digest.
    pub digest: u64,
    /// Events executed.
    pub events: u64,
    /// Why the run stopped.
    pub stop: sim_core::StopReason,
    /// What reached a limit, in the user's words, when that is more than the reason says
    /// (the figure that reached the memory limit).
    pub stop_detail: Option<String>,
    /// The command-line words after `--seed N` that replay the run (` --duration 30s`),
    /// empty when the file's own settings ran.
    pub replay_flags: String,
}

/// The requests of one class of a client, or of one tenant of a class: what was offered, what
/// succeeded, why the rest failed, and the latency of the successes.
#[derive(Debug, Clone)]
pub struct TrafficFigures {
    /// Requests offered.
    pub offered: u64,
    /// Requests that succeeded.
    pub successes: u64,
    /// Failed requests per reason.
    pub failed: ReasonCounts,
    /// Latency of the successes (two significant digits).
    pub latency: LatencyHistogram,
}

impl Default for TrafficFigures {
    fn default() -> Self {
        TrafficFigures {
            offered: 0,
            successes: 0,
            failed: ReasonCounts::default(),
            latency: LatencyHistogram::compact(),
        }
    }
}

/// Figures of one request class of a client (see [`crate::format::schema::traffic`]).
#[derive(Debug, Clone)]
pub struct ClassFigures {
    /// Its name.
    pub name: String,
    /// Its priority level (0 is the least important).
    pub priority: u8,
    /// Its cost in limiter tokens.
    pub cost: u32,
    /// Its requests.
    pub total: TrafficFigures,
    /// Its tenants, when it has some.
    pub tenants: Option<TenantFigures>,
    /// Per report bucket of offer: requests offered and successes (may be shorter than the
    /// run; missing buckets are all zero).
    pub buckets: Vec<ClassBucket>,
}

/// One report bucket of a class, by the bucket of the request's offer.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ClassBucket {
    /// Requests offered in it.
    pub offered: u64,
    /// Of those, the requests that succeeded.
    pub successes: u64,
}

/// The tenants of a class: the most popular ones one by one, the rest summed, so that a
/// class of a million keys reports a few lines and keeps a few histograms.
#[derive(Debug, Clone)]
pub struct TenantFigures {
    /// The first key; the key of rank i is `first + i`.
    pub first: u32,
    /// How many keys the class draws from.
    pub keys: u32,
    /// The keys of ranks 0 to `reported - 1`, one entry each.
    pub ranked: Vec<TrafficFigures>,
    /// Every other key, summed.
    pub others: TrafficFigures,
}
