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
//!
//! Module map (each holds one part of `World`'s behaviour; the types live here):
//!
//! | module | what |
//! |---|---|
//! | `clients` | arrivals on a rate schedule, closed-loop users, request outcomes |
//! | `calls` | gates, retries, attempts out and back, timeouts, bulkhead waits, outliers |
//! | `jobs` | admission, queues and disciplines, work, caches, downstream calls, replies |
//! | `faults` | the fault timeline, crashes and restarts, PID updates, health checks |
//! | [`stack`] | the gates over the patterns crate's machines |

mod calls;
mod clients;
mod faults;
mod jobs;
pub mod stack;

use crate::figures::{
    BreakerFigures, BreakerTransition, CallSiteFigures, ClientFigures, Figures, ReasonCounts,
    RunBucket, ServiceBucket, ServiceCounts, ServiceFigures,
};
pub use crate::figures::{CallStats, REASONS, Reason};
use crate::schema::*;
use crate::validate::CALLS_MAX;
use patterns::budget::RetryBudget;
use patterns::coalesce::{Coalescer, Join};
use patterns::concurrency::{ConcurrencyLimiter, ConcurrencyToken};
use patterns::fallback::{Fallback, PrimaryFailure, Served};
use patterns::hedge::{HedgeAction, HedgedRequest, Hedger};
use patterns::idempotency::{Begin, IdempotencyStore};
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
    /// A hedged call's racing state.
    pub struct HedgeKey;
    /// A call in flight (one logical call and its attempts).
    pub struct CallKey;
    /// A job: one attempt, as its replica sees it.
    pub struct JobKey;
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
    /// A hedged call may send its next hedge.
    HedgeTimer {
        /// The hedged call.
        call: CallKey,
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
            Msg::HedgeTimer { call } => (15, call.data().as_ffi()),
            Msg::BulkheadExpire { spec, inner, gate } => (
                14,
                (u64::from(spec) << 16) | (u64::from(inner) << 8) | u64::from(gate),
            ),
        };
        (tag << 56) | key(word)
    }
}

/// Who makes the calls of a call site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Caller {
    /// A client, by index.
    Client(u32),
    /// A service, by index.
    Service(u32),
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
    /// Who makes the calls.
    caller: Caller,
    timeout: Option<SimDuration>,
    deadline: Option<SimDuration>,
    /// The retry policy (with its backoff and budget), shared by every call of this site.
    pub retry: Option<RetryPolicy>,
    /// The hedging policy, if the stack hedges.
    hedger: Option<Hedger>,
    /// The budget hedges draw from when there is no retry policy to share one with.
    hedge_budget: RetryBudget,
    /// The fallback chain, if the stack has one.
    fallback: Option<Fallback>,
    /// When a call of this site last succeeded: the age of the "last good answer" a fallback
    /// may serve.
    last_success: Option<SimTime>,
    /// Gates acting once per call (listed before `Retry`).
    pub outer: Vec<Gate>,
    /// Gates acting on each attempt (listed after `Retry`, or all when there is none).
    pub inner: Vec<Gate>,
    rng: RngStream,
    /// The draws of its gates (adaptive throttling), apart from the retry jitter's.
    gate_rng: RngStream,
    /// Its share of requests under `CallMode::Pick`.
    pub weight: f64,
    /// Whether its operation may run twice.
    safety: CallSafety,
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
    /// One of the racing calls of a hedged call (the "shell" that its owner sees).
    Hedge {
        shell: CallKey,
        attempt: u32,
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
    /// For a hedged call's shell: its race.
    hedge: Option<HedgeKey>,
    /// Attempts of this call whose work started at the target (more than one: the
    /// operation ran twice, unless the target deduplicated it).
    executions: u32,
}

/// The most calls one hedged call races (the first and at most ten hedges).
const HEDGE_CALLS_MAX: usize = 11;

/// The race of a hedged call: which racing call is which attempt, and the hedge timer.
#[derive(Debug)]
struct HedgeState {
    request: HedgedRequest,
    children: [CallKey; HEDGE_CALLS_MAX],
    timer: Option<TimerId>,
    /// Why the last racing call failed, for the shell's failure.
    last: Reason,
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
    /// The idempotency key it executes under, to complete or abort in the store.
    idempotency_key: Option<u64>,
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

impl CallSafety {
    /// The retry and hedging policies' view.
    fn as_safety(self) -> Safety {
        match self {
            CallSafety::Idempotent => Safety::Idempotent,
            CallSafety::IdempotencyKey => Safety::IdempotencyKey,
            CallSafety::Unsafe => Safety::Unsafe,
        }
    }
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
    /// The highest drop probability its PID shedder reached (0 without one).
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
    /// The idempotency-key store, if the service has one.
    idempotency: Option<IdempotencyStore<u64, ()>>,
    /// Followers of coalesced cache misses, by replica and waiter id (each replica's
    /// coalescer numbers its waiters from zero).
    waiters: std::collections::BTreeMap<(u32, u64), JobKey>,
    /// Its counters.
    pub stats: ServiceCounts,
    /// Time in queue of each attempt that started work.
    wait: LatencyHistogram,
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
    /// Its figures, filled as the run goes.
    pub stats: ClientFigures,
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
    hedges: SlotMap<HedgeKey, HedgeState>,
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
    /// Latency of every successful client request.
    latency: LatencyHistogram,
    /// Per report bucket (of the requests' offers), over all clients.
    run_buckets: Vec<RunBucket>,
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
                             caller: Caller,
                             replica: Option<u32>,
                             c: &Call,
                             rng: RngStream,
                             gate_rng: RngStream|
         -> u32 {
            let retry_at = c.stack.iter().position(|l| matches!(l, Layer::Retry(_)));
            let mut outer = Vec::new();
            let mut inner = Vec::new();
            let mut retry = None;
            let mut hedger = None;
            let mut fallback = None;
            for (i, layer) in c.stack.iter().enumerate() {
                if let Layer::Fallback(f) = layer {
                    fallback = Some(
                        Fallback::new(f.clone())
                            .expect("fallback configs are validated with the scenario"),
                    );
                }
                if let Layer::Hedge(h) = layer {
                    hedger = Some(
                        Hedger::new(h.clone())
                            .expect("hedge configs are validated with the scenario"),
                    );
                }
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
                caller,
                timeout: c.timeout,
                deadline: c.deadline,
                retry,
                hedger,
                hedge_budget: RetryBudget::unlimited(),
                fallback,
                last_success: None,
                gate_rng,
                weight: c.weight,
                safety: c.safety,
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
            let spec = make_spec(
                path,
                Caller::Client(clients.len() as u32),
                None,
                &c.call,
                rng,
                gate_rng,
            );
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
                stats: ClientFigures {
                    name: name.clone(),
                    failed: ReasonCounts::default(),
                    latency: LatencyHistogram::compact(),
                    buckets: Vec::new(),
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
                    replica_calls.push(make_spec(
                        path.clone(),
                        Caller::Service(services.len() as u32),
                        Some(r as u32),
                        c,
                        rng,
                        gate_rng,
                    ));
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
                idempotency: sv.idempotency.clone().map(|c| {
                    IdempotencyStore::new(c)
                        .expect("idempotency configs are validated with the scenario")
                }),
                stats: ServiceCounts::default(),
                wait: LatencyHistogram::compact(),
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
            hedges: SlotMap::with_key(),
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
            latency: LatencyHistogram::new(),
            run_buckets: Vec::new(),
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
            Msg::HedgeTimer { call: k } => ("hedge-timer", call(self, *k)),
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

    /// Ends the run's accounting at `end` and hands over its figures; the world is not used
    /// after this. `links` are the network's per-link figures.
    pub fn figures(&mut self, end: SimTime, links: Vec<sim_net::LinkReport>) -> Figures {
        let buckets = (end.as_nanos().div_ceil(self.bucket.as_nanos()) as usize).max(1);
        let services = self
            .services
            .iter_mut()
            .map(|s| {
                let held = end.saturating_duration_since(s.busy_since).as_nanos();
                s.stats.busy_ns += u64::from(s.busy_total) * held;
                s.busy_since = end;
                let queue = s.queue_series.finish(end);
                let busy = s.busy_series.finish(end);
                ServiceFigures {
                    name: s.name.clone(),
                    replicas: s.config.replicas,
                    workers: s.config.workers,
                    counts: s.stats.clone(),
                    wait: s.wait.clone(),
                    pid_drop_ratio_max: s.pid_drop_ratio_max,
                    buckets: (0..buckets)
                        .map(|i| ServiceBucket {
                            arrivals: s.arrival_series.get(i),
                            ok: s.ok_series.get(i),
                            queue: queue.get(i).copied().unwrap_or_default(),
                            busy: busy.get(i).copied().unwrap_or_default(),
                        })
                        .collect(),
                }
            })
            .collect();
        // A service's call site has one spec per replica: each site is reported once, summed.
        let mut call_sites: Vec<CallSiteFigures> = Vec::new();
        for sp in &self.specs {
            let breakers = sp.outer.iter().chain(&sp.inner).filter_map(|g| match g {
                Gate::Breaker(b) => Some(BreakerFigures {
                    replica: sp.replica,
                    state: b.state(),
                    transitions_total: b.transitions().len() as u64 + b.stats().transitions_dropped,
                    transitions: b
                        .transitions()
                        .iter()
                        .map(|t| BreakerTransition {
                            at: t.at,
                            from: t.from,
                            to: t.to,
                        })
                        .collect(),
                }),
                _ => None,
            });
            match call_sites.last_mut() {
                Some(last) if last.path == sp.path => {
                    last.counts.absorb(&sp.stats);
                    last.breakers.extend(breakers);
                }
                _ => {
                    let caller = match sp.caller {
                        Caller::Client(c) => self.clients[c as usize].name.clone(),
                        Caller::Service(s) => self.services[s as usize].name.clone(),
                    };
                    call_sites.push(CallSiteFigures {
                        path: sp.path.clone(),
                        caller,
                        target: self.services[sp.target].name.clone(),
                        from_client: matches!(sp.caller, Caller::Client(_)),
                        counts: sp.stats.clone(),
                        breakers: breakers.collect(),
                    })
                }
            }
        }
        Figures {
            end,
            bucket: self.bucket,
            latency: self.latency.clone(),
            clients: self.clients.iter().map(|c| c.stats.clone()).collect(),
            services,
            call_sites,
            buckets: std::mem::take(&mut self.run_buckets),
            links,
            duplicates_ignored: self.duplicates_ignored,
            requests_in_flight: self.requests_in_flight(),
            trace: std::mem::take(&mut self.trace),
            trace_left_out: self.trace_left_out,
        }
    }

    // ---- gauges ------------------------------------------------------------------------

    /// The report bucket of an instant.
    fn bucket_of(&self, t: SimTime) -> usize {
        (t.as_nanos() / self.bucket.as_nanos()) as usize
    }

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
            Msg::HedgeTimer { call } => self.on_hedge_timer(ctx, call),
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
