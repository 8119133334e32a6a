//! A job: one attempt as its replica sees it, from its arrival through admission, the queue,
//! the work, the cache and its own downstream calls, to the reply; or its cancellation.
//!
//! ```text
//!  Transit ─► admission ─► (Shaping) ─► Queued ─► Working ─► Calling ─► reply
//!                │                         │         │  └──► Following ─┘
//!                └► refused: reply         └► shed   └► cache hit, error: reply
//! ```
//!
//! [`Stage`] says where a job is and carries what only that stage has (its timer, its
//! downstream calls, its read of its service's store while it works or waits for its row's
//! lock); a cache fetch it makes is beside it in the job. A job holds one of its replica's
//! workers from `Working` until it replies, including while its downstream calls run
//! (thread-per-request). However it ends, answered, cancelled or lost, it goes through
//! [`World::end_job`] (`end.rs`), which removes it with all it carries.

mod end;

pub use end::Ending;

use super::call::{Attempt, Owner};
use super::downstream::Downstream;
use super::msg::Msg;
use super::outcome::{Outcome, Reason};
use super::refresh::Fetch;
use super::replica::Enqueue;
use super::service::Admit;
use super::store::Read;
use super::traffic::Attrs;
use super::{C, CallKey, JobKey, World};
use crate::format::schema::{Abandoned, CallSafety};
use patterns::concurrency::ConcurrencyToken;
use patterns::idempotency::Begin;
use sim_core::{SimDuration, SimTime, TimerId};
use slotmap::Key;

/// Where a job is.
#[derive(Debug, Clone)]
pub enum Stage {
    /// On its way to the replica.
    Transit,
    /// Admitted by a shaping rate limiter that holds it back until `timer` fires.
    Shaping { timer: TimerId },
    /// In the replica's queue.
    Queued,
    /// Holding a worker since `since`, working until `timer` fires at `until` (a pause of
    /// the replica pushes both back), with its `read` of its service's store if it has one.
    Working {
        since: SimTime,
        timer: TimerId,
        until: SimTime,
        read: Option<Read>,
    },
    /// Holding a worker since `since`, waiting on its downstream calls.
    Calling { since: SimTime, calls: Downstream },
    /// Holding a worker since `since`, waiting for another job's fetch of the same key.
    Following { since: SimTime },
    /// Waiting for the decision of distributed limiter `limiter` (index in the world's
    /// list): its store `call`, or a lease when `call` is null.
    Admitting { limiter: u32, call: CallKey },
    /// Holding a worker since `since`, waiting for the lock of the row of its `read`
    /// (`world::locks`) until `timer` (its lock wait timeout) fires; then it works for `work`.
    Locking {
        since: SimTime,
        timer: TimerId,
        work: SimDuration,
        read: Read,
    },
}

impl Stage {
    /// Since when the job holds a worker, if it holds one.
    fn worker_since(&self) -> Option<SimTime> {
        match *self {
            Stage::Working { since, .. }
            | Stage::Calling { since, .. }
            | Stage::Following { since }
            | Stage::Locking { since, .. } => Some(since),
            Stage::Transit | Stage::Shaping { .. } | Stage::Queued | Stage::Admitting { .. } => {
                None
            }
        }
    }

    /// Its read of its service's store, while it works or waits for its row's lock.
    pub fn read(&self) -> Option<Read> {
        match *self {
            Stage::Working { read, .. } => read,
            Stage::Locking { read, .. } => Some(read),
            _ => None,
        }
    }
}

/// One attempt at its replica.
#[derive(Debug, Clone)]
pub struct Job {
    service: u32,
    replica: u32,
    call: CallKey,
    attempt: u32,
    /// The id of the client request it serves (it outlives its call when the caller gives
    /// up, and its own downstream calls still serve that request).
    request: u64,
    /// The attributes of the request it serves, which its downstream calls inherit.
    attrs: Attrs,
    /// When the caller stops waiting for this attempt.
    deadline: SimTime,
    stage: Stage,
    /// The caller gave up on this attempt (known to the observer; the replica learns it only
    /// through a cancellation or an expired deadline).
    abandoned: bool,
    /// The cache key this job fetches for its followers, when it leads a coalesced miss.
    lead_key: Option<u32>,
    /// Its fetch of an entry of a cache with a time to live (`world::refresh`), completed
    /// when it is answered.
    fetch: Option<Fetch>,
    /// Its admission by the replica's concurrency limit, handed back when it is answered.
    admitted: Option<Admitted>,
    /// The idempotency key it executes under, to complete or abort in the store.
    idempotency_key: Option<u64>,
    /// It holds a slot of its replica's per-tenant bulkhead, handed back when it is answered.
    tenant_slot: bool,
}

/// A job's token from its replica's concurrency limit. A world is copied whole, the limit
/// with the token, so each copy hands its token back to its own limit.
#[derive(Debug)]
struct Admitted(ConcurrencyToken);

impl Clone for Admitted {
    fn clone(&self) -> Self {
        Admitted(self.0.clone_with_machine())
    }
}

impl Job {
    /// Its service's index.
    pub fn service(&self) -> usize {
        self.service as usize
    }

    /// Its replica.
    pub fn replica(&self) -> usize {
        self.replica as usize
    }

    /// The call it is an attempt of.
    pub fn call(&self) -> CallKey {
        self.call
    }

    /// Its attempt number.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The id of the client request it serves.
    pub fn request(&self) -> u64 {
        self.request
    }

    /// The attributes of the request it serves.
    pub fn attrs(&self) -> Attrs {
        self.attrs
    }

    /// Its caller gave up on it.
    pub fn abandon(&mut self) {
        self.abandoned = true;
    }

    /// Where it is.
    pub fn stage(&self) -> &Stage {
        &self.stage
    }

    /// Where it is, to change what the stage holds.
    pub fn stage_mut(&mut self) -> &mut Stage {
        &mut self.stage
    }

    /// Moves it to `stage`.
    pub fn set_stage(&mut self, stage: Stage) {
        debug_assert!(
            !matches!(&self.stage, Stage::Calling { calls, .. } if calls.heap_bytes() > 0),
            "a job's boxed calls leave with the job (`end_job`), which counts their bytes"
        );
        self.stage = stage;
    }

    /// Its downstream calls, while it waits on them.
    pub fn downstream(&mut self) -> Option<&mut Downstream> {
        match &mut self.stage {
            Stage::Calling { calls, .. } => Some(calls),
            _ => None,
        }
    }

    /// When its caller stops waiting for it.
    pub fn deadline(&self) -> SimTime {
        self.deadline
    }

    /// It fetches cache key `key` for the jobs that will follow it.
    pub fn lead(&mut self, key: u32) {
        self.lead_key = Some(key);
    }

    /// It makes `fetch` of an entry of a cache with a time to live.
    pub fn fetch(&mut self, fetch: Fetch) {
        debug_assert!(self.fetch.is_none(), "a job fetches once");
        self.fetch = Some(fetch);
    }

    /// Since when it holds a worker, if it holds one.
    pub fn worker_since(&self) -> Option<SimTime> {
        self.stage.worker_since()
    }

    /// Whether it holds a worker.
    pub fn holds_worker(&self) -> bool {
        self.stage.worker_since().is_some()
    }
}

impl World {
    /// A new job in transit to `replica` of service `svc`.
    pub(super) fn new_job(
        &mut self,
        svc: usize,
        replica: usize,
        call: CallKey,
        attempt: u32,
        deadline: SimTime,
    ) -> JobKey {
        let (request, attrs) = (self.calls[call].request, self.calls[call].attrs);
        self.jobs.insert(Job {
            attrs,
            service: svc as u32,
            replica: replica as u32,
            call,
            attempt,
            request,
            deadline,
            stage: Stage::Transit,
            abandoned: false,
            lead_key: None,
            fetch: None,
            admitted: None,
            idempotency_key: None,
            tenant_slot: false,
        })
    }

    /// An attempt reaches its replica: admission control, then a worker or the queue.
    pub(super) fn on_deliver(&mut self, ctx: C, job: JobKey) {
        let now = ctx.now();
        // The caller's cancellation may have overtaken it on a reordering link.
        let Some(j) = self.jobs.get(job) else {
            return;
        };
        let (svc, r) = (j.service(), j.replica());
        let s = &mut self.services[svc];
        s.record_arrival(now);
        if !s.life().is_up(r) {
            self.reply(ctx, job, Outcome::Fail(Reason::Unavailable), None);
            return;
        }
        if !self.distributed.is_empty() {
            let limiters = self.distributed_of(svc);
            if !limiters.is_empty() {
                self.decide_distributed(ctx, job, limiters.start);
                return;
            }
        }
        self.admit_locally(ctx, job);
    }

    /// The service's admission layers (after its distributed limiters admitted the job).
    pub(super) fn admit_locally(&mut self, ctx: C, job: JobKey) {
        let now = ctx.now();
        let j = &mut self.jobs[job];
        j.stage = Stage::Transit;
        let (svc, r, attrs) = (j.service(), j.replica(), j.attrs);
        let s = &mut self.services[svc];
        match s.admit(now, r, attrs) {
            Admit::No(reason, retry_after) => {
                self.reply(ctx, job, Outcome::Fail(reason), retry_after)
            }
            Admit::Yes(token) => {
                let j = &mut self.jobs[job];
                assert!(
                    j.admitted.is_none() && !j.tenant_slot,
                    "a job is admitted once"
                );
                j.admitted = token.map(Admitted);
                j.tenant_slot = s.has_tenant_bulkhead();
                self.accept(ctx, job);
            }
            Admit::After(until, token) => {
                let tenant_slot = s.has_tenant_bulkhead();
                let timer = ctx.timer_self(until - now, Msg::Released { job });
                let j = &mut self.jobs[job];
                assert!(
                    j.admitted.is_none() && !j.tenant_slot,
                    "a job is admitted once"
                );
                j.admitted = token.map(Admitted);
                j.tenant_slot = tenant_slot;
                j.stage = Stage::Shaping { timer };
            }
        }
    }

    /// A shaping rate limiter lets a held-back job go on.
    pub(super) fn on_released(&mut self, ctx: C, job: JobKey) {
        let j = self
            .jobs
            .get_mut(job)
            .expect("a released job is live (crashes cancel its timer)");
        assert!(matches!(j.stage, Stage::Shaping { .. }), "released twice");
        j.stage = Stage::Transit;
        self.accept(ctx, job);
    }

    /// An admitted job takes a free worker, or waits in the queue, or is refused.
    fn accept(&mut self, ctx: C, job: JobKey) {
        let now = ctx.now();
        let (svc, r) = (self.jobs[job].service(), self.jobs[job].replica());
        let s = &mut self.services[svc];
        if s.can_start(r) {
            s.record_wait(SimDuration::ZERO, false);
            self.start_work(ctx, job);
            return;
        }
        let level = self.jobs[job].attrs.level;
        match s.replica(r).enqueue(now, job, level) {
            Enqueue::Queued => {}
            Enqueue::Full => {
                let hint = s.config().retry_after;
                self.reply(ctx, job, Outcome::Fail(Reason::QueueFull), hint);
                return;
            }
            Enqueue::Evicted(victim) => {
                // A less important job makes room: it leaves the queue as a refusal would
                // have sent it away (the queue's length is unchanged).
                let hint = s.config().retry_after;
                s.queue_change(now, r, -1);
                self.reply(ctx, victim, Outcome::Fail(Reason::QueueFull), hint);
            }
        }
        let s = &mut self.services[svc];
        let counts = s.counts();
        counts.queued += 1;
        s.queue_change(now, r, 1);
        self.jobs[job].stage = Stage::Queued;
        if self.follow.is_some() {
            let ahead = self.services[svc].replica_ref(r).queue_len() - 1;
            self.note_queued(now, job, ahead);
        }
    }

    /// The operation a job runs: a racing call of a hedged call is its shell's operation.
    fn operation(&self, call: CallKey) -> CallKey {
        match self.calls.get(call).map(|c| c.owner) {
            Some(Owner::Hedge { shell, .. }) => shell,
            _ => call,
        }
    }

    /// Starts work on `job`, or drops it if it expired and the service drops expired work,
    /// or answers it from the idempotency store.
    fn start_work(&mut self, ctx: C, job: JobKey) {
        let now = ctx.now();
        let j = &self.jobs[job];
        let (svc, r) = (j.service(), j.replica());
        if self.services[svc].config().on_abandoned == Abandoned::DropExpired && now >= j.deadline {
            self.services[svc].counts().dropped_expired += 1;
            self.end_job(now, job, Ending::Answered(Outcome::Fail(Reason::Deadline)));
            return;
        }
        if self.services[svc].poisoned(j.attrs.tenant) {
            self.poison_crash(ctx, job);
            return;
        }
        let op = self.operation(j.call);
        let keyed = self
            .calls
            .get(op)
            .is_some_and(|c| self.sites[c.site as usize].safety() == CallSafety::IdempotencyKey);
        if keyed && self.services[svc].idempotency().is_some() && !self.begin_keyed(ctx, job, op) {
            return;
        }
        let deduplicated = self.jobs[job].idempotency_key.is_some();
        if let Some(c) = self.calls.get_mut(op) {
            c.executions += 1;
            if c.executions > 1 && !deduplicated {
                self.services[svc].counts().duplicate_executions += 1;
            }
        }
        let s = &mut self.services[svc];
        let work = s.work_time(r, now);
        let (read, locking) = s
            .store()
            .map_or((None, false), |store| (Some(store.read()), store.locking()));
        s.replica(r).take_worker();
        s.busy_change(now, 1);
        if locking {
            let read = read.expect("a locking store is a store");
            self.lock_row(ctx, job, work, read);
            return;
        }
        let timer = ctx.timer_self(work, Msg::WorkDone { job });
        let until = now + work;
        self.jobs[job].stage = Stage::Working {
            since: now,
            timer,
            until,
            read,
        };
    }

    /// Looks the operation `op` up in the service's idempotency store; false when the job
    /// was answered without running (a replay, a conflict, a full store).
    fn begin_keyed(&mut self, ctx: C, job: JobKey, op: CallKey) -> bool {
        let now = ctx.now();
        let svc = self.jobs[job].service();
        let s = &mut self.services[svc];
        let key = op.data().as_ffi();
        let store = s.idempotency().expect("checked by the caller");
        match store.begin(now, &key, 0) {
            Begin::Execute => {
                self.jobs[job].idempotency_key = Some(key);
                true
            }
            Begin::Replay { .. } => {
                s.counts().replayed += 1;
                self.reply(ctx, job, Outcome::Ok, None);
                false
            }
            Begin::Conflict { .. } | Begin::Wait { .. } | Begin::FingerprintMismatch { .. } => {
                self.reply(ctx, job, Outcome::Fail(Reason::Conflict), None);
                false
            }
            Begin::Full => {
                let hint = s.config().retry_after;
                self.reply(ctx, job, Outcome::Fail(Reason::Shed), hint);
                false
            }
        }
    }

    /// Lets free workers of a replica take waiting jobs.
    pub(super) fn dequeue(&mut self, ctx: C, svc: usize, r: usize) {
        let now = ctx.now();
        loop {
            let s = &mut self.services[svc];
            if !s.can_dequeue(r) {
                return;
            }
            // A liveness probe whose turn has come takes the free worker first.
            if s.has_probes() {
                self.serve_probes(now, svc, r);
            }
            let s = &mut self.services[svc];
            let out = s.replica(r).dequeue(now);
            for &job in &out.shed {
                self.services[svc].queue_change(now, r, -1);
                let hint = self.services[svc].config().retry_after;
                self.reply(ctx, job, Outcome::Fail(Reason::Shed), hint);
            }
            let Some((job, since)) = out.next else {
                return;
            };
            assert!(self.jobs.contains_key(job), "every queued job is live");
            if self.follow.is_some() {
                self.note_dequeued(now, job, since);
            }
            let s = &mut self.services[svc];
            s.queue_change(now, r, -1);
            s.record_wait(now - since, true);
            self.start_work(ctx, job);
        }
    }

    /// Asserts what only a bug can break about jobs: each replica's busy workers are its jobs
    /// that hold one, each queue holds exactly its queued jobs, every follower is registered
    /// to be woken, and every in-flight attempt's job is alive or lost in transit.
    pub(super) fn check_jobs(&self) {
        let mut holding = vec![Vec::new(); self.services.len()];
        let mut queued = vec![Vec::new(); self.services.len()];
        for (i, s) in self.services.iter().enumerate() {
            holding[i] = vec![0u32; s.replica_count()];
            queued[i] = vec![0usize; s.replica_count()];
        }
        for (key, j) in &self.jobs {
            let (svc, r) = (j.service(), j.replica());
            if j.holds_worker() {
                holding[svc][r] += 1;
            }
            if matches!(j.stage, Stage::Queued) {
                queued[svc][r] += 1;
            }
            if matches!(j.stage, Stage::Following { .. }) {
                assert!(
                    self.services[svc].is_following(key),
                    "a follower no fetch will wake"
                );
            }
        }
        self.check_locks();
        for (i, s) in self.services.iter().enumerate() {
            for r in 0..s.replica_count() {
                let replica = s.replica_ref(r);
                assert_eq!(
                    replica.busy(),
                    holding[i][r],
                    "{} replica {r}: busy workers",
                    s.name()
                );
                assert_eq!(
                    replica.queue_len(),
                    queued[i][r],
                    "{} replica {r}: queue",
                    s.name()
                );
            }
        }
        for (key, c) in &self.calls {
            if let Attempt::InFlight { job, .. } = c.attempt
                && let Some(j) = self.jobs.get(job)
            {
                assert_eq!(j.call, key, "a job answers its own call");
            }
        }
    }
}
