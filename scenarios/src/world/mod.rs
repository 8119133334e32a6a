//! The simulated world: clients, balancers, services with workers and queues, the calls
//! between them with their pattern stacks, and the fault timeline, run on sim-core with every
//! message on sim-net.
//!
//! The whole world is one [`World`] entity of the [`sim_core::Sim`], so that a handler can
//! act on several components in one event (a crash fails the calls waiting on a replica)
//! without borrowing across entities; the digest still sees which component each event is
//! for, because [`Msg`]'s [`kind`](sim_core::Message::kind) folds the component and request
//! ids in. State is split by owner: each module below owns one kind of thing, keeps its
//! fields private and offers methods; the world's handlers (in the modules of the things they
//! move: calls in `call`, jobs in `job`) go through those methods.
//!
//! **Layer rule:** the world is built from the format's [`Scenario`] and hands over
//! [`Figures`] (`figures.rs`, its boundary) when a run ends; it uses `format/` and `figures.rs`
//! only, never the report, runs, experiments or the command line.
//!
//! Vocabulary: a *request* is what a client offers; a *call* is one logical call from a
//! caller (a client or a service) to a target service, possibly made of several *attempts*;
//! a *job* is one attempt as the target replica sees it.
//!
//! | module | owns |
//! |---|---|
//! | [`msg`] | the events ([`Msg`]) and what travels the network ([`Packet`]) |
//! | `outcome` | outcomes, refusals, and the tables that read a failure reason |
//! | `client` | a client: its arrival process or users, and its figures |
//! | `site` | a call site: its pattern machines (gates, retry policy, hedger, fallback) and figures |
//! | [`stack`] | the gates over the patterns crate's machines |
//! | `call` | a call and its attempt (`Attempt`): gates, retries, timeouts, waits, replies; what it carries (`Carries`: a race, a gather, a store slot, a reply's quota); its end, finished or cancelled, by one path (`call/end.rs`) |
//! | `hedge` | a hedged call's race |
//! | `service` | a service: its replicas and the parts below, admission, work, controllers |
//! | `balance` | the balancer's pick among the replicas in rotation or a unit's shard, outlier ejection, active health checks |
//! | `gauges` | a service's counts and gauges while it runs, and the figures they make |
//! | `limits` | a service's concurrency limit, the requests its limiters hold and its PID shedder's drop probability over time, and the figures they make |
//! | `replica` | a replica: workers, queue and discipline (including the `Priority` and RFC 8289 `CoDelRfc` queues), per-tenant bulkhead, health, cache state |
//! | `lifecycle` | a replica's slot (up, paused, down and why; in rotation, parked, starting, draining, redeploying, out) and the one way down and the one way up |
//! | `scaling` | what moves slots in and out of rotation: the autoscaler, cold starts, rolling deploys |
//! | `job` | a job and its `Stage` (which carries its store read), its cache fetch: admission, queue, work; its end, answered, cancelled or lost, by one path (`job/end.rs`) |
//! | `downstream` | after the work: injected errors, the cache and coalescing, downstream calls stage by stage |
//! | `plan` | a service's call stages as its jobs run them (compiled from `call_stages`), a `Pick` stage's draw and each `call_ratio` draw |
//! | `distributed` | distributed rate limiters: local, central at a store service, leases |
//! | `fanout` | fan-out calls: a shell and its leaves, gathered to a quorum |
//! | `refresh` | cache entries with a time to live, refreshed on expiry or early (XFetch) |
//! | `store` | a service's keyed store: row versions, reads in flight, optimistic writes |
//! | `locks` | row locks of `Locked` stores: a job's wait for its row, the grants, the timeouts |
//! | `effects` | what an event leaves to do after it (bulkhead wakes, pool effects, lock grants): one queue, drained in a fixed order |
//! | `pool` | connection pools of pooled call sites (idle, in use, opening, FIFO waiters) and each target's open connections |
//! | `faults` | the fault timeline (a crash and its restarts go through `lifecycle`), controller ticks |
//! | `capacity` | capacity events: stop-the-world pauses, zone failures, liveness probes (their downs and restarts go through `lifecycle`) |
//! | `sharding` | blast radius: cells and shuffle shards of a service's replicas per caller unit, units that lost their replicas, poison requests |
//! | `network` | the sim-net network of a scenario: nodes, links, network faults |
//! | `buckets` | the report bucket of an instant, dividing only when time leaves the last one |
//! | `trace` | the trace window |
//! | `follow` | the steps of followed requests, and the first failed requests as examples |
//! | `live` | what grows with traffic, for the run's memory check (`Live`) |
//! | [`traffic`] | a request's attributes, a client's mix of classes, per-class and per-tenant figures |
//! | `admission` | the admission layers that read the attributes: keyed, costed, shadow and composite rate limits, the priority shedder |
//! | `pace` | the quota a rate-limited service's reply carries, and the `Pace` gate that holds calls until its reset |
//! | `adaptive` | a call site's adaptive per-attempt timeout and the timeout it gave per bucket |
//! | `probe` | counts a running world can be asked for between events (queue depths, failures so far), for estimates made while it runs |
//!
//! Memory stays flat as a run grows longer: calls and jobs live in slot maps whose slots are
//! reused, queues are bounded (or explicitly unbounded) and grow as used, and the figures
//! grow by a few counters per report bucket. A run that keeps only its clients' series
//! (`Series::Clients`, what `resim risk` runs) records nothing else per bucket: its services,
//! limiters, shards and pools count over one bucket of the whole run, its call sites in one
//! bucket, and no latencies per bucket.
//!
//! Invariants: every queued key is a live queued job; a replica's busy workers are exactly
//! its jobs that hold one; the service gauges count what the replicas hold. The gauges are
//! checked after every event in debug builds, the jobs every 4096 events and at the end of
//! every run.
//!
//! # Decisions
//!
//! The whole world is one `World` entity that holds every client, service, replica, call and
//! job and dispatches on its own `Msg` enum; each message's `kind` word folds in the component
//! and request ids, so the digest and the trace still say which component an event was for.
//! Calls carry run-wide ids and the id of the client request they serve, so a trace follows one
//! request across services. A job that leaves its replica's queue for any reason (a worker, a
//! shedder, a cancellation) is taken out of it: every queued key is a live queued job. A
//! pattern decision reaches the world whole: a refusal carries the refuser's retry-after
//! (limiter, breaker, server) to the retry policy, and a shaping limiter's delay holds the
//! request back. A hedged call is a shell whose owner sees one outcome; each racing attempt
//! goes through the whole stack. Each replica of a calling service has its own breaker,
//! bulkhead, limiter and retry budget, as each process of a real service would. Each client
//! request's outcome counts in the report bucket of its offer. Runs are capped at 100 simulated
//! years so the clock cannot overflow. The world's gauges are checked after every event in
//! debug builds, its jobs every 4,096 events and at the end of every run.
//!
//! A call or a job carries its own state (a call's race, gather, store slot or reply quota in
//! `call::Carries`; a job's store read in its `Stage`, its cache fetch beside it), never a
//! side table keyed by it, and it ends by one path that removes it with that state
//! (`end_call`, `end_job`): side tables drifted, one removal path forgetting them. What an
//! event leaves to do after it (bulkhead wakes, pool effects, lock grants) waits in one queue
//! (`effects`), drained after the event in an order every digest depends on.
//!
//! # Memory per component
//!
//! A client keeps a latency histogram (three significant digits with up to 64 clients, two
//! beyond: a few KB) and five counters per bucket; a link keeps a compact histogram only once
//! its latency varies; queues and tables grow as used. `examples/bench_scale` measures it.

mod adaptive;
mod admission;
mod balance;
mod buckets;
mod call;
mod capacity;
mod client;
mod distributed;
mod downstream;
mod effects;
mod fanout;
mod faults;
mod follow;
mod gauges;
mod hedge;
mod job;
mod lifecycle;
mod limits;
mod live;
mod locks;
pub mod msg;
mod network;
mod outcome;
mod pace;
mod plan;
mod pool;
mod probe;
mod refresh;
mod replica;
mod scaling;
mod service;
mod sharding;
mod site;
pub mod stack;
mod store;
mod stream;
mod trace;
pub mod traffic;

pub use follow::FOLLOW_STEPS_MAX;
pub use live::{GROWTH_MARGIN, Live, Queued};
pub use msg::{Msg, Net, Packet};
pub use outcome::{Outcome, REASONS, Reason, failure_of};
pub use pace::Quota;
pub use probe::Probe;
pub use site::Side;
pub use trace::TRACE_LINES_MAX;

use crate::figures::{Figures, RunBucket};
use crate::format::overrides::segment;
use crate::format::schema::{Scenario, Series};
use call::Call;
use client::{Client, Requester};
use hedge::Race;
use job::Job;
use service::Service;
use sim_core::metrics::LatencyHistogram;
use sim_core::{ConfigError, Ctx, Entity, EntityId, Seed, SimDuration, SimTime};
use site::{CallSite, Caller};
use slotmap::{SlotMap, new_key_type};
use trace::Trace;

new_key_type! {
    /// A hedged call's race.
    pub struct HedgeKey;
    /// A call in flight (one logical call and its attempts).
    pub struct CallKey;
    /// A job: one attempt, as its replica sees it.
    pub struct JobKey;
}

/// The size every message is given on the network, in bytes (it matters only on links with a
/// bandwidth limit).
pub const PACKET_BYTES: u32 = 1024;

type C<'a, 'b> = &'a mut Ctx<'b, Msg, Net>;

/// Sends `msg` to the world after `delay`, saturating at the end of representable time: the
/// delays that come straight from a scenario file (a fault's length, a restart, a controller's
/// interval) may be longer than what is left of the clock, and are then simply never reached.
fn later(ctx: C, delay: SimDuration, msg: Msg) {
    let at = ctx.now().saturating_add(delay);
    let me = ctx.me();
    ctx.send_at(me, at, msg);
}

/// The world: every component and every request in flight.
#[derive(Debug, Clone)]
pub struct World {
    clients: Vec<Client>,
    services: Vec<Service>,
    /// Every call site instance: the clients' first (site `i` is client `i`'s), then each
    /// service's, call by call, replica by replica.
    sites: Vec<CallSite>,
    calls: SlotMap<CallKey, Call>,
    races: SlotMap<HedgeKey, Race>,
    jobs: SlotMap<JobKey, Job>,
    faults: faults::Timeline,
    /// sim-net's node of each client, then of each service.
    nodes: Vec<sim_net::NodeId>,
    /// What the event being handled leaves to do after it.
    effects: effects::Effects,
    trace: Option<Trace>,
    /// What is recorded of a followed request and of failed ones (`follow`), if asked.
    follow: Option<Box<follow::Follow>>,
    bucket: SimDuration,
    /// The bucket of an instant (`bucket_of`).
    buckets: buckets::Buckets,
    /// Whether the run keeps every series per bucket (`Series::All`), or its clients' counts
    /// only: then nothing else is recorded per report bucket (`series_bucket_of`).
    series_kept: bool,
    /// The buckets of what is not a client's count: the report's, or one bucket of the whole
    /// run when only the clients' series are kept.
    series_buckets: buckets::Buckets,
    /// Per report bucket (of the requests' offers), over all clients (empty unless
    /// `series_kept`).
    run_buckets: Vec<RunBucket>,
    /// The id of the last call started.
    next_call_id: u64,
    /// Network copies ignored because they duplicated a message already handled.
    duplicates_ignored: u64,
    scratch: Vec<JobKey>,
    /// Events handled, for the periodic invariant check of debug builds.
    events: u64,
    /// The services' distributed rate limiters, in service order.
    distributed: Vec<distributed::Distributed>,
    /// Heap bytes that the calls carry (`call::Carries`), for the memory check.
    carried_bytes: u64,
    /// Whether some call site has a `Pace` layer: without one, no reply carries a quota.
    paced: bool,
    /// The connection pools of pooled call sites (empty without any).
    pools: pool::Pools,
}

impl World {
    /// Builds the world of a validated scenario for one seed.
    pub fn new(s: &Scenario, seed: Seed, bucket: SimDuration) -> Self {
        let series_kept = s.series == Series::All;
        // What services, limiters, shards and pools record per bucket is recorded over the
        // whole run (one bucket) when only the clients' series are kept.
        let series_width = if series_kept {
            bucket
        } else {
            SimDuration::MAX
        };
        // The services in the order of their keys, searched by name: a lookup per call site
        // stays logarithmic in a topology of many thousands of services.
        let names: Vec<&str> = s.services.keys().map(String::as_str).collect();
        let target = |name: &str| {
            names
                .binary_search(&name)
                .expect("call targets are checked by validation") as u32
        };
        let mut sites = Vec::new();
        let mut clients = Vec::new();
        for (i, (name, c)) in s.clients.iter().enumerate() {
            let path = format!("clients.{}.call", segment(name));
            let caller = Caller::Client(i as u32);
            sites.push(CallSite::new(
                path,
                caller,
                target(&c.call.target),
                &c.call,
                seed,
            ));
            let precise = s.clients.len() <= client::CLIENTS_PRECISE_MAX;
            clients.push(Client::new(name, c, &s.faults, i as u32, seed, precise));
        }
        let mut services = build_services(s, seed, series_width, &target, &mut sites);
        sharding::install(s, seed, series_width, &mut services);
        // A service a rolling deploy aims at gets replica slots that can leave rotation.
        for f in &s.faults {
            if let crate::format::schema::FaultKind::Deploy { service, .. } = &f.kind {
                let i = names.binary_search(&service.as_str());
                services[i.expect("fault targets are checked by validation")].deployed();
            }
        }
        capacity::install(s, &mut services);
        // Store call sites come after every other site, so a scenario without distributed
        // limiters has the sites it always had.
        let distributed = distributed::build(s, seed, series_width, &mut sites);
        let pooled = s.services.values().flat_map(|sv| {
            let slots = crate::format::schema::scaling::slots(sv) as usize;
            sv.calls
                .iter()
                .flat_map(move |c| std::iter::repeat_n(c, slots))
        });
        // Service call sites come right after the clients', in the same order as `pooled`.
        let pools = pool::Pools::new(
            s,
            sites[s.clients.len()..]
                .iter()
                .zip(pooled)
                .enumerate()
                .map(|(k, (site, c))| {
                    let n = (s.clients.len() + k) as u32;
                    (n, site.path(), site.target() as u32, c.pool.as_ref())
                }),
            series_width,
        );
        let paced = sites.iter().any(|sp| sp.paces());
        World {
            clients,
            services,
            sites,
            calls: SlotMap::with_key(),
            races: SlotMap::with_key(),
            jobs: SlotMap::with_key(),
            faults: faults::Timeline::new(&s.faults),
            nodes: Vec::new(),
            effects: effects::Effects::default(),
            trace: None,
            follow: None,
            bucket,
            buckets: buckets::Buckets::new(bucket),
            series_kept,
            series_buckets: buckets::Buckets::new(series_width),
            run_buckets: Vec::new(),
            next_call_id: 0,
            duplicates_ignored: 0,
            scratch: Vec::new(),
            events: 0,
            distributed,
            carried_bytes: 0,
            paced,
            pools,
        }
    }

    /// Builds the network of scenario `s` with every node played by this world's `entity`
    /// (see `network`).
    pub fn build_network(
        &mut self,
        s: &Scenario,
        seed: Seed,
        entity: EntityId,
    ) -> Result<Net, ConfigError> {
        let (net, nodes) = network::build(s, seed, entity)?;
        self.nodes = nodes;
        Ok(net)
    }

    /// Gives every random stream of the world fresh randomness from `seed` (a branch's,
    /// [`Seed::branch`]), each keeping its identity: the clients' (arrivals, request mix),
    /// the services' (balancer, work, faults, admission, routes, store, cache refresh) and
    /// the call sites' (retry jitter, gates). The network's are [`Net`]'s
    /// (`sim_net::Network::reseed`). Streams used only while the world is built (isolation
    /// shards, limiter clock skews) are not held, so a branch keeps what they drew.
    pub fn reseed(&mut self, seed: Seed) {
        for client in &mut self.clients {
            client.reseed(seed);
        }
        for service in &mut self.services {
            service.reseed(seed);
        }
        for site in &mut self.sites {
            site.reseed(seed);
        }
    }

    /// Describes every event between `from` and `to` in the figures' trace.
    pub fn trace_window(&mut self, from: SimTime, to: SimTime) {
        self.trace = Some(Trace::new(from, to));
    }

    /// The events that start a run: first arrivals, users, faults, controller ticks.
    pub fn initial_events(&mut self) -> Vec<(SimTime, Msg)> {
        let mut events = Vec::new();
        for (i, c) in self.clients.iter_mut().enumerate() {
            let client = i as u32;
            match c.user_starts() {
                None => events.push((
                    SimTime::ZERO,
                    Msg::Arrival {
                        client,
                        emit: false,
                    },
                )),
                Some(starts) => {
                    for (user, start) in starts.into_iter().enumerate() {
                        let user = user as u32;
                        events.push((SimTime::ZERO + start, Msg::Think { client, user }));
                    }
                }
            }
        }
        for (i, f) in self.faults.faults().iter().enumerate() {
            let at = SimTime::ZERO.saturating_add(f.at);
            events.push((at, Msg::FaultStart { fault: i as u32 }));
        }
        for (i, s) in self.services.iter().enumerate() {
            let service = i as u32;
            if let Some(h) = &s.config().health_check {
                events.push((SimTime::ZERO + h.interval, Msg::HealthTick { service }));
            }
            if let Some(interval) = s.pid_interval() {
                events.push((SimTime::ZERO + interval, Msg::PidTick { service }));
            }
            if let Some(a) = &s.config().autoscale {
                events.push((SimTime::ZERO + a.period, Msg::ScaleTick { service }));
            }
            // Each replica's probes run at a phase of their own, spread over the period.
            if let Some(l) = &s.config().liveness {
                let n = s.replica_count() as u64;
                for replica in 0..n {
                    let phase = l.period.as_nanos() / n * (replica + 1);
                    let replica = replica as u32;
                    let at = SimTime::ZERO + SimDuration::from_nanos(phase);
                    events.push((at, Msg::LivenessTick { service, replica }));
                }
            }
        }
        events
    }

    /// Calls and jobs in flight (for the flat-memory check).
    pub fn in_flight(&self) -> (usize, usize) {
        (self.calls.len(), self.jobs.len())
    }

    /// Client requests still waiting for their outcome (in an attempt or a backoff).
    pub fn requests_in_flight(&self) -> u64 {
        let by_client = |c: &&Call| matches!(c.owner, call::Owner::Client { .. });
        self.calls.values().filter(by_client).count() as u64
    }

    /// The report bucket of an instant.
    #[inline]
    fn bucket_of(&self, t: SimTime) -> usize {
        self.buckets.of(t)
    }

    /// The bucket of an instant for what is not a client's count (a call site's): the
    /// report bucket, or the one bucket of the whole run when only the clients' series are
    /// kept.
    #[inline]
    fn series_bucket_of(&self, t: SimTime) -> usize {
        self.series_buckets.of(t)
    }

    /// Asserts the world's bookkeeping (see the module docs); panics name what broke.
    pub fn check_invariants(&self) {
        for s in &self.services {
            s.check_gauges();
        }
        self.check_jobs();
    }

    // ---- network ----------------------------------------------------------------------

    /// Sends `packet` from node `source` to node `target`; false when it is lost at once (a
    /// message lost later just never arrives).
    fn transmit(&mut self, ctx: C, source: u32, target: u32, packet: Packet) -> bool {
        let (from, to) = (self.nodes[source as usize], self.nodes[target as usize]);
        let sent = sim_net::send(ctx, from, to, PACKET_BYTES, packet);
        matches!(sent, sim_net::SendOutcome::Scheduled { .. })
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
            } => {
                let quota = if self.paced {
                    self.take_quota(call, attempt)
                } else {
                    None
                };
                self.on_reply(ctx, call, attempt, outcome, retry_after, quota)
            }
            Packet::Cancel { job } => self.on_cancel(ctx, job),
        }
    }

    // ---- figures ----------------------------------------------------------------------

    /// Ends the run's accounting at `end` and hands over its figures; the world is not used
    /// after this.
    pub fn figures(&mut self, end: SimTime, net: &Net) -> Figures {
        let series_bucket = self.series_buckets.width();
        // The buckets of every figure but the clients' counts.
        let buckets = (end.as_nanos().div_ceil(series_bucket.as_nanos()) as usize).max(1);
        let lost_at = lost_at_nodes(net);
        let nodes = &self.nodes;
        let mut services: Vec<_> = self
            .services
            .iter_mut()
            .map(|s| {
                let node = nodes[s.node() as usize].as_u32() as usize;
                let lost = lost_at.get(node).copied().unwrap_or(0);
                s.figures(end, buckets, lost)
            })
            .collect();
        let (trace, trace_left_out) = self.trace.take().map_or((Vec::new(), 0), Trace::finish);
        let (followed, followed_requests, failed_examples, slow_examples) = self
            .follow
            .take()
            .map_or((None, Vec::new(), Vec::new(), Vec::new()), |f| f.finish());
        let mut call_sites = self.call_site_figures();
        if !self.pools.is_empty() {
            for (path, f) in self.pools.figures(end) {
                let site = call_sites.iter_mut().find(|c| c.path == path);
                site.expect("a pool belongs to a call site").pool = Some(f);
            }
        }
        for (i, s) in services.iter_mut().enumerate() {
            s.connections = self.pools.connections(i, end);
        }
        let distributed = self.distributed_figures(buckets);
        Figures {
            end,
            bucket: self.bucket,
            series_bucket,
            latency: {
                let mut all = LatencyHistogram::new();
                for c in &self.clients {
                    all.merge(&c.figures().latency);
                }
                all
            },
            // The world is not used after this: its clients hand their figures over whole.
            clients: std::mem::take(&mut self.clients)
                .into_iter()
                .map(Client::into_figures)
                .collect(),
            services,
            call_sites,
            buckets: std::mem::take(&mut self.run_buckets),
            links: net.report(),
            duplicates_ignored: self.duplicates_ignored,
            requests_in_flight: self.requests_in_flight(),
            trace,
            trace_left_out,
            distributed,
            followed,
            followed_requests,
            failed_examples,
            slow_examples,
        }
    }
}

impl Entity for World {
    type Msg = Msg;
    type Shared = Net;

    fn handle(&mut self, ctx: &mut Ctx<'_, Msg, Net>, msg: Msg) {
        if self.trace.is_some() {
            self.record(ctx.now(), &msg);
        }
        match msg {
            Msg::Net(d) => self.on_net(ctx, d),
            Msg::Arrival { client, emit } => self.on_arrival(ctx, client as usize, emit),
            Msg::Think { client, user } => self.offer(ctx, client as usize, Requester::User(user)),
            Msg::WorkDone { job } => self.on_work_done(ctx, job),
            Msg::Released { job } => self.on_released(ctx, job),
            Msg::Timeout { call, attempt } => self.on_timeout(ctx, call, attempt),
            Msg::Retry { call } => self.on_retry(ctx, call),
            Msg::GateReleased { call } => self.on_gate_released(ctx, call),
            Msg::FaultStart { fault } => self.on_fault(ctx, fault as usize, true),
            Msg::FaultEnd { fault } => self.on_fault(ctx, fault as usize, false),
            Msg::Restart { service, replica } => {
                let (svc, r) = (service as usize, replica as usize);
                self.replica_up(ctx, svc, r, lifecycle::Up::Restart)
            }
            Msg::PidTick { service } => self.on_pid_tick(ctx, service as usize),
            Msg::HealthTick { service } => self.on_health_tick(ctx, service as usize),
            Msg::HedgeTimer { call } => self.on_hedge_timer(ctx, call),
            Msg::ScaleTick { service } => self.on_scale_tick(ctx, service as usize),
            Msg::Scaled { service, replica } => {
                self.on_scaled(ctx, service as usize, replica as usize)
            }
            Msg::DeployBatch { fault } => self.on_deploy_batch(ctx, fault as usize),
            Msg::LivenessTick { service, replica } => {
                self.on_liveness_tick(ctx, service as usize, replica as usize)
            }
            Msg::LivenessDeadline { service, replica } => {
                self.on_liveness_deadline(ctx, service as usize, replica as usize)
            }
            Msg::BulkheadExpire { site, side, gate } => {
                self.on_bulkhead_expire(ctx, site, side, gate as usize)
            }
            Msg::PoolOpened { site, refused } => self.on_pool_opened(ctx, site, refused),
            Msg::CheckoutTimeout { call, attempt } => self.on_checkout_timeout(ctx, call, attempt),
            Msg::PoolEvict { site } => self.on_pool_evict(ctx, site),
            Msg::LockTimeout { job } => self.on_lock_timeout(ctx, job),
        }
        // Bulkhead slots, pool connections and row locks given back during the event go to
        // their waiters now, after it, and pools' opens and evictions are scheduled.
        self.apply_effects(ctx);
        if cfg!(debug_assertions) {
            self.events += 1;
            for s in &self.services {
                s.check_gauges();
            }
            if self.events.is_multiple_of(4096) {
                self.check_jobs();
            }
        }
    }
}

/// Messages lost on the links to and from each node (by its index), in one pass over the
/// links (a pass per service was quadratic in a mesh of thousands of hosts).
fn lost_at_nodes(net: &Net) -> Vec<u64> {
    let mut lost_at: Vec<u64> = Vec::new();
    for (source, target, stats) in net.links() {
        let dropped = stats.dropped_total();
        for node in [source, target]
            .into_iter()
            .take(1 + usize::from(source != target))
        {
            let i = node.as_u32() as usize;
            if lost_at.len() <= i {
                lost_at.resize(i + 1, 0);
            }
            lost_at[i] += dropped;
        }
    }
    lost_at
}

/// The services of `s`, in the order of their keys, each replica with its call sites (pushed
/// onto `sites` after the clients' ones, in the order the pools expect them).
fn build_services(
    s: &Scenario,
    seed: Seed,
    series_width: SimDuration,
    target: &dyn Fn(&str) -> u32,
    sites: &mut Vec<CallSite>,
) -> Vec<Service> {
    let mut services = Vec::new();
    for (i, (name, sv)) in s.services.iter().enumerate() {
        let mut replica_sites =
            vec![Vec::new(); crate::format::schema::scaling::slots(sv) as usize];
        for (k, c) in sv.calls.iter().enumerate() {
            let path = format!("services.{}.calls[{k}]", segment(name));
            for (r, mine) in replica_sites.iter_mut().enumerate() {
                let caller = Caller::Replica(i as u32, r as u32);
                mine.push(sites.len() as u32);
                sites.push(CallSite::new(
                    path.clone(),
                    caller,
                    target(&c.target),
                    c,
                    seed,
                ));
            }
        }
        let node = (s.clients.len() + i) as u32;
        services.push(Service::new(
            name,
            sv,
            node,
            replica_sites,
            seed,
            series_width,
        ));
    }
    services
}
