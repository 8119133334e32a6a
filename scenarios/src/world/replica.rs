//! A replica: its workers, its queue and its discipline, its admission state (concurrency
//! limit, cache coalescing) and its health as callers and probes see it. Whether it is up,
//! paused or in rotation is its slot's ([`super::lifecycle`]).
//!
//! A replica knows jobs only by key; what a job is doing is the job's business
//! ([`super::job`]). Every queued key is a live job: a job that leaves the queue for any
//! reason (a worker took it, a shedder dropped it, its caller's cancellation arrived) is
//! taken out of it, so the queue's length is what the capacity, the depth figures and the
//! health checks count.
//!
//! # Decisions
//!
//! A request's priority level reaches its replica's queue at enqueue, so the `Priority`
//! discipline (`LevelQueue`: the most important first, and a full queue makes room by evicting
//! the newest of the least important level below the arrival's, which fails as `queue_full`)
//! and the priority shedder read the same level; an eviction is the queue's own refusal, so it
//! needs no figure of its own. `CoDelRfc` is the patterns crate's `CoDelQueue` as it is, RFC
//! 8289 step by step, beside the RPC `CoDel`: its drops are `shed`. A `TenantBulkhead` is one
//! `KeyedBulkhead` per replica (like the concurrency limit, since workers are a replica's),
//! tried after every other admission layer but the concurrency limit, and given back when the
//! job leaves the world (`end_job`); a crash starts the replica's table afresh with its jobs
//! lost. Its refusals are `concurrency_limited`, and the per-tenant figures of the classes say
//! whom they hit. A call's `Limiter` layers charge the request's class cost through a `Ticket`
//! (the call's id and cost) that every gate is shown; distributed limiters still count
//! requests. A scenario with none of these pays nothing new: the queue variant is chosen when
//! the replica is built, and the bulkhead is an `Option` checked at admission.

use super::JobKey;
use crate::format::schema::{Discipline, QueueConfig, Service};
use patterns::bulkhead::KeyedBulkhead;
use patterns::coalesce::Coalescer;
use patterns::concurrency::ConcurrencyLimiter;
use patterns::shedder::{CoDelConfig, CoDelQueue, Enqueued, LevelQueue, RpcQueue, RpcQueueConfig};
use sim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// A replica's queue.
#[derive(Debug, Clone)]
enum Queue {
    /// FIFO, LIFO or adaptive LIFO: the discipline chooses at dequeue. Entries carry their
    /// enqueue time.
    Plain {
        jobs: VecDeque<(SimTime, JobKey)>,
        /// `None`: unbounded (the scenario says so).
        capacity: Option<u32>,
        discipline: Discipline,
    },
    /// CoDel for RPC queues, from the patterns crate.
    CoDel(RpcQueue<JobKey>),
    /// Highest priority level first, evicting the least important when full.
    Priority(LevelQueue<JobKey>),
    /// CoDel as RFC 8289 writes it.
    CoDelRfc(CoDelQueue<JobKey>),
}

/// What the queue did with an arrival.
#[derive(Debug, PartialEq, Eq)]
pub enum Enqueue {
    /// It waits.
    Queued,
    /// It waits, and this job was evicted to make room (it fails as `queue_full`).
    Evicted(JobKey),
    /// The queue was full.
    Full,
}

/// What a free worker takes from the queue.
#[derive(Debug, Default)]
pub struct Dequeued {
    /// The job to start, and when it was queued.
    pub next: Option<(JobKey, SimTime)>,
    /// Jobs the queue's shedder dropped on the way.
    pub shed: Vec<JobKey>,
}

/// Passive and active health as callers see it.
#[derive(Debug, Clone, Default)]
struct Health {
    /// Failures in a row seen by callers (outlier detection).
    consecutive_failures: u32,
    /// Out of rotation until then, after an ejection.
    ejected_until: Option<SimTime>,
    /// Out of rotation as far as active health checks know.
    unhealthy: bool,
    /// Probes in a row with the same result, counting towards a change of `unhealthy`.
    probe_streak: u32,
}

/// One replica.
#[derive(Debug, Clone)]
pub struct Replica {
    busy: u32,
    queue: Queue,
    /// Attempts sent to it and not yet answered, as the balancer counts them.
    outstanding: u32,
    health: Health,
    /// When its cache was last emptied (`None`: warm since the start).
    cold_since: Option<SimTime>,
    /// Single flight per cache key, when the cache coalesces misses.
    coalescer: Option<Coalescer<u32>>,
    /// The concurrency limit of admission control, if any.
    concurrency: Option<ConcurrencyLimiter>,
    /// The per-tenant bulkhead of admission control, if any.
    tenant_bulkhead: Option<KeyedBulkhead<u32>>,
    /// Jobs that have left its queue, for any reason: a liveness probe served by the
    /// workers knows its turn by this count ([`super::capacity`]).
    left_queue: u64,
}

impl Queue {
    fn new(config: &QueueConfig) -> Queue {
        match config.discipline {
            Discipline::CoDel {
                target,
                interval,
                adaptive_lifo,
            } => Queue::CoDel(
                RpcQueue::new(&RpcQueueConfig {
                    target,
                    interval,
                    adaptive_lifo,
                    queue_capacity: config.capacity.map_or(usize::MAX, |c| c as usize),
                })
                .expect("queue settings are validated with the scenario"),
            ),
            Discipline::Priority => Queue::Priority(LevelQueue::new(
                config.capacity.map_or(usize::MAX, |c| c as usize),
            )),
            Discipline::CoDelRfc { target, interval } => Queue::CoDelRfc(
                CoDelQueue::new(&CoDelConfig {
                    target,
                    interval,
                    queue_capacity: config.capacity.map_or(usize::MAX, |c| c as usize),
                    ..CoDelConfig::default()
                })
                .expect("queue settings are validated with the scenario"),
            ),
            // Grown as used: a bound of a million costs nothing until requests wait.
            _ => Queue::Plain {
                jobs: VecDeque::new(),
                capacity: config.capacity,
                discipline: config.discipline.clone(),
            },
        }
    }

    fn len(&self) -> usize {
        match self {
            Queue::Plain { jobs, .. } => jobs.len(),
            Queue::CoDel(q) => q.len(),
            Queue::Priority(q) => q.len(),
            Queue::CoDelRfc(q) => q.len(),
        }
    }

    fn oldest(&self) -> Option<SimTime> {
        match self {
            // Jobs are pushed at the back whatever the discipline: the oldest is at the front.
            Queue::Plain { jobs, .. } => jobs.front().map(|(t, _)| *t),
            Queue::CoDel(q) => q.oldest(),
            Queue::Priority(q) => q.oldest(),
            Queue::CoDelRfc(q) => q.oldest(),
        }
    }
}

impl Replica {
    /// A replica of service `config`, idle and warm.
    pub fn new(config: &Service) -> Replica {
        Replica {
            busy: 0,
            queue: Queue::new(&config.queue),
            outstanding: 0,
            health: Health::default(),
            cold_since: None,
            coalescer: coalescer_of(config),
            concurrency: concurrency_of(config),
            tenant_bulkhead: tenant_bulkhead_of(config),
            left_queue: 0,
        }
    }

    /// Busy workers.
    pub fn busy(&self) -> u32 {
        self.busy
    }

    /// Waiting jobs.
    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// Whether a new arrival finds a free worker and no one waiting before it (if it runs).
    pub fn has_room(&self, workers: u32) -> bool {
        self.busy < workers && self.queue.len() == 0
    }

    /// A worker starts on a job.
    pub fn take_worker(&mut self) {
        self.busy += 1;
    }

    /// A worker is free again.
    pub fn free_worker(&mut self) {
        self.busy = self.busy.checked_sub(1).expect("a worker freed twice");
    }

    /// Queues `job` of priority `level` at `now`.
    #[inline]
    pub fn enqueue(&mut self, now: SimTime, job: JobKey, level: u8) -> Enqueue {
        let queued = |ok: bool| if ok { Enqueue::Queued } else { Enqueue::Full };
        match &mut self.queue {
            Queue::Plain { jobs, capacity, .. } => {
                let room = capacity.is_none_or(|c| jobs.len() < c as usize);
                if room {
                    jobs.push_back((now, job));
                }
                queued(room)
            }
            Queue::CoDel(q) => queued(q.enqueue(now, job).is_ok()),
            Queue::Priority(q) => match q.enqueue(now, level, job) {
                Enqueued::Queued => Enqueue::Queued,
                Enqueued::Evicted(victim) => {
                    // The victim leaves the queue (a probe behind it moves up).
                    self.left_queue += 1;
                    Enqueue::Evicted(victim)
                }
                Enqueued::Refused(_) => Enqueue::Full,
            },
            Queue::CoDelRfc(q) => queued(q.enqueue(now, job).is_ok()),
        }
    }

    /// Takes a queued job out (its caller's cancellation arrived); false if it was not queued.
    pub fn remove_queued(&mut self, job: JobKey) -> bool {
        let removed = match &mut self.queue {
            Queue::Plain { jobs, .. } => match jobs.iter().position(|(_, k)| *k == job) {
                Some(i) => {
                    jobs.remove(i);
                    true
                }
                None => false,
            },
            Queue::CoDel(q) => q.remove(&job),
            Queue::Priority(q) => q.remove(&job),
            Queue::CoDelRfc(q) => q.remove(&job),
        };
        self.left_queue += u64::from(removed);
        removed
    }

    /// The next job for a free worker, by the queue's discipline, and what its shedder drops.
    #[inline]
    pub fn dequeue(&mut self, now: SimTime) -> Dequeued {
        let out = self.dequeue_next(now);
        self.left_queue += out.shed.len() as u64 + u64::from(out.next.is_some());
        out
    }

    fn dequeue_next(&mut self, now: SimTime) -> Dequeued {
        match &mut self.queue {
            Queue::Plain {
                jobs, discipline, ..
            } => {
                let newest_first = match discipline {
                    Discipline::Lifo => true,
                    Discipline::AdaptiveLifo { threshold } => {
                        jobs.front().is_some_and(|(t, _)| now - *t > *threshold)
                    }
                    _ => false,
                };
                let next = if newest_first {
                    jobs.pop_back()
                } else {
                    jobs.pop_front()
                };
                Dequeued {
                    next: next.map(|(t, k)| (k, t)),
                    shed: Vec::new(),
                }
            }
            Queue::CoDel(q) => {
                let out = q.dequeue(now);
                Dequeued {
                    next: out.delivered.map(|(k, waited)| (k, now - waited)),
                    shed: out.dropped.into_iter().map(|(k, _)| k).collect(),
                }
            }
            Queue::Priority(q) => Dequeued {
                next: q.dequeue(),
                shed: Vec::new(),
            },
            Queue::CoDelRfc(q) => {
                let out = q.dequeue(now);
                Dequeued {
                    next: out.delivered.map(|(k, waited)| (k, now - waited)),
                    shed: out.dropped.into_iter().map(|(k, _)| k).collect(),
                }
            }
        }
    }

    /// How long the oldest waiting job has waited.
    pub fn oldest_wait(&self, now: SimTime) -> Option<SimDuration> {
        self.queue
            .oldest()
            .map(|t| now.saturating_duration_since(t))
    }

    /// Empties its queue, whose jobs are lost with it; returns how many it held.
    pub fn clear_queue(&mut self, config: &Service) -> usize {
        let held = self.queue.len();
        self.left_queue += held as u64;
        self.queue = Queue::new(&config.queue);
        held
    }

    /// It went down: everything it held is gone (the caller has already taken its jobs and
    /// freed their workers), and it will restart with fresh flights and admission state.
    pub fn reset(&mut self, config: &Service) {
        assert_eq!(
            self.busy, 0,
            "a crashed replica's workers are freed with their jobs"
        );
        self.clear_queue(config);
        self.coalescer = coalescer_of(config);
        self.concurrency = concurrency_of(config);
        self.tenant_bulkhead = tenant_bulkhead_of(config);
    }

    /// Its cache is emptied at `now`.
    pub fn flush_cache(&mut self, now: SimTime) {
        self.cold_since = Some(now);
    }

    /// The share of a warm cache's hits it gets at `now`, given the warm-up time.
    pub fn cache_warmth(&self, now: SimTime, warmup: SimDuration) -> f64 {
        match self.cold_since {
            Some(cold) if !warmup.is_zero() => {
                let since = now.saturating_duration_since(cold);
                (since.as_secs_f64() / warmup.as_secs_f64()).min(1.0)
            }
            _ => 1.0,
        }
    }

    /// Whether its cache coalesces misses.
    pub fn coalesces(&self) -> bool {
        self.coalescer.is_some()
    }

    /// Its coalescer, if the cache coalesces misses.
    pub fn coalescer(&mut self) -> Option<&mut Coalescer<u32>> {
        self.coalescer.as_mut()
    }

    /// Its concurrency limit, if admission has one (to read).
    pub fn concurrency_ref(&self) -> Option<&ConcurrencyLimiter> {
        self.concurrency.as_ref()
    }

    /// Its concurrency limit, if admission has one.
    pub fn concurrency(&mut self) -> Option<&mut ConcurrencyLimiter> {
        self.concurrency.as_mut()
    }

    /// Its per-tenant bulkhead, if admission has one (to read).
    pub fn tenant_bulkhead_ref(&self) -> Option<&KeyedBulkhead<u32>> {
        self.tenant_bulkhead.as_ref()
    }

    /// Its per-tenant bulkhead, if admission has one.
    pub fn tenant_bulkhead(&mut self) -> Option<&mut KeyedBulkhead<u32>> {
        self.tenant_bulkhead.as_mut()
    }

    // ---- as the balancer sees it ------------------------------------------------------

    /// Attempts sent and not answered.
    pub fn outstanding(&self) -> u32 {
        self.outstanding
    }

    /// An attempt was sent to it.
    pub fn sent(&mut self) {
        self.outstanding += 1;
    }

    /// An attempt sent to it was answered or abandoned.
    pub fn answered(&mut self) {
        self.outstanding = self
            .outstanding
            .checked_sub(1)
            .expect("an answer without an attempt");
    }

    /// In rotation at `now`: not ejected, not failing its health checks.
    pub fn eligible(&self, now: SimTime) -> bool {
        self.health.ejected_until.is_none_or(|t| t <= now) && !self.health.unhealthy
    }

    /// Whether it is ejected at `now`.
    pub fn ejected(&self, now: SimTime) -> bool {
        self.health.ejected_until.is_some_and(|t| t > now)
    }

    /// A caller saw an attempt succeed.
    pub fn observed_success(&mut self) {
        self.health.consecutive_failures = 0;
    }

    /// A caller saw an attempt fail; returns the failures in a row.
    pub fn observed_failure(&mut self) -> u32 {
        self.health.consecutive_failures += 1;
        self.health.consecutive_failures
    }

    /// Outlier detection takes it out of rotation until `until`.
    pub fn eject(&mut self, until: SimTime) {
        self.health.ejected_until = Some(until);
        self.health.consecutive_failures = 0;
    }

    /// One active probe's result; returns true when it takes the replica out of rotation.
    pub fn probe(&mut self, pass: bool, unhealthy_threshold: u32, healthy_threshold: u32) -> bool {
        let h = &mut self.health;
        if pass != h.unhealthy {
            h.probe_streak = 0;
            return false;
        }
        h.probe_streak += 1;
        let needed = if h.unhealthy {
            healthy_threshold
        } else {
            unhealthy_threshold
        };
        if h.probe_streak < needed {
            return false;
        }
        h.probe_streak = 0;
        h.unhealthy = !pass;
        !pass
    }

    /// Whether a probe at `now` of a replica that is up passes: room in the queue, and the
    /// oldest waiting request has not waited longer than the probe would.
    pub fn probe_passes(&self, now: SimTime, capacity: Option<u32>, timeout: SimDuration) -> bool {
        let room = capacity.is_none_or(|c| self.queue.len() < c as usize);
        let waited_too_long = self.oldest_wait(now).is_some_and(|w| w > timeout);
        room && !waited_too_long
    }
}

impl Replica {
    /// Jobs that have left its queue so far.
    pub fn left_queue(&self) -> u64 {
        self.left_queue
    }
}

fn concurrency_of(s: &Service) -> Option<ConcurrencyLimiter> {
    s.admission.iter().find_map(|a| match a {
        crate::format::schema::Admission::Concurrency(c) => Some(
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

fn tenant_bulkhead_of(s: &Service) -> Option<KeyedBulkhead<u32>> {
    s.admission.iter().find_map(|a| match a {
        crate::format::schema::Admission::TenantBulkhead(c) => {
            Some(KeyedBulkhead::new(c).expect("bulkhead configs are validated with the scenario"))
        }
        _ => None,
    })
}
