//! A service: its replicas behind a balancer, the admission control in front of their
//! queues, the handler's work, the faults that change it, its controllers (PID shedder,
//! health checks) and its figures.
//!
//! The service decides for its replicas (which one an attempt goes to, whether it is
//! admitted, how long its work takes); the jobs themselves are the world's ([`super::job`]).
//!
//! Its parts with state of their own are their modules': the slots of its replicas
//! ([`super::lifecycle`]), the balancer and health ([`super::balance`]), its counts and
//! gauges ([`super::gauges`]), what the active faults do ([`super::faults::ServiceFaults`]),
//! its admission layers ([`super::admission`]); the service holds them and answers for them.

use super::JobKey;
pub use super::admission::Admit;
use super::admission::{Layers, Limited, PidShedding};
use super::balance::{self, Balance};
use super::capacity::Capacity;
use super::faults::ServiceFaults;
use super::gauges::Gauges;
use super::lifecycle::Lifecycle;
use super::limits::{LimiterGauges, Reading, reading};
use super::outcome::Reason;
use super::pace::Quota;
use super::plan::Plan;
use super::refresh::Refresh;
use super::replica::Replica;
use super::scaling::Scaling;
use super::sharding::Sharding;
use super::store::StoreState;
use super::traffic::Attrs;
use crate::figures::{ServiceCounts, ServiceFigures};
use crate::format::schema::{FaultKind, Service as Config};
use patterns::concurrency::{ConcurrencyRejection, ConcurrencyToken};
use patterns::idempotency::IdempotencyStore;
use patterns::limiter::{Cost, RateLimiter};
use sim_core::metrics::LatencyHistogram;
use sim_core::sample::{SAMPLE_MAX, bernoulli};
use sim_core::{RngStream, Sampler, Seed, SimDuration, SimTime};
use std::collections::BTreeMap;

/// One service.
#[derive(Debug, Clone)]
pub struct Service {
    name: String,
    config: Config,
    /// Its node among the world's network nodes.
    node: u32,
    work: Sampler,
    /// Per replica, the call site of each downstream call.
    sites: Vec<Vec<u32>>,
    /// The stages its calls run in, and their draws.
    plan: Plan,
    replicas: Vec<Replica>,
    /// Its admission layers but those of each replica.
    layers: Layers,
    faults: ServiceFaults,
    balance: Balance,
    rng_work: RngStream,
    rng_fault: RngStream,
    rng_admission: RngStream,
    rng_route: RngStream,
    idempotency: Option<IdempotencyStore<u64, ()>>,
    /// Its keyed store of versioned rows, if it has one.
    store: Option<StoreState>,
    /// Its cache's expiring entries, if the cache has a `ttl`.
    refresh: Option<Refresh>,
    /// Followers of coalesced cache misses, by replica and waiter id (each replica's
    /// coalescer numbers its waiters from zero).
    waiters: BTreeMap<(u32, u64), JobKey>,
    /// Its counts and gauges.
    gauges: Gauges,
    /// The work time of every job that started, as it was given (after slowdowns, growth
    /// with load and cold starts): the service time the report sets beside the declared one.
    work_given: LatencyHistogram,
    /// Which replicas each caller unit may use, when it is isolated or poisoned
    /// ([`super::sharding`]).
    sharding: Option<Sharding>,
    /// Its replicas' slots: up, paused or down, in rotation or not ([`super::lifecycle`]).
    life: Lifecycle,
    /// Its autoscaler, cold starts and deploys, if it autoscales, cold-starts or its slots
    /// may leave rotation (`None`: every replica stays in rotation).
    scaling: Option<Box<Scaling>>,
    /// Its pauses, zones and liveness probes, if any ([`super::capacity`]).
    capacity: Option<Box<Capacity>>,
    /// Its concurrency limit and PID shedder over time, if it has either
    /// ([`super::limits`]).
    limits: Option<Box<LimiterGauges>>,
}

impl Service {
    /// Compiles service `name`; `node` is its network node, `sites` its replicas' call sites.
    pub fn new(
        name: &str,
        config: &Config,
        node: u32,
        sites: Vec<Vec<u32>>,
        seed: Seed,
        bucket: SimDuration,
    ) -> Service {
        let built = "configs are validated with the scenario";
        let stream = |what: &str| seed.stream(&format!("services/{name}/{what}"));
        let capacity = f64::from(config.replicas) * f64::from(config.workers);
        let slots = crate::format::schema::scaling::slots(config);
        let scaling = Scaling::new(config, slots as usize, false, bucket).map(Box::new);
        let replicas: Vec<Replica> = (0..slots).map(|_| Replica::new(config)).collect();
        let life = Lifecycle::new(slots as usize, config.replicas as usize);
        let layers = Layers::of(config);
        let limits = LimiterGauges::new(bucket, &replicas, &life, layers.pid.is_some());
        Service {
            name: name.to_string(),
            work: config.work.compile().expect(built),
            sites,
            plan: Plan::new(name, config, seed),
            replicas,
            layers,
            faults: ServiceFaults::none(config.workers),
            balance: Balance::new(config.balancer, stream("balancer")),
            rng_work: stream("work"),
            rng_fault: stream("faults"),
            rng_admission: stream("admission"),
            rng_route: stream("route"),
            idempotency: config
                .idempotency
                .clone()
                .map(|c| IdempotencyStore::new(c).expect(built)),
            store: config
                .store
                .as_ref()
                .map(|c| StoreState::new(name, c, seed)),
            refresh: config
                .cache
                .as_ref()
                .and_then(|c| Refresh::new(name, c, slots, seed)),
            waiters: BTreeMap::new(),
            gauges: Gauges::new(bucket, slots as usize, capacity),
            work_given: LatencyHistogram::compact(),
            sharding: None,
            life,
            scaling,
            capacity: None,
            limits: limits.map(Box::new),
            node,
            config: config.clone(),
        }
    }

    /// Gives every stream it draws from fresh randomness from `seed` (a branch's): its
    /// balancer's, work times, injected faults, admission, routes, call ratios, store and cache
    /// refresh.
    pub fn reseed(&mut self, seed: Seed) {
        self.balance.reseed(seed);
        for rng in [
            &mut self.rng_work,
            &mut self.rng_fault,
            &mut self.rng_admission,
            &mut self.rng_route,
        ] {
            rng.reseed(seed);
        }
        self.plan.reseed(seed);
        if let Some(store) = &mut self.store {
            store.reseed(seed);
        }
        if let Some(refresh) = &mut self.refresh {
            refresh.reseed(seed);
        }
    }

    /// A rolling deploy aims at it: its replicas get slots that can leave rotation.
    pub fn deployed(&mut self) {
        if self.scaling.is_none() {
            let n = self.replicas.len();
            let bucket = self.gauges.bucket();
            self.scaling = Scaling::new(&self.config, n, true, bucket).map(Box::new);
        }
    }

    /// Its capacity events (pauses, zones, liveness probes), given with the world.
    pub fn set_capacity(&mut self, capacity: Capacity) {
        self.capacity = Some(Box::new(capacity));
    }

    /// Its capacity events, if any.
    pub fn capacity(&self) -> Option<&Capacity> {
        self.capacity.as_deref()
    }

    /// Its capacity events, if any, to change.
    pub fn capacity_mut(&mut self) -> Option<&mut Capacity> {
        self.capacity.as_deref_mut()
    }

    /// Whether it has liveness probes.
    pub fn has_probes(&self) -> bool {
        self.capacity
            .as_ref()
            .is_some_and(|c| c.liveness().is_some())
    }

    /// The report bucket's width.
    pub fn bucket(&self) -> SimDuration {
        self.gauges.bucket()
    }

    /// Its replica slots, if any can leave rotation.
    pub fn scaling_mut(&mut self) -> Option<&mut Scaling> {
        self.scaling.as_deref_mut()
    }

    /// Whether replica `r` is in rotation (every replica of a service without scaling is).
    pub fn in_rotation(&self, r: usize) -> bool {
        self.life.in_rotation(r)
    }

    /// Its replicas' slots.
    pub fn life(&self) -> &Lifecycle {
        &self.life
    }

    /// Its replicas' slots, to pause and resume (the rest of their changes go through
    /// [`super::World::replica_down`] and [`super::World::replica_up`]).
    pub fn life_mut(&mut self) -> &mut Lifecycle {
        &mut self.life
    }

    /// Its slots and its scaling, to move slots in and out of rotation.
    pub fn slots_mut(&mut self) -> (&mut Lifecycle, Option<&mut Scaling>) {
        (&mut self.life, self.scaling.as_deref_mut())
    }

    /// Replica `r` went down: what it held is gone, its admission state starts afresh.
    pub fn reset_replica(&mut self, r: usize) {
        self.replicas[r].reset(&self.config);
    }

    /// Whether a new arrival at replica `r` finds it running, a free worker and no one
    /// waiting before it.
    pub fn can_start(&self, r: usize) -> bool {
        self.replicas[r].has_room(self.faults.workers) && self.life.paused_until(r).is_none()
    }

    /// Whether a worker of replica `r` is free to take a waiting job.
    pub fn can_dequeue(&self, r: usize) -> bool {
        self.life.running(r) && self.replicas[r].busy() < self.faults.workers
    }

    /// Busy workers over its replicas, integrated over time up to `now`, in
    /// worker-nanoseconds.
    pub fn busy_integral(&self, now: SimTime) -> u128 {
        self.gauges.busy_integral(now)
    }

    /// Its cache's expiring entries, if the cache has a `ttl`.
    pub fn refresh(&mut self) -> Option<&mut Refresh> {
        self.refresh.as_mut()
    }

    /// Its keyed store, if it has one.
    pub fn store(&mut self) -> Option<&mut StoreState> {
        self.store.as_mut()
    }

    /// Its keyed store, if it has one, to read.
    pub fn store_ref(&self) -> Option<&StoreState> {
        self.store.as_ref()
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Its network node.
    pub fn node(&self) -> u32 {
        self.node
    }

    /// Replica `r`.
    pub fn replica(&mut self, r: usize) -> &mut Replica {
        &mut self.replicas[r]
    }

    /// Replica `r`, read only.
    pub fn replica_ref(&self, r: usize) -> &Replica {
        &self.replicas[r]
    }

    /// Its replicas.
    pub fn replica_count(&self) -> usize {
        self.replicas.len()
    }

    /// The call site of downstream call `index` for replica `r`.
    pub fn site(&self, r: usize, index: usize) -> u32 {
        self.sites[r][index]
    }

    /// Workers per replica now (a capacity drop lowers it).
    pub fn workers(&self) -> u32 {
        self.faults.workers
    }

    /// Its counters.
    pub fn counts(&mut self) -> &mut ServiceCounts {
        self.gauges.counts()
    }

    /// Attempts it refused or failed for `reason`, so far.
    pub fn failed(&self, reason: Reason) -> u64 {
        self.gauges.failed(reason)
    }

    /// Jobs waiting in its replicas' queues.
    pub fn queued(&self) -> u32 {
        self.gauges.queued()
    }

    /// Whether its queues are unbounded (the scenario says so).
    pub fn queue_unbounded(&self) -> bool {
        self.config.queue.capacity.is_none()
    }

    /// Keys in its idempotency store (0 without one).
    pub fn idempotency_keys(&self) -> usize {
        self.idempotency.as_ref().map_or(0, IdempotencyStore::len)
    }

    /// Its idempotency store, if it has one.
    pub fn idempotency(&mut self) -> Option<&mut IdempotencyStore<u64, ()>> {
        self.idempotency.as_mut()
    }

    /// The draws of its faults and cache.
    pub fn rng_fault(&mut self) -> &mut RngStream {
        &mut self.rng_fault
    }

    // ---- arrivals and admission -------------------------------------------------------

    /// Counts an attempt arriving at `now`.
    pub fn record_arrival(&mut self, now: SimTime) {
        self.gauges.record_arrival(now);
    }

    /// Counts an attempt answered at `now` (a success is counted per bucket too).
    pub fn record_answer(&mut self, now: SimTime, reason: Option<Reason>) {
        self.gauges.record_answer(now, reason);
    }

    /// Admission control for an arrival at replica `r`: the rate limiters in order (a
    /// refusal says when to come back; a shaping limiter's delay holds the request back),
    /// then the PID shedder, then the replica's per-tenant bulkhead and concurrency limit,
    /// last so that a request refused earlier holds no slot.
    ///
    /// A priority shedder decides first, so a shed request takes no limiter token; the
    /// `RateLimit` layers decide after the `Limiter` ones. Every limiter charges the
    /// request's class cost.
    pub fn admit(&mut self, now: SimTime, r: usize, attrs: Attrs) -> Admit {
        // A 429 fault answers before anything else looks at the request, as a gateway in
        // front of the service would.
        if let Some((ratio, after)) = self.faults.too_many
            && bernoulli(&mut self.rng_fault, ratio)
        {
            let wait = after.wait(now);
            return Admit::No(Reason::RateLimited, (!wait.is_zero()).then_some(wait));
        }
        if let Some(p) = &mut self.layers.priority {
            let replica = &self.replicas[r];
            let in_flight = u64::from(replica.busy()) + replica.queue_len() as u64;
            if let Err(reason) = p.admit(attrs, in_flight, self.faults.workers) {
                return Admit::No(reason, self.config.retry_after);
            }
        }
        let mut delay = SimDuration::ZERO;
        let cost = if attrs.cost == 1 {
            Cost::ONE
        } else {
            Cost::new(u64::from(attrs.cost)).expect("class costs are at least 1")
        };
        for l in &mut self.layers.limiters {
            let d = l.acquire(now, cost);
            if !d.allowed() {
                return Admit::No(
                    Reason::RateLimited,
                    d.retry_after.or(self.config.retry_after),
                );
            }
            delay = delay.max(d.delay);
        }
        if !self.layers.rate_limits.is_empty() {
            match self.layers.rate_limits.admit(now, attrs) {
                Limited::Pass(d) => delay = delay.max(d),
                Limited::Refused(retry_after) => {
                    return Admit::No(Reason::RateLimited, retry_after.or(self.config.retry_after));
                }
            }
        }
        let pid = self.layers.pid.as_ref();
        if pid.is_some_and(|p| p.should_drop(&mut self.rng_admission)) {
            return Admit::No(Reason::Shed, self.config.retry_after);
        }
        let tenant = self.replicas[r].tenant_bulkhead();
        let held = match tenant {
            Some(b) => match b.try_acquire(&attrs.tenant) {
                Ok(()) => true,
                Err(_) => return Admit::No(Reason::ConcurrencyLimited, self.config.retry_after),
            },
            None => false,
        };
        let token = match self.acquire_slot(now, r) {
            Ok(token) => token,
            Err(_) => {
                if held {
                    self.release_tenant(r, attrs);
                }
                return Admit::No(Reason::ConcurrencyLimited, self.config.retry_after);
            }
        };
        if delay.is_zero() {
            Admit::Yes(token)
        } else {
            self.gauges.counts().shaped += 1;
            Admit::After(now.saturating_add(delay), token)
        }
    }

    /// A slot of replica `r`'s concurrency limit at `now` (`Ok(None)`: it has no limit), its
    /// limiter's gauges told.
    fn acquire_slot(
        &mut self,
        now: SimTime,
        r: usize,
    ) -> Result<Option<ConcurrencyToken>, ConcurrencyRejection> {
        let Some(limiter) = self.replicas[r].concurrency() else {
            return Ok(None);
        };
        let before = reading(limiter);
        let acquired = limiter.try_acquire(now);
        let after = reading(limiter);
        self.limiter_moved(now, r, before, after);
        acquired.map(Some)
    }

    /// Its concurrency limit summed over the replicas up and in rotation, and the requests
    /// its limiters hold, as the limiters say (0 and 0 without a limit).
    pub fn concurrency_totals(&self) -> (u64, u64) {
        super::limits::totals(&self.replicas, &self.life)
    }

    /// Replica `r`'s concurrency limiter read `before` a call into it at `now` reads `after`.
    fn limiter_moved(&mut self, now: SimTime, r: usize, before: Reading, after: Reading) {
        if let Some(g) = &mut self.limits {
            g.changed(now, self.life.serves(r), before, after);
        }
    }

    /// Whether its replicas hold a per-tenant bulkhead (an admitted job then holds a slot).
    pub fn has_tenant_bulkhead(&self) -> bool {
        self.replicas
            .first()
            .is_some_and(|r| r.tenant_bulkhead_ref().is_some())
    }

    /// Hands back the per-tenant bulkhead slot a job of `attrs` holds at replica `r`.
    pub fn release_tenant(&mut self, r: usize, attrs: Attrs) {
        self.replicas[r]
            .tenant_bulkhead()
            .expect("a tenant slot comes from the replica's bulkhead")
            .release(&attrs.tenant);
    }

    /// Hands a concurrency slot back with the job's outcome (`None`: cancelled, no sample).
    pub fn release_slot(
        &mut self,
        now: SimTime,
        r: usize,
        token: ConcurrencyToken,
        ok: Option<bool>,
    ) {
        let limiter = self.replicas[r]
            .concurrency()
            .expect("a token comes from the replica's limiter");
        let before = reading(limiter);
        match ok {
            Some(true) => limiter.on_success(now, token, &mut self.rng_admission),
            Some(false) => limiter.on_dropped(now, token, &mut self.rng_admission),
            None => limiter.on_ignored(now, token),
        }
        let after = reading(limiter);
        self.limiter_moved(now, r, before, after);
    }

    /// The work time of a job starting now at replica `r`: a draw from the work
    /// distribution, times the slowdown and the load-dependent growth.
    pub fn work_time(&mut self, r: usize, now: SimTime) -> SimDuration {
        let replica = &self.replicas[r];
        let in_flight = f64::from(replica.busy()) + replica.queue_len() as f64;
        let mut factor = self.faults.slowdown * (1.0 + self.config.work_per_in_flight * in_flight);
        if let Some(s) = &mut self.scaling {
            factor *= s.cold_factor(r, now);
        }
        let work = self.work.sample(&mut self.rng_work);
        // The common case (no slowdown, no growth with load) skips the float round trip.
        // Scaled work is capped like any sample, so `now + work` stays representable.
        let work = if factor == 1.0 {
            work
        } else {
            work.mul_f64(factor).min(SAMPLE_MAX)
        };
        self.work_given.record(work);
        work
    }

    /// Whether a job that finished its work fails with an injected error.
    pub fn fails_now(&mut self) -> bool {
        self.faults.error_ratio > 0.0 && bernoulli(&mut self.rng_fault, self.faults.error_ratio)
    }

    /// The quota a reply at `now` reports (`None` without an admission `Limiter`): the least
    /// `remaining` over the limiters, and the `reset` of that limiter (see [`super::pace`]).
    pub fn quota(&self, now: SimTime) -> Option<Quota> {
        self.layers.quota(now)
    }

    /// Whether a job that finished its work fails with an injected client error (4xx).
    pub fn client_error_now(&mut self) -> bool {
        self.faults.client_error_ratio > 0.0
            && bernoulli(&mut self.rng_fault, self.faults.client_error_ratio)
    }

    /// The stages its calls run in.
    pub fn plan(&mut self) -> &mut Plan {
        &mut self.plan
    }

    /// Where in its plan's members the calls stage `stage` takes are: all of the stage's, or
    /// the one a `Pick` stage draws from the service's route stream.
    pub fn take_stage(&mut self, stage: usize) -> std::ops::Range<usize> {
        self.plan.take(stage, &mut self.rng_route)
    }

    /// Registers `job` as waiting for the coalesced fetch of replica `r` numbered `waiter`.
    pub fn follow(&mut self, r: usize, waiter: u64, job: JobKey) {
        self.waiters.insert((r as u32, waiter), job);
    }

    /// The job waiting as `waiter` at replica `r`, no longer waiting.
    pub fn unfollow(&mut self, r: usize, waiter: u64) -> Option<JobKey> {
        self.waiters.remove(&(r as u32, waiter))
    }

    /// Whether `job` is registered to be woken by a fetch.
    pub fn is_following(&self, job: JobKey) -> bool {
        self.waiters.values().any(|k| *k == job)
    }

    /// Forgets followers that are no longer live jobs (after a crash).
    pub fn forget_followers(&mut self, live: impl Fn(JobKey) -> bool) {
        self.waiters.retain(|_, job| live(*job));
    }

    // ---- balancing --------------------------------------------------------------------

    /// The replica an attempt of `tenant` goes to: among the tenant's cell or shard when
    /// the service is isolated. Replicas out of rotation (ejected, unhealthy) are avoided
    /// while any other is in rotation.
    pub fn pick_replica(&mut self, now: SimTime, tenant: u32) -> usize {
        let shard = self.sharding.as_ref().and_then(|s| s.shard_of(tenant));
        // Only a service with scaling has slots out of rotation.
        let life = self.scaling.is_some().then_some(&self.life);
        self.balance.pick(now, &self.replicas, life, shard)
    }

    /// Outlier detection: a caller saw an attempt of replica `r` end with `ok`; consecutive
    /// failures eject it, within the most replicas that may be ejected at once.
    pub fn observe(&mut self, now: SimTime, r: usize, ok: bool) {
        self.replicas[r].answered();
        let Some(o) = &self.config.outlier else {
            return;
        };
        if ok {
            self.replicas[r].observed_success();
            return;
        }
        let rotating = self.life.rotating() as usize;
        if balance::eject(&mut self.replicas, rotating, o, now, r) {
            self.gauges.counts().ejections += 1;
        }
    }

    // ---- blast radius -----------------------------------------------------------------

    /// Its isolation tables, built with the world.
    pub fn set_sharding(&mut self, sharding: Sharding) {
        self.sharding = Some(sharding);
    }

    /// Whether a request of `tenant` crashes the replica that starts it.
    pub fn poisoned(&self, tenant: u32) -> bool {
        self.sharding.as_ref().is_some_and(|s| s.poisoned(tenant))
    }

    /// Applies the active `Poison` faults aimed at it.
    pub fn apply_poison<'a>(&mut self, active: impl Iterator<Item = &'a FaultKind>) {
        if let Some(s) = &mut self.sharding {
            s.apply_poison(&self.name, active);
        }
    }

    /// A poison request crashed one of its replicas.
    pub fn count_poison_crash(&mut self) {
        if let Some(s) = &mut self.sharding {
            s.count_poison_crash();
        }
    }

    /// Replica `r`, up until now, is down (crashed) at `now`, or up again: its blast-radius
    /// groups are told.
    pub fn replica_changed(&mut self, now: SimTime, r: usize) {
        if let Some(s) = &mut self.sharding {
            s.replica_changed(now, r, &self.life);
        }
    }

    // ---- faults and controllers -------------------------------------------------------

    /// Applies the active faults aimed at this service. Network faults are sim-net's.
    pub fn apply_faults<'a>(&mut self, active: impl Iterator<Item = &'a FaultKind>) {
        self.faults = ServiceFaults::of(&self.name, self.config.workers, active);
    }

    /// One round of active health checks; returns the probe interval.
    pub fn health_check(&mut self, now: SimTime) -> SimDuration {
        let h = self
            .config
            .health_check
            .as_ref()
            .expect("ticks are for services with health checks");
        let capacity = self.config.queue.capacity;
        let marked = balance::health_check(&mut self.replicas, &self.life, h, capacity, now);
        self.gauges.counts().marked_unhealthy += marked;
        h.interval
    }

    /// The PID shedder's tick interval, if the service has one.
    pub fn pid_interval(&self) -> Option<SimDuration> {
        self.layers.pid.as_ref().map(PidShedding::interval)
    }

    /// A worker took a job that waited `sojourn` (zero: it found the worker free), for the
    /// wait figures; a job that left the queue is also the PID shedder's signal, which
    /// reads only the requests that queued.
    pub fn record_wait(&mut self, sojourn: SimDuration, queued: bool) {
        self.gauges.record_wait(sojourn);
        if queued && let Some(p) = &mut self.layers.pid {
            p.record(sojourn);
        }
    }

    /// The PID shedder measures and updates; returns the interval to the next tick.
    pub fn pid_tick(&mut self, now: SimTime) -> SimDuration {
        let oldest = self
            .replicas
            .iter()
            .filter_map(|r| r.oldest_wait(now))
            .max()
            .unwrap_or_default();
        let p = self
            .layers
            .pid
            .as_mut()
            .expect("ticks are for services with a PID shedder");
        let next = p.tick(now, oldest);
        if let Some(g) = &mut self.limits {
            g.drop_ratio(now, p.drop_ratio());
        }
        next
    }

    // ---- gauges and figures -----------------------------------------------------------

    /// Busy workers over the replicas change by `delta` at `now`.
    pub fn busy_change(&mut self, now: SimTime, delta: i32) {
        self.gauges.busy_change(now, delta);
    }

    /// Replica `r` loses every job in its queue at `now` (their callers are told by the
    /// caller of this).
    pub fn clear_queue(&mut self, now: SimTime, r: usize) {
        let held = self.replicas[r].clear_queue(&self.config);
        let held = i32::try_from(held).expect("a queue's length fits the gauge");
        self.queue_change(now, r, -held);
    }

    /// The queue of replica `r` has just changed by `delta` jobs at `now`.
    pub fn queue_change(&mut self, now: SimTime, r: usize, delta: i32) {
        let length = self.replicas[r].queue_len() as u64;
        let queued = self.gauges.queue_change(now, r, length, delta);
        if let Some(s) = &mut self.scaling {
            s.queue_change(now, queued);
        }
    }

    /// The workers of the replicas up in rotation may have changed at `now` (a replica
    /// down or up, a slot in or out of rotation, a capacity drop starting or ending).
    pub fn capacity_change(&mut self, now: SimTime) {
        let up = self.life.serving() as f64;
        self.gauges
            .capacity(now, up * f64::from(self.faults.workers));
        if let Some(g) = &mut self.limits {
            g.recount(now, &self.replicas, &self.life);
        }
    }

    /// Asserts that the gauges count what the replicas hold.
    pub fn check_gauges(&self) {
        let busy: u32 = self.replicas.iter().map(Replica::busy).sum();
        let queued: usize = self.replicas.iter().map(Replica::queue_len).sum();
        self.gauges.check(&self.name, busy, queued);
        if let Some(g) = &self.limits {
            g.check(&self.name, &self.replicas, &self.life);
        }
    }

    /// Its figures at `end`; `messages_lost` comes from the network.
    pub fn figures(&mut self, end: SimTime, buckets: usize, messages_lost: u64) -> ServiceFigures {
        let (mut counts, wait, series) = self.gauges.finish(end, buckets);
        counts.messages_lost = messages_lost;
        counts.shadow_refusals = self.layers.rate_limits.shadow_refusals();
        ServiceFigures {
            name: self.name.clone(),
            replicas: self.config.replicas,
            workers: self.config.workers,
            counts,
            wait,
            work: self.work_given.clone(),
            pid_drop_ratio_max: self
                .layers
                .pid
                .as_ref()
                .map_or(0.0, PidShedding::drop_ratio_max),
            buckets: series,
            limiters: self.limits.as_mut().map(|g| Box::new(g.finish(end))),
            store: self.store.as_ref().map(StoreState::figures),
            blast: self.sharding.as_mut().map(|s| s.figures(end, buckets)),
            refresh: self.refresh.as_ref().map(Refresh::figures),
            scaling: self.scaling.as_mut().map(|s| s.figures(end)),
            capacity: self.capacity.as_ref().map(|c| {
                // Pauses that run past the end count up to the end.
                let beyond: u64 = self
                    .life
                    .pauses()
                    .map(|u| u.saturating_duration_since(end).as_nanos())
                    .sum();
                let mut f = c.figures();
                f.paused_ns = f.paused_ns.saturating_sub(beyond);
                f
            }),
            connections: None,
        }
    }
}
