//! The simulated world: clients, balancers, services with workers and queues, the calls
//! between them with their pattern stacks, and the fault timeline, run on sim-core.
//!
//! The whole world is one [`World`] entity of the [`sim_core::Sim`]: every component lives in
//! it (clients, services, replicas, in-flight calls and jobs), and each [`Msg`] names the
//! component it is for. One entity keeps every handler free to touch any component (a
//! balancer reads the replicas' load, a crash fails the calls waiting on it) without
//! borrowing across entities; the digest still sees which component each event is for,
//! because [`Msg::kind`](sim_core::Message::kind) folds the component and the request ids in.
//!
//! Vocabulary: a *request* is what a client offers; a *call* is one logical call from a
//! caller (a client or a service) to a target service, possibly made of several *attempts*;
//! a *job* is one attempt as the target replica sees it (queued, working, or holding its
//! worker while its own downstream calls run).
//!
//! Memory stays flat as a run grows longer: calls and jobs live in slot maps whose slots are
//! reused, queues are bounded, and the series grow by one entry per report bucket.

pub mod stack;

use crate::schema::*;
use crate::validate::CALLS_MAX;
use patterns::coalesce::{Coalescer, Join};
use patterns::concurrency::{ConcurrencyLimiter, ConcurrencyToken};
use patterns::limiter::{Cost, Limiter, RateLimiter};
use patterns::retry::{GiveUpReason, RetryDecision, RetryPolicy, RetryRequest, Safety};
use patterns::shedder::{PidShedder, RpcQueue, RpcQueueConfig};
use sim_core::metrics::{CountSeries, GaugeSeries, LatencyHistogram};
use sim_core::sample::{SAMPLE_MAX, bernoulli, exponential, uniform_below, unit_f64};
use sim_core::{Ctx, Entity, Message, RngStream, Sampler, Seed, SimDuration, SimTime, TimerId};
use slotmap::{Key, KeyData, SlotMap, new_key_type};
pub use stack::Gate;
use stack::{Acquire, Permits, Wake, acquire_from, expire, failure_of, leave_queue, release_all};
use std::collections::VecDeque;

new_key_type! {
    /// A call in flight (one logical call and its attempts).
    pub struct CallKey;
    /// A job: one attempt, as its replica sees it.
    pub struct JobKey;
}

/// Why a request, call or attempt failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
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
}

/// Every reason, in report order.
pub const REASONS: [Reason; 12] = [
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
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The outcome of an attempt or a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It succeeded.
    Ok,
    /// It failed, and why.
    Fail(Reason),
}

/// What travels over the virtual network when a scenario has a `network` section: the three
/// messages between a caller and a service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet {
    /// An attempt on its way to its replica ([`Msg::Deliver`]).
    Deliver {
        /// The job.
        job: JobKey,
    },
    /// A reply on its way back ([`Msg::Reply`]).
    Reply {
        /// The call.
        call: CallKey,
        /// The attempt it answers.
        attempt: u32,
        /// What happened.
        outcome: Outcome,
        /// The server's `Retry-After` on an overload refusal.
        retry_after: Option<SimDuration>,
    },
    /// A cancellation on its way to the replica ([`Msg::Cancel`]).
    Cancel {
        /// The job.
        job: JobKey,
    },
}

/// The network a world's messages travel: sim-net's, in the simulation's shared state (it
/// stays empty and unused when a scenario has no `network` section).
pub type Net = sim_net::Network<Packet>;

/// The most events a trace window describes.
pub const TRACE_LINES_MAX: usize = 10_000;

/// The size every message is given on the network, in bytes (it matters only on links with a
/// bandwidth limit).
pub const PACKET_BYTES: u32 = 1024;

/// The events of the world. Each is small and allocates nothing.
#[derive(Clone, Debug)]
pub enum Msg {
    /// A message handed to sim-net arrives (or is due for a decision) at its target.
    Net(sim_net::Delivery<Packet>),
    /// An open-loop client's next arrival (`emit`), or a wake-up at a rate change to redraw.
    Arrival {
        /// The client.
        client: u32,
        /// Whether a request arrives (false: only redraw the next arrival).
        emit: bool,
    },
    /// A closed-loop user finished thinking.
    Think {
        /// The client.
        client: u32,
        /// The user.
        user: u32,
    },
    /// An attempt reaches its replica.
    Deliver {
        /// The job.
        job: JobKey,
    },
    /// A job's work is done.
    WorkDone {
        /// The job.
        job: JobKey,
    },
    /// An attempt's reply reaches its caller.
    Reply {
        /// The call.
        call: CallKey,
        /// The attempt number the reply answers.
        attempt: u32,
        /// What happened.
        outcome: Outcome,
        /// The server's `Retry-After` on an overload refusal.
        retry_after: Option<SimDuration>,
    },
    /// The caller stops waiting for an attempt.
    Timeout {
        /// The call.
        call: CallKey,
        /// The attempt number.
        attempt: u32,
    },
    /// A backoff delay ended: the next attempt starts.
    Retry {
        /// The call.
        call: CallKey,
    },
    /// A caller's cancellation reaches the replica.
    Cancel {
        /// The job.
        job: JobKey,
    },
    /// A fault begins.
    FaultStart {
        /// Index in the scenario's fault list.
        fault: u32,
    },
    /// A fault ends.
    FaultEnd {
        /// Index in the scenario's fault list.
        fault: u32,
    },
    /// A crashed replica is up again (cold).
    Restart {
        /// The service.
        service: u32,
        /// The replica.
        replica: u32,
    },
    /// A PID shedder measures and updates.
    PidTick {
        /// The service.
        service: u32,
    },
    /// Active health checks probe a service's replicas.
    HealthTick {
        /// The service.
        service: u32,
    },
    /// A bulkhead's waits may have timed out.
    BulkheadExpire {
        /// The call site.
        spec: u32,
        /// Whether the bulkhead acts on attempts (after `Retry`) or calls.
        inner: bool,
        /// The gate's index in its list.
        gate: u8,
    },
}

impl From<sim_net::Delivery<Packet>> for Msg {
    fn from(d: sim_net::Delivery<Packet>) -> Self {
        Msg::Net(d)
    }
}

impl Message for Msg {
    fn kind(&self) -> u64 {
        let key = |k: u64| k & 0x00ff_ffff_ffff_ffff;
        let (tag, word) = match *self {
            // sim-net's word names the packet and its copy, tagged apart from ours.
            Msg::Net(ref d) => return d.kind(),
            Msg::Arrival { client, emit } => (1, (u64::from(client) << 1) | u64::from(emit)),
            Msg::Think { client, user } => (2, (u64::from(client) << 32) | u64::from(user)),
            Msg::Deliver { job } => (3, job.data().as_ffi()),
            Msg::WorkDone { job } => (4, job.data().as_ffi()),
            Msg::Reply {
                call,
                attempt,
                outcome,
                ..
            } => {
                let o = match outcome {
                    Outcome::Ok => 0,
                    Outcome::Fail(r) => 1 + r as u64,
                };
                (
                    5,
                    call.data().as_ffi() ^ (u64::from(attempt) << 40) ^ (o << 48),
                )
            }
            Msg::Timeout { call, attempt } => {
                (6, call.data().as_ffi() ^ (u64::from(attempt) << 40))
            }
            Msg::Retry { call } => (7, call.data().as_ffi()),
            Msg::Cancel { job } => (8, job.data().as_ffi()),
            Msg::FaultStart { fault } => (9, u64::from(fault)),
            Msg::FaultEnd { fault } => (10, u64::from(fault)),
            Msg::Restart { service, replica } => {
                (11, (u64::from(service) << 32) | u64::from(replica))
            }
            Msg::PidTick { service } => (12, u64::from(service)),
            Msg::HealthTick { service } => (13, u64::from(service)),
            Msg::BulkheadExpire { spec, inner, gate } => (
                14,
                (u64::from(spec) << 16) | (u64::from(inner) << 8) | u64::from(gate),
            ),
        };
        (tag << 56) | key(word)
    }
}

/// Figures of one call site (a client's call or a service's downstream call).
#[derive(Debug, Default, Clone)]
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
    /// Attempts the caller stopped waiting for.
    pub timeouts: u64,
    /// Replies that arrived after the caller stopped waiting.
    pub late_replies: u64,
    /// Calls or attempts rejected by a gate of the stack, per reason index.
    pub rejected: [u64; REASONS.len()],
    /// Calls that succeeded.
    pub successes: u64,
    /// Calls that failed.
    pub failures: u64,
}

/// One call site, compiled.
#[derive(Debug)]
pub struct CallSpec {
    /// Where it is in the file (`clients.web.call`, `services.api.calls[0]`).
    pub path: String,
    /// The target service's index.
    pub target: usize,
    /// The replica of the calling service this instance belongs to (`None` for a client).
    pub replica: Option<u32>,
    timeout: Option<SimDuration>,
    deadline: Option<SimDuration>,
    /// The retry policy (with its backoff and budget), shared by every call of this site.
    pub retry: Option<RetryPolicy>,
    /// Gates acting once per call (listed before `Retry`).
    pub outer: Vec<Gate>,
    /// Gates acting on each attempt (listed after `Retry`, or all when there is none).
    pub inner: Vec<Gate>,
    rng: RngStream,
    /// The draws of its gates (adaptive throttling), apart from the retry jitter's.
    gate_rng: RngStream,
    /// Its share of requests under `CallMode::Pick`.
    pub weight: f64,
    /// Its figures.
    pub stats: CallStats,
}

#[derive(Clone, Copy, Debug)]
enum Owner {
    Client {
        client: u32,
        /// The closed-loop user, or `u32::MAX` for an open-loop request.
        user: u32,
        offered_at: SimTime,
    },
    Job {
        job: JobKey,
        index: u8,
    },
}

#[derive(Debug)]
struct CallState {
    spec: u32,
    owner: Owner,
    deadline: SimTime,
    attempt: u32,
    in_flight: bool,
    job: JobKey,
    replica: u32,
    timer: Option<TimerId>,
    /// The caller's node: its client's, or its service's.
    source: u32,
    retry: Option<RetryRequest>,
    outer: Permits,
    inner: Permits,
    /// The bulkhead gate the call waits at for a slot, if it waits.
    waiting: Option<(Side, usize)>,
}

/// Which of a call site's gate lists: the ones acting once per call, or on each attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Listed before `Retry`: once per call.
    Outer,
    /// Listed after `Retry` (or all, without one): on each attempt.
    Inner,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Transit,
    Queued,
    Working,
    Calling,
    /// Holding its worker while another request fetches the same cache key.
    Following,
}

#[derive(Debug)]
struct Job {
    service: u32,
    replica: u32,
    call: CallKey,
    attempt: u32,
    /// When the caller stops waiting for this attempt.
    deadline: SimTime,
    enqueued: SimTime,
    started: SimTime,
    phase: Phase,
    timer: Option<TimerId>,
    next_call: u8,
    pending: u8,
    failed: bool,
    children: [CallKey; CALLS_MAX],
    /// The caller gave up on this attempt (known to the observer; the replica learns it only
    /// through a cancellation or an expired deadline).
    abandoned: bool,
    /// The cache key this job fetches for its followers, when it leads a coalesced miss.
    lead_key: Option<u32>,
    /// Its admission by the replica's concurrency limit, handed back when it is answered.
    admitted: Option<ConcurrencyToken>,
}

#[derive(Debug)]
struct Replica {
    up: bool,
    busy: u32,
    queue: Waiting,
    outstanding: u32,
    consecutive_failures: u32,
    ejected_until: SimTime,
    /// In rotation as far as active health checks know.
    healthy: bool,
    /// Probes in a row with the same result, counting towards a change of `healthy`.
    probe_streak: u32,
    /// When the replica's cache was last emptied (`None`: warm since the start).
    cold_since: Option<SimTime>,
    /// Single flight per cache key, when the cache coalesces misses.
    coalescer: Option<Coalescer<u32>>,
    /// The concurrency limit of admission control, if any.
    concurrency: Option<ConcurrencyLimiter>,
}

/// A replica's queue. Jobs cancelled while queued stay in it until they reach the front,
/// where they are skipped (slot map keys are versioned, so a removed job never resolves).
#[derive(Debug)]
enum Waiting {
    /// FIFO, LIFO or adaptive LIFO: the discipline chooses at dequeue.
    Plain(VecDeque<JobKey>),
    /// CoDel for RPC queues, from the patterns crate.
    CoDel(RpcQueue<JobKey>),
}

impl Waiting {
    fn new(config: &QueueConfig) -> Waiting {
        let capacity = config.capacity.map_or(usize::MAX, |c| c as usize);
        match config.discipline {
            Discipline::CoDel {
                target,
                interval,
                adaptive_lifo,
            } => Waiting::CoDel(
                RpcQueue::new(&RpcQueueConfig {
                    target,
                    interval,
                    adaptive_lifo,
                    queue_capacity: capacity,
                })
                .expect("queue settings are validated with the scenario"),
            ),
            _ => Waiting::Plain(VecDeque::with_capacity(capacity.min(4096))),
        }
    }

    fn len(&self) -> usize {
        match self {
            Waiting::Plain(q) => q.len(),
            Waiting::CoDel(q) => q.len(),
        }
    }
}

/// Figures of one service, over all its replicas.
#[derive(Debug, Default, Clone)]
pub struct ServiceStats {
    /// Attempts that reached a replica.
    pub arrivals: u64,
    /// Jobs that finished successfully.
    pub ok: u64,
    /// Rejections and failures at the service, per reason index.
    pub failed: [u64; REASONS.len()],
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
    /// Replica ejections by outlier detection.
    pub ejections: u64,
    /// Crashes.
    pub crashes: u64,
    /// Times active health checks took a replica out of rotation.
    pub marked_unhealthy: u64,
    /// Messages to or from the service lost in the network.
    pub messages_lost: u64,
    /// Largest queue length of a replica.
    pub queue_depth_max: u64,
}

/// One service, compiled, with its replicas and its fault state.
#[derive(Debug)]
pub struct Svc {
    /// Its name.
    pub name: String,
    /// Its configuration.
    pub config: Service,
    work: Sampler,
    latency: Option<Sampler>,
    /// Per replica, the call spec of each downstream call.
    calls: Vec<Vec<u32>>,
    replicas: Vec<Replica>,
    limiters: Vec<Limiter>,
    pid: Option<(PidShedder, SimDuration)>,
    pid_delay_sum_ns: u64,
    pid_delay_count: u64,
    /// The current PID drop probability (0 without a PID shedder).
    pub pid_drop_ratio_max: f64,
    slowdown: f64,
    error_ratio: f64,
    workers_now: u32,
    extra_latency: Option<Sampler>,
    loss_ratio: f64,
    partitioned: bool,
    round_robin: usize,
    rng_work: RngStream,
    rng_fault: RngStream,
    rng_net: RngStream,
    rng_balance: RngStream,
    rng_admission: RngStream,
    rng_route: RngStream,
    /// Followers of coalesced cache misses, by replica and waiter id (each replica's
    /// coalescer numbers its waiters from zero).
    waiters: std::collections::BTreeMap<(u32, u64), JobKey>,
    /// Its figures.
    pub stats: ServiceStats,
    /// Total queue length over the replicas.
    pub queue_series: GaugeSeries,
    /// Busy workers over the replicas.
    pub busy_series: GaugeSeries,
    /// Attempts arriving per bucket.
    pub arrival_series: CountSeries,
    /// Attempts answered with success per bucket.
    pub ok_series: CountSeries,
    busy_total: u32,
    queued_total: u32,
    busy_since: SimTime,
}

/// Figures of one client.
#[derive(Debug, Clone)]
pub struct ClientStats {
    /// Requests offered per bucket.
    pub offered: CountSeries,
    /// Requests that succeeded, per bucket of completion.
    pub successes: CountSeries,
    /// Requests that failed, per bucket of completion.
    pub failures: CountSeries,
    /// Sum of success latencies in nanoseconds, per bucket (for the mean).
    pub latency_sum_ns: CountSeries,
    /// Latency of successful requests.
    pub latency: LatencyHistogram,
    /// Failed requests per reason index.
    pub failed: [u64; REASONS.len()],
}

/// One client, compiled.
#[derive(Debug)]
pub struct Cl {
    /// Its name.
    pub name: String,
    /// Its index of call spec.
    pub spec: u32,
    schedule: Option<Schedule>,
    think: Option<Sampler>,
    users: u32,
    change_points: Vec<SimTime>,
    spike: f64,
    rng: RngStream,
    /// Its figures.
    pub stats: ClientStats,
}

/// The world: every component and every request in flight.
#[derive(Debug)]
pub struct World {
    /// The clients, in name order.
    pub clients: Vec<Cl>,
    /// The services, in name order.
    pub services: Vec<Svc>,
    /// Every call site: the clients' first, then the services' in order.
    pub specs: Vec<CallSpec>,
    faults: Vec<Fault>,
    fault_active: Vec<bool>,
    calls: SlotMap<CallKey, CallState>,
    jobs: SlotMap<JobKey, Job>,
    scratch: Vec<JobKey>,
    /// Wakes a bulkhead release just produced, before they are tagged with their gate list.
    wake_buf: Vec<Wake>,
    /// Wakes waiting to be acted on, after the current event.
    wakes: Vec<(u32, Side, Wake)>,
    /// Nodes come first for the clients, then for the services (index = client index, or
    /// client count + service index).
    client_count: u32,
    /// sim-net's node of each of those, when the scenario has a `network` section.
    pub nodes: Vec<sim_net::NodeId>,
    /// Network copies ignored because they were duplicates of a message already handled.
    pub duplicates_ignored: u64,
    /// The window of the history to describe event by event, if asked for.
    pub trace_window: Option<(SimTime, SimTime)>,
    /// The events of that window, one line each (at most [`TRACE_LINES_MAX`]).
    pub trace: Vec<String>,
    /// Events of the window left out beyond [`TRACE_LINES_MAX`].
    pub trace_left_out: u64,
    /// The report bucket width.
    pub bucket: SimDuration,
}

type C<'a, 'b> = &'a mut Ctx<'b, Msg, Net>;

/// Sends `msg` to the world after `delay`, saturating at the end of representable time: the
/// delays that come straight from a scenario file (a fault's length, a restart, a controller's
/// interval) may be longer than what is left of the clock, and are then simply never reached.
fn later(ctx: C, delay: SimDuration, msg: Msg) {
    let at = ctx.now().saturating_add(delay);
    let me = ctx.me();
    ctx.send_at(me, at, msg);
}

fn concurrency_of(s: &Service) -> Option<ConcurrencyLimiter> {
    s.admission.iter().find_map(|a| match a {
        Admission::Concurrency(c) => Some(
            ConcurrencyLimiter::new(c)
                .expect("concurrency configs are validated with the scenario"),
        ),
        _ => None,
    })
}

fn coalescer_of(s: &Service) -> Option<Coalescer<u32>> {
    let config = s.cache.as_ref()?.coalesce.clone()?;
    Some(Coalescer::new(config).expect("coalesce configs are validated with the scenario"))
}

fn compile(d: &sim_core::Dist) -> Sampler {
    d.compile()
        .expect("distributions are checked by validation before a world is built")
}

impl Schedule {
    /// The scheduled rate at `t`, per second.
    pub fn rate_at(&self, t: SimTime) -> f64 {
        let t = t.since_start();
        match self {
            Schedule::Constant(r) => r.as_per_second(),
            Schedule::Steps(steps) => steps
                .iter()
                .rev()
                .find(|s| s.at <= t)
                .map_or(0.0, |s| s.rate.as_per_second()),
            Schedule::Ramp {
                from,
                to,
                start,
                end,
            } => {
                if t <= *start {
                    from.as_per_second()
                } else if t >= *end {
                    to.as_per_second()
                } else {
                    let f = (t - *start).as_secs_f64() / (*end - *start).as_secs_f64();
                    from.as_per_second() + f * (to.as_per_second() - from.as_per_second())
                }
            }
            Schedule::Spike {
                base,
                peak,
                start,
                end,
            } => {
                if t >= *start && t < *end {
                    peak.as_per_second()
                } else {
                    base.as_per_second()
                }
            }
        }
    }

    /// The instants where the rate changes (a ramp is followed in 100 steps).
    fn change_points(&self) -> Vec<SimDuration> {
        match self {
            Schedule::Constant(_) => Vec::new(),
            Schedule::Steps(steps) => steps.iter().map(|s| s.at).collect(),
            Schedule::Ramp { start, end, .. } => {
                let span = *end - *start;
                (0..=100).map(|i| *start + span * i / 100).collect()
            }
            Schedule::Spike { start, end, .. } => vec![*start, *end],
        }
    }
}

impl World {
    /// Builds the world of a validated scenario for one seed.
    pub fn new(s: &Scenario, seed: Seed, bucket: SimDuration) -> Self {
        let names: Vec<&String> = s.services.keys().collect();
        let service_index = |name: &str| {
            names
                .iter()
                .position(|n| n.as_str() == name)
                .expect("call targets are checked by validation")
        };
        let mut specs = Vec::new();
        let mut make_spec = |path: String,
                             replica: Option<u32>,
                             c: &Call,
                             rng: RngStream,
                             gate_rng: RngStream|
         -> u32 {
            let retry_at = c.stack.iter().position(|l| matches!(l, Layer::Retry(_)));
            let mut outer = Vec::new();
            let mut inner = Vec::new();
            let mut retry = None;
            for (i, layer) in c.stack.iter().enumerate() {
                if let Layer::Retry(r) = layer {
                    retry = Some(
                        RetryPolicy::new(r.clone())
                            .expect("retry configs are validated with the scenario"),
                    );
                }
                let Some(gate) = Gate::of(layer) else {
                    continue;
                };
                if retry_at.is_some_and(|r| i < r) {
                    outer.push(gate);
                } else {
                    inner.push(gate);
                }
            }
            specs.push(CallSpec {
                path,
                target: service_index(&c.target),
                replica,
                timeout: c.timeout,
                deadline: c.deadline,
                retry,
                gate_rng,
                weight: c.weight,
                outer,
                inner,
                rng,
                stats: CallStats::default(),
            });
            (specs.len() - 1) as u32
        };

        let mut clients = Vec::new();
        for (name, c) in &s.clients {
            let path = format!("clients.{name}.call");
            let rng = seed.stream(&format!("{path}/retry"));
            let gate_rng = seed.stream(&format!("{path}/gates"));
            let spec = make_spec(path, None, &c.call, rng, gate_rng);
            let (schedule, think, users) = match &c.load {
                Load::Open { rate } => (Some(rate.clone()), None, 0),
                Load::Closed { users, think } => (None, Some(compile(think)), *users),
            };
            let mut change_points: Vec<SimTime> = schedule
                .iter()
                .flat_map(|s| s.change_points())
                .chain(s.faults.iter().flat_map(|f| match &f.kind {
                    FaultKind::LoadSpike { client, .. } if client == name => {
                        let mut v = vec![f.at];
                        if let Some(d) = f.duration {
                            v.push(f.at.saturating_add(d));
                        }
                        v
                    }
                    _ => Vec::new(),
                }))
                .map(|d| SimTime::ZERO + d)
                .collect();
            change_points.sort();
            change_points.dedup();
            clients.push(Cl {
                name: name.clone(),
                spec,
                schedule,
                think,
                users,
                change_points,
                spike: 1.0,
                rng: seed.stream(&format!("clients/{name}/load")),
                stats: ClientStats {
                    offered: CountSeries::new(bucket),
                    successes: CountSeries::new(bucket),
                    failures: CountSeries::new(bucket),
                    latency_sum_ns: CountSeries::new(bucket),
                    latency: LatencyHistogram::new(),
                    failed: [0; REASONS.len()],
                },
            });
        }

        let mut services = Vec::new();
        for (name, sv) in &s.services {
            // Each replica has its own instance of every call site's patterns (its own breaker,
            // bulkhead, limiter and retry budget), as each process of a real service has.
            let mut calls = vec![Vec::new(); sv.replicas as usize];
            for (i, c) in sv.calls.iter().enumerate() {
                let path = format!("services.{name}.calls[{i}]");
                for (r, replica_calls) in calls.iter_mut().enumerate() {
                    let rng = seed.indexed_stream(&format!("{path}/retry"), r as u64);
                    let gate_rng = seed.indexed_stream(&format!("{path}/gates"), r as u64);
                    replica_calls.push(make_spec(path.clone(), Some(r as u32), c, rng, gate_rng));
                }
            }
            let replicas = (0..sv.replicas)
                .map(|_| Replica {
                    up: true,
                    busy: 0,
                    queue: Waiting::new(&sv.queue),
                    outstanding: 0,
                    consecutive_failures: 0,
                    ejected_until: SimTime::ZERO,
                    healthy: true,
                    probe_streak: 0,
                    coalescer: coalescer_of(sv),
                    concurrency: concurrency_of(sv),
                    cold_since: None,
                })
                .collect();
            let mut limiters = Vec::new();
            let mut pid = None;
            for a in &sv.admission {
                match a {
                    Admission::Limiter(l) => limiters.push(
                        Limiter::new(l).expect("limiter configs are validated with the scenario"),
                    ),
                    // Built per replica, with the replicas.
                    Admission::Concurrency(_) => {}
                    Admission::Pid {
                        interval,
                        controller,
                    } => {
                        pid = Some((
                            PidShedder::new(controller)
                                .expect("PID configs are validated with the scenario"),
                            *interval,
                        ))
                    }
                }
            }
            let stream = |what: &str| seed.stream(&format!("services/{name}/{what}"));
            services.push(Svc {
                name: name.clone(),
                config: sv.clone(),
                work: compile(&sv.work),
                latency: sv.latency.as_ref().map(compile),
                calls,
                replicas,
                limiters,
                pid,
                pid_delay_sum_ns: 0,
                pid_delay_count: 0,
                pid_drop_ratio_max: 0.0,
                slowdown: 1.0,
                error_ratio: 0.0,
                workers_now: sv.workers,
                extra_latency: None,
                loss_ratio: 0.0,
                partitioned: false,
                round_robin: 0,
                rng_work: stream("work"),
                rng_fault: stream("faults"),
                rng_net: stream("network"),
                rng_balance: stream("balancer"),
                rng_admission: stream("admission"),
                rng_route: stream("route"),
                waiters: std::collections::BTreeMap::new(),
                stats: ServiceStats::default(),
                queue_series: GaugeSeries::new(bucket),
                busy_series: GaugeSeries::new(bucket),
                arrival_series: CountSeries::new(bucket),
                ok_series: CountSeries::new(bucket),
                busy_total: 0,
                queued_total: 0,
                busy_since: SimTime::ZERO,
            });
        }

        World {
            clients,
            services,
            specs,
            faults: s.faults.clone(),
            fault_active: vec![false; s.faults.len()],
            calls: SlotMap::with_key(),
            jobs: SlotMap::with_key(),
            scratch: Vec::new(),
            wake_buf: Vec::new(),
            wakes: Vec::new(),
            client_count: s.clients.len() as u32,
            nodes: Vec::new(),
            duplicates_ignored: 0,
            trace_window: None,
            trace: Vec::new(),
            trace_left_out: 0,
            bucket,
        }
    }

    /// The events that start a run: first arrivals, users, faults, controller ticks.
    pub fn initial_events(&mut self) -> Vec<(SimTime, Msg)> {
        let mut events = Vec::new();
        for (i, c) in self.clients.iter_mut().enumerate() {
            let client = i as u32;
            if c.schedule.is_some() {
                events.push((
                    SimTime::ZERO,
                    Msg::Arrival {
                        client,
                        emit: false,
                    },
                ));
            } else if let Some(think) = &c.think {
                for user in 0..c.users {
                    // Users start spread over one think time, not all at once.
                    let start = think.sample(&mut c.rng);
                    events.push((SimTime::ZERO + start, Msg::Think { client, user }));
                }
            }
        }
        for (i, f) in self.faults.iter().enumerate() {
            events.push((SimTime::ZERO + f.at, Msg::FaultStart { fault: i as u32 }));
        }
        for (i, s) in self.services.iter().enumerate() {
            if let Some(h) = &s.config.health_check {
                events.push((
                    SimTime::ZERO + h.interval,
                    Msg::HealthTick { service: i as u32 },
                ));
            }
            if let Some((_, interval)) = &s.pid {
                events.push((
                    SimTime::ZERO + *interval,
                    Msg::PidTick { service: i as u32 },
                ));
            }
        }
        events
    }

    /// Jobs and calls in flight (for the flat-memory check).
    pub fn in_flight(&self) -> (usize, usize) {
        (self.calls.len(), self.jobs.len())
    }

    /// Client requests still waiting for their outcome (in an attempt or a backoff).
    pub fn requests_in_flight(&self) -> u64 {
        self.calls
            .values()
            .filter(|c| matches!(c.owner, Owner::Client { .. }))
            .count() as u64
    }

    /// Describes one event of the trace window.
    fn record(&mut self, now: SimTime, msg: &Msg) {
        if self.trace.len() >= TRACE_LINES_MAX {
            self.trace_left_out += 1;
            return;
        }
        // Calls are named by their site and slot (`clients.web.call #17`), so one request's
        // story can be followed through the window; a slot is reused only after its call ends.
        let call = |w: &World, k: CallKey| match w.calls.get(k) {
            Some(c) => format!(
                "{} #{}",
                w.specs[c.spec as usize].path,
                k.data().as_ffi() & 0xffff_ffff
            ),
            None => "(a call already over)".to_string(),
        };
        let job = |w: &World, k: JobKey| match w.jobs.get(k) {
            Some(j) => format!(
                "{}/{} for {} attempt {}",
                w.services[j.service as usize].name,
                j.replica,
                call(w, j.call),
                j.attempt
            ),
            None => "(a job already over)".to_string(),
        };
        let outcome = |o: &Outcome| match o {
            Outcome::Ok => "ok".to_string(),
            Outcome::Fail(r) => r.name().to_string(),
        };
        let (what, detail) = match msg {
            Msg::Net(_) => (
                "network",
                "a message reaches the end of its link".to_string(),
            ),
            Msg::Arrival { client, emit } => (
                if *emit { "arrival" } else { "rate-change" },
                self.clients[*client as usize].name.clone(),
            ),
            Msg::Think { client, user } => (
                "user-ready",
                format!("{} user {user}", self.clients[*client as usize].name),
            ),
            Msg::Deliver { job: k } => ("deliver", job(self, *k)),
            Msg::WorkDone { job: k } => ("work-done", job(self, *k)),
            Msg::Reply {
                call: k,
                attempt,
                outcome: o,
                ..
            } => (
                "reply",
                format!("{} attempt {attempt} {}", call(self, *k), outcome(o)),
            ),
            Msg::Timeout { call: k, attempt } => {
                ("timeout", format!("{} attempt {attempt}", call(self, *k)))
            }
            Msg::Retry { call: k } => ("retry", call(self, *k)),
            Msg::Cancel { job: k } => ("cancel", job(self, *k)),
            Msg::FaultStart { fault } => ("fault-start", format!("faults[{fault}]")),
            Msg::FaultEnd { fault } => ("fault-end", format!("faults[{fault}]")),
            Msg::Restart { service, replica } => (
                "restart",
                format!("{}/{replica}", self.services[*service as usize].name),
            ),
            Msg::PidTick { service } => {
                ("pid-update", self.services[*service as usize].name.clone())
            }
            Msg::HealthTick { service } => (
                "health-check",
                self.services[*service as usize].name.clone(),
            ),
            Msg::BulkheadExpire { spec, .. } => (
                "bulkhead-wait-ends",
                self.specs[*spec as usize].path.clone(),
            ),
        };
        self.trace
            .push(format!("{:<14} {what:<12} {detail}", now.to_string()));
    }

    /// Asserts what only a bug can break: each replica's busy workers are exactly its jobs
    /// that hold one, the queue gauges count the live queued jobs, and every job following a
    /// coalesced fetch is registered to be woken.
    pub fn check_invariants(&self) {
        for (svc, s) in self.services.iter().enumerate() {
            let mut queued = 0;
            for (r, replica) in s.replicas.iter().enumerate() {
                let mine = |j: &&Job| j.service as usize == svc && j.replica as usize == r;
                let holding = self
                    .jobs
                    .values()
                    .filter(mine)
                    .filter(|j| {
                        matches!(j.phase, Phase::Working | Phase::Calling | Phase::Following)
                    })
                    .count();
                assert_eq!(
                    replica.busy as usize, holding,
                    "{} replica {r}: busy workers",
                    s.name
                );
                queued += self
                    .jobs
                    .values()
                    .filter(mine)
                    .filter(|j| j.phase == Phase::Queued)
                    .count();
            }
            assert_eq!(s.queued_total as usize, queued, "{}: queued jobs", s.name);
            for (key, j) in &self.jobs {
                if j.service as usize == svc && j.phase == Phase::Following {
                    assert!(
                        s.waiters.values().any(|k| *k == key),
                        "{}: a follower no fetch will wake",
                        s.name
                    );
                }
            }
        }
    }

    /// Closes the busy-time accounting at `end`.
    pub fn finish(&mut self, end: SimTime) {
        for s in &mut self.services {
            let held = end.saturating_duration_since(s.busy_since).as_nanos();
            s.stats.busy_ns += u64::from(s.busy_total) * held;
            s.busy_since = end;
        }
    }

    // ---- gauges ------------------------------------------------------------------------

    fn busy_change(&mut self, now: SimTime, svc: usize, delta: i32) {
        let s = &mut self.services[svc];
        let held = now.saturating_duration_since(s.busy_since).as_nanos();
        s.stats.busy_ns += u64::from(s.busy_total) * held;
        s.busy_since = now;
        s.busy_total = s.busy_total.checked_add_signed(delta).expect("busy count");
        s.busy_series.set(now, f64::from(s.busy_total));
    }

    fn queue_change(&mut self, now: SimTime, svc: usize, delta: i32) {
        let s = &mut self.services[svc];
        s.queued_total = s
            .queued_total
            .checked_add_signed(delta)
            .expect("queue count");
        s.queue_series.set(now, f64::from(s.queued_total));
    }

    // ---- network -----------------------------------------------------------------------

    /// The one-way delay of a message to or from `svc`, or `None` if it is lost.
    fn network(&mut self, ctx: C, svc: usize) -> Option<SimDuration> {
        let s = &mut self.services[svc];
        if s.partitioned || (s.loss_ratio > 0.0 && bernoulli(&mut s.rng_net, s.loss_ratio)) {
            s.stats.messages_lost += 1;
            ctx.digest_note(0x1055 ^ svc as u64);
            return None;
        }
        let mut d = SimDuration::ZERO;
        if let Some(l) = &s.latency {
            d += l.sample(&mut s.rng_net);
        }
        if let Some(l) = &s.extra_latency {
            d += l.sample(&mut s.rng_net);
        }
        Some(d)
    }

    // ---- clients -----------------------------------------------------------------------

    fn on_arrival(&mut self, ctx: C, client: usize, emit: bool) {
        let now = ctx.now();
        if emit {
            self.offer(ctx, client, u32::MAX);
        }
        let c = &mut self.clients[client];
        let schedule = c
            .schedule
            .as_ref()
            .expect("arrivals are for open-loop clients");
        let rate = schedule.rate_at(now) * c.spike;
        let i = c.change_points.partition_point(|t| *t <= now);
        let next_change = c.change_points.get(i).copied();
        let client_id = client as u32;
        let next = if rate > 0.0 {
            let gap = SimDuration::from_nanos_f64(exponential(&mut c.rng, 1e9 / rate))
                .max(SimDuration::from_nanos(1));
            let t = now.saturating_add(gap);
            // Memorylessness makes a redraw at each change point exact for piecewise rates.
            match next_change {
                Some(change) if t > change => Some((change, false)),
                _ => Some((t, true)),
            }
        } else {
            next_change.map(|change| (change, false))
        };
        if let Some((t, emit)) = next {
            ctx.send_at(
                ctx.me(),
                t,
                Msg::Arrival {
                    client: client_id,
                    emit,
                },
            );
        }
    }

    fn offer(&mut self, ctx: C, client: usize, user: u32) {
        let now = ctx.now();
        let c = &mut self.clients[client];
        c.stats.offered.add(now, 1);
        let spec = c.spec;
        self.start_call(
            ctx,
            spec,
            Owner::Client {
                client: client as u32,
                user,
                offered_at: now,
            },
            SimTime::MAX,
        );
    }

    fn client_done(&mut self, ctx: C, client: u32, user: u32, offered_at: SimTime, o: Outcome) {
        let now = ctx.now();
        let c = &mut self.clients[client as usize];
        match o {
            Outcome::Ok => {
                let latency = now - offered_at;
                c.stats.successes.add(now, 1);
                c.stats.latency.record(latency);
                c.stats.latency_sum_ns.add(now, latency.as_nanos());
            }
            Outcome::Fail(r) => {
                c.stats.failures.add(now, 1);
                c.stats.failed[r.index()] += 1;
            }
        }
        if user != u32::MAX {
            let think = c
                .think
                .as_ref()
                .expect("closed-loop clients have a think time")
                .sample(&mut c.rng);
            ctx.send_self(think, Msg::Think { client, user });
        }
    }

    // ---- calls -------------------------------------------------------------------------

    fn start_call(&mut self, ctx: C, spec: u32, owner: Owner, parent_deadline: SimTime) -> CallKey {
        let now = ctx.now();
        let sp = &mut self.specs[spec as usize];
        sp.stats.calls += 1;
        let deadline = sp
            .deadline
            .map_or(SimTime::MAX, |d| now.saturating_add(d))
            .min(parent_deadline);
        let key = self.calls.insert(CallState {
            spec,
            owner,
            deadline,
            attempt: 0,
            in_flight: false,
            job: JobKey::null(),
            replica: 0,
            timer: None,
            source: match owner {
                Owner::Client { client, .. } => client,
                Owner::Job { job, .. } => self.client_count + self.jobs[job].service,
            },
            retry: None,
            outer: Permits::default(),
            inner: Permits::default(),
            waiting: None,
        });
        if now >= deadline {
            self.finish_call(ctx, key, Outcome::Fail(Reason::Deadline), false);
            return key;
        }
        self.continue_outer(ctx, key, 0);
        key
    }

    /// Passes a call through its once-per-call gates from `from`, then starts its first
    /// attempt (or makes it wait at a bulkhead, or fails it).
    fn continue_outer(&mut self, ctx: C, key: CallKey, from: usize) {
        let now = ctx.now();
        let call = &mut self.calls[key];
        let spec = call.spec;
        let sp = &mut self.specs[spec as usize];
        let id = key.data().as_ffi();
        let acquired = acquire_from(
            &mut sp.outer,
            from,
            now,
            &mut call.outer,
            &mut sp.gate_rng,
            id,
            &mut self.wake_buf,
        );
        match acquired {
            Acquire::Done => {
                if let Some(policy) = &mut sp.retry {
                    let deadline = (call.deadline != SimTime::MAX).then_some(call.deadline);
                    call.retry = Some(policy.begin(now, deadline, Safety::Idempotent));
                }
                self.start_attempt(ctx, key);
            }
            Acquire::Wait { gate, deadline } => self.wait(ctx, key, Side::Outer, gate, deadline),
            Acquire::Refused(reason) => {
                sp.stats.rejected[reason.index()] += 1;
                self.tag_wakes(spec, Side::Outer);
                self.finish_call(ctx, key, Outcome::Fail(reason), false);
            }
        }
    }

    /// Parks a call at a bulkhead until a slot is granted or the wait times out.
    fn wait(&mut self, ctx: C, key: CallKey, side: Side, gate: usize, deadline: SimTime) {
        let call = &mut self.calls[key];
        call.waiting = Some((side, gate));
        let spec = call.spec;
        self.specs[spec as usize].stats.bulkhead_waits += 1;
        let me = ctx.me();
        ctx.send_at(
            me,
            deadline,
            Msg::BulkheadExpire {
                spec,
                inner: side == Side::Inner,
                gate: gate as u8,
            },
        );
    }

    /// Moves the wakes of the last release into the queue of wakes to act on.
    fn tag_wakes(&mut self, spec: u32, side: Side) {
        for w in self.wake_buf.drain(..) {
            self.wakes.push((spec, side, w));
        }
    }

    /// Acts on bulkhead wakes: a granted slot resumes its call after that gate, a timed-out
    /// wait fails it. A slot granted to a call that no longer waits is given back.
    fn process_wakes(&mut self, ctx: C) {
        let now = ctx.now();
        // Bounded: each round acts on wakes that releases produced, and every wake consumes
        // a waiter, of which there are finitely many.
        while !self.wakes.is_empty() {
            let round = std::mem::take(&mut self.wakes);
            for (spec, side, w) in round {
                let key = CallKey::from(KeyData::from_ffi(w.id));
                let waits_here = self
                    .calls
                    .get(key)
                    .is_some_and(|c| c.spec == spec && c.waiting == Some((side, w.gate)));
                match (waits_here, w.permit) {
                    (true, Some(permit)) => {
                        let call = &mut self.calls[key];
                        call.waiting = None;
                        match side {
                            Side::Outer => {
                                call.outer.grant(w.gate, permit);
                                self.continue_outer(ctx, key, w.gate + 1);
                            }
                            Side::Inner => {
                                call.inner.grant(w.gate, permit);
                                self.continue_inner(ctx, key, w.gate + 1);
                            }
                        }
                    }
                    (true, None) => self.fail_waiting(ctx, key),
                    (false, Some(permit)) => {
                        let mut lone = Permits::default();
                        lone.grant(w.gate, permit);
                        let sp = &mut self.specs[spec as usize];
                        let gates = match side {
                            Side::Outer => &mut sp.outer,
                            Side::Inner => &mut sp.inner,
                        };
                        release_all(gates, now, &mut lone, None, &mut self.wake_buf);
                        self.tag_wakes(spec, side);
                    }
                    (false, None) => {}
                }
            }
        }
    }

    /// A call's wait at a bulkhead timed out: it fails as if the bulkhead were full.
    fn fail_waiting(&mut self, ctx: C, key: CallKey) {
        let now = ctx.now();
        let call = &mut self.calls[key];
        let Some((side, _)) = call.waiting.take() else {
            return;
        };
        let spec = call.spec;
        let sp = &mut self.specs[spec as usize];
        sp.stats.rejected[Reason::BulkheadFull.index()] += 1;
        let (gates, permits) = match side {
            Side::Outer => (&mut sp.outer, &mut call.outer),
            Side::Inner => (&mut sp.inner, &mut call.inner),
        };
        release_all(gates, now, permits, None, &mut self.wake_buf);
        self.tag_wakes(spec, side);
        let failed = Outcome::Fail(Reason::BulkheadFull);
        match side {
            Side::Outer => self.finish_call(ctx, key, failed, false),
            Side::Inner => self.attempt_done(ctx, key, failed, false, None),
        }
    }

    fn start_attempt(&mut self, ctx: C, key: CallKey) {
        let call = &mut self.calls[key];
        call.attempt += 1;
        self.specs[call.spec as usize].stats.attempts += 1;
        self.continue_inner(ctx, key, 0);
    }

    /// Passes an attempt through its per-attempt gates from `from`, then sends it (or makes
    /// it wait at a bulkhead, or fails it without touching a replica).
    fn continue_inner(&mut self, ctx: C, key: CallKey, from: usize) {
        let now = ctx.now();
        let call = &mut self.calls[key];
        let spec = call.spec;
        let sp = &mut self.specs[spec as usize];
        let id = key.data().as_ffi();
        let acquired = acquire_from(
            &mut sp.inner,
            from,
            now,
            &mut call.inner,
            &mut sp.gate_rng,
            id,
            &mut self.wake_buf,
        );
        match acquired {
            Acquire::Done => self.send_attempt(ctx, key),
            Acquire::Wait { gate, deadline } => self.wait(ctx, key, Side::Inner, gate, deadline),
            Acquire::Refused(reason) => {
                sp.stats.rejected[reason.index()] += 1;
                self.tag_wakes(spec, Side::Inner);
                self.attempt_done(ctx, key, Outcome::Fail(reason), false, None);
            }
        }
    }

    /// Sends an attempt that passed its gates to a replica chosen by the balancer.
    fn send_attempt(&mut self, ctx: C, key: CallKey) {
        let now = ctx.now();
        let call = &mut self.calls[key];
        let attempt = call.attempt;
        let deadline = call.deadline;
        let spec = call.spec;
        let sp = &mut self.specs[spec as usize];
        if now >= deadline {
            // A wait for a bulkhead slot outlasted the call's deadline: nothing is sent.
            release_all(
                &mut sp.inner,
                now,
                &mut call.inner,
                None,
                &mut self.wake_buf,
            );
            self.tag_wakes(spec, Side::Inner);
            self.attempt_done(ctx, key, Outcome::Fail(Reason::Deadline), false, None);
            return;
        }
        let attempt_deadline = sp
            .timeout
            .map_or(SimTime::MAX, |t| now.saturating_add(t))
            .min(deadline);
        let svc = sp.target;
        let replica = self.pick_replica(now, svc);
        let call = &mut self.calls[key];
        call.in_flight = true;
        call.replica = replica as u32;
        self.services[svc].replicas[replica].outstanding += 1;
        if attempt_deadline != SimTime::MAX {
            let timer = ctx.timer_self(attempt_deadline - now, Msg::Timeout { call: key, attempt });
            self.calls[key].timer = Some(timer);
        }
        let job = self.jobs.insert(Job {
            service: svc as u32,
            replica: replica as u32,
            call: key,
            attempt,
            deadline: attempt_deadline,
            enqueued: now,
            started: now,
            phase: Phase::Transit,
            timer: None,
            next_call: 0,
            pending: 0,
            failed: false,
            children: [CallKey::null(); CALLS_MAX],
            abandoned: false,
            lead_key: None,
            admitted: None,
        });
        self.calls[key].job = job;
        let source = self.calls[key].source;
        let target = self.client_count + svc as u32;
        if !self.transmit(ctx, svc, source, target, Packet::Deliver { job }) {
            self.jobs.remove(job);
        }
    }

    /// Sends `packet` from node `source` to node `target`, through sim-net when the scenario
    /// has a network, else with the service's own latency and network faults. False when it
    /// is lost at once (a message lost later just never arrives).
    fn transmit(&mut self, ctx: C, svc: usize, source: u32, target: u32, packet: Packet) -> bool {
        if !self.nodes.is_empty() {
            let (from, to) = (self.nodes[source as usize], self.nodes[target as usize]);
            let outcome = sim_net::send(ctx, from, to, PACKET_BYTES, packet);
            return matches!(outcome, sim_net::SendOutcome::Scheduled { .. });
        }
        let Some(delay) = self.network(ctx, svc) else {
            return false;
        };
        let msg = match packet {
            Packet::Deliver { job } => Msg::Deliver { job },
            Packet::Reply {
                call,
                attempt,
                outcome,
                retry_after,
            } => Msg::Reply {
                call,
                attempt,
                outcome,
                retry_after,
            },
            Packet::Cancel { job } => Msg::Cancel { job },
        };
        ctx.send_self(delay, msg);
        true
    }

    fn on_net(&mut self, ctx: C, delivery: sim_net::Delivery<Packet>) {
        let Some(arrived) = sim_net::receive(ctx, delivery).delivered() else {
            return;
        };
        // A duplicated copy carries a message already acted on; the model's messages are
        // not idempotent operations, so the copy is counted and ignored.
        if arrived.duplicate {
            self.duplicates_ignored += 1;
            return;
        }
        match arrived.payload {
            Packet::Deliver { job } => self.on_deliver(ctx, job),
            Packet::Reply {
                call,
                attempt,
                outcome,
                retry_after,
            } => self.on_reply(ctx, call, attempt, outcome, retry_after),
            Packet::Cancel { job } => self.on_cancel(ctx, job),
        }
    }

    fn pick_replica(&mut self, now: SimTime, svc: usize) -> usize {
        let s = &mut self.services[svc];
        let n = s.replicas.len();
        if n == 1 {
            return 0;
        }
        let eligible = |r: &Replica| r.ejected_until <= now && r.healthy;
        let any_eligible = s.replicas.iter().any(eligible);
        let ok = |r: &Replica| !any_eligible || eligible(r);
        match s.config.balancer {
            Balancer::RoundRobin => {
                for _ in 0..n {
                    let i = s.round_robin % n;
                    s.round_robin = (s.round_robin + 1) % n;
                    if ok(&s.replicas[i]) {
                        return i;
                    }
                }
                0
            }
            Balancer::Random => {
                let candidates = s.replicas.iter().filter(|r| ok(r)).count() as u64;
                let k = uniform_below(&mut s.rng_balance, candidates) as usize;
                s.replicas
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| ok(r))
                    .nth(k)
                    .map_or(0, |(i, _)| i)
            }
            Balancer::LeastOutstanding => s
                .replicas
                .iter()
                .enumerate()
                .filter(|(_, r)| ok(r))
                .min_by_key(|(i, r)| (r.outstanding, *i))
                .map_or(0, |(i, _)| i),
            Balancer::PowerOfTwo => {
                let mut pick = || loop {
                    let i = uniform_below(&mut s.rng_balance, n as u64) as usize;
                    if ok(&s.replicas[i]) {
                        break i;
                    }
                };
                let a = pick();
                let b = pick();
                if s.replicas[b].outstanding < s.replicas[a].outstanding {
                    b
                } else {
                    a
                }
            }
        }
    }

    fn on_reply(
        &mut self,
        ctx: C,
        key: CallKey,
        attempt: u32,
        outcome: Outcome,
        retry_after: Option<SimDuration>,
    ) {
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        if call.attempt != attempt || !call.in_flight {
            self.specs[call.spec as usize].stats.late_replies += 1;
            return;
        }
        if let Some(t) = call.timer.take() {
            ctx.cancel(t);
        }
        self.attempt_done(ctx, key, outcome, true, retry_after);
    }

    fn on_timeout(&mut self, ctx: C, key: CallKey, attempt: u32) {
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        if call.attempt != attempt || !call.in_flight {
            return;
        }
        call.timer = None;
        let job = call.job;
        let spec = call.spec as usize;
        let source = call.source;
        self.specs[spec].stats.timeouts += 1;
        self.abandon_job(ctx, self.specs[spec].target, source, job);
        self.attempt_done(ctx, key, Outcome::Fail(Reason::Timeout), true, None);
    }

    /// The caller (at node `source`) gave up on `job`: mark it, and cancel it if the
    /// service listens.
    fn abandon_job(&mut self, ctx: C, svc: usize, source: u32, job: JobKey) {
        if let Some(j) = self.jobs.get_mut(job) {
            j.abandoned = true;
            if self.services[svc].config.on_abandoned == Abandoned::Cancel {
                let target = self.client_count + svc as u32;
                self.transmit(ctx, svc, source, target, Packet::Cancel { job });
            }
        }
    }

    fn attempt_done(
        &mut self,
        ctx: C,
        key: CallKey,
        outcome: Outcome,
        sent: bool,
        retry_after: Option<SimDuration>,
    ) {
        let now = ctx.now();
        let call = &mut self.calls[key];
        let spec = call.spec as usize;
        let replica = call.replica as usize;
        call.in_flight = false;
        let sp = &mut self.specs[spec];
        let svc = sp.target;
        if sent {
            release_all(
                &mut sp.inner,
                now,
                &mut call.inner,
                Some(outcome),
                &mut self.wake_buf,
            );
            self.tag_wakes(spec as u32, Side::Inner);
            self.observe_replica(now, svc, replica, outcome);
        }
        let call = &mut self.calls[key];
        let sp = &mut self.specs[spec];
        let (Some(policy), Some(request)) = (&mut sp.retry, &mut call.retry) else {
            self.finish_call(ctx, key, outcome, true);
            return;
        };
        let Outcome::Fail(reason) = outcome else {
            policy.on_success(now, request);
            self.finish_call(ctx, key, outcome, true);
            return;
        };
        match policy.on_failure(now, request, failure_of(reason, retry_after), &mut sp.rng) {
            RetryDecision::Retry { after, .. } => {
                sp.stats.retries += 1;
                ctx.send_self(after, Msg::Retry { call: key });
            }
            RetryDecision::GiveUp { reason: why } => {
                if why == GiveUpReason::BudgetExhausted {
                    sp.stats.budget_exhausted += 1;
                }
                self.finish_call(ctx, key, outcome, true);
            }
        }
    }

    /// Outlier detection: consecutive failures seen by callers eject a replica.
    fn observe_replica(&mut self, now: SimTime, svc: usize, replica: usize, outcome: Outcome) {
        let s = &mut self.services[svc];
        s.replicas[replica].outstanding -= 1;
        let Some(o) = &s.config.outlier else {
            return;
        };
        if outcome == Outcome::Ok {
            s.replicas[replica].consecutive_failures = 0;
            return;
        }
        let r = &mut s.replicas[replica];
        r.consecutive_failures += 1;
        if r.consecutive_failures < o.consecutive_failures || r.ejected_until > now {
            return;
        }
        let ejected = s.replicas.iter().filter(|r| r.ejected_until > now).count();
        let n = s.replicas.len();
        let allowed = ((n as f64 * o.max_ejection_percent / 100.0) as usize).max(1);
        if ejected < allowed {
            let r = &mut s.replicas[replica];
            r.ejected_until = now + o.ejection;
            r.consecutive_failures = 0;
            s.stats.ejections += 1;
        }
    }

    fn on_retry(&mut self, ctx: C, key: CallKey) {
        if self.calls.contains_key(key) {
            self.start_attempt(ctx, key);
        }
    }

    fn finish_call(&mut self, ctx: C, key: CallKey, outcome: Outcome, admitted: bool) {
        let now = ctx.now();
        let mut call = self.calls.remove(key).expect("finishing a live call");
        let sp = &mut self.specs[call.spec as usize];
        if admitted {
            release_all(
                &mut sp.outer,
                now,
                &mut call.outer,
                Some(outcome),
                &mut self.wake_buf,
            );
            self.tag_wakes(call.spec, Side::Outer);
        }
        let sp = &mut self.specs[call.spec as usize];
        match outcome {
            Outcome::Ok => sp.stats.successes += 1,
            Outcome::Fail(_) => sp.stats.failures += 1,
        }
        match call.owner {
            Owner::Client {
                client,
                user,
                offered_at,
            } => self.client_done(ctx, client, user, offered_at, outcome),
            Owner::Job { job, index } => self.child_done(ctx, job, index, outcome),
        }
    }

    /// Drops a call whose owner no longer needs it, cancelling its attempt downstream.
    fn cancel_call(&mut self, ctx: C, key: CallKey) {
        let now = ctx.now();
        let Some(mut call) = self.calls.remove(key) else {
            return;
        };
        if let Some(t) = call.timer {
            ctx.cancel(t);
        }
        let spec = call.spec;
        let sp = &mut self.specs[spec as usize];
        let id = key.data().as_ffi();
        match call.waiting {
            Some((Side::Outer, gate)) => leave_queue(&mut sp.outer, gate, now, id),
            Some((Side::Inner, gate)) => leave_queue(&mut sp.inner, gate, now, id),
            None => {}
        }
        release_all(
            &mut sp.outer,
            now,
            &mut call.outer,
            None,
            &mut self.wake_buf,
        );
        self.tag_wakes(spec, Side::Outer);
        let sp = &mut self.specs[spec as usize];
        if let (Some(policy), Some(request)) = (&mut sp.retry, &mut call.retry) {
            policy.abandon(now, request);
        }
        let svc = sp.target;
        // Gates not reached hold nothing, so releasing the whole list is always right.
        release_all(
            &mut sp.inner,
            now,
            &mut call.inner,
            None,
            &mut self.wake_buf,
        );
        self.tag_wakes(spec, Side::Inner);
        if call.in_flight {
            self.services[svc].replicas[call.replica as usize].outstanding -= 1;
            self.abandon_job(ctx, svc, call.source, call.job);
        }
    }

    // ---- jobs --------------------------------------------------------------------------

    fn on_deliver(&mut self, ctx: C, job: JobKey) {
        let now = ctx.now();
        let Some(j) = self.jobs.get(job) else {
            return;
        };
        let svc = j.service as usize;
        let r = j.replica as usize;
        let s = &mut self.services[svc];
        s.stats.arrivals += 1;
        s.arrival_series.add(now, 1);
        if !s.replicas[r].up {
            self.reply(ctx, job, Outcome::Fail(Reason::Unavailable), None);
            return;
        }
        let one = Cost::new(1).expect("a cost of one is valid");
        // A limiter's refusal says when to come back; other overload refusals send the
        // service's configured Retry-After, if any.
        let mut retry_after = s.config.retry_after;
        let limited = s.limiters.iter_mut().find_map(|l| {
            let d = l.acquire(now, one);
            (!d.allowed()).then_some(d.retry_after)
        });
        let rejected = if let Some(hint) = limited {
            retry_after = hint.or(retry_after);
            Some(Reason::RateLimited)
        } else if s
            .pid
            .as_ref()
            .is_some_and(|(p, _)| p.should_drop(&mut s.rng_admission))
        {
            Some(Reason::Shed)
        } else if let Some(limiter) = &mut s.replicas[r].concurrency {
            // Last, so that a request refused above holds no slot.
            match limiter.try_acquire(now) {
                Ok(token) => {
                    self.jobs[job].admitted = Some(token);
                    None
                }
                Err(_) => Some(Reason::ConcurrencyLimited),
            }
        } else {
            None
        };
        if let Some(reason) = rejected {
            self.reply(ctx, job, Outcome::Fail(reason), retry_after);
            return;
        }
        let replica = &mut s.replicas[r];
        if replica.busy < s.workers_now && replica.queue.len() == 0 {
            self.start_work(ctx, job);
            return;
        }
        let accepted = match &mut replica.queue {
            Waiting::Plain(q) => {
                let room = s.config.queue.capacity.is_none_or(|c| (q.len() as u32) < c);
                if room {
                    q.push_back(job);
                }
                room
            }
            Waiting::CoDel(q) => q.enqueue(now, job).is_ok(),
        };
        if !accepted {
            let hint = self.services[svc].config.retry_after;
            self.reply(ctx, job, Outcome::Fail(Reason::QueueFull), hint);
            return;
        }
        let depth = replica.queue.len() as u64;
        s.stats.queue_depth_max = s.stats.queue_depth_max.max(depth);
        let j = &mut self.jobs[job];
        j.phase = Phase::Queued;
        j.enqueued = now;
        self.queue_change(now, svc, 1);
    }

    /// Starts work on `job`, or drops it if it expired and the service drops expired work.
    fn start_work(&mut self, ctx: C, job: JobKey) -> bool {
        let now = ctx.now();
        let j = &mut self.jobs[job];
        let svc = j.service as usize;
        let r = j.replica as usize;
        let s = &mut self.services[svc];
        if s.config.on_abandoned == Abandoned::DropExpired && now >= j.deadline {
            s.stats.dropped_expired += 1;
            self.take_job(now, job, Some(Outcome::Fail(Reason::Deadline)));
            return false;
        }
        let replica = &mut s.replicas[r];
        replica.busy += 1;
        let in_flight = f64::from(replica.busy) + replica.queue.len() as f64;
        let factor = s.slowdown * (1.0 + s.config.work_per_in_flight * in_flight);
        let work = s.work.sample(&mut s.rng_work);
        // The common case (no slowdown, no growth with load) skips the float round trip.
        // Scaled work is capped like any sample, so `now + work` stays representable.
        let work = if factor == 1.0 {
            work
        } else {
            work.mul_f64(factor).min(SAMPLE_MAX)
        };
        j.phase = Phase::Working;
        j.started = now;
        j.timer = Some(ctx.timer_self(work, Msg::WorkDone { job }));
        self.busy_change(now, svc, 1);
        true
    }

    /// Lets free workers of a replica take waiting jobs.
    fn dequeue(&mut self, ctx: C, svc: usize, r: usize) {
        let now = ctx.now();
        loop {
            let s = &mut self.services[svc];
            let replica = &mut s.replicas[r];
            if replica.busy >= s.workers_now || !replica.up {
                return;
            }
            let mut shed = std::mem::take(&mut self.scratch);
            shed.clear();
            let next = match &mut replica.queue {
                Waiting::Plain(q) => {
                    let newest_first = match &s.config.queue.discipline {
                        Discipline::Lifo => true,
                        Discipline::AdaptiveLifo { threshold } => q.front().is_some_and(|f| {
                            self.jobs
                                .get(*f)
                                .is_some_and(|j| now - j.enqueued > *threshold)
                        }),
                        _ => false,
                    };
                    if newest_first {
                        q.pop_back()
                    } else {
                        q.pop_front()
                    }
                }
                Waiting::CoDel(q) => {
                    let out = q.dequeue(now);
                    shed.extend(out.dropped.into_iter().map(|(job, _)| job));
                    out.delivered.map(|(job, _)| job)
                }
            };
            for &job in &shed {
                if self.jobs.contains_key(job) {
                    self.queue_change(now, svc, -1);
                    let hint = self.services[svc].config.retry_after;
                    self.reply(ctx, job, Outcome::Fail(Reason::Shed), hint);
                }
            }
            self.scratch = shed;
            let Some(job) = next else {
                return;
            };
            // A job cancelled while it waited was already taken off the gauge.
            let Some(j) = self.jobs.get(job) else {
                continue;
            };
            let sojourn = now - j.enqueued;
            self.queue_change(now, svc, -1);
            let s = &mut self.services[svc];
            if s.pid.is_some() {
                s.pid_delay_sum_ns += sojourn.as_nanos();
                s.pid_delay_count += 1;
            }
            self.start_work(ctx, job);
        }
    }

    fn on_work_done(&mut self, ctx: C, job: JobKey) {
        let now = ctx.now();
        let Some(j) = self.jobs.get_mut(job) else {
            return;
        };
        j.timer = None;
        let svc = j.service as usize;
        let r = j.replica as usize;
        let s = &mut self.services[svc];
        if s.error_ratio > 0.0 && bernoulli(&mut s.rng_fault, s.error_ratio) {
            self.finish_job(ctx, job, Outcome::Fail(Reason::Error));
            return;
        }
        if let Some(cache) = &s.config.cache {
            let warm = match s.replicas[r].cold_since {
                Some(cold) if !cache.warmup.is_zero() => {
                    let since = now.saturating_duration_since(cold);
                    (since.as_secs_f64() / cache.warmup.as_secs_f64()).min(1.0)
                }
                _ => 1.0,
            };
            if bernoulli(&mut s.rng_fault, cache.hit_ratio * warm) {
                s.stats.cache_hits += 1;
                self.finish_job(ctx, job, Outcome::Ok);
                return;
            }
            if let Some(coalescer) = &mut s.replicas[r].coalescer {
                let key = uniform_below(&mut s.rng_fault, u64::from(cache.keys)) as u32;
                match coalescer.join(now, &key) {
                    Join::Lead => self.jobs[job].lead_key = Some(key),
                    Join::Follow { waiter, .. } => {
                        s.stats.coalesced += 1;
                        s.waiters.insert((r as u32, waiter.0), job);
                        self.jobs[job].phase = Phase::Following;
                        return;
                    }
                    // Too many flights or followers: fetch uncoalesced.
                    Join::Reject { .. } => {}
                }
            }
        }
        let n = s.config.calls.len();
        if n == 0 {
            self.finish_job(ctx, job, Outcome::Ok);
            return;
        }
        let j = &mut self.jobs[job];
        j.phase = Phase::Calling;
        match s.config.call_mode {
            CallMode::Sequential => {
                j.pending = 1;
                self.start_child(ctx, job, 0);
            }
            CallMode::FanOut => {
                j.pending = n as u8;
                for i in 0..n {
                    if !self.jobs.contains_key(job) {
                        break;
                    }
                    self.start_child(ctx, job, i);
                }
            }
            CallMode::Pick => {
                let weights = s.config.calls.iter().map(|c| c.weight);
                let total: f64 = weights.clone().sum();
                let mut u = unit_f64(&mut s.rng_route) * total;
                let mut pick = n - 1;
                for (i, w) in weights.enumerate() {
                    if u < w {
                        pick = i;
                        break;
                    }
                    u -= w;
                }
                j.pending = 1;
                // The request makes only this call: nothing follows it.
                self.start_child(ctx, job, pick);
                if let Some(j) = self.jobs.get_mut(job) {
                    j.next_call = n as u8;
                }
            }
        }
    }

    fn start_child(&mut self, ctx: C, job: JobKey, index: usize) {
        let j = &mut self.jobs[job];
        j.next_call = index as u8 + 1;
        let svc = j.service as usize;
        let s = &self.services[svc];
        // A deadline-aware service passes its caller's deadline down; a naive one does not.
        let parent_deadline = if s.config.on_abandoned == Abandoned::Work {
            SimTime::MAX
        } else {
            j.deadline
        };
        let spec = s.calls[j.replica as usize][index];
        let key = self.start_call(
            ctx,
            spec,
            Owner::Job {
                job,
                index: index as u8,
            },
            parent_deadline,
        );
        if self.calls.contains_key(key)
            && let Some(j) = self.jobs.get_mut(job)
        {
            j.children[index] = key;
        }
    }

    fn child_done(&mut self, ctx: C, job: JobKey, index: u8, outcome: Outcome) {
        let Some(j) = self.jobs.get_mut(job) else {
            return;
        };
        j.children[index as usize] = CallKey::null();
        j.pending -= 1;
        if outcome != Outcome::Ok {
            j.failed = true;
        }
        let svc = j.service as usize;
        let n = self.services[svc].config.calls.len();
        match self.services[svc].config.call_mode {
            CallMode::Sequential => {
                if j.failed {
                    self.finish_job(ctx, job, Outcome::Fail(Reason::Dependency));
                } else if (j.next_call as usize) < n {
                    j.pending = 1;
                    let next = j.next_call as usize;
                    self.start_child(ctx, job, next);
                } else {
                    self.finish_job(ctx, job, Outcome::Ok);
                }
            }
            CallMode::Pick => {
                let o = if j.failed {
                    Outcome::Fail(Reason::Dependency)
                } else {
                    Outcome::Ok
                };
                self.finish_job(ctx, job, o);
            }
            CallMode::FanOut => {
                if j.pending == 0 {
                    let o = if j.failed {
                        Outcome::Fail(Reason::Dependency)
                    } else {
                        Outcome::Ok
                    };
                    self.finish_job(ctx, job, o);
                }
            }
        }
    }

    /// Whether no one waits for `j` any more: its caller gave up, or its caller is itself a
    /// job no one waits for (a db call made for a request whose user left is wasted too).
    fn nobody_waits(&self, j: &Job) -> bool {
        let mut j = j;
        // The call graph is acyclic (validated), so the walk ends at a client.
        loop {
            if j.abandoned {
                return true;
            }
            match self.calls.get(j.call).map(|c| c.owner) {
                None => return true,
                Some(Owner::Client { .. }) => return false,
                Some(Owner::Job { job, .. }) => match self.jobs.get(job) {
                    None => return true,
                    Some(parent) => j = parent,
                },
            }
        }
    }

    /// Releases the worker `job` holds (if any), accounting wasted work.
    fn release_worker(&mut self, now: SimTime, j: &Job) -> bool {
        if !matches!(j.phase, Phase::Working | Phase::Calling | Phase::Following) {
            return false;
        }
        let wasted = self.nobody_waits(j);
        let svc = j.service as usize;
        let s = &mut self.services[svc];
        s.replicas[j.replica as usize].busy -= 1;
        if wasted {
            s.stats.wasted_jobs += 1;
            s.stats.wasted_ns += (now - j.started).as_nanos();
        }
        self.busy_change(now, svc, -1);
        true
    }

    fn finish_job(&mut self, ctx: C, job: JobKey, outcome: Outcome) {
        let now = ctx.now();
        let j = &self.jobs[job];
        let (svc, r) = (j.service as usize, j.replica as usize);
        let j = self.take_job(now, job, Some(outcome)).expect("live job");
        let freed = self.release_worker(now, &j);
        self.send_reply(ctx, &j, outcome, None);
        self.complete_flight(ctx, &j, outcome);
        if freed {
            self.dequeue(ctx, svc, r);
        }
    }

    /// Removes a job, handing its concurrency slot back with its outcome (`None`: cancelled,
    /// no sample).
    fn take_job(&mut self, now: SimTime, job: JobKey, outcome: Option<Outcome>) -> Option<Job> {
        let mut j = self.jobs.remove(job)?;
        if let Some(token) = j.admitted.take() {
            let s = &mut self.services[j.service as usize];
            let limiter = s.replicas[j.replica as usize]
                .concurrency
                .as_mut()
                .expect("a token comes from the replica's limiter");
            match outcome {
                Some(Outcome::Ok) => limiter.on_success(now, token, &mut s.rng_admission),
                Some(Outcome::Fail(_)) => limiter.on_dropped(now, token, &mut s.rng_admission),
                None => limiter.on_ignored(now, token),
            }
        }
        Some(j)
    }

    /// A job that led a coalesced cache miss is gone: its followers get its outcome.
    fn complete_flight(&mut self, ctx: C, j: &Job, outcome: Outcome) {
        let Some(key) = j.lead_key else {
            return;
        };
        let (svc, r) = (j.service as usize, j.replica as usize);
        let s = &mut self.services[svc];
        let Some(coalescer) = &mut s.replicas[r].coalescer else {
            return;
        };
        let waiters = coalescer.complete(ctx.now(), &key);
        for waiter in waiters {
            let follower = self.services[svc].waiters.remove(&(r as u32, waiter.0));
            if let Some(follower) = follower
                && self.jobs.contains_key(follower)
            {
                self.finish_job(ctx, follower, outcome);
            }
        }
    }

    /// Answers a job that never reached a worker (rejected, shed, replica down).
    fn reply(&mut self, ctx: C, job: JobKey, outcome: Outcome, retry_after: Option<SimDuration>) {
        let j = self
            .take_job(ctx.now(), job, Some(outcome))
            .expect("live job");
        self.send_reply(ctx, &j, outcome, retry_after);
    }

    fn send_reply(&mut self, ctx: C, j: &Job, outcome: Outcome, retry_after: Option<SimDuration>) {
        let svc = j.service as usize;
        let s = &mut self.services[svc];
        match outcome {
            Outcome::Ok => {
                s.stats.ok += 1;
                s.ok_series.add(ctx.now(), 1);
            }
            Outcome::Fail(r) => s.stats.failed[r.index()] += 1,
        }
        // The caller's node: a caller that no longer exists gets nothing.
        let Some(source) = self.calls.get(j.call).map(|c| c.source) else {
            return;
        };
        let packet = Packet::Reply {
            call: j.call,
            attempt: j.attempt,
            outcome,
            retry_after,
        };
        self.transmit(ctx, svc, self.client_count + svc as u32, source, packet);
    }

    fn on_cancel(&mut self, ctx: C, job: JobKey) {
        let now = ctx.now();
        let Some(j) = self.take_job(now, job, None) else {
            return;
        };
        let (svc, r) = (j.service as usize, j.replica as usize);
        self.services[svc].stats.cancelled += 1;
        match j.phase {
            Phase::Transit => {}
            Phase::Queued => {
                // The entry stays in the queue and is skipped when it reaches the front.
                self.queue_change(now, svc, -1);
            }
            Phase::Working | Phase::Calling | Phase::Following => {
                if let Some(t) = j.timer {
                    ctx.cancel(t);
                }
                for child in j.children {
                    if !child.is_null() {
                        self.cancel_call(ctx, child);
                    }
                }
                self.release_worker(now, &j);
                // Requests waiting on this one's fetch learn that it will not come.
                self.complete_flight(ctx, &j, Outcome::Fail(Reason::Dependency));
                self.dequeue(ctx, svc, r);
            }
        }
    }

    // ---- faults ------------------------------------------------------------------------

    fn on_fault(&mut self, ctx: C, fault: usize, start: bool) {
        let now = ctx.now();
        self.fault_active[fault] = start;
        let f = self.faults[fault].clone();
        if start && let Some(d) = f.duration {
            later(
                ctx,
                d,
                Msg::FaultEnd {
                    fault: fault as u32,
                },
            );
        }
        let service_index = |w: &World, name: &str| {
            w.services
                .iter()
                .position(|s| s.name == name)
                .expect("fault targets are checked by validation")
        };
        match &f.kind {
            FaultKind::Crash { service, replicas } => {
                let svc = service_index(self, service);
                let n = replicas.unwrap_or(self.services[svc].replicas.len() as u32);
                for r in 0..n as usize {
                    if start {
                        self.crash(ctx, svc, r);
                    } else {
                        let delay = self.services[svc].config.restart.unwrap_or_default();
                        later(
                            ctx,
                            delay,
                            Msg::Restart {
                                service: svc as u32,
                                replica: r as u32,
                            },
                        );
                    }
                }
            }
            FaultKind::CacheFlush { service } => {
                if start {
                    let svc = service_index(self, service);
                    for r in &mut self.services[svc].replicas {
                        r.cold_since = Some(now);
                    }
                }
            }
            FaultKind::LoadSpike { client, .. } => {
                let c = self
                    .clients
                    .iter()
                    .position(|c| &c.name == client)
                    .expect("fault targets are checked by validation");
                let mut spike = 1.0;
                for (i, g) in self.faults.iter().enumerate() {
                    if let FaultKind::LoadSpike {
                        client: other,
                        factor,
                    } = &g.kind
                        && self.fault_active[i]
                        && other == client
                    {
                        spike *= factor;
                    }
                }
                self.clients[c].spike = spike;
            }
            FaultKind::Slowdown { service, .. }
            | FaultKind::ErrorRate { service, .. }
            | FaultKind::CapacityDrop { service, .. }
            | FaultKind::Latency { service, .. }
            | FaultKind::Loss { service, .. }
            | FaultKind::Partition { service } => {
                let svc = service_index(self, service);
                self.recompute_service_faults(svc);
                for r in 0..self.services[svc].replicas.len() {
                    self.dequeue(ctx, svc, r);
                }
            }
        }
    }

    /// Applies every active fault aimed at `svc` (overlapping faults compose).
    fn recompute_service_faults(&mut self, svc: usize) {
        let s = &mut self.services[svc];
        s.slowdown = 1.0;
        s.error_ratio = 0.0;
        s.workers_now = s.config.workers;
        s.extra_latency = None;
        s.loss_ratio = 0.0;
        s.partitioned = false;
        for (f, active) in self.faults.iter().zip(&self.fault_active) {
            if !active {
                continue;
            }
            match &f.kind {
                FaultKind::Slowdown { service, factor } if *service == s.name => {
                    s.slowdown *= factor
                }
                FaultKind::ErrorRate {
                    service,
                    error_ratio,
                } if *service == s.name => {
                    s.error_ratio = 1.0 - (1.0 - s.error_ratio) * (1.0 - error_ratio)
                }
                FaultKind::CapacityDrop { service, workers } if *service == s.name => {
                    s.workers_now = s.workers_now.min(*workers)
                }
                FaultKind::Latency { service, extra } if *service == s.name => {
                    s.extra_latency = Some(compile(extra))
                }
                FaultKind::Loss {
                    service,
                    loss_ratio,
                } if *service == s.name => {
                    s.loss_ratio = 1.0 - (1.0 - s.loss_ratio) * (1.0 - loss_ratio)
                }
                FaultKind::Partition { service } if *service == s.name => s.partitioned = true,
                _ => {}
            }
        }
    }

    fn crash(&mut self, ctx: C, svc: usize, r: usize) {
        let now = ctx.now();
        self.services[svc].stats.crashes += 1;
        self.services[svc].replicas[r].up = false;
        let mut lost = std::mem::take(&mut self.scratch);
        lost.clear();
        lost.extend(self.jobs.iter().filter_map(|(k, j)| {
            (j.service as usize == svc && j.replica as usize == r && j.phase != Phase::Transit)
                .then_some(k)
        }));
        for &job in &lost {
            let Some(j) = self.jobs.remove(job) else {
                continue;
            };
            if let Some(t) = j.timer {
                ctx.cancel(t);
            }
            for child in j.children {
                if !child.is_null() {
                    self.cancel_call(ctx, child);
                }
            }
            if j.phase == Phase::Queued {
                self.queue_change(now, svc, -1);
            }
            self.release_worker(now, &j);
            // The connection resets: callers learn at once that the attempt failed.
            self.send_reply(ctx, &j, Outcome::Fail(Reason::Unavailable), None);
        }
        let s = &mut self.services[svc];
        s.replicas[r].queue = Waiting::new(&s.config.queue);
        // The replica's flights and admission state died with it (their jobs were lost above);
        // it restarts with fresh ones.
        s.replicas[r].coalescer = coalescer_of(&s.config);
        s.replicas[r].concurrency = concurrency_of(&s.config);
        let jobs = &self.jobs;
        s.waiters.retain(|_, job| jobs.contains_key(*job));
        self.scratch = lost;
    }

    fn on_restart(&mut self, ctx: C, svc: usize, r: usize) {
        let now = ctx.now();
        let replica = &mut self.services[svc].replicas[r];
        replica.up = true;
        replica.cold_since = Some(now);
    }

    fn on_health_tick(&mut self, ctx: C, svc: usize) {
        let now = ctx.now();
        let s = &mut self.services[svc];
        let h = s
            .config
            .health_check
            .clone()
            .expect("ticks are for services with health checks");
        let capacity = s.config.queue.capacity.map_or(usize::MAX, |c| c as usize);
        for r in &mut s.replicas {
            let waited_too_long = match &r.queue {
                Waiting::Plain(q) => q
                    .iter()
                    .find_map(|k| self.jobs.get(*k))
                    .is_some_and(|j| now - j.enqueued > h.timeout),
                Waiting::CoDel(_) => false,
            };
            let pass = r.up && r.queue.len() < capacity && !waited_too_long;
            if pass == r.healthy {
                r.probe_streak = 0;
                continue;
            }
            r.probe_streak += 1;
            let needed = if r.healthy {
                h.unhealthy_threshold
            } else {
                h.healthy_threshold
            };
            if r.probe_streak >= needed {
                r.healthy = pass;
                r.probe_streak = 0;
                if !pass {
                    s.stats.marked_unhealthy += 1;
                }
            }
        }
        later(
            ctx,
            h.interval,
            Msg::HealthTick {
                service: svc as u32,
            },
        );
    }

    fn on_pid_tick(&mut self, ctx: C, svc: usize) {
        let now = ctx.now();
        let s = &mut self.services[svc];
        // The signal: the mean queueing delay of the requests served since the last tick, or
        // the age of the oldest waiting request if that is longer (nothing may have left).
        let oldest = s
            .replicas
            .iter()
            .filter_map(|r| match &r.queue {
                Waiting::Plain(q) => q.iter().find_map(|k| self.jobs.get(*k)),
                Waiting::CoDel(_) => None,
            })
            .map(|j| now - j.enqueued)
            .max()
            .unwrap_or_default();
        let mean = s
            .pid_delay_sum_ns
            .checked_div(s.pid_delay_count)
            .map_or(SimDuration::ZERO, SimDuration::from_nanos);
        s.pid_delay_sum_ns = 0;
        s.pid_delay_count = 0;
        let (pid, interval) = s
            .pid
            .as_mut()
            .expect("ticks are for services with a PID shedder");
        let drop_ratio = pid.update(now, mean.max(oldest).as_millis_f64());
        s.pid_drop_ratio_max = s.pid_drop_ratio_max.max(drop_ratio);
        let interval = *interval;
        later(
            ctx,
            interval,
            Msg::PidTick {
                service: svc as u32,
            },
        );
    }
}

impl Entity for World {
    type Msg = Msg;
    type Shared = Net;

    fn handle(&mut self, ctx: &mut Ctx<'_, Msg, Net>, msg: Msg) {
        if let Some((from, to)) = self.trace_window {
            let now = ctx.now();
            if now >= from && now <= to {
                self.record(now, &msg);
            }
        }
        match msg {
            Msg::Net(d) => self.on_net(ctx, d),
            Msg::Arrival { client, emit } => self.on_arrival(ctx, client as usize, emit),
            Msg::Think { client, user } => self.offer(ctx, client as usize, user),
            Msg::Deliver { job } => self.on_deliver(ctx, job),
            Msg::WorkDone { job } => self.on_work_done(ctx, job),
            Msg::Reply {
                call,
                attempt,
                outcome,
                retry_after,
            } => self.on_reply(ctx, call, attempt, outcome, retry_after),
            Msg::Timeout { call, attempt } => self.on_timeout(ctx, call, attempt),
            Msg::Retry { call } => self.on_retry(ctx, call),
            Msg::Cancel { job } => self.on_cancel(ctx, job),
            Msg::FaultStart { fault } => self.on_fault(ctx, fault as usize, true),
            Msg::FaultEnd { fault } => self.on_fault(ctx, fault as usize, false),
            Msg::Restart { service, replica } => {
                self.on_restart(ctx, service as usize, replica as usize)
            }
            Msg::PidTick { service } => self.on_pid_tick(ctx, service as usize),
            Msg::HealthTick { service } => self.on_health_tick(ctx, service as usize),
            Msg::BulkheadExpire { spec, inner, gate } => {
                let side = if inner { Side::Inner } else { Side::Outer };
                let sp = &mut self.specs[spec as usize];
                let gates = match side {
                    Side::Outer => &mut sp.outer,
                    Side::Inner => &mut sp.inner,
                };
                expire(gates, gate as usize, ctx.now(), &mut self.wake_buf);
                self.tag_wakes(spec, side);
            }
        }
        // Bulkhead slots given back during the event go to their waiters now, after it.
        if !self.wakes.is_empty() {
            self.process_wakes(ctx);
        }
    }
}
