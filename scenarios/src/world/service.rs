//! A service: its replicas behind a balancer, the admission control in front of their
//! queues, the handler's work, the faults that change it, its controllers (PID shedder,
//! health checks) and its figures.
//!
//! The service decides for its replicas (which one an attempt goes to, whether it is
//! admitted, how long its work takes); the jobs themselves are the world's ([`super::job`]).
//!
//! Longer than most files on purpose: a service owns many small parts (balancer, admission,
//! work, faults, controllers, figures), each a few short methods over the same replicas; the
//! world is split by owner, and this is one owner.

use super::JobKey;
use super::admission::{Limited, PriorityShedding, RateLimits};
use super::capacity::Capacity;
use super::client::bucket_mut;
use super::job::Job;
use super::outcome::Reason;
use super::pace::Quota;
use super::refresh::Refresh;
use super::replica::Replica;
use super::scaling::Scaling;
use super::sharding::{self, Sharding};
use super::store::StoreState;
use super::traffic::Attrs;
use crate::figures::{ReasonCounts, ServiceBucket, ServiceCounts, ServiceFigures};
use crate::format::schema::answers::RetryAfter;
use crate::format::schema::{Admission, Balancer, FaultKind, Service as Config};
use patterns::concurrency::ConcurrencyToken;
use patterns::idempotency::IdempotencyStore;
use patterns::limiter::{Cost, Limiter, RateLimiter};
use patterns::shedder::PidShedder;
use sim_core::metrics::{GaugeSeries, LatencyHistogram, PeakSeries};
use sim_core::sample::{SAMPLE_MAX, bernoulli, uniform_below, unit_f64};
use sim_core::{RngStream, Sampler, Seed, SimDuration, SimTime};
use slotmap::SlotMap;
use std::collections::BTreeMap;

/// A PID shedder and the delay samples it reads at its next tick.
#[derive(Debug)]
struct Pid {
    shedder: PidShedder,
    interval: SimDuration,
    delay_sum_ns: u64,
    delay_count: u64,
    drop_ratio_max: f64,
}

/// What the active faults do to a service (overlapping faults compose).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Faults {
    slowdown: f64,
    error_ratio: f64,
    workers: u32,
    /// The share of requests failed with a client error (4xx) after their work.
    client_error_ratio: f64,
    /// The share of arrivals refused with 429, and the `Retry-After` sent.
    too_many: Option<(f64, RetryAfter)>,
}

/// Admission control's answer to an arrival.
#[derive(Debug)]
pub enum Admit {
    /// Admitted, holding a concurrency slot if the replica has a limit.
    Yes(Option<ConcurrencyToken>),
    /// Admitted, but a shaping rate limiter holds it back until then.
    After(SimTime, Option<ConcurrencyToken>),
    /// Refused, with the `Retry-After` to send.
    No(Reason, Option<SimDuration>),
}

/// Per-bucket figures kept while running.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    arrivals: u64,
    ok: u64,
}

/// One service.
#[derive(Debug)]
pub struct Service {
    name: String,
    config: Config,
    /// Its node among the world's network nodes.
    node: u32,
    work: Sampler,
    /// Per replica, the call site of each downstream call.
    sites: Vec<Vec<u32>>,
    replicas: Vec<Replica>,
    limiters: Vec<Limiter>,
    /// Its `RateLimit` layers (keyed, costed, shadow).
    rate_limits: RateLimits,
    /// Its priority shedder.
    priority: Option<PriorityShedding>,
    pid: Option<Pid>,
    faults: Faults,
    round_robin: usize,
    rng_work: RngStream,
    rng_fault: RngStream,
    rng_balance: RngStream,
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
    counts: ServiceCounts,
    wait: LatencyHistogram,
    /// The work time of every job that started, as it was given (after slowdowns, growth
    /// with load and cold starts): the service time the report sets beside the declared one.
    work_given: LatencyHistogram,
    /// Attempts that found a free worker (a wait of zero), kept apart from `wait` because
    /// they are most attempts of a healthy service and a count is cheaper than a record.
    waits_zero: u64,
    tallies: Vec<Tally>,
    /// Refusals and failures per bucket, apart from `tallies`: most buckets of most services
    /// have none, and arrivals stay on a small entry.
    failed_series: Vec<ReasonCounts>,
    bucket: SimDuration,
    /// Queued jobs over the replicas.
    queue_series: GaugeSeries,
    /// The longest queue of one replica, per bucket; `None` with one replica slot, whose
    /// queue is the total (so a one-replica service pays nothing for it).
    queue_peaks: Option<PeakSeries>,
    busy_series: GaugeSeries,
    /// Workers of the replicas that are up: changes only with faults.
    capacity_series: GaugeSeries,
    busy_total: u32,
    queued_total: u32,
    busy_since: SimTime,
    /// Which replicas each caller unit may use, when it is isolated or poisoned
    /// ([`super::sharding`]).
    sharding: Option<Sharding>,
    /// Its replica slots in and out of rotation, if it autoscales, cold-starts or is
    /// deployed (`None`: every replica is in rotation).
    scaling: Option<Box<Scaling>>,
    /// Its pauses, zones and liveness probes, if any ([`super::capacity`]).
    capacity: Option<Box<Capacity>>,
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
        let mut limiters = Vec::new();
        let mut rate_limits = RateLimits::default();
        let (mut priority, mut pid) = (None, None);
        for a in &config.admission {
            match a {
                Admission::Limiter(l) => limiters.push(Limiter::new(l).expect(built)),
                // One per replica, built with the replicas.
                Admission::Concurrency(_) => {}
                // The world's own (`world::distributed`), since a store call is a world's.
                Admission::Distributed(_) => {}
                Admission::Pid {
                    interval,
                    controller,
                } => {
                    pid = Some(Pid {
                        shedder: PidShedder::new(controller).expect(built),
                        interval: *interval,
                        delay_sum_ns: 0,
                        delay_count: 0,
                        drop_ratio_max: 0.0,
                    })
                }
                Admission::RateLimit(k) => rate_limits.push(k),
                Admission::Priority(p) => priority = Some(PriorityShedding::new(p)),
                // One per replica, built with the replicas.
                Admission::TenantBulkhead(_) => {}
            }
        }
        let stream = |what: &str| seed.stream(&format!("services/{name}/{what}"));
        let mut capacity_series = GaugeSeries::new(bucket);
        capacity_series.set(
            SimTime::ZERO,
            f64::from(config.replicas) * f64::from(config.workers),
        );
        let slots = crate::format::schema::scaling::slots(config);
        let scaling = Scaling::new(config, slots as usize, false, bucket).map(Box::new);
        let mut replicas: Vec<Replica> = (0..slots).map(|_| Replica::new(config)).collect();
        for (r, replica) in replicas.iter_mut().enumerate() {
            if scaling.as_ref().is_some_and(|s| s.parked(r)) {
                replica.crash(config);
            }
        }
        Service {
            name: name.to_string(),
            work: config.work.compile().expect(built),
            sites,
            replicas,
            limiters,
            rate_limits,
            priority,
            pid,
            faults: Faults {
                slowdown: 1.0,
                error_ratio: 0.0,
                client_error_ratio: 0.0,
                too_many: None,
                workers: config.workers,
            },
            round_robin: 0,
            rng_work: stream("work"),
            rng_fault: stream("faults"),
            rng_balance: stream("balancer"),
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
            counts: ServiceCounts::default(),
            wait: LatencyHistogram::compact(),
            work_given: LatencyHistogram::compact(),
            waits_zero: 0,
            tallies: Vec::new(),
            failed_series: Vec::new(),
            bucket,
            queue_series: GaugeSeries::new(bucket),
            queue_peaks: (slots > 1).then(|| PeakSeries::new(bucket, slots as usize)),
            busy_series: GaugeSeries::new(bucket),
            capacity_series,
            busy_total: 0,
            queued_total: 0,
            busy_since: SimTime::ZERO,
            sharding: None,
            scaling,
            capacity: None,
            node,
            config: config.clone(),
        }
    }

    /// A rolling deploy aims at it: its replicas get slots that can leave rotation.
    pub fn deployed(&mut self) {
        if self.scaling.is_none() {
            let n = self.replicas.len();
            self.scaling = Scaling::new(&self.config, n, true, self.bucket).map(Box::new);
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
        self.bucket
    }

    /// Its replica slots, if any can leave rotation.
    pub fn scaling_mut(&mut self) -> Option<&mut Scaling> {
        self.scaling.as_deref_mut()
    }

    /// Whether replica `r` is in rotation (every replica of a service without scaling is).
    pub fn in_rotation(&self, r: usize) -> bool {
        self.scaling.as_ref().is_none_or(|s| s.in_rotation(r))
    }

    /// Busy workers over its replicas, integrated over time up to `now`, in
    /// worker-nanoseconds.
    pub fn busy_integral(&self, now: SimTime) -> u128 {
        let held = now.saturating_duration_since(self.busy_since).as_nanos();
        u128::from(self.counts.busy_ns) + u128::from(self.busy_total) * u128::from(held)
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
        &mut self.counts
    }

    /// Jobs waiting in its replicas' queues.
    pub fn queued(&self) -> u32 {
        self.queued_total
    }

    /// Whether its queues are unbounded (the scenario says so).
    pub fn queue_unbounded(&self) -> bool {
        self.config.queue.capacity.is_none()
    }

    /// The bytes its side tables of the jobs (the store's reads, the cache's fetches) may
    /// hold until the next memory check.
    pub fn reserved_beside(&self, jobs: &SlotMap<JobKey, Job>, margin: usize) -> u64 {
        self.store
            .as_ref()
            .map_or(0, |s| super::reserved_beside(s.reads(), jobs, margin))
            + self
                .refresh
                .as_ref()
                .map_or(0, |r| super::reserved_beside(r.fetches(), jobs, margin))
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
        self.counts.arrivals += 1;
        let i = (now.as_nanos() / self.bucket.as_nanos()) as usize;
        bucket_mut(&mut self.tallies, i).arrivals += 1;
    }

    /// Counts an attempt answered at `now` (a success is counted per bucket too).
    pub fn record_answer(&mut self, now: SimTime, reason: Option<Reason>) {
        match reason {
            None => {
                self.counts.ok += 1;
                let i = (now.as_nanos() / self.bucket.as_nanos()) as usize;
                bucket_mut(&mut self.tallies, i).ok += 1;
            }
            Some(r) => {
                self.counts.failed.add(r);
                let i = (now.as_nanos() / self.bucket.as_nanos()) as usize;
                bucket_mut(&mut self.failed_series, i).add(r);
            }
        }
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
        if let Some(p) = &mut self.priority {
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
        for l in &mut self.limiters {
            let d = l.acquire(now, cost);
            if !d.allowed() {
                return Admit::No(
                    Reason::RateLimited,
                    d.retry_after.or(self.config.retry_after),
                );
            }
            delay = delay.max(d.delay);
        }
        if !self.rate_limits.is_empty() {
            match self.rate_limits.admit(now, attrs) {
                Limited::Pass(d) => delay = delay.max(d),
                Limited::Refused(retry_after) => {
                    return Admit::No(Reason::RateLimited, retry_after.or(self.config.retry_after));
                }
            }
        }
        if self
            .pid
            .as_ref()
            .is_some_and(|p| p.shedder.should_drop(&mut self.rng_admission))
        {
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
        let token = match self.replicas[r].concurrency() {
            Some(limiter) => match limiter.try_acquire(now) {
                Ok(token) => Some(token),
                Err(_) => {
                    if held {
                        self.release_tenant(r, attrs);
                    }
                    return Admit::No(Reason::ConcurrencyLimited, self.config.retry_after);
                }
            },
            None => None,
        };
        if delay.is_zero() {
            Admit::Yes(token)
        } else {
            self.counts.shaped += 1;
            Admit::After(now.saturating_add(delay), token)
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
        match ok {
            Some(true) => limiter.on_success(now, token, &mut self.rng_admission),
            Some(false) => limiter.on_dropped(now, token, &mut self.rng_admission),
            None => limiter.on_ignored(now, token),
        }
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
        if self.limiters.is_empty() {
            return None;
        }
        let least = self
            .limiters
            .iter()
            .map(|l| l.peek(now, Cost::ONE))
            .min_by_key(|d| d.remaining)?;
        let reset = if least.remaining == 0 {
            least.retry_after.unwrap_or(SimDuration::ZERO)
        } else {
            least.reset_at.saturating_duration_since(now)
        };
        Some(Quota {
            remaining: u32::try_from(least.remaining).unwrap_or(u32::MAX),
            reset,
        })
    }

    /// Whether a job that finished its work fails with an injected client error (4xx).
    pub fn client_error_now(&mut self) -> bool {
        self.faults.client_error_ratio > 0.0
            && bernoulli(&mut self.rng_fault, self.faults.client_error_ratio)
    }

    /// Which downstream call a request makes under `CallMode::Pick`, at random by weight.
    pub fn pick_call(&mut self) -> usize {
        let calls = &self.config.calls;
        let total: f64 = calls.iter().map(|c| c.weight).sum();
        let mut u = unit_f64(&mut self.rng_route) * total;
        for (i, c) in calls.iter().enumerate() {
            if u < c.weight {
                return i;
            }
            u -= c.weight;
        }
        calls.len() - 1
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
        if let Some(shard) = self.sharding.as_ref().and_then(|s| s.shard_of(tenant)) {
            let balancer = self.config.balancer;
            let (rr, rng) = (&mut self.round_robin, &mut self.rng_balance);
            return sharding::pick_in(shard, &self.replicas, balancer, now, rr, rng);
        }
        let n = self.replicas.len();
        if n == 1 {
            return 0;
        }
        // Replicas out of rotation (scaling, deploys) are not candidates, unless none is in
        // rotation; then ejection and health decide among all as before.
        let scaling = self.scaling.as_deref();
        let any_rotating = scaling.is_none_or(|s| (0..n).any(|i| s.in_rotation(i)));
        let rotating = |i: usize| !any_rotating || scaling.is_none_or(|s| s.in_rotation(i));
        let any_eligible = self
            .replicas
            .iter()
            .enumerate()
            .any(|(i, r)| rotating(i) && r.eligible(now));
        let ok = |i: usize, r: &Replica| rotating(i) && (!any_eligible || r.eligible(now));
        let candidates = || self.replicas.iter().enumerate().filter(|(i, r)| ok(*i, r));
        match self.config.balancer {
            Balancer::RoundRobin => {
                for _ in 0..n {
                    let i = self.round_robin % n;
                    self.round_robin = (self.round_robin + 1) % n;
                    if ok(i, &self.replicas[i]) {
                        return i;
                    }
                }
                unreachable!("some replica is in rotation when none is eligible")
            }
            Balancer::Random => {
                let count = candidates().count() as u64;
                let k = uniform_below(&mut self.rng_balance, count) as usize;
                candidates().nth(k).map_or(0, |(i, _)| i)
            }
            Balancer::LeastOutstanding => candidates()
                .min_by_key(|(i, r)| (r.outstanding(), *i))
                .map_or(0, |(i, _)| i),
            Balancer::PowerOfTwo => {
                // Two draws among the replicas in rotation (not rejection sampling over all
                // of them, which has no bound when few are in rotation).
                let eligible: u64 = candidates().count() as u64;
                let mut draw = || {
                    let k = uniform_below(&mut self.rng_balance, eligible) as usize;
                    self.replicas
                        .iter()
                        .enumerate()
                        .filter(|(i, r)| ok(*i, r))
                        .nth(k)
                        .map_or(0, |(i, _)| i)
                };
                let (a, b) = (draw(), draw());
                if self.replicas[b].outstanding() < self.replicas[a].outstanding() {
                    b
                } else {
                    a
                }
            }
        }
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
        let failures = self.replicas[r].observed_failure();
        if failures < o.consecutive_failures || self.replicas[r].ejected(now) {
            return;
        }
        let ejected = self.replicas.iter().filter(|x| x.ejected(now)).count();
        let rotating = match &self.scaling {
            Some(s) => (0..self.replicas.len())
                .filter(|&i| s.in_rotation(i))
                .count(),
            None => self.replicas.len(),
        };
        let allowed = ((rotating as f64 * o.max_ejection_percent / 100.0) as usize).max(1);
        if ejected < allowed {
            let until = now.saturating_add(o.ejection);
            self.replicas[r].eject(until);
            self.counts.ejections += 1;
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

    /// Replica `r`, up until now, is down (crashed) at `now`, or up again.
    pub fn replica_changed(&mut self, now: SimTime, r: usize) {
        let Some(s) = &mut self.sharding else {
            return;
        };
        let replicas = &self.replicas;
        if replicas[r].is_up() {
            s.replica_up(now, r);
        } else {
            s.replica_down(now, r, |i| replicas[i].is_up());
        }
    }

    // ---- faults and controllers -------------------------------------------------------

    /// Applies the active faults aimed at this service (`active` lists every fault with
    /// whether it is active). Network faults are sim-net's.
    pub fn apply_faults<'a>(&mut self, active: impl Iterator<Item = &'a FaultKind>) {
        let mut f = Faults {
            slowdown: 1.0,
            error_ratio: 0.0,
            workers: self.config.workers,
            client_error_ratio: 0.0,
            too_many: None,
        };
        for kind in active {
            match kind {
                FaultKind::Slowdown { service, factor } if *service == self.name => {
                    f.slowdown *= factor
                }
                FaultKind::ErrorRate {
                    service,
                    error_ratio,
                } if *service == self.name => {
                    f.error_ratio = 1.0 - (1.0 - f.error_ratio) * (1.0 - error_ratio)
                }
                FaultKind::CapacityDrop { service, workers } if *service == self.name => {
                    f.workers = f.workers.min(*workers)
                }
                FaultKind::ClientErrorRate {
                    service,
                    error_ratio,
                } if *service == self.name => {
                    f.client_error_ratio = 1.0 - (1.0 - f.client_error_ratio) * (1.0 - error_ratio)
                }
                // Overlapping 429 faults refuse independently; the later one's Retry-After
                // is sent.
                FaultKind::TooManyRequests {
                    service,
                    refused_ratio,
                    retry_after,
                } if *service == self.name => {
                    let before = f.too_many.map_or(0.0, |(r, _)| r);
                    let ratio = 1.0 - (1.0 - before) * (1.0 - refused_ratio);
                    f.too_many = Some((ratio, *retry_after));
                }
                _ => {}
            }
        }
        self.faults = f;
    }

    /// One round of active health checks; returns the probe interval.
    pub fn health_check(&mut self, now: SimTime) -> SimDuration {
        let h = self
            .config
            .health_check
            .clone()
            .expect("ticks are for services with health checks");
        let capacity = self.config.queue.capacity;
        for (i, r) in self.replicas.iter_mut().enumerate() {
            // A replica out of rotation is not probed (its endpoint is not registered).
            if self.scaling.as_ref().is_some_and(|s| !s.in_rotation(i)) {
                continue;
            }
            let pass = r.probe_passes(now, capacity, h.timeout);
            if r.probe(pass, h.unhealthy_threshold, h.healthy_threshold) {
                self.counts.marked_unhealthy += 1;
            }
        }
        h.interval
    }

    /// The PID shedder's tick interval, if the service has one.
    pub fn pid_interval(&self) -> Option<SimDuration> {
        self.pid.as_ref().map(|p| p.interval)
    }

    /// A worker took a job that waited `sojourn` (zero: it found the worker free), for the
    /// wait figures; a job that left the queue is also the PID shedder's signal, which
    /// reads only the requests that queued.
    pub fn record_wait(&mut self, sojourn: SimDuration, queued: bool) {
        if sojourn.is_zero() {
            self.waits_zero += 1;
        } else {
            self.wait.record(sojourn);
        }
        if queued && let Some(p) = &mut self.pid {
            p.delay_sum_ns += sojourn.as_nanos();
            p.delay_count += 1;
        }
    }

    /// The PID shedder measures and updates. Its signal is the mean queueing delay of the
    /// requests served since the last tick, or the age of the oldest waiting request if that
    /// is longer (nothing may have left the queue). Returns the interval to the next tick.
    pub fn pid_tick(&mut self, now: SimTime) -> SimDuration {
        let oldest = self
            .replicas
            .iter()
            .filter_map(|r| r.oldest_wait(now))
            .max()
            .unwrap_or_default();
        let p = self
            .pid
            .as_mut()
            .expect("ticks are for services with a PID shedder");
        let mean = p
            .delay_sum_ns
            .checked_div(p.delay_count)
            .map_or(SimDuration::ZERO, SimDuration::from_nanos);
        p.delay_sum_ns = 0;
        p.delay_count = 0;
        let drop_ratio = p.shedder.update(now, mean.max(oldest).as_millis_f64());
        p.drop_ratio_max = p.drop_ratio_max.max(drop_ratio);
        p.interval
    }

    // ---- gauges and figures -----------------------------------------------------------

    /// Busy workers over the replicas change by `delta` at `now`.
    pub fn busy_change(&mut self, now: SimTime, delta: i32) {
        let held = now.saturating_duration_since(self.busy_since).as_nanos();
        self.counts.busy_ns += u64::from(self.busy_total) * held;
        self.busy_since = now;
        self.busy_total = self
            .busy_total
            .checked_add_signed(delta)
            .expect("busy count");
        self.busy_series.set(now, f64::from(self.busy_total));
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
        self.queued_total = self
            .queued_total
            .checked_add_signed(delta)
            .expect("queue count");
        if let Some(peaks) = &mut self.queue_peaks {
            peaks.set(now, r, self.replicas[r].queue_len() as u64);
        }
        if let Some(s) = &mut self.scaling {
            s.queue_change(now, self.queued_total);
        }
        self.queue_series.set(now, f64::from(self.queued_total));
    }

    /// The workers of the replicas that are up may have changed at `now` (a crash, a restart,
    /// a capacity drop starting or ending).
    pub fn capacity_change(&mut self, now: SimTime) {
        let up = self
            .replicas
            .iter()
            .enumerate()
            .filter(|(i, r)| r.is_up() && self.in_rotation(*i))
            .count() as f64;
        self.capacity_series
            .set(now, up * f64::from(self.faults.workers));
    }

    /// Asserts that the gauges count what the replicas hold.
    pub fn check_gauges(&self) {
        let busy: u32 = self.replicas.iter().map(Replica::busy).sum();
        let queued: usize = self.replicas.iter().map(Replica::queue_len).sum();
        assert_eq!(self.busy_total, busy, "{}: busy workers gauge", self.name);
        assert_eq!(
            self.queued_total as usize, queued,
            "{}: queue gauge",
            self.name
        );
    }

    /// Its figures at `end`; `messages_lost` comes from the network.
    pub fn figures(&mut self, end: SimTime, buckets: usize, messages_lost: u64) -> ServiceFigures {
        self.busy_change(end, 0);
        let queue = self.queue_series.finish(end);
        let queue_peaks = self.queue_peaks.as_mut().map(|p| p.finish(end));
        let busy = self.busy_series.finish(end);
        let capacity = self.capacity_series.finish(end);
        let mut counts = self.counts.clone();
        counts.messages_lost = messages_lost;
        counts.shadow_refusals = self.rate_limits.shadow_refusals();
        ServiceFigures {
            name: self.name.clone(),
            replicas: self.config.replicas,
            workers: self.config.workers,
            counts,
            wait: {
                let mut wait = self.wait.clone();
                wait.record_n(SimDuration::ZERO, self.waits_zero);
                wait
            },
            work: self.work_given.clone(),
            pid_drop_ratio_max: self.pid.as_ref().map_or(0.0, |p| p.drop_ratio_max),
            buckets: (0..buckets)
                .map(|i| {
                    let t = self.tallies.get(i).copied().unwrap_or_default();
                    ServiceBucket {
                        arrivals: t.arrivals,
                        ok: t.ok,
                        queue: queue.get(i).copied().unwrap_or_default(),
                        queue_replica_max: match &queue_peaks {
                            Some(peaks) => peaks.get(i).copied().unwrap_or_default(),
                            // One replica: its queue is the total.
                            None => queue.get(i).map_or(0, |q| q.max as u64),
                        },
                        busy: busy.get(i).copied().unwrap_or_default(),
                        capacity: capacity.get(i).copied().unwrap_or_default(),
                        failed: self.failed_series.get(i).copied().unwrap_or_default(),
                    }
                })
                .collect(),
            store: self.store.as_ref().map(StoreState::figures),
            blast: self.sharding.as_mut().map(|s| s.figures(end, buckets)),
            refresh: self.refresh.as_ref().map(Refresh::figures),
            scaling: self.scaling.as_mut().map(|s| s.figures(end)),
            capacity: self.capacity.as_ref().map(|c| {
                // Pauses that run past the end count up to the end.
                let beyond: u64 = self
                    .replicas
                    .iter()
                    .filter_map(|r| r.paused_until())
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
