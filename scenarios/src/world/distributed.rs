//! Distributed rate limiters at a service ([`Distributed`]): a decision made in the replica
//! (`Local`), by a script at a store service (`Central`, atomic or read-compute-write), or
//! from a lease of tokens taken from the store (`Lease`).
//!
//! ```text
//!  arrival ─► cache? ─► Local:   the replica's own limiter ─────────────────► next layer
//!              │        Lease:   a token left? ─ yes ───────────────────────► next layer
//!              │                   └ no: wait for a lease call (one per replica at a time)
//!              │        Central: Admitting ─ store call (Script, or Read then Write) ─►
//!              ▼                  reply: decided │ failed: on_store_failure (Open / Closed)
//!          refused (429)
//! ```
//!
//! A store call is an ordinary call of a call site of its own (one per replica, its stack a
//! breaker if the file asks for one, its timeout the limiter's), to a job at the store
//! service: the script runs when that job's work is done, on the limiter's state held here,
//! and its result waits in a slot for the reply to carry it back (a reply that is lost, late
//! or refused carries nothing, and the store's change stands, as a real store's would).
//!
//! Every admission is also charged, at the true time it was committed (at the store for a
//! central decision, at the replica otherwise), to an exact reference limiter of the same
//! configuration: an admission the reference refuses is an over-admission.
//!
//! # Decisions
//!
//! A limiter's store is an ordinary service, and a store call is an ordinary call of a call
//! site of its own (one per replica, appended after every other site so a scenario without one
//! keeps its sites, streams and digest), owned by `Owner::Store`; the script runs on the
//! limiter's state, held by the world, when the store job's work is done, and its answer waits
//! in a slot the call carries (`Carries::Store`) for the reply to bring it (a lost or late
//! reply brings nothing; the store's change stands). A job waiting for a decision is in `Stage::Admitting`.
//! Distributed limiters decide before the service's other admission layers. Over-admission is
//! measured, not modelled: every admission is charged at the true time it was committed to an
//! exact limiter of the same configuration, and each one it refuses counts. A fan-out call is a
//! shell (like a hedged call's) whose `n` leaves, `Owner::Leaf`, each go through the whole
//! stack; its gather keeps each leaf's key and id (16 bytes a leaf). A scenario that uses
//! neither pays one emptiness check on arrival, on work done and on a call's end.

use super::call::{Carries, Owner};
use super::job::Stage;
use super::outcome::{Outcome, Reason};
use super::site::{CallSite, Caller};
use super::{C, CallKey, JobKey, World};
use crate::figures::DistributedFigures;
use crate::format::overrides::segment;
use crate::format::schema::distributed::{
    DistributedLimiter, LimiterState, OnStoreFailure, STORE_TIMEOUT_DEFAULT, StoreClock,
};
use crate::format::schema::{Admission, Call, CallSafety, Layer, Scenario};
use patterns::limiter::{Cost, Limiter, RateLimiter};
use sim_core::{Seed, SimDuration, SimTime};
use slotmap::Key;
use std::collections::VecDeque;

/// What a store call asks the store to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreOp {
    /// Check and update in one step (atomic).
    Script,
    /// Read the state (the first half of read-compute-write).
    Read,
    /// Write the state the replica computed.
    Write,
    /// Take a lease of tokens.
    Lease,
}

/// A store call's slot ([`Carries::Store`]): what it carries to the store and what the store
/// answers.
#[derive(Debug, Clone)]
pub struct StoreSlot {
    /// The replica's clock when it asked.
    asked_at: SimTime,
    /// The state a `Write` carries.
    write: Option<Limiter>,
    /// The store's answer, once its work is done.
    result: Option<StoreResult>,
}

/// What the store answered.
#[derive(Debug, Clone)]
enum StoreResult {
    /// A script's decision.
    Decided {
        allowed: bool,
        retry_after: Option<SimDuration>,
    },
    /// A read's copy of the state, and the store's clock when it was read.
    Snapshot { state: Limiter, at: SimTime },
    /// A write was applied.
    Written,
    /// A lease of this many tokens (0: none left).
    Granted {
        tokens: u64,
        retry_after: Option<SimDuration>,
    },
}

/// How the limiter decides.
#[derive(Debug, Clone, Copy)]
enum Mode {
    Local,
    Central { atomic: bool, clock: StoreClock },
    Lease { batch: u64 },
}

/// What each replica holds of a limiter.
#[derive(Debug, Clone)]
struct ReplicaPart {
    /// Its own limiter (`Local`).
    local: Option<Limiter>,
    /// How far its clock runs ahead of the true time.
    skew: SimDuration,
    /// The decision cache: refuse without asking until then.
    refused_until: SimTime,
    /// Tokens left from leases.
    tokens: u64,
    /// A lease call is out.
    leasing: bool,
    /// Jobs waiting for a lease.
    waiters: VecDeque<JobKey>,
}

/// One distributed limiter of a service.
#[derive(Debug, Clone)]
pub struct Distributed {
    service: u32,
    mode: Mode,
    on_failure: OnStoreFailure,
    cache: Option<SimDuration>,
    /// The state at the store.
    central: Limiter,
    /// The exact reference that counts over-admissions.
    reference: Limiter,
    replicas: Vec<ReplicaPart>,
    /// The store call site of each replica (none for `Local`).
    sites: Vec<u32>,
    bucket: SimDuration,
    figures: DistributedFigures,
}

/// Builds the distributed limiters of scenario `s`, in the order of services then of their
/// admission lists, and their store call sites (appended to `sites`).
pub fn build(
    s: &Scenario,
    seed: Seed,
    bucket: SimDuration,
    sites: &mut Vec<CallSite>,
) -> Vec<Distributed> {
    let built = "limiters are validated with the scenario";
    let names: Vec<&str> = s.services.keys().map(String::as_str).collect();
    let mut out = Vec::new();
    for (i, (name, sv)) in s.services.iter().enumerate() {
        for (k, a) in sv.admission.iter().enumerate() {
            let Admission::Distributed(d) = a else {
                continue;
            };
            let path = format!("services.{}.admission[{k}]", segment(name));
            let (mode, store, state) = match &d.state {
                LimiterState::Local => (Mode::Local, None, "local"),
                LimiterState::Central {
                    store,
                    atomic,
                    clock,
                    ..
                } => {
                    let state = if *atomic {
                        "central_atomic"
                    } else {
                        "central_racy"
                    };
                    let mode = Mode::Central {
                        atomic: *atomic,
                        clock: *clock,
                    };
                    (mode, Some(store.as_str()), state)
                }
                LimiterState::Lease { store, batch } => {
                    (Mode::Lease { batch: *batch }, Some(store.as_str()), "lease")
                }
            };
            let skew = match &d.state {
                LimiterState::Central {
                    skew: Some(skew), ..
                } => Some(skew.compile().expect(built)),
                _ => None,
            };
            let mut skew_rng = seed.stream(&format!("{path}/skew"));
            let replicas = (0..crate::format::schema::scaling::slots(sv))
                .map(|_| ReplicaPart {
                    local: matches!(mode, Mode::Local)
                        .then(|| Limiter::new(&d.limiter).expect(built)),
                    skew: skew
                        .as_ref()
                        .map_or(SimDuration::ZERO, |s| s.sample(&mut skew_rng)),
                    refused_until: SimTime::ZERO,
                    tokens: 0,
                    leasing: false,
                    waiters: VecDeque::new(),
                })
                .collect();
            let mut mine = Vec::new();
            if let Some(store) = store {
                let target = names.binary_search(&store).expect("validated store") as u32;
                let call = store_call(store, d);
                let spath = format!("{path}.store");
                for r in 0..crate::format::schema::scaling::slots(sv) {
                    mine.push(sites.len() as u32);
                    let caller = Caller::Replica(i as u32, r);
                    sites.push(CallSite::new(spath.clone(), caller, target, &call, seed));
                }
            }
            out.push(Distributed {
                service: i as u32,
                mode,
                on_failure: d.on_store_failure,
                cache: d.cache,
                central: Limiter::new(&d.limiter).expect(built),
                reference: Limiter::new(&d.limiter).expect(built),
                replicas,
                sites: mine,
                bucket,
                figures: DistributedFigures {
                    path,
                    state: state.to_string(),
                    ..DistributedFigures::default()
                },
            });
        }
    }
    out
}

/// The call a replica makes to the store: the limiter's timeout and breaker, no retries (a
/// retried script could charge twice).
fn store_call(store: &str, d: &DistributedLimiter) -> Call {
    Call {
        target: store.to_string(),
        timeout: Some(d.timeout.unwrap_or(STORE_TIMEOUT_DEFAULT)),
        deadline: None,
        stack: d.breaker.iter().cloned().map(Layer::Breaker).collect(),
        weight: 1.0,
        call_ratio: 1.0,
        safety: CallSafety::Unsafe,
        fan_out: None,
        pool: None,
    }
}

impl Distributed {
    /// Its figures, with the series filled to `buckets`.
    pub fn figures(&self, buckets: usize) -> DistributedFigures {
        let mut f = self.figures.clone();
        f.charged_by_bucket
            .resize(buckets.max(f.charged_by_bucket.len()), 0);
        f.over_admitted_by_bucket
            .resize(buckets.max(f.over_admitted_by_bucket.len()), 0);
        f
    }

    /// Charges one admission committed at `t` (true time) to the reference.
    fn charge(&mut self, t: SimTime) {
        let i = (t.as_nanos() / self.bucket.as_nanos()) as usize;
        let f = &mut self.figures;
        if f.charged_by_bucket.len() <= i {
            f.charged_by_bucket.resize(i + 1, 0);
            f.over_admitted_by_bucket.resize(i + 1, 0);
        }
        f.charged_by_bucket[i] += 1;
        if self.reference.peek(t, Cost::ONE).allowed() {
            self.reference.acquire(t, Cost::ONE);
        } else {
            f.over_admitted += 1;
            f.over_admitted_by_bucket[i] += 1;
        }
    }

    /// The clock a decision of replica `r` reads at true time `now`.
    fn replica_clock(&self, r: usize, now: SimTime) -> SimTime {
        now.saturating_add(self.replicas[r].skew)
    }
}

impl World {
    /// The range of `self.distributed` that belongs to service `svc` (built in service
    /// order, so the range is contiguous).
    pub(super) fn distributed_of(&self, svc: usize) -> std::ops::Range<usize> {
        let lo = self
            .distributed
            .partition_point(|d| (d.service as usize) < svc);
        let hi = self
            .distributed
            .partition_point(|d| (d.service as usize) <= svc);
        lo..hi
    }

    /// The service of distributed limiter `k`.
    pub(super) fn distributed_service(&self, k: usize) -> usize {
        self.distributed[k].service as usize
    }

    /// Decides `job` at the distributed limiters of its service from limiter `k` on; when
    /// all admit, the service's other admission layers have their say.
    pub(super) fn decide_distributed(&mut self, ctx: C, job: JobKey, k: usize) {
        let now = ctx.now();
        let (svc, r) = (self.jobs[job].service(), self.jobs[job].replica());
        let end = self.distributed_of(svc).end;
        for k in k..end {
            let d = &mut self.distributed[k];
            d.figures.decisions += 1;
            if d.replicas[r].refused_until > now {
                d.figures.refused_cached += 1;
                let retry_after = Some(d.replicas[r].refused_until - now);
                self.refuse_at(ctx, job, k, retry_after, false);
                return;
            }
            match d.mode {
                Mode::Local => {
                    let local = d.replicas[r].local.as_mut().expect("a local limiter");
                    let decision = local.acquire(now, Cost::ONE);
                    if !decision.allowed() {
                        self.refuse_at(ctx, job, k, decision.retry_after, true);
                        return;
                    }
                    d.figures.admitted += 1;
                    d.charge(now);
                }
                Mode::Lease { .. } => {
                    let part = &mut d.replicas[r];
                    if part.tokens > 0 {
                        part.tokens -= 1;
                        d.figures.admitted += 1;
                        d.charge(now);
                        continue;
                    }
                    part.waiters.push_back(job);
                    let call = CallKey::null();
                    self.jobs[job].set_stage(Stage::Admitting {
                        limiter: k as u32,
                        call,
                    });
                    if !self.distributed[k].replicas[r].leasing {
                        self.distributed[k].replicas[r].leasing = true;
                        self.store_call(ctx, k, r, StoreOp::Lease, JobKey::null(), None);
                    }
                    return;
                }
                Mode::Central { atomic, .. } => {
                    let op = if atomic {
                        StoreOp::Script
                    } else {
                        StoreOp::Read
                    };
                    self.store_call(ctx, k, r, op, job, None);
                    return;
                }
            }
        }
        self.admit_locally(ctx, job);
    }

    /// Refuses `job` at limiter `k` (`remember`: the decision cache keeps it).
    fn refuse_at(
        &mut self,
        ctx: C,
        job: JobKey,
        k: usize,
        retry_after: Option<SimDuration>,
        remember: bool,
    ) {
        let now = ctx.now();
        let r = self.jobs[job].replica();
        let d = &mut self.distributed[k];
        d.figures.refused += 1;
        if remember && let Some(cache) = d.cache {
            d.replicas[r].refused_until = now.saturating_add(cache);
        }
        let hint = retry_after.or(self.services[d.service as usize].config().retry_after);
        self.reply(ctx, job, Outcome::Fail(Reason::RateLimited), hint);
    }

    /// Admits `job` at limiter `k` without the store's say (fail-open) or refuses it
    /// (fail-closed).
    fn store_failed(&mut self, ctx: C, job: JobKey, k: usize) {
        let now = ctx.now();
        let d = &mut self.distributed[k];
        match d.on_failure {
            OnStoreFailure::Open => {
                d.figures.failed_open += 1;
                d.figures.admitted += 1;
                d.charge(now);
                self.decide_distributed(ctx, job, k + 1);
            }
            OnStoreFailure::Closed => {
                d.figures.failed_closed += 1;
                self.refuse_at(ctx, job, k, None, false);
            }
        }
    }

    /// Makes store call `op` of limiter `k` from replica `r` for `job` (null for a lease).
    fn store_call(
        &mut self,
        ctx: C,
        k: usize,
        r: usize,
        op: StoreOp,
        job: JobKey,
        write: Option<Limiter>,
    ) {
        let now = ctx.now();
        let d = &mut self.distributed[k];
        let asked_at = d.replica_clock(r, now);
        let site = d.sites[r];
        if !job.is_null() {
            self.jobs[job].set_stage(Stage::Admitting {
                limiter: k as u32,
                call: CallKey::null(),
            });
        }
        let owner = Owner::Store {
            limiter: k as u16,
            replica: r as u16,
            op,
            job,
        };
        // A call may end before `start_call` returns (an open breaker): the id tells the
        // call made here from a later one that reuses its key, and it ends without a slot.
        let id = self.next_call_id + 1;
        let key = self.start_call(ctx, site, owner, SimTime::MAX);
        if self.calls.get(key).is_none_or(|c| c.id != id) {
            return;
        }
        // A call its breaker refused ended above; this one went out to the store.
        self.distributed[k].figures.round_trips += 1;
        // The store hears of the call only through the network, after this event.
        let slot = StoreSlot {
            asked_at,
            write,
            result: None,
        };
        self.carry(key, Carries::Store(Box::new(slot)));
        if !job.is_null()
            && let Some(j) = self.jobs.get_mut(job)
            && let Stage::Admitting { call, .. } = j.stage_mut()
        {
            *call = key;
        }
    }

    /// A store job's work is done: the store runs what its call asks on the limiter's state.
    pub(super) fn run_store_op(&mut self, ctx: C, store_job: JobKey) {
        let now = ctx.now();
        let key = self.jobs[store_job].call();
        let Some(c) = self.calls.get_mut(key) else {
            return;
        };
        let (Owner::Store { limiter, op, .. }, Carries::Store(slot)) = (c.owner, &mut c.carries)
        else {
            return;
        };
        let d = &mut self.distributed[limiter as usize];
        let clock = match d.mode {
            Mode::Central {
                clock: StoreClock::Replica,
                ..
            } => slot.asked_at,
            _ => now,
        };
        let result = match op {
            StoreOp::Script => {
                let decision = d.central.acquire(clock, Cost::ONE);
                if decision.allowed() {
                    d.charge(now);
                }
                StoreResult::Decided {
                    allowed: decision.allowed(),
                    retry_after: decision.retry_after,
                }
            }
            StoreOp::Read => StoreResult::Snapshot {
                state: d.central.clone(),
                at: now,
            },
            StoreOp::Write => {
                d.central = slot.write.take().expect("a write carries its state");
                d.charge(now);
                StoreResult::Written
            }
            StoreOp::Lease => {
                let Mode::Lease { batch } = d.mode else {
                    panic!("a lease call of a limiter without leases");
                };
                let left = d.central.peek(clock, Cost::ONE);
                let tokens = batch.min(left.remaining);
                let granted = Cost::new(tokens)
                    .ok()
                    .is_some_and(|cost| d.central.acquire(clock, cost).allowed());
                StoreResult::Granted {
                    tokens: if granted { tokens } else { 0 },
                    retry_after: left.retry_after,
                }
            }
        };
        slot.result = Some(result);
    }

    /// A store call of limiter `k` ended with `outcome`, with the slot it carried (none if
    /// it never went out to the store).
    pub(super) fn store_done(
        &mut self,
        ctx: C,
        owner: Owner,
        slot: Option<Box<StoreSlot>>,
        outcome: Outcome,
    ) {
        let Owner::Store {
            limiter,
            replica,
            op,
            job,
        } = owner
        else {
            panic!("store_done for a call that is not a store call");
        };
        let (k, r) = (limiter as usize, replica as usize);
        let result = match outcome {
            Outcome::Ok => slot.and_then(|s| s.result),
            Outcome::Fail(_) => None,
        };
        if result.is_none() {
            self.distributed[k].figures.store_failures += 1;
        }
        if op == StoreOp::Lease {
            self.lease_done(ctx, k, r, result);
            return;
        }
        let waiting = self.jobs.get(job).is_some_and(
            |j| matches!(*j.stage(), Stage::Admitting { limiter, .. } if limiter as usize == k),
        );
        if !waiting {
            return;
        }
        match result {
            None => self.store_failed(ctx, job, k),
            Some(StoreResult::Decided {
                allowed,
                retry_after,
            }) => {
                if allowed {
                    self.distributed[k].figures.admitted += 1;
                    self.decide_distributed(ctx, job, k + 1);
                } else {
                    self.refuse_at(ctx, job, k, retry_after, true);
                }
            }
            Some(StoreResult::Snapshot { state, at }) => {
                self.compute_and_write(ctx, (k, r), job, state, at);
            }
            Some(StoreResult::Written) => {
                self.distributed[k].figures.admitted += 1;
                self.decide_distributed(ctx, job, k + 1);
            }
            Some(StoreResult::Granted { .. }) => panic!("a lease answer to a decision call"),
        }
    }

    /// A read of limiter `k`'s state by replica `r` for `job` came back with the store's
    /// `state` at `at`: the replica computes on its copy, by the store's clock of the read or
    /// its own, then writes the copy back whole (a write in between is lost).
    fn compute_and_write(
        &mut self,
        ctx: C,
        (k, r): (usize, usize),
        job: JobKey,
        mut state: Limiter,
        at: SimTime,
    ) {
        let d = &self.distributed[k];
        let clock = match d.mode {
            Mode::Central {
                clock: StoreClock::Replica,
                ..
            } => d.replica_clock(r, ctx.now()),
            _ => at,
        };
        let decision = state.acquire(clock, Cost::ONE);
        if decision.allowed() {
            self.store_call(ctx, k, r, StoreOp::Write, job, Some(state));
        } else {
            self.refuse_at(ctx, job, k, decision.retry_after, true);
        }
    }

    /// A lease call of limiter `k` from replica `r` ended: its waiters take the tokens.
    fn lease_done(&mut self, ctx: C, k: usize, r: usize, result: Option<StoreResult>) {
        let now = ctx.now();
        let part = &mut self.distributed[k].replicas[r];
        part.leasing = false;
        let (granted, retry_after) = match result {
            Some(StoreResult::Granted {
                tokens,
                retry_after,
            }) => (Some(tokens), retry_after),
            None => (None, None),
            Some(_) => panic!("a decision answer to a lease call"),
        };
        let d = &mut self.distributed[k];
        if let Some(tokens) = granted {
            d.figures.lease_tokens += tokens;
            d.replicas[r].tokens += tokens;
        }
        let Mode::Lease { batch } = d.mode else {
            panic!("a lease of a limiter without leases");
        };
        // Bounded: each round takes one waiter off the list.
        while let Some(job) = self.distributed[k].replicas[r].waiters.pop_front() {
            let d = &mut self.distributed[k];
            match granted {
                None => self.store_failed(ctx, job, k),
                Some(_) if d.replicas[r].tokens > 0 => {
                    d.replicas[r].tokens -= 1;
                    d.figures.admitted += 1;
                    d.charge(now);
                    self.decide_distributed(ctx, job, k + 1);
                }
                Some(tokens) if tokens == batch => {
                    // A full lease ran out before the waiters did: take another.
                    d.replicas[r].waiters.push_front(job);
                    d.replicas[r].leasing = true;
                    self.store_call(ctx, k, r, StoreOp::Lease, JobKey::null(), None);
                    return;
                }
                Some(_) => self.refuse_at(ctx, job, k, retry_after, true),
            }
        }
    }

    /// A job that waited at limiter `k` is gone (cancelled, crashed): its store call is
    /// dropped, or it leaves the lease's waiters.
    pub(super) fn leave_admission(&mut self, ctx: C, job: JobKey, k: u32, call: CallKey, r: usize) {
        if !call.is_null() {
            self.cancel_call(ctx, call);
        }
        let part = &mut self.distributed[k as usize].replicas[r];
        part.waiters.retain(|&w| w != job);
    }

    /// The figures of every distributed limiter.
    pub(super) fn distributed_figures(&self, buckets: usize) -> Vec<DistributedFigures> {
        self.distributed
            .iter()
            .map(|d| d.figures(buckets))
            .collect()
    }
}
