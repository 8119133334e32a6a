//! A call and its attempts: the once-per-call gates, retries with their backoff, each
//! attempt's gates and its journey to a replica and back, timeouts, bulkhead waits, shaping
//! delays, and cancellation.
//!
//! ```text
//!  start ──► outer gates ──► attempt: inner gates ──► in flight ──► reply / timeout
//!              │ wait/delay        │ wait/delay          │                 │
//!              ▼                   ▼                     ▼                 ▼
//!           (resumed)           (resumed)          abandoned job     retry? ──► backoff ──┐
//!                                                                        │               │
//!                                                   finish ◄── no ───────┘   attempt ◄───┘
//! ```
//!
//! A call's [`Attempt`] says where its current attempt is; the permits it holds from its
//! gates and its retry request are the call's, the machines they come from are its call
//! site's ([`super::site`]).

mod carries;
mod end;

pub use carries::Carries;

use super::client::Requester;
use super::distributed::StoreOp;
use super::msg::{Msg, Packet};
use super::outcome::{Outcome, Reason, Refusal};
use super::pace::Quota;
use super::site::Side;
use super::stack::{Acquire, Permits, Ticket, Wake};
use super::traffic::Attrs;
use super::{C, CallKey, JobKey, World};
use crate::format::schema::Abandoned;
use patterns::retry::{RetryRequest, Safety};
use sim_core::{SimDuration, SimTime, TimerId};
use slotmap::{Key, KeyData};

/// Who waits for a call's outcome.
#[derive(Clone, Copy, Debug)]
pub enum Owner {
    /// A client's request.
    Client {
        client: u32,
        requester: Requester,
        offered_at: SimTime,
        attrs: Attrs,
    },
    /// A job's downstream call number `index`.
    Job { job: JobKey, index: u16 },
    /// One of the racing calls of a hedged call (the "shell" that its owner sees).
    Hedge { shell: CallKey, attempt: u32 },
    /// A distributed limiter's call to its store, for `job` (null: a lease for the replica).
    Store {
        limiter: u16,
        replica: u16,
        op: StoreOp,
        job: JobKey,
    },
    /// One leaf of a fan-out call (the "shell" that its owner sees).
    Leaf { shell: CallKey },
}

/// Where a call's current attempt is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// No attempt out: before the first, during a backoff, or a hedged call's shell.
    Idle,
    /// Waiting for a slot at the bulkhead `gate` of `side`.
    Waiting { side: Side, gate: usize },
    /// Held back by the shaping rate limiter `gate` of `side` until its timer fires.
    Delayed {
        side: Side,
        gate: usize,
        timer: TimerId,
    },
    /// Sent to `replica` of the target as `job` at `sent`; `timer` is its timeout.
    InFlight {
        job: JobKey,
        replica: u32,
        timer: Option<TimerId>,
        sent: SimTime,
    },
    /// Past its gates, waiting for a connection of its call site's pool (`world::pool`);
    /// `timer` is its checkout timeout.
    Checkout { timer: TimerId },
}

/// One logical call.
#[derive(Debug, Clone)]
pub struct Call {
    /// Its call site.
    pub site: u32,
    /// Its id in traces, unique over the run.
    pub id: u64,
    /// The id of the client request it serves (its own for a client's call).
    pub request: u64,
    /// Who waits for it.
    pub owner: Owner,
    /// It fails with `Deadline` at this time.
    pub deadline: SimTime,
    /// The number of its latest attempt (1 for the first).
    pub attempt_no: u32,
    /// Where that attempt is.
    pub attempt: Attempt,
    /// The caller's network node.
    pub source: u32,
    retry: Option<RetryRequest>,
    permits: Permits,
    /// What it carries beside its attempts, removed with it.
    pub carries: Carries,
    /// Attempts of this call whose work started at the target (more than one: the operation
    /// ran twice, unless the target deduplicated it).
    pub executions: u32,
    /// The attributes of the request it serves (class, priority, cost, tenant, retry safety).
    pub attrs: Attrs,
}

impl World {
    /// Starts a call of `site` for `owner`, within the caller's own deadline.
    pub(super) fn start_call(
        &mut self,
        ctx: C,
        site: u32,
        owner: Owner,
        parent: SimTime,
    ) -> CallKey {
        let now = ctx.now();
        let racing = matches!(owner, Owner::Hedge { .. });
        let leaf = matches!(owner, Owner::Leaf { .. });
        let sp = &mut self.sites[site as usize];
        // A racing call of a hedged call, or a leaf of a fan-out, is counted with its shell,
        // not as a call of its own.
        if !racing && !leaf {
            sp.stats().calls += 1;
        }
        let fan_out = sp.fan_out().filter(|_| !racing && !leaf);
        let hedged = sp.hedges() && !racing && fan_out.is_none();
        let deadline = sp.call_deadline(now, parent);
        self.next_call_id += 1;
        let id = self.next_call_id;
        let permits = sp.permits();
        self.carried_bytes += permits.heap_bytes();
        let (source, request, attrs) = self.caller_of(owner, id);
        let key = self.calls.insert(Call {
            site,
            id,
            request,
            owner,
            deadline,
            attempt_no: 0,
            attempt: Attempt::Idle,
            source,
            retry: None,
            permits,
            carries: Carries::Nothing,
            executions: 0,
            attrs,
        });
        if self.follow.is_some() {
            self.note_call(now, key);
        }
        if now >= deadline {
            self.finish_call(ctx, key, Outcome::Fail(Reason::Deadline), false);
        } else if let Some((n, need)) = fan_out {
            self.start_gather(ctx, key, n, need);
        } else if hedged {
            self.start_race(ctx, key);
        } else {
            self.continue_call(ctx, key, Side::Outer, 0);
        }
        key
    }

    /// What a call with id `id` for `owner` inherits from its caller: the caller's network
    /// node, the client request it serves and that request's attributes.
    fn caller_of(&self, owner: Owner, id: u64) -> (u32, u64, Attrs) {
        match owner {
            Owner::Client { client, attrs, .. } => (client, id, attrs),
            Owner::Job { job, .. } => {
                let j = &self.jobs[job];
                (self.services[j.service()].node(), j.request(), j.attrs())
            }
            Owner::Hedge { shell, .. } | Owner::Leaf { shell } => {
                let shell = &self.calls[shell];
                (shell.source, shell.request, shell.attrs)
            }
            Owner::Store { limiter, job, .. } => {
                let svc = self.distributed_service(limiter as usize);
                // The store call carries the attributes of the request it decides on.
                let (request, attrs) = self
                    .jobs
                    .get(job)
                    .map_or((0, Attrs::DEFAULT), |j| (j.request(), j.attrs()));
                (self.services[svc].node(), request, attrs)
            }
        }
    }

    /// Passes a call through its gates of `side` from gate `from`; then, for the outer
    /// gates, starts its first attempt, and for the inner ones sends the attempt.
    pub(super) fn continue_call(&mut self, ctx: C, key: CallKey, side: Side, from: usize) {
        let now = ctx.now();
        let call = &mut self.calls[key];
        let site = call.site;
        let sp = &mut self.sites[site as usize];
        let acquired = sp.acquire(
            side,
            from,
            now,
            &mut call.permits,
            Ticket::new(key.data().as_ffi(), call.attrs.cost),
            &mut self.effects.buf,
        );
        self.effects.tag(site, side);
        match acquired {
            Acquire::Done => match side {
                Side::Outer => {
                    let call = &mut self.calls[key];
                    let sp = &mut self.sites[site as usize];
                    let safety = if call.attrs.retry {
                        sp.safety().as_safety()
                    } else {
                        Safety::Unsafe
                    };
                    if let Some(policy) = sp.retry_policy() {
                        let deadline = (call.deadline != SimTime::MAX).then_some(call.deadline);
                        call.retry = Some(policy.begin(now, deadline, safety));
                    }
                    self.start_attempt(ctx, key);
                }
                Side::Inner => self.send_attempt(ctx, key, false),
            },
            Acquire::Wait { gate, deadline } => {
                self.calls[key].attempt = Attempt::Waiting { side, gate };
                let gate = gate as u8;
                ctx.send_at(ctx.me(), deadline, Msg::BulkheadExpire { site, side, gate });
            }
            Acquire::Delay { gate, until } => {
                let timer = ctx.timer_self(until - now, Msg::GateReleased { call: key });
                self.calls[key].attempt = Attempt::Delayed { side, gate, timer };
            }
            Acquire::Refused(refusal) => self.refused(ctx, key, side, refusal),
        }
    }

    /// A gate of `side` refused the call or its attempt.
    fn refused(&mut self, ctx: C, key: CallKey, side: Side, refusal: Refusal) {
        let failed = Outcome::Fail(refusal.reason);
        match side {
            Side::Outer => self.finish_call(ctx, key, failed, false),
            Side::Inner => self.attempt_done(ctx, key, failed, false, refusal.retry_after),
        }
    }

    /// A shaping rate limiter lets a call go on after its gate.
    pub(super) fn on_gate_released(&mut self, ctx: C, key: CallKey) {
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        let Attempt::Delayed { side, gate, .. } = call.attempt else {
            panic!("a gate release for a call that is not held back");
        };
        call.attempt = Attempt::Idle;
        self.continue_call(ctx, key, side, gate + 1);
    }

    /// A bulkhead's waits may have timed out.
    pub(super) fn on_bulkhead_expire(&mut self, ctx: C, site: u32, side: Side, gate: usize) {
        self.sites[site as usize].expire(side, gate, ctx.now(), &mut self.effects.buf);
        self.effects.tag(site, side);
    }

    /// Acts on a bulkhead's wake of a call waiting at gate `wake.gate` of `site`'s `side`
    /// gates: a granted slot resumes the call after that gate, a timed-out wait fails it. A
    /// slot granted to a call that no longer waits is given back.
    pub(super) fn wake(&mut self, ctx: C, site: u32, side: Side, wake: Wake) {
        let key = CallKey::from(KeyData::from_ffi(wake.id));
        let waits_here = self.calls.get(key).is_some_and(|c| {
            c.site == site
                && c.attempt
                    == Attempt::Waiting {
                        side,
                        gate: wake.gate,
                    }
        });
        match (waits_here, wake.permit) {
            (true, Some(permit)) => {
                let call = &mut self.calls[key];
                call.attempt = Attempt::Idle;
                self.sites[site as usize].grant(side, &mut call.permits, wake.gate, permit);
                self.continue_call(ctx, key, side, wake.gate + 1);
            }
            (true, None) => self.fail_waiting(ctx, key, side),
            (false, Some(permit)) => {
                let sp = &mut self.sites[site as usize];
                let mut lone = sp.permits();
                sp.grant(side, &mut lone, wake.gate, permit);
                sp.release(side, ctx.now(), &mut lone, None, &mut self.effects.buf);
                self.effects.tag(site, side);
            }
            (false, None) => {}
        }
    }

    /// A call's wait at a bulkhead timed out: it fails as if the bulkhead were full.
    fn fail_waiting(&mut self, ctx: C, key: CallKey, side: Side) {
        let now = ctx.now();
        let call = &mut self.calls[key];
        call.attempt = Attempt::Idle;
        let site = call.site;
        let sp = &mut self.sites[site as usize];
        sp.stats().rejected.add(Reason::BulkheadFull);
        sp.release(side, now, &mut call.permits, None, &mut self.effects.buf);
        self.effects.tag(site, side);
        let refusal = Refusal {
            reason: Reason::BulkheadFull,
            retry_after: None,
        };
        self.refused(ctx, key, side, refusal);
    }

    fn start_attempt(&mut self, ctx: C, key: CallKey) {
        let bucket = self.series_bucket_of(ctx.now());
        let call = &mut self.calls[key];
        debug_assert!(call.attempt == Attempt::Idle, "one attempt out at a time");
        call.attempt_no += 1;
        let sp = &mut self.sites[call.site as usize];
        sp.stats().attempts += 1;
        sp.tally(bucket).attempts += 1;
        self.continue_call(ctx, key, Side::Inner, 0);
    }

    /// Sends an attempt that passed its gates to a replica chosen by the balancer
    /// (`connected`: it holds a connection of its call site's pool already).
    pub(super) fn send_attempt(&mut self, ctx: C, key: CallKey, connected: bool) {
        let now = ctx.now();
        let call = &mut self.calls[key];
        let site = call.site;
        if now >= call.deadline {
            // A wait at a gate outlasted the call's deadline: nothing is sent.
            if connected {
                self.checkin(now, site);
            }
            self.fail_unsent(ctx, key, Reason::Deadline);
            return;
        }
        // A pooled call's attempt is sent once it holds a connection.
        if !connected && !self.pools.is_empty() && self.checkout(ctx, key) {
            return;
        }
        let call = &mut self.calls[key];
        let sp = &mut self.sites[site as usize];
        let attempt_deadline = sp.attempt_deadline(now, call.deadline);
        if sp.adapts() {
            // `series_bucket_of`, by fields: the call site is borrowed.
            let bucket = self.series_buckets.of(now);
            sp.note_timeout(bucket);
        }
        let svc = sp.target();
        let replica = self.services[svc].pick_replica(now, call.attrs.tenant);
        self.services[svc].replica(replica).sent();
        let attempt = call.attempt_no;
        let timer = (attempt_deadline != SimTime::MAX)
            .then(|| ctx.timer_self(attempt_deadline - now, Msg::Timeout { call: key, attempt }));
        let job = self.new_job(svc, replica, key, attempt, attempt_deadline);
        let call = &mut self.calls[key];
        debug_assert!(call.attempt == Attempt::Idle, "one attempt out at a time");
        call.attempt = Attempt::InFlight {
            job,
            replica: replica as u32,
            timer,
            sent: now,
        };
        let (source, target) = (call.source, self.services[svc].node());
        if self.follow.is_some() {
            self.note_sent(now, key, job);
        }
        if !self.transmit(ctx, source, target, Packet::Deliver { job }) {
            // Lost at once: the caller learns it only from its timeout.
            self.drop_job(now, job);
        }
    }

    /// The attempt of `key`, past its gates but not sent, fails with `reason` (its inner
    /// gates give their permits back unused).
    pub(super) fn fail_unsent(&mut self, ctx: C, key: CallKey, reason: Reason) {
        let now = ctx.now();
        let call = &mut self.calls[key];
        let site = call.site;
        self.sites[site as usize].release(
            Side::Inner,
            now,
            &mut call.permits,
            None,
            &mut self.effects.buf,
        );
        self.effects.tag(site, Side::Inner);
        self.attempt_done(ctx, key, Outcome::Fail(reason), false, None);
    }

    /// A reply reaches its caller.
    pub(super) fn on_reply(
        &mut self,
        ctx: C,
        key: CallKey,
        attempt: u32,
        outcome: Outcome,
        retry_after: Option<SimDuration>,
        quota: Option<Quota>,
    ) {
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        let now = ctx.now();
        let sp = &mut self.sites[call.site as usize];
        if let Some(q) = quota {
            // A late reply still says how much quota is left.
            sp.observe_quota(now, q);
        }
        let current =
            matches!(call.attempt, Attempt::InFlight { .. }) && call.attempt_no == attempt;
        if !current {
            sp.stats().late_replies += 1;
            return;
        }
        if let Attempt::InFlight { timer, sent, .. } = call.attempt {
            if let Some(t) = timer {
                ctx.cancel(t);
            }
            if sp.adapts() {
                sp.observe_latency(now - sent);
            }
        }
        self.attempt_done(ctx, key, outcome, true, retry_after);
    }

    /// The caller stops waiting for an attempt.
    pub(super) fn on_timeout(&mut self, ctx: C, key: CallKey, attempt: u32) {
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        let Attempt::InFlight { job, sent, .. } = call.attempt else {
            return;
        };
        if call.attempt_no != attempt {
            return;
        }
        let (site, source) = (call.site as usize, call.source);
        let bucket = self.series_bucket_of(ctx.now());
        if self.sites[site].adapts() {
            // A censored sample: the attempt took at least its timeout.
            self.sites[site].observe_latency(ctx.now() - sent);
        }
        self.sites[site].stats().timeouts += 1;
        self.sites[site].tally(bucket).timeouts += 1;
        let target = self.sites[site].target();
        self.abandon_job(ctx, target, source, job);
        self.attempt_done(ctx, key, Outcome::Fail(Reason::Timeout), true, None);
    }

    /// The caller (at node `source`) gave up on `job`: mark it, and cancel it if the service
    /// listens.
    fn abandon_job(&mut self, ctx: C, svc: usize, source: u32, job: JobKey) {
        if let Some(j) = self.jobs.get_mut(job) {
            j.abandon();
            if self.services[svc].config().on_abandoned == Abandoned::Cancel {
                let target = self.services[svc].node();
                self.transmit(ctx, source, target, Packet::Cancel { job });
            }
        }
    }
}
