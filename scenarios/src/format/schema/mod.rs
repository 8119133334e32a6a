//! The scenario file format: what a `.ron` file may say, as serde types.
//!
//! This file is longer than most on purpose: it is the scenario format's reference, every
//! type a file may contain with its doc, in the order a scenario reads, so that one file
//! answers "what can I write here".
//!
//! Every struct rejects unknown fields, so a typo is an error with a position instead of a
//! silently ignored setting. Durations are humantime strings (`"250ms"`), rates carry a unit
//! (`"500/s"`), fractions are named `_ratio` (0–1) or `_percent` (0–100), and variants are
//! externally tagged enums (`Exponential(mean: "10ms")`). Optional fields need no `Some(..)`:
//! files are parsed with RON's `implicit_some` extension.
//!
//! Maps (`clients`, `services`) are `BTreeMap`s: their order is the order of the names, which
//! is what fixes the order in which the world is built and reported. A name given twice is an
//! error, not a silent overwrite.
//!
//! A pattern layer may be written with one pair of parentheses or two (`Retry(max_attempts: 3)`
//! or `Retry((max_attempts: 3))`): files are read with RON's `unwrap_variant_newtypes`
//! extension, and [`crate::format::read`] accepts the older, doubled form too.

pub mod answers;
pub mod capacity;
pub mod contention;
pub mod distributed;
mod facts;
pub mod isolation;
pub mod pool;
pub mod scaling;
pub mod stages;
pub mod traffic;

use crate::format::limits::RunLimits;
use crate::format::overrides::segment;
pub use crate::format::verdict::VerdictConfig;
pub use answers::{PaceConfig, RetryAfter};
pub use contention::{KeyDist, Store, StoreOp};
pub use distributed::{DistributedLimiter, FanOut, LimiterState, OnStoreFailure, StoreClock};
pub use facts::{FaultTarget, times};
pub use isolation::Isolation;
pub use patterns::breaker::BreakerConfig;
pub use patterns::bulkhead::BulkheadConfig;
pub use patterns::coalesce::CoalesceConfig;
pub use patterns::concurrency::ConcurrencyConfig;
pub use patterns::fallback::FallbackConfig;
pub use patterns::hedge::HedgeConfig;
pub use patterns::idempotency::IdempotencyConfig;
pub use patterns::limiter::LimiterConfig;
pub use patterns::retry::RetryConfig;
pub use patterns::shedder::{AdaptiveThrottleConfig, PidConfig, PriorityConfig};
pub use patterns::timeout::AdaptiveTimeoutConfig;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use sim_core::{Dist, Rate, SimDuration};
pub use sim_net::NetworkConfig;
pub use stages::CallStage;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
pub use traffic::{KeyedLimit, LimitKey, Popularity, Priority, RequestClass, Tenants};

/// A whole scenario: topology, load, faults and expectations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A short name, used in reports.
    pub name: String,
    /// One or two sentences on what the scenario shows.
    #[serde(default)]
    pub description: String,
    /// Simulated time to run.
    pub duration: SimDuration,
    /// The seed used when the command line gives none.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Width of one report bucket (the time series resolution).
    #[serde(default = "default_bucket")]
    pub bucket: SimDuration,
    /// The event budget of a run (the run stops and says so when it is spent).
    #[serde(default = "default_max_events")]
    pub max_events: u64,
    /// Request sources, by name.
    #[serde(deserialize_with = "client_names")]
    pub clients: BTreeMap<String, Client>,
    /// Services, by name.
    #[serde(deserialize_with = "service_names")]
    pub services: BTreeMap<String, Service>,
    /// Things that go wrong, and when.
    #[serde(default)]
    pub faults: Vec<Fault>,
    /// The virtual network between clients and services (sim-net): link latency, loss,
    /// duplication, bandwidth, and network faults (partitions, degradation, clogs, node
    /// crashes and pauses) by node name. Each client and each service is a node (the replicas
    /// of a service share it). Without it, messages take each service's `latency`.
    #[serde(default)]
    pub network: Option<NetworkConfig>,
    /// What must hold at the end of the run; a failing one makes `resim run` exit 1.
    #[serde(default)]
    pub expectations: Vec<Expectation>,
    /// The thresholds of the metastability verdict every run with a trigger that ends gets
    /// ([`crate::format::verdict`]); all optional.
    #[serde(default)]
    pub verdict: VerdictConfig,
    /// The memory budget and rate limit the scenario is validated against. Not part of the
    /// file, so a file cannot raise its own limits: the defaults, or what the command line
    /// says (`--max-memory`, `--max-rate`). Validation of `run`'s overrides uses them too.
    #[serde(skip)]
    pub limits: RunLimits,
    /// The names of the file's `variants` (sets of overrides that `--variant NAME` applies; see
    /// [`crate::format::overrides`]), in the file's order. Read from the text, not by serde.
    #[serde(skip)]
    pub variants: Vec<String>,
    /// What a run keeps per report bucket. Not part of the file: a run's options say it
    /// (`RunOptions::series`), and the memory estimate counts what it keeps.
    #[serde(skip)]
    pub series: Series,
}

/// What a run keeps per report bucket: every series the report shows, or only what its
/// expectations and its metastability verdict read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Series {
    /// Every series: the report's rows (`series`, one per bucket), each client's, call
    /// site's and service's counts and gauges per bucket, the latencies per bucket.
    #[default]
    All,
    /// Each client's counts per bucket only (offered, succeeded, failed, completed: what the
    /// expectations and the metastability verdict read). Dropped: the report's rows, the
    /// latencies per bucket (so the verdict's windows have no p99), the call sites' counts
    /// per bucket, and the services', limiters', blast radius' and pools' figures per bucket,
    /// which are kept over the whole run instead (one bucket: the service report's means
    /// and maxima stay right), and the explanations of `why`, which read the rows. Totals,
    /// histograms over the run and every verdict are as with [`Series::All`], and so is the
    /// digest: figures never feed back into the run.
    Clients,
}

impl Scenario {
    /// The name of client `name`'s node on the network. Without a network section nothing
    /// names nodes, and a client may share its name with a service; it gets a name of its own
    /// then. Validation checks that every node's name is its own; the world names its nodes so.
    pub fn client_node(&self, name: &str) -> String {
        if self.services.contains_key(name) {
            format!("clients.{}", segment(name))
        } else {
            name.to_string()
        }
    }
}

fn client_names<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, Client>, D::Error> {
    d.deserialize_map(UniqueNames("client", PhantomData))
}

fn service_names<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, Service>, D::Error> {
    d.deserialize_map(UniqueNames("service", PhantomData))
}

/// A map of names that refuses a name given twice (a `BTreeMap` would keep the last one).
/// The error is raised at the second; [`crate::format::read`] adds where the first was.
struct UniqueNames<T>(&'static str, PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for UniqueNames<T> {
    type Value = BTreeMap<String, T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a map of {} names, e.g. {{ \"api\": (..) }}", self.0)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut names = BTreeMap::new();
        while let Some(name) = map.next_key::<String>()? {
            if names.contains_key(&name) {
                return Err(serde::de::Error::custom(format!(
                    "{} {name:?} is defined twice; rename one or merge them",
                    self.0
                )));
            }
            let value = map.next_value()?;
            names.insert(name, value);
        }
        Ok(names)
    }
}

fn default_seed() -> u64 {
    1
}

fn default_bucket() -> SimDuration {
    SimDuration::from_secs(1)
}

fn default_max_events() -> u64 {
    50_000_000
}

/// A source of requests: a load shape and the call it makes for each request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Client {
    /// How requests are generated.
    pub load: Load,
    /// The call each request makes (target, timeouts, pattern stack).
    pub call: Call,
    /// The mix of request classes it sends (see [`traffic`]); without it, one
    /// default class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<RequestClass>,
    /// The zone it stands in ([`capacity`]): a `ZoneFailure` of that zone silences
    /// it while it lasts. Without one, it is in no zone.
    #[serde(default)]
    pub zone: Option<u32>,
}

/// How a client generates requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Load {
    /// Open loop: requests arrive on a schedule whatever happens to earlier ones (Poisson
    /// arrivals at the scheduled rate). This is the load that makes retry storms possible.
    Open {
        /// The arrival rate over time.
        rate: Schedule,
    },
    /// Closed loop: `users` users each send a request, wait for its outcome, think, repeat.
    Closed {
        /// Number of users.
        users: u32,
        /// Think time between an outcome and the next request.
        think: Dist,
    },
    /// A one-shot population: `users` users each offer exactly one request (retried by its
    /// call's policy like any other) and stop when it ends. They start together at time 0,
    /// or at instants drawn uniformly over `spread`. The report gives its `makespan`: when
    /// the last of them finished.
    OneShot {
        /// Number of users.
        users: u32,
        /// The window over which their starts are spread (0: all at once).
        #[serde(default)]
        spread: SimDuration,
    },
}

/// An arrival rate over time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Schedule {
    /// The same rate for the whole run.
    Constant(Rate),
    /// Piecewise constant: each step sets the rate from its time on (before the first: 0).
    Steps(Vec<Step>),
    /// A linear ramp from `from` at `start` to `to` at `end` (flat outside).
    Ramp {
        /// Rate up to `start`.
        from: Rate,
        /// Rate from `end` on.
        to: Rate,
        /// When the ramp begins.
        start: SimDuration,
        /// When it reaches `to`.
        end: SimDuration,
    },
    /// `base`, except `peak` during `[start, end)`.
    Spike {
        /// The usual rate.
        base: Rate,
        /// The rate during the spike.
        peak: Rate,
        /// When the spike begins.
        start: SimDuration,
        /// When it ends.
        end: SimDuration,
    },
}

/// One step of [`Schedule::Steps`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// From when.
    pub at: SimDuration,
    /// The rate from then on.
    pub rate: Rate,
}

/// A call to a service, as made by a client or by a service to its dependency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// The service called.
    pub target: String,
    /// Per-attempt timeout: the caller stops waiting for an attempt after this long.
    #[serde(default)]
    pub timeout: Option<SimDuration>,
    /// Overall deadline of the call, across attempts; a service call also never outlives the
    /// deadline of the request it serves (deadlines propagate).
    #[serde(default)]
    pub deadline: Option<SimDuration>,
    /// The pattern stack, outermost first. Layers listed before `Retry` act once per call;
    /// layers after it act on every attempt.
    #[serde(default)]
    pub stack: Vec<Layer>,
    /// Its weight among the calls of a `Pick` stage ([`CallStage::Pick`]): the stage picks
    /// one of its calls at random in proportion to their weights.
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// The share of the requests reaching this call that make it, in 0–1: a service's call
    /// whose stage runs (or, in a `Pick` stage, that was picked) is made with this
    /// probability, else skipped ([`stages`]). A client's call is made on every request.
    #[serde(default = "default_weight")]
    pub call_ratio: f64,
    /// Whether running the operation twice is harmless: it decides whether retries and hedges
    /// may repeat it, and whether the target can deduplicate them.
    #[serde(default)]
    pub safety: CallSafety,
    /// Scatter-gather: the call goes to `n` leaves of the target at once and completes when
    /// `quorum` of them (all by default) succeed ([`FanOut`]).
    #[serde(default)]
    pub fan_out: Option<FanOut>,
    /// A pool of connections toward the target, one per calling replica
    /// ([`pool::Pool`]): each attempt checks a connection out before it is sent.
    /// Service calls only.
    #[serde(default)]
    pub pool: Option<pool::Pool>,
}

/// Whether an operation may run twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum CallSafety {
    /// Running it twice is like running it once (reads, PUT, DELETE): retried freely.
    #[default]
    Idempotent,
    /// Not idempotent, but every attempt carries the call's idempotency key, which a target
    /// with an `idempotency` store uses to run it once.
    IdempotencyKey,
    /// Running it twice does the work twice: never retried or hedged.
    Unsafe,
}

fn default_weight() -> f64 {
    1.0
}

/// One layer of a call's pattern stack. Each carries the configuration of the `patterns`
/// crate under that crate's names and defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Layer {
    /// Retries failed attempts with backoff, jitter and an optional budget
    /// ([`patterns::retry::RetryConfig`]).
    Retry(RetryConfig),
    /// A circuit breaker ([`patterns::breaker::BreakerConfig`], resilience4j's names).
    Breaker(BreakerConfig),
    /// A bulkhead: a cap on calls in flight through this layer
    /// ([`patterns::bulkhead::BulkheadConfig`]); calls beyond it are rejected at once.
    Bulkhead(BulkheadConfig),
    /// A client-side rate limiter ([`patterns::limiter::LimiterConfig`]).
    Limiter(LimiterConfig),
    /// Hedged requests ([`patterns::hedge::Hedger`]): when the call has not answered after the
    /// hedge delay, the same call is made again, racing the first; the first success wins and
    /// the others are cancelled. Hedges draw from the retry budget when the stack has one.
    /// Acts on the whole call, wherever it is listed.
    Hedge(HedgeConfig),
    /// A fallback chain ([`patterns::fallback::Fallback`]): when the call fails, serve the
    /// last good answer of this call site if it is recent enough, else a static default,
    /// else fail. A degraded answer counts as a success for the caller and is reported as a
    /// fallback. Acts on the whole call, wherever it is listed.
    Fallback(FallbackConfig),
    /// Client-side adaptive throttling ([`patterns::shedder::AdaptiveThrottle`], Google SRE):
    /// the client refuses locally a share of requests that grows as the backend accepts fewer.
    Throttle(AdaptiveThrottleConfig),
    /// An adaptive per-attempt timeout ([`patterns::timeout::AdaptiveTimeoutConfig`]): each
    /// attempt's timeout is `clamp(multiplier · percentile of the call site's recent attempt
    /// latencies, floor, ceiling)`, `initial` until `min_samples` were seen. It takes the
    /// place of the call's `timeout` (set one or the other). Acts on every attempt, wherever
    /// it is listed.
    AdaptiveTimeout(AdaptiveTimeoutConfig),
    /// Client-side pacing on the target's rate-limit figures ([`answers::PaceConfig`]):
    /// after a reply says the target's quota is used up (`remaining` 0), calls wait at this
    /// layer until the quota's reset instead of being sent to be refused.
    Pace(PaceConfig),
}

/// A service: replicas of a worker pool with a queue, a handler and its dependencies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Service {
    /// Identical replicas behind the balancer.
    #[serde(default = "default_one")]
    pub replicas: u32,
    /// Workers per replica. A worker is held from the start of the work until the reply,
    /// including while waiting on downstream calls (thread-per-request).
    pub workers: u32,
    /// The queue in front of the workers.
    #[serde(default)]
    pub queue: QueueConfig,
    /// CPU work per request.
    pub work: Dist,
    /// Work grows with load: work × (1 + k · in-flight requests of the replica, those it
    /// admitted and has not answered yet: on a worker or in its queue). Zero keeps
    /// work independent of load; positive values model contention (locks, GC, cache misses),
    /// the amplification behind metastable failures.
    #[serde(default)]
    pub work_per_in_flight: f64,
    /// Downstream calls made after the work, each through its own pattern stack.
    #[serde(default)]
    pub calls: Vec<Call>,
    /// How the calls run: in stages, one after the other, each stage making its calls at
    /// once or picking one of them ([`CallStage`], [`stages`]). Without it (and without
    /// `call_mode`), one call after the other.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<CallStage>,
    /// The older way to say how the calls run, which stands for a form of `stages`
    /// ([`Service::call_stages`]); a file says one or the other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_mode: Option<CallMode>,
    /// What happens to a request whose caller has already given up.
    #[serde(default)]
    pub on_abandoned: Abandoned,
    /// Admission control, in order, before a request may queue.
    #[serde(default)]
    pub admission: Vec<Admission>,
    /// How callers spread requests over the replicas.
    #[serde(default)]
    pub balancer: Balancer,
    /// Passive health checking: eject replicas that keep failing.
    #[serde(default)]
    pub outlier: Option<Outlier>,
    /// Active health checking: probe each replica and route around the ones that fail.
    #[serde(default)]
    pub health_check: Option<HealthCheck>,
    /// A cache in front of the downstream calls.
    #[serde(default)]
    pub cache: Option<Cache>,
    /// One-way network latency between a caller and this service.
    #[serde(default)]
    pub latency: Option<Dist>,
    /// How long a crashed replica takes to start again after the crash ends.
    #[serde(default)]
    pub restart: Option<SimDuration>,
    /// An idempotency-key store ([`patterns::idempotency::IdempotencyStore`], shared by the
    /// replicas): an attempt whose call carries a key is run once; a retry of a finished one
    /// replays its result, a retry of one still running gets a conflict (409).
    #[serde(default)]
    pub idempotency: Option<IdempotencyConfig>,
    /// The `Retry-After` sent with overload refusals (queue full, shed, concurrency limit;
    /// a rate limiter sends its own). Retry policies wait at least this long before retrying.
    #[serde(default)]
    pub retry_after: Option<SimDuration>,
    /// A keyed store of versioned rows that each request reads when its work starts and
    /// writes when it ends ([`contention::Store`]): optimistic concurrency makes
    /// concurrent writers of a row conflict.
    #[serde(default)]
    pub store: Option<Store>,
    /// Blast-radius isolation ([`Isolation`]): cells, or shuffle sharding, of its replicas
    /// per caller unit (tenant key); the balancer picks among the unit's replicas only.
    #[serde(default)]
    pub isolation: Option<Isolation>,
    /// Target tracking that adds and removes replicas ([`scaling::Autoscale`]):
    /// `replicas` is then the count at the start, within its `min_replicas` and
    /// `max_replicas`.
    #[serde(default)]
    pub autoscale: Option<scaling::Autoscale>,
    /// A replica that (re)starts after time 0 works slower for a while
    /// ([`scaling::ColdStart`]).
    #[serde(default)]
    pub cold_start: Option<scaling::ColdStart>,
    /// The zones its replicas spread over: replica `i` stands in zone `i mod zones`, and a
    /// `ZoneFailure` of a zone takes its replicas there down ([`capacity`]). Without
    /// it, the service is in no zone.
    #[serde(default)]
    pub zones: Option<u32>,
    /// Liveness probes that restart a replica which stops answering them
    /// ([`capacity::Liveness`]).
    #[serde(default)]
    pub liveness: Option<capacity::Liveness>,
    /// The most connections the service accepts from every caller's pools together
    /// ([`pool`]); an open beyond it is refused (`connection_refused`). Unlimited
    /// when absent.
    #[serde(default)]
    pub max_connections: Option<u32>,
}

fn default_one() -> u32 {
    1
}

/// The queue in front of a replica's workers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    /// The most requests waiting per replica; `None` means unbounded (say so on purpose).
    #[serde(default = "default_queue_capacity")]
    pub capacity: Option<u32>,
    /// Which waiting request a free worker takes.
    #[serde(default)]
    pub discipline: Discipline,
}

fn default_queue_capacity() -> Option<u32> {
    Some(1000)
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            capacity: default_queue_capacity(),
            discipline: Discipline::Fifo,
        }
    }
}

/// Queue discipline.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Discipline {
    /// Oldest first.
    #[default]
    Fifo,
    /// Newest first.
    Lifo,
    /// FIFO while the queue is short, LIFO once the oldest request has waited longer than
    /// `threshold` (Facebook's adaptive LIFO): under overload the fresh requests, whose callers
    /// still wait, are served first.
    AdaptiveLifo {
        /// Queueing delay above which the queue serves newest first.
        threshold: SimDuration,
    },
    /// CoDel for RPC queues (as in Facebook's servers, [`patterns::shedder::RpcQueue`]): if
    /// no request left the queue faster than `target` during the last `interval`, requests
    /// that waited longer than `target` are dropped at dequeue (otherwise only those older
    /// than `interval`), and with `adaptive_lifo` the newest are served first meanwhile.
    CoDel {
        /// Acceptable standing queueing delay (CoDel's default 5ms).
        #[serde(default = "default_codel_target")]
        target: SimDuration,
        /// The interval over which the minimum delay is judged (CoDel's default 100ms).
        #[serde(default = "default_codel_interval")]
        interval: SimDuration,
        /// Serve newest first while overloaded.
        #[serde(default = "default_true")]
        adaptive_lifo: bool,
    },
    /// Highest priority level first, oldest first within a level
    /// ([`patterns::shedder::LevelQueue`]); a request arriving at a full queue evicts the
    /// newest request of the lowest level waiting if that level is below its own (the evicted
    /// one fails as `queue_full`), else it is refused. The sheddable wait longest and go first.
    Priority,
    /// CoDel as RFC 8289 writes it ([`patterns::shedder::CoDelQueue`]), FIFO: once the head's
    /// queueing delay has stayed at or above `target` for an `interval`, requests are dropped
    /// at dequeue (`shed`), the next drop `interval / sqrt(count)` after the last.
    CoDelRfc {
        /// Acceptable standing queueing delay (RFC 8289's default 5ms).
        #[serde(default = "default_codel_target")]
        target: SimDuration,
        /// How long the delay must stay above `target` before the first drop, and the base of
        /// the control law (RFC 8289's default 100ms).
        #[serde(default = "default_codel_interval")]
        interval: SimDuration,
    },
}

fn default_codel_target() -> SimDuration {
    SimDuration::from_millis(5)
}

fn default_codel_interval() -> SimDuration {
    SimDuration::from_millis(100)
}

fn default_true() -> bool {
    true
}

/// How multiple downstream calls run, as files said before `stages`; each mode stands for
/// a form of `stages` ([`Service::call_stages`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum CallMode {
    /// One after the other; the first failure fails the request: a stage per call,
    /// `[All([0]), All([1]), …]`.
    #[default]
    Sequential,
    /// All at once; the request succeeds when all do: one stage of all, `[All([0, 1, …])]`.
    FanOut,
    /// One of them, picked at random in proportion to `weight` (request types: 90% reads go
    /// to the catalog, 10% to payments): one stage picking one, `[Pick([0, 1, …])]`.
    Pick,
}

/// What a service does with a request whose caller already gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Abandoned {
    /// Serve it anyway (the default of most servers): the work is wasted.
    #[default]
    Work,
    /// Drop it when a worker picks it up if its deadline has passed.
    DropExpired,
    /// The caller's cancellation reaches the service, which stops working on it (and cancels
    /// its own downstream calls).
    Cancel,
}

/// Admission control at a replica, before the queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Admission {
    /// A rate limiter ([`patterns::limiter::LimiterConfig`]).
    Limiter(LimiterConfig),
    /// A cap on requests admitted and not yet answered (queued or in service), fixed or
    /// adaptive ([`patterns::concurrency::ConcurrencyConfig`]: `fixed`, `aimd`, `vegas`,
    /// `gradient2`, `envoy_gradient`), one limiter per replica. Each answered request is a
    /// sample: its time from admission to answer, and whether it failed.
    Concurrency(ConcurrencyConfig),
    /// A PID controller that holds the queueing delay (in milliseconds) at its setpoint by
    /// dropping arrivals with the probability it computes ([`patterns::shedder::PidShedder`]).
    Pid {
        /// How often the queueing delay is measured and the drop probability updated.
        #[serde(default = "default_pid_interval")]
        interval: SimDuration,
        /// The controller: setpoint in milliseconds of queueing delay, gains per millisecond.
        /// Default: [`PidConfig`]'s (setpoint 20ms, gains 0.01, 0.05 and 0, drops at most 90%).
        #[serde(default)]
        controller: PidConfig,
    },
    /// A rate limit that may key on the tenant, charge each request's class cost, and run
    /// in shadow mode ([`KeyedLimit`]); one for the whole service, like `Limiter`.
    RateLimit(KeyedLimit),
    /// A priority shedder ([`patterns::shedder::PriorityShedder`], one per replica): an
    /// arrival of priority level L is shed once the replica's requests in flight (busy
    /// workers and queue), in percent of its workers, reach threshold L.
    Priority(PriorityConfig),
    /// A rate limiter whose state may live in a store service or in leases from it
    /// ([`DistributedLimiter`]). Distributed limiters decide first, in their order, before
    /// the service's other admission layers.
    Distributed(DistributedLimiter),
    /// A per-tenant bulkhead, one per replica ([`patterns::bulkhead::KeyedBulkhead`]): at
    /// most `max_concurrent` requests of one tenant admitted and not yet answered (queued or
    /// in service), and at most `max_keys` tenants with requests in flight; a request over
    /// either cap is refused as `concurrency_limited`.
    TenantBulkhead(patterns::bulkhead::KeyedBulkheadConfig),
}

fn default_pid_interval() -> SimDuration {
    SimDuration::from_millis(100)
}

/// How callers pick a replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Balancer {
    /// In turn.
    #[default]
    RoundRobin,
    /// Uniformly at random.
    Random,
    /// The replica with the fewest outstanding requests (lowest index on ties).
    LeastOutstanding,
    /// Two replicas at random, the less loaded of the two.
    PowerOfTwo,
}

/// Passive outlier ejection (Envoy's `consecutive_5xx`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outlier {
    /// Consecutive failures (errors and timeouts) that eject a replica.
    #[serde(default = "default_consecutive_failures")]
    pub consecutive_failures: u32,
    /// How long an ejected replica stays out.
    #[serde(default = "default_ejection")]
    pub ejection: SimDuration,
    /// The most replicas that may be ejected at once, in percent (Envoy's default 10).
    #[serde(default = "default_max_ejection_percent")]
    pub max_ejection_percent: f64,
}

fn default_consecutive_failures() -> u32 {
    5
}

fn default_ejection() -> SimDuration {
    SimDuration::from_secs(30)
}

fn default_max_ejection_percent() -> f64 {
    10.0
}

/// Active health checks (Envoy's names). A probe fails when the replica is down, when its
/// queue is full, or when the oldest request in its queue has waited longer than `timeout`
/// (the probe would wait behind it). Probes cost the replica nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealthCheck {
    /// Time between probes of each replica.
    #[serde(default = "default_health_interval")]
    pub interval: SimDuration,
    /// How long a probe waits.
    #[serde(default = "default_health_timeout")]
    pub timeout: SimDuration,
    /// Failed probes in a row that take a replica out of rotation.
    #[serde(default = "default_unhealthy_threshold")]
    pub unhealthy_threshold: u32,
    /// Passed probes in a row that put it back.
    #[serde(default = "default_healthy_threshold")]
    pub healthy_threshold: u32,
}

fn default_health_interval() -> SimDuration {
    SimDuration::from_secs(5)
}

fn default_health_timeout() -> SimDuration {
    SimDuration::from_secs(1)
}

fn default_unhealthy_threshold() -> u32 {
    2
}

fn default_healthy_threshold() -> u32 {
    2
}

/// A cache in front of a service's downstream calls: a hit skips them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cache {
    /// The hit ratio of a warm cache, in 0–1.
    pub hit_ratio: f64,
    /// How long a flushed cache takes to warm up again (the hit ratio grows linearly).
    #[serde(default)]
    pub warmup: SimDuration,
    /// How many distinct keys the misses are for (each miss picks one at random); it matters
    /// only with `coalesce`.
    #[serde(default = "default_cache_keys")]
    pub keys: u32,
    /// Single flight per key on a miss ([`patterns::coalesce::Coalescer`], one per replica):
    /// while one request fetches a key, other misses for it wait for that fetch instead of
    /// calling the dependency themselves.
    #[serde(default)]
    pub coalesce: Option<CoalesceConfig>,
    /// How long an entry stays fresh. With it, each replica's cache holds its `keys`
    /// entries, all filled at time 0 (so, without `xfetch`, all expiring at once every
    /// `ttl`); a hit on an expired entry is a miss that fetches it again.
    #[serde(default)]
    pub ttl: Option<SimDuration>,
    /// Probabilistic early expiration (XFetch) of the `ttl` entries: a hit refetches its
    /// entry early with a probability that grows as its expiry approaches.
    #[serde(default)]
    pub xfetch: Option<XFetch>,
}

/// XFetch (Vattani et al., VLDB 2015): a request on an entry that expires at `expiry`
/// refetches it when `now − delta · beta · ln(u) ≥ expiry`, with `u` uniform on (0, 1] and
/// `delta` the last measured fetch time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XFetch {
    /// Eagerness: 1 is the paper's optimum; larger refreshes earlier.
    #[serde(default = "default_beta")]
    pub beta: f64,
}

fn default_beta() -> f64 {
    1.0
}

fn default_cache_keys() -> u32 {
    1000
}

/// One fault on the timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// When it starts.
    pub at: SimDuration,
    /// How long it lasts (crashes restart after it; `CacheFlush` ignores it).
    #[serde(default)]
    pub duration: Option<SimDuration>,
    /// What goes wrong.
    pub kind: FaultKind,
}

/// What goes wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum FaultKind {
    /// Work on `service` takes `factor` times longer.
    Slowdown {
        /// The service.
        service: String,
        /// The multiplier (above 1 slows down).
        factor: f64,
    },
    /// Requests to `service` fail with this probability after their work.
    ErrorRate {
        /// The service.
        service: String,
        /// Probability of an error, in 0–1.
        error_ratio: f64,
    },
    /// Each replica of `service` keeps only `workers` workers.
    CapacityDrop {
        /// The service.
        service: String,
        /// Workers per replica during the fault.
        workers: u32,
    },
    /// Replicas of `service` crash: requests in them are lost, callers get connection errors,
    /// and after the fault the replica starts cold (empty cache).
    Crash {
        /// The service.
        service: String,
        /// How many replicas (the first ones); all if absent.
        #[serde(default)]
        replicas: Option<u32>,
    },
    /// The client's arrival rate is multiplied by `factor`.
    LoadSpike {
        /// The client.
        client: String,
        /// The multiplier.
        factor: f64,
    },
    /// Extra one-way network latency to `service`.
    Latency {
        /// The service.
        service: String,
        /// The extra delay per message.
        extra: Dist,
    },
    /// Messages to and from `service` are lost with this probability.
    Loss {
        /// The service.
        service: String,
        /// Loss probability, in 0–1.
        loss_ratio: f64,
    },
    /// Every message to and from `service` is lost.
    Partition {
        /// The service.
        service: String,
    },
    /// The cache of `service` is emptied and warms up again.
    CacheFlush {
        /// The service.
        service: String,
    },
    /// Poison requests: while the fault lasts (to the end of the run without a `duration`),
    /// every request of tenant `tenant` that a worker of `service` starts crashes its
    /// replica (everything the replica holds is lost, as in `Crash`), which restarts cold
    /// after the service's `restart` time. A retry of the request crashes the next replica it
    /// reaches ([`isolation`]: cells and shuffle sharding bound how many that is).
    Poison {
        /// The service.
        service: String,
        /// The tenant key whose requests are poison (key 0 for a client without classes).
        tenant: u32,
    },
    /// A rolling deploy of `service`: `batch` replicas at a time leave rotation (draining
    /// what they hold), restart after `downtime` (cold, under the service's `cold_start`),
    /// and the next batch starts `warmup` after that. Its length follows from its batches
    /// (leave the fault's `duration` out).
    Deploy {
        /// The service.
        service: String,
        /// Replicas restarted at a time.
        batch: u32,
        /// How long each replica is out of rotation.
        downtime: SimDuration,
        /// The wait after a batch is back before the next one leaves.
        #[serde(default)]
        warmup: SimDuration,
    },
    /// A stop-the-world pause (a garbage collection) of replicas of `service` for the
    /// fault's `duration`: their workers make no progress (work in progress resumes after,
    /// its end pushed back by the pause) while requests keep arriving and queue. With
    /// `every`, it comes back each period until the end of the run ([`capacity`]).
    Pause {
        /// The service.
        service: String,
        /// How many replicas (the first ones); all if absent.
        #[serde(default)]
        replicas: Option<u32>,
        /// The period of a pause that repeats (a periodic GC); once if absent.
        #[serde(default)]
        every: Option<SimDuration>,
    },
    /// Zone `zone` fails for the fault's `duration`: every replica of every service with
    /// `zones` that stands in it goes down (as in a crash, out of rotation) and restarts cold
    /// after its service's `restart` once the zone is back; the clients in the zone offer
    /// nothing meanwhile ([`capacity`]).
    ZoneFailure {
        /// The zone, from 0.
        zone: u32,
    },
    /// Requests to `service` fail with a client error (a 4xx such as 400 or 404) with this
    /// probability after their work: counted as `client_error`, never retried
    /// ([`answers`]).
    ClientErrorRate {
        /// The service.
        service: String,
        /// Probability of a client error, in 0–1.
        error_ratio: f64,
    },
    /// `service` refuses this share of arrivals with 429 Too Many Requests before they queue
    /// (counted as `rate_limited`), with a `Retry-After` the callers' retry policies honour up
    /// to their `retry_after_max`.
    TooManyRequests {
        /// The service.
        service: String,
        /// Probability of a 429, in 0–1.
        refused_ratio: f64,
        /// The `Retry-After` sent: `After("2s")`, or `Until("30s")` (a time of the run).
        retry_after: RetryAfter,
    },
}

/// Something that must hold when the run ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Expectation {
    /// From `after` to `until` (or the end), successes are at least `min_ratio` of the
    /// requests offered in that window.
    GoodputAtLeast {
        /// The client.
        client: String,
        /// Start of the window.
        after: SimDuration,
        /// End of the window (the end of the run if absent).
        #[serde(default)]
        until: Option<SimDuration>,
        /// The least success ratio, in 0–1.
        min_ratio: f64,
    },
    /// From `after` to `until` (or the end), successes are at most `max_ratio` of the requests
    /// offered in that window (for scenarios that demonstrate a failure).
    GoodputAtMost {
        /// The client.
        client: String,
        /// Start of the window.
        after: SimDuration,
        /// End of the window (the end of the run if absent).
        #[serde(default)]
        until: Option<SimDuration>,
        /// The largest success ratio, in 0–1.
        max_ratio: f64,
    },
    /// The 99th percentile latency of successful requests is at most `max`.
    P99AtMost {
        /// The client.
        client: String,
        /// The bound.
        max: SimDuration,
    },
    /// The mean time in `service`'s queue of the attempts that started work there is at most
    /// `max` (those that found a free worker count zero): queueing theory's mean wait W_q,
    /// which Erlang C gives for an M/M/c service.
    MeanWaitAtMost {
        /// The service.
        service: String,
        /// The bound.
        max: SimDuration,
    },
    /// Client amplification stays at most `max`: the attempts the clients make (first
    /// attempts, retries, hedges) per request they offer. What a tier below receives per
    /// offered request is its load factor, in the report.
    AmplificationAtMost {
        /// The bound.
        max: f64,
    },
    /// After `after`, some report bucket within `within` has a success ratio of at least
    /// `min_ratio`, and every later bucket keeps it.
    RecoveredWithin {
        /// The client.
        client: String,
        /// When the fault (or spike) ended.
        after: SimDuration,
        /// How long recovery may take.
        within: SimDuration,
        /// The success ratio that counts as recovered, in 0–1.
        #[serde(default = "default_recovered_ratio")]
        min_ratio: f64,
    },
    /// The run's metastability verdict for the client is *never degraded* or *recovered*
    /// within `within` of the end of the last trigger (see the `verdict` section for the
    /// thresholds); the trigger's time comes from the timeline.
    Recovers {
        /// The client (may be left out when the scenario has one).
        #[serde(default)]
        client: Option<String>,
        /// How long recovery may take after the last trigger ends.
        within: SimDuration,
    },
    /// The run's metastability verdict for the client is *did not recover within the run:
    /// metastable* (for scenarios that demonstrate the failure).
    Metastable {
        /// The client (may be left out when the scenario has one).
        #[serde(default)]
        client: Option<String>,
    },
    /// Over the whole run, the successes of one request class of a client are at least
    /// `min_ratio` of the requests of that class it offered.
    ClassGoodputAtLeast {
        /// The client.
        client: String,
        /// The class (one of the client's `classes`).
        class: String,
        /// The least success ratio, in 0–1.
        min_ratio: f64,
    },
    /// Over the whole run, the successes of one request class are at most `max_ratio` of the
    /// requests of that class (for scenarios that demonstrate a failure).
    ClassGoodputAtMost {
        /// The client.
        client: String,
        /// The class (one of the client's `classes`).
        class: String,
        /// The largest success ratio, in 0–1.
        max_ratio: f64,
    },
    /// At most `max_ratio` of the caller units (tenant keys, [`isolation`]) lost all
    /// their replicas of `service` at the same instant during the run: the blast radius of a
    /// poison request or a crash under the service's `isolation`.
    BlastRadiusAtMost {
        /// The service (isolated, or aimed at by a `Poison` fault).
        service: String,
        /// The largest share of units, in 0–1.
        max_ratio: f64,
    },
}

fn default_recovered_ratio() -> f64 {
    0.9
}
