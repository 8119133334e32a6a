//! The report's types: plain, serialisable data, rendered by [`super::render`].

use super::ratio;
use crate::figures::CallStats;
use serde::Serialize;
use sim_net::LinkReport;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Writes a shared name as the string it is (serde's own impl for `Arc` needs its `rc`
/// feature, which every crate depending on serde would be rebuilt for).
fn shared_str<S: serde::Serializer>(name: &Arc<str>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(name)
}

/// Latency percentiles in milliseconds, of successful requests only: where nothing
/// succeeded there is no latency, and the report holds `None` (JSON `null`, "–" in text)
/// rather than a zero that would read as "instant".
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LatencyMs {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
    /// Mean.
    pub mean: f64,
}

/// Totals over every client.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    /// Requests the clients offered.
    pub offered: u64,
    /// Attempts the clients made (first attempts, retries and hedges), at their own call
    /// sites: the services' downstream calls are not counted here.
    pub attempts: u64,
    /// Client amplification, `attempts / offered`: how many tries one request costs its
    /// client. What each tier receives per offered request is its service's `load_factor`.
    pub amplification: f64,
    /// Requests that succeeded.
    pub successes: u64,
    /// Requests that failed.
    pub failures: u64,
    /// Requests still waiting for their outcome when the run stopped: offered = successes +
    /// failures + requests in flight.
    pub requests_in_flight: u64,
    /// Failed requests by reason (only reasons that occurred).
    pub failures_by_reason: BTreeMap<String, u64>,
    /// Successes per simulated second.
    pub goodput_per_s: f64,
    /// Offered requests per simulated second.
    pub offered_per_s: f64,
    /// Latency of successful requests as the clients saw it (`null` without successes).
    pub latency_ms: Option<LatencyMs>,
}

/// One client's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ClientReport {
    /// Its name.
    pub name: String,
    /// Requests offered.
    pub offered: u64,
    /// Requests that succeeded.
    pub successes: u64,
    /// Requests that failed.
    pub failures: u64,
    /// Failures by reason.
    pub failures_by_reason: BTreeMap<String, u64>,
    /// Successes per simulated second.
    pub goodput_per_s: f64,
    /// Latency of its successful requests (`null` without successes).
    pub latency_ms: Option<LatencyMs>,
    /// A one-shot population's makespan in milliseconds: from the start of the run until
    /// the last of its users' requests ended. Absent for other loads, and while some
    /// request had not ended when the run stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub makespan_ms: Option<f64>,
    /// Per request class, when it declares classes (absent otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<ClassReport>,
}

/// The requests of one class, or of one tenant of a class.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TrafficReport {
    /// Requests offered.
    pub offered: u64,
    /// Requests that succeeded.
    pub successes: u64,
    /// Requests that failed.
    pub failures: u64,
    /// Failures by reason (refusals among them: `rate_limited`, `shed`, ...).
    pub failures_by_reason: BTreeMap<String, u64>,
    /// Successes per simulated second.
    pub goodput_per_s: f64,
    /// The success ratio, `successes / offered` (`null` without requests).
    pub success_ratio: Option<f64>,
    /// Latency of its successful requests (`null` without successes).
    pub latency_ms: Option<LatencyMs>,
}

/// One tenant of a class, or the class's other tenants summed.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TenantReport {
    /// The tenant key, or `others` for the keys not reported one by one.
    pub tenant: String,
    /// How many keys the line stands for (1 for a tenant).
    pub keys: u32,
    /// Its requests.
    #[serde(flatten)]
    pub traffic: TrafficReport,
}

/// One request class of a client.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ClassReport {
    /// Its name.
    pub name: String,
    /// Its priority level (0 is the least important; `Critical` is 2).
    pub priority: u8,
    /// The tokens one of its requests takes from each rate limiter.
    pub cost: u32,
    /// Its requests.
    #[serde(flatten)]
    pub traffic: TrafficReport,
    /// Its most popular tenants one by one, then the others summed (absent without tenants).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<TenantReport>,
}

/// One service's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ServiceReport {
    /// Its name.
    pub name: String,
    /// Replicas.
    pub replicas: u32,
    /// Workers per replica.
    pub workers: u32,
    /// Load factor, `arrivals / offered`: attempts arriving at this service per request the
    /// clients offered (1 for a tier every request visits once; retries at any tier above
    /// it, hedges and fan-out raise it, caches and early failures lower it).
    pub load_factor: f64,
    /// Mean busy fraction of all workers.
    pub utilisation: f64,
    /// Jobs waiting in the queues, summed over the replicas: the time-weighted mean.
    pub queue_depth_total_mean: f64,
    /// The most jobs waiting at once, summed over the replicas.
    pub queue_depth_total_max: u64,
    /// Jobs waiting in one replica's queue: the summed mean divided by the replicas (those
    /// in rotation, time-weighted, when replicas join and leave it).
    pub queue_depth_replica_mean: f64,
    /// The longest queue of one replica at any instant.
    pub queue_depth_replica_max: u64,
    /// Attempts that found every worker busy and waited in the queue.
    pub queued: u64,
    /// The share of arrivals that waited in the queue, `queued / arrivals` (`null` without
    /// arrivals).
    pub waited_ratio: Option<f64>,
    /// Mean time in the queue of the attempts that started work, those that found a free
    /// worker counting zero (`null` when none started), in milliseconds: queueing theory's
    /// mean wait W_q.
    pub wait_ms_mean: Option<f64>,
    /// 99th percentile of the same (`null` when no attempt started work).
    pub wait_ms_p99: Option<f64>,
    /// Median service time (the `work` given to the jobs that started, after slowdowns,
    /// growth with load and cold starts), in milliseconds (`null` when none started).
    pub work_ms_p50: Option<f64>,
    /// 99th percentile of the same.
    pub work_ms_p99: Option<f64>,
    /// The median of the `work` distribution the file declares, in milliseconds (its
    /// quantile function, not a run's measure; `null` only in a report built from figures of a
    /// service the scenario does not have).
    pub declared_work_ms_p50: Option<f64>,
    /// The 99th percentile of the same.
    pub declared_work_ms_p99: Option<f64>,
    /// Mean busy workers over all replicas, time-weighted (a worker is busy while its
    /// request is in service or waits on its downstream calls; queued requests are not
    /// counted).
    pub busy_workers_mean: f64,
    /// Attempts that reached it.
    pub arrivals: u64,
    /// Attempts it answered with success.
    pub ok: u64,
    /// Attempts it rejected or failed, by reason.
    pub failed_by_reason: BTreeMap<String, u64>,
    /// Jobs dropped because their deadline had passed.
    pub dropped_expired: u64,
    /// Jobs stopped by cancellation.
    pub cancelled: u64,
    /// Jobs served for callers that had given up.
    pub wasted_jobs: u64,
    /// Worker seconds spent on them.
    pub wasted_work_s: f64,
    /// Cache hits.
    pub cache_hits: u64,
    /// Attempts that ran the operation again (no idempotency store deduplicated them).
    pub duplicate_executions: u64,
    /// Attempts answered from the idempotency store without running.
    pub replayed: u64,
    /// Attempts a shaping rate limiter (leaky bucket as a queue) delayed before admission.
    pub shaped: u64,
    /// Requests its shadow-mode rate limits would have refused, all admitted (absent when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub shadow_refusals: u64,
    /// Cache misses that waited for another request's fetch of the same key.
    pub coalesced: u64,
    /// Outlier ejections.
    pub ejections: u64,
    /// Times active health checks took a replica out of rotation.
    pub marked_unhealthy: u64,
    /// Replica crashes.
    pub crashes: u64,
    /// Messages lost on the way to or from it.
    pub messages_lost: u64,
    /// Highest drop probability of its PID shedder.
    pub pid_drop_ratio_max: f64,
    /// Its keyed store (absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreReport>,
    /// Its cache's expiring entries (absent without a cache `ttl`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_refresh: Option<RefreshReport>,
    /// Its blast radius: the caller units that lost their replicas (absent unless the
    /// service has an `isolation` or a `Poison` fault aims at it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blast_radius: Option<BlastReport>,
    /// Replicas joining and leaving rotation (absent unless it autoscales, cold-starts or
    /// is deployed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scaling: Option<ScalingReport>,
    /// Pauses, zone failures and liveness restarts (absent unless a pause aims at it, it has
    /// liveness probes, or it spreads over zones in a scenario with a zone failure).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_events: Option<CapacityEventsReport>,
    /// Connections its callers' pools held open to it (absent unless some pool calls it or
    /// it sets `max_connections`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections: Option<ConnectionsReport>,
}

/// Capacity events at a service ([`crate::format::schema::capacity`]).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CapacityEventsReport {
    /// Replica pauses (a pause of three replicas counts three).
    pub pauses: u64,
    /// Time its replicas spent paused, summed over the replicas, in seconds.
    pub paused_s: f64,
    /// Replicas a zone failure took down.
    pub zone_downs: u64,
    /// Liveness probes sent.
    pub liveness_probes: u64,
    /// Liveness probes not answered within their timeout.
    pub liveness_probe_failures: u64,
    /// Replicas restarted by their liveness probes.
    pub liveness_restarts: u64,
}

/// The connections a service held for the pools toward it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ConnectionsReport {
    /// Its limit (`null`: unlimited).
    pub max_connections: Option<u32>,
    /// The most connections open (or opening) at once, over every pool toward it.
    pub open_max: u32,
    /// Opens it refused for being at its limit.
    pub refused: u64,
}

/// A call site's connection pools, one per replica of the calling service, summed.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PoolReport {
    /// Connections per pool, at most.
    pub size: u32,
    /// Pools (replicas of the calling service).
    pub pools: u32,
    /// Attempts that asked for a connection.
    pub checkouts: u64,
    /// Of those, the ones that found none idle and waited.
    pub waits: u64,
    /// The 99th percentile of the time to get a connection, over the checkouts that got one
    /// (`null` when none did).
    pub wait_ms_p99: Option<f64>,
    /// Waits that failed with `pool_timeout`.
    pub checkout_timeouts: u64,
    /// Connections opened (accepted by the target).
    pub opened: u64,
    /// Opens the target refused (`connection_refused`).
    pub refused_opens: u64,
    /// Connections closed after their idle timeout.
    pub closed_idle: u64,
    /// The most connections open at once over the site's pools.
    pub connections_open_max: u32,
    /// The most connections one pool held or was opening at once (at most `size`).
    pub pool_held_max: u32,
}

/// The blast radius at a service: caller units (tenant keys) and the replicas they lost
/// ([`crate::format::schema::isolation`]).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BlastReport {
    /// `none`, `cells` or `shuffle_sharding`.
    pub isolation: String,
    /// Caller units: the scenario's tenant keys.
    pub units: u64,
    /// Replicas each unit may use (all of them without isolation).
    pub replicas_per_unit: u32,
    /// Units whose every replica was down at the same instant at least once.
    pub units_lost_all: u64,
    /// `units_lost_all / units`.
    pub lost_all_ratio: f64,
    /// Units that lost part of their replicas at once, never all.
    pub units_lost_some: u64,
    /// `units_lost_some / units`.
    pub lost_some_ratio: f64,
    /// Replica crashes caused by poison requests.
    pub poison_crashes: u64,
}

/// A service whose replicas join and leave rotation: the autoscaler's and deploys' actions.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ScalingReport {
    /// The fewest replicas in rotation at any instant.
    pub replicas_min: u32,
    /// The most replicas in rotation at any instant.
    pub replicas_max: u32,
    /// Replicas in rotation, time-weighted over the run.
    pub replicas_mean: f64,
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
    /// Jobs a replica still held when its drain ended (lost).
    pub lost_at_stop: u64,
    /// Jobs that started work on a replica still warming up.
    pub cold_jobs: u64,
}

/// A cache with a `ttl`: how its entries were refreshed.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RefreshReport {
    /// Hits that found their entry expired and fetched it again.
    pub expired_misses: u64,
    /// Hits on a live entry that XFetch sent to refetch it early.
    pub early_refreshes: u64,
    /// Refetches that succeeded and made their entry fresh.
    pub refreshes: u64,
}

/// A service's keyed store under optimistic concurrency.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StoreReport {
    /// Rows in the store.
    pub rows: u32,
    /// Reads: attempts that started work.
    pub reads: u64,
    /// Writes that committed.
    pub commits: u64,
    /// Writes refused because their row changed since their read (`version_conflict`).
    pub conflicts: u64,
    /// `conflicts / commits`: failed writes per committed one, the retries each success
    /// cost when every conflict is retried (`null` without commits).
    pub conflicts_per_commit: Option<f64>,
    /// Commits to the most written row.
    pub hottest_row_commits: u64,
    /// Its row locks (absent unless its op is `Locked`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locks: Option<LockReport>,
}

/// The row locks of a `Locked` store.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LockReport {
    /// Locks taken.
    pub acquired: u64,
    /// Of those, the ones that waited for another attempt's lock.
    pub waits: u64,
    /// The total time attempts waited for the locks they got, in seconds.
    pub wait_s: f64,
    /// The 99th percentile of the wait for a lock, over the locks taken (`null` without).
    pub wait_ms_p99: Option<f64>,
    /// Waits that failed with `lock_timeout` (full queues included).
    pub timeouts: u64,
    /// Of those, the attempts that found the row's queue full.
    pub queue_full: u64,
    /// The most attempts waiting for one row's lock at once.
    pub queue_max_seen: u32,
}

/// A breaker transition.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Transition {
    /// When, in seconds.
    pub t_s: f64,
    /// From state.
    pub from: String,
    /// To state.
    pub to: String,
}

/// A stretch of time a breaker spent in one state.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StateSpan {
    /// Start, in seconds.
    pub from_s: f64,
    /// End, in seconds.
    pub to_s: f64,
    /// The state (`closed`, `open`, `half_open`, ...), or `unknown` before the oldest
    /// transition the breaker kept when it dropped older ones.
    pub state: String,
}

/// One breaker's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BreakerReport {
    /// The replica of the calling service that holds it (`None` for a client's).
    pub replica: Option<u32>,
    /// State at the end.
    pub state: String,
    /// Transitions in total.
    pub transitions_total: u64,
    /// The first transitions.
    pub transitions: Vec<Transition>,
    /// Its states over the whole run, from the transitions it kept (the newest 4,096).
    pub spans: Vec<StateSpan>,
}

/// One call site's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CallReport {
    /// Where it is in the file (`clients.web.call`, `services.api.calls[0]`).
    pub path: String,
    /// Who makes the calls: a client or a service.
    pub caller: String,
    /// The service called.
    pub target: String,
    /// Amplification at this call site, `attempts / calls`: tries per call (retries and
    /// hedges included).
    pub amplification: f64,
    /// Its counters, summed over the replicas of the calling service (serialised in place).
    #[serde(flatten)]
    pub counts: CallStats,
    /// Rejections by a layer of the stack, by reason.
    pub rejected_by_reason: BTreeMap<String, u64>,
    /// Its breakers, outermost first (one set per replica of the calling service).
    pub breakers: Vec<BreakerReport>,
    /// Its `Pace` layer: calls held until the target's quota reset (absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pace: Option<PaceReport>,
    /// Its `AdaptiveTimeout` layer: the timeouts it gave (absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adaptive_timeout: Option<AdaptiveTimeoutReport>,
    /// Its connection pools (absent unless the call has a `pool`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolReport>,
}

/// What a call site's `Pace` layer did, summed over the instances of the call site.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PaceReport {
    /// Calls held back until the target's quota reset, instead of being sent to be refused.
    pub held: u64,
    /// Their total time held, in milliseconds.
    pub held_ms: f64,
    /// Mean time held per held call, in milliseconds (`null` when none was held).
    pub held_ms_mean: Option<f64>,
    /// Replies that said the target's quota was used up (`remaining` 0).
    pub exhausted_replies: u64,
    /// Of those, the ones whose reset was beyond `hold_max` and was not waited for.
    pub resets_too_far: u64,
}

/// A call site's adaptive timeout (over the instances of the call site).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AdaptiveTimeoutReport {
    /// The shortest timeout it reached, in milliseconds.
    pub timeout_ms_min: f64,
    /// The longest, in milliseconds.
    pub timeout_ms_max: f64,
    /// The timeout at the end of the run (the longest over the instances), in milliseconds.
    pub timeout_ms_last: f64,
    /// Attempt latencies it learnt from (timeouts counted at their timeout).
    pub observed: u64,
}

/// Per-service values of one bucket.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ServicePoint {
    /// The service.
    pub name: String,
    /// Attempts arriving.
    pub arrivals: u64,
    /// Attempts answered with success.
    pub ok: u64,
    /// Jobs waiting, summed over the replicas: the time-weighted mean over the bucket.
    pub queue_total_mean: f64,
    /// The most jobs waiting at once in the bucket, summed over the replicas.
    pub queue_total_max: u64,
    /// Jobs waiting in one replica's queue: the summed mean divided by the replicas (in
    /// rotation, when they join and leave it).
    pub queue_replica_mean: f64,
    /// The longest queue of one replica at any instant of the bucket.
    pub queue_replica_max: u64,
    /// Mean busy workers over the replicas, time-weighted.
    pub busy_workers_mean: f64,
    /// Most busy workers over the replicas at any instant of the bucket.
    pub busy_workers_max: f64,
    /// Workers of the replicas that are up, under capacity drops, time-weighted: what the
    /// busy workers can reach.
    pub capacity_workers_mean: f64,
    /// Replicas in rotation, time-weighted (absent unless its replicas join and leave
    /// rotation: it autoscales, cold-starts or is deployed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas_in_rotation_mean: Option<f64>,
    /// Attempts refused or failed by the service in the bucket (by the bucket of their
    /// answer), by reason.
    pub failed_by_reason: BTreeMap<String, u64>,
    /// The most caller units that had no replica up at once during the bucket (absent
    /// unless the service reports its blast radius).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units_without_replicas_max: Option<u64>,
    /// Replicas its liveness probes restarted in the bucket (absent without liveness
    /// probes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub liveness_restarts: Option<u64>,
    /// The most connections open to it at once during the bucket, over every pool toward it
    /// (absent unless it reports its connections).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections_open_max: Option<u32>,
    /// Its concurrency limit and PID shedder in the bucket (absent unless it has either).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limiters: Option<Box<LimiterPoint>>,
}

/// A service's limiters in one bucket: each figure is absent unless the service has that
/// limiter. Time-weighted over the bucket, as the queue and busy workers are.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct LimiterPoint {
    /// Its concurrency limit (`admission: [Concurrency(…)]`), summed over the replicas up and
    /// in rotation: the time-weighted mean.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency_limit_mean: Option<f64>,
    /// The highest it reached in the bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency_limit_max: Option<f64>,
    /// Requests its concurrency limiters held (admitted and not yet answered), summed over
    /// the replicas: the time-weighted mean.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency_in_flight_mean: Option<f64>,
    /// The most they held at once in the bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency_in_flight_max: Option<f64>,
    /// Its PID shedder's drop probability (0 to 1), time-weighted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid_drop_ratio_mean: Option<f64>,
    /// The highest it set in the bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid_drop_ratio_max: Option<f64>,
}

/// Per-client values of one bucket (by bucket of offer).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ClientPoint {
    /// The client (one allocation shared by its points in every row: a series holds a
    /// point per client and bucket).
    #[serde(serialize_with = "shared_str")]
    pub name: Arc<str>,
    /// Requests offered.
    pub offered: u64,
    /// Of those, the ones that succeeded.
    pub successes: u64,
    /// Of those, the ones that failed.
    pub failures: u64,
}

/// Per-call-site values of one bucket (by the bucket in which each happened).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CallPoint {
    /// The call site's place in the file (shared by its points in every row, as a
    /// [`ClientPoint`]'s name is).
    #[serde(serialize_with = "shared_str")]
    pub path: Arc<str>,
    /// Attempts started.
    pub attempts: u64,
    /// Retries scheduled.
    pub retries: u64,
    /// Retries refused by the budget.
    pub budget_exhausted: u64,
    /// Attempts the caller stopped waiting for.
    pub timeouts: u64,
    /// The longest adaptive timeout given to an attempt sent in the bucket, in milliseconds
    /// (absent without an `AdaptiveTimeout` layer, `null` when no attempt was sent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms_max: Option<Option<f64>>,
    /// The most connections its pools held open at once during the bucket (absent unless
    /// the call has a pool).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections_open_max: Option<u32>,
}

/// One report bucket, over all clients.
///
/// Outcomes, ratios and latencies are by bucket of *offer*: `successes`, `failures`,
/// `goodput_ratio` and the latencies are those of the requests offered during the bucket,
/// whenever they finished, so a ratio never exceeds 1 and a slow bucket shows where the slow
/// requests were sent. `goodput_per_s` alone is by bucket of *completion*: the successes that
/// came back during the bucket, whenever they were offered.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SeriesRow {
    /// Start of the bucket, in seconds.
    pub t_s: f64,
    /// Requests offered in it (all clients).
    pub offered: u64,
    /// Attempts the clients' call sites started in it (first attempts, retries, hedges).
    pub attempts: u64,
    /// Of those, the ones that succeeded.
    pub successes: u64,
    /// Of those, the ones that failed.
    pub failures: u64,
    /// `successes / offered`, by bucket of offer (1 when nothing was offered; requests still
    /// in flight at the end count as not succeeded, which lowers the last buckets).
    pub goodput_ratio: f64,
    /// Successes completed during the bucket per second, whenever they were offered.
    pub goodput_per_s: f64,
    /// Mean latency of the successes among the requests offered in the bucket, in
    /// milliseconds (`null` without successes).
    pub latency_ms_mean: Option<f64>,
    /// Median of the same, in milliseconds (bounded like the p99; `null` without
    /// successes).
    pub latency_ms_p50: Option<f64>,
    /// 99th percentile of the same, in milliseconds (the upper edge of its log bin, or the
    /// longest latency when that is lower: within 25% above the true value; `null` without
    /// successes).
    pub latency_ms_p99: Option<f64>,
    /// The longest of the same, in milliseconds (exact; `null` without successes).
    pub latency_ms_max: Option<f64>,
    /// Per client.
    pub clients: Vec<ClientPoint>,
    /// Per service.
    pub services: Vec<ServicePoint>,
    /// Per request class of every client that declares classes, in client then class order
    /// (absent without classes): offered requests and successes, by bucket of offer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<ClassPoint>,
    /// Per call site.
    pub calls: Vec<CallPoint>,
}

/// A stretch of the timeline a chart shades: a fault, or a spike in a client's load.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TimelineWindow {
    /// What it is, as the file names it (`slowdown`, `load_spike`, `crash`, ...).
    pub kind: String,
    /// The service or client it acts on (empty for network-wide faults).
    pub target: String,
    /// A short description for a chart (`slowdown db ×4`).
    pub label: String,
    /// Start, in seconds.
    pub from_s: f64,
    /// End, in seconds (`null`: it lasts to the end of the run, or is an instant).
    pub to_s: Option<f64>,
}

/// What an expectation bounds, for drawing it: a figure, a bound and the window over which
/// it must hold.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Threshold {
    /// The figure: `success_ratio` (of one client, by bucket of offer, over the window),
    /// `latency_ms_p99` (of one client, over the run), `amplification` (of all clients, over
    /// the run), `recovery` (one client's success ratio, back to at least `value` in every
    /// bucket from some time in the window to the end), `class_success_ratio` (one class of
    /// one client, over the run) or `lost_all_ratio` (the share of a service's caller units
    /// that lost all their replicas, over the run).
    pub metric: String,
    /// The client it is about (`null` for all clients; `client/class` for a class; the
    /// service for `lost_all_ratio`).
    pub client: Option<String>,
    /// `at_least` or `at_most`.
    pub bound: String,
    /// The bound.
    pub value: f64,
    /// Start of the window, in seconds.
    pub from_s: f64,
    /// End of the window, in seconds (`null`: to the end of the run).
    pub to_s: Option<f64>,
    /// The observed figure, in the metric's unit; for `recovery`, the seconds from the
    /// window's start to the recovery (`null` when there was none: a p99 without successes,
    /// a client that never recovered).
    pub observed: Option<f64>,
}

/// The verdict on one expectation.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ExpectationResult {
    /// What was expected.
    pub expectation: String,
    /// What was observed.
    pub observed: String,
    /// Whether it held.
    pub pass: bool,
    /// What it bounds, for a chart.
    pub threshold: Threshold,
    /// Why the verdict may not mean what it reads as, when it may not: a latency judged on
    /// too small a share of the requests (see `verdicts::JUDGED_SHARE_MIN`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// Everything a run shows.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    /// The scenario's name.
    pub scenario: String,
    /// The file it came from.
    pub file: String,
    /// The seed of the run.
    pub seed: u64,
    /// The run digest, as 16 hex digits.
    pub digest: String,
    /// Events executed.
    pub events: u64,
    /// Why the run stopped: `time_limit` (it ran its `duration`), `idle` (nothing was left
    /// to happen), `event_budget` (it spent `max_events`), or `memory_limit` (what it held
    /// while running reached the memory budget, `--max-memory`; `stop_detail` says which
    /// figure). Every reason gives a full report of the run up to the stop, and the exit
    /// code is the expectations' (0 or 1), whatever the reason.
    pub stop_reason: String,
    /// What reached the limit and how to fix it, when the reason needs saying more
    /// (`memory_limit`: which figure, and how much).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_detail: Option<String>,
    /// The command-line words after `--seed N` that replay the run: the duration, event
    /// budget, memory budget, variant and overrides it was run with, as flags
    /// (` --variant budget --set 'duration=30s'`); absent when the file ran as written.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub replay_flags: String,
    /// Simulated seconds.
    pub simulated_s: f64,
    /// Report bucket width in seconds.
    pub bucket_s: f64,
    /// Totals.
    pub summary: Summary,
    /// Per client.
    pub clients: Vec<ClientReport>,
    /// Per service.
    pub services: Vec<ServiceReport>,
    /// Per call site.
    pub calls: Vec<CallReport>,
    /// One entry per bucket.
    pub series: Vec<SeriesRow>,
    /// The faults and load spikes of the scenario, in file order (what charts shade).
    pub timeline: Vec<TimelineWindow>,
    /// Verdicts.
    pub expectations: Vec<ExpectationResult>,
    /// The metastability verdict, when the scenario has a trigger that ends within the run
    /// (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metastability: Option<super::metastability::Metastability>,
    /// Per network link, when the scenario has a `network` section.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<LinkReport>,
    /// Per distributed rate limiter (`admission: [Distributed(..)]`), when the scenario has
    /// one: decisions, store round-trips, admissions, refusals, over-admissions against the
    /// configured limit, store failures and how they were decided, and per bucket the
    /// admissions charged and the over-admissions among them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub limiters: Vec<crate::figures::DistributedFigures>,
    /// The events of the trace window, when one was asked for (`--trace FROM..TO`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trace: Vec<String>,
    /// Settings the upstream library accepts with a warning (an AIMD initial limit below its
    /// minimum, say), each as `field.path: what`; the run uses them as given.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Why the run failed: one explanation per expectation that failed, then one for a
    /// metastability verdict that is `metastable` or `collapsed` (absent when nothing
    /// failed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub why: Vec<super::why::Why>,
}

impl Report {
    /// True when every expectation held.
    pub fn passed(&self) -> bool {
        self.expectations.iter().all(|e| e.pass)
    }

    /// The success ratio of all clients over `[from, to)` seconds, from the series: of the
    /// requests offered in that window.
    pub fn goodput_ratio_between(&self, from_s: f64, to_s: f64) -> f64 {
        let (ok, offered) = self
            .series
            .iter()
            .filter(|r| r.t_s >= from_s && r.t_s < to_s)
            .fold((0, 0), |(a, b), r| (a + r.successes, b + r.offered));
        ratio(ok, offered)
    }

    /// The command that replays this run, with the flags it was run with.
    pub fn replay_command(&self) -> String {
        format!(
            "resim run {} --seed {}{}",
            self.file, self.seed, self.replay_flags
        )
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One request class in one report bucket.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ClassPoint {
    /// `client/class`.
    pub class: String,
    /// Requests of the class offered in the bucket.
    pub offered: u64,
    /// Of those, the requests that succeeded.
    pub successes: u64,
}
