//! How a job ends: answered (finished, or replied to without a worker), cancelled by its
//! caller, or lost (in transit, or with its replica in a crash). Every way goes through
//! [`World::end_job`], which removes the job with what it carries (its store read, its cache
//! fetch) and hands back what it holds in its service (its row's lock, its idempotency key,
//! its concurrency and tenant slots); the callers then free its worker and tell its caller.

use super::{Admitted, Job, Stage};
use crate::world::call::Owner;
use crate::world::effects::Effect;
use crate::world::msg::Packet;
use crate::world::outcome::{Outcome, Reason};
use crate::world::{C, JobKey, World};
use sim_core::{SimDuration, SimTime};
use slotmap::Key;

/// How a job ends, for what it hands back ([`World::end_job`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Answered with this outcome (its concurrency slot takes it as a sample).
    Answered(Outcome),
    /// Its caller cancelled it (no sample).
    Cancelled,
    /// Lost before it reached its replica, or with its replica in a crash (which resets the
    /// replica's limiter and bulkhead: the job hands back no slot).
    Lost,
}

impl World {
    /// Whether no one waits for `j` any more: its caller gave up, or its caller is itself a
    /// job no one waits for (a db call made for a request whose user left is wasted too).
    pub(in crate::world) fn nobody_waits(&self, j: &Job) -> bool {
        let mut j = j;
        // The call graph is acyclic (validated), so the walk ends at a client.
        loop {
            if j.abandoned {
                return true;
            }
            let mut owner = self.calls.get(j.call).map(|c| c.owner);
            // A racing call or a leaf answers to its shell, whose owner is the one waiting
            // (a hedged leaf: two shells up).
            for _ in 0..2 {
                if let Some(Owner::Hedge { shell, .. } | Owner::Leaf { shell }) = owner {
                    owner = self.calls.get(shell).map(|c| c.owner);
                }
            }
            match owner {
                None | Some(Owner::Hedge { .. } | Owner::Leaf { .. }) => return true,
                Some(Owner::Client { .. }) => return false,
                // A lease is for the replica, which waits for it.
                Some(Owner::Store { job, .. }) if job.is_null() => return false,
                Some(Owner::Store { job, .. }) => match self.jobs.get(job) {
                    None => return true,
                    Some(parent) => j = parent,
                },
                Some(Owner::Job { job, .. }) => match self.jobs.get(job) {
                    None => return true,
                    Some(parent) => j = parent,
                },
            }
        }
    }

    /// Releases the worker `j` holds (if any), accounting wasted work; true if it held one.
    pub(in crate::world) fn release_worker(&mut self, now: SimTime, j: &Job) -> bool {
        let Some(since) = j.stage.worker_since() else {
            return false;
        };
        let wasted = self.nobody_waits(j);
        let s = &mut self.services[j.service()];
        s.replica(j.replica()).free_worker();
        if wasted {
            let counts = s.counts();
            counts.wasted_jobs += 1;
            counts.wasted_ns += (now - since).as_nanos();
        }
        s.busy_change(now, -1);
        true
    }

    /// A job is answered with `outcome`: its worker is freed, its caller gets the reply, its
    /// followers the outcome, and its replica's queue moves.
    pub(in crate::world) fn finish_job(&mut self, ctx: C, job: JobKey, outcome: Outcome) {
        let now = ctx.now();
        let j = self
            .end_job(now, job, Ending::Answered(outcome))
            .expect("finishing a live job");
        if let Some(fetch) = j.fetch
            && let Some(refresh) = self.services[j.service()].refresh()
        {
            refresh.complete(now, j.replica(), fetch, outcome == Outcome::Ok);
        }
        let freed = self.release_worker(now, &j);
        self.send_reply(ctx, &j, outcome, None);
        self.complete_flight(ctx, &j, outcome);
        if freed {
            self.dequeue(ctx, j.service(), j.replica());
        }
    }

    /// Removes a job with what it carries, handing back what it holds in the service: the
    /// one way a job ends (see [`Ending`]); `None` if it already ended. Its row's lock passes
    /// on (after the event), its idempotency key is completed (a success, stored for replay)
    /// or aborted (anything else lets a retry run it again), and, unless it is lost with its
    /// replica, its concurrency slot takes its outcome as a sample and its tenant's slot is
    /// given back.
    pub(in crate::world) fn end_job(
        &mut self,
        now: SimTime,
        job: JobKey,
        ending: Ending,
    ) -> Option<Job> {
        let mut j = self.jobs.remove(job)?;
        if let Stage::Calling { calls, .. } = &j.stage {
            let carried = calls.heap_bytes();
            assert!(
                self.carried_bytes >= carried,
                "carried bytes are counted once"
            );
            self.carried_bytes -= carried;
        }
        if self.follow.is_some() {
            self.note_job_end(now, job, &j, ending);
        }
        let s = &mut self.services[j.service()];
        if let Some(store) = s.store()
            && let Some(next) = store.unlock(job, j.stage.read(), now, false)
        {
            self.effects.push(Effect::LockGranted { job: next });
        }
        if let Some(key) = j.idempotency_key.take()
            && let Some(store) = s.idempotency()
        {
            if ending == Ending::Answered(Outcome::Ok) {
                store.complete(now, &key, ());
            } else {
                store.abort(now, &key);
            }
        }
        if ending == Ending::Lost {
            // The crash resets its replica's limiter and bulkhead: nothing to hand back.
            return Some(j);
        }
        if let Some(Admitted(token)) = j.admitted.take() {
            let ok = match ending {
                Ending::Answered(o) => Some(o == Outcome::Ok),
                Ending::Cancelled | Ending::Lost => None,
            };
            s.release_slot(now, j.replica(), token, ok);
        }
        if j.tenant_slot {
            j.tenant_slot = false;
            s.release_tenant(j.replica(), j.attrs);
        }
        Some(j)
    }

    /// Forgets a job lost before it reached its replica (it holds nothing).
    pub(in crate::world) fn drop_job(&mut self, now: SimTime, job: JobKey) {
        let j = self
            .end_job(now, job, Ending::Lost)
            .expect("dropping a live job");
        assert!(
            matches!(j.stage, Stage::Transit),
            "only a job in transit is lost"
        );
    }

    /// A job that led a coalesced cache miss is gone: its followers get its outcome.
    pub(in crate::world) fn complete_flight(&mut self, ctx: C, j: &Job, outcome: Outcome) {
        let Some(key) = j.lead_key else {
            return;
        };
        let (svc, r) = (j.service(), j.replica());
        let Some(coalescer) = self.services[svc].replica(r).coalescer() else {
            return;
        };
        for waiter in coalescer.complete(ctx.now(), &key) {
            let follower = self.services[svc].unfollow(r, waiter.0);
            if let Some(follower) = follower
                && self.jobs.contains_key(follower)
            {
                self.finish_job(ctx, follower, outcome);
            }
        }
    }

    /// Answers a job that holds no worker (refused, shed, replayed, replica down).
    pub(in crate::world) fn reply(
        &mut self,
        ctx: C,
        job: JobKey,
        outcome: Outcome,
        retry_after: Option<SimDuration>,
    ) {
        let j = self
            .end_job(ctx.now(), job, Ending::Answered(outcome))
            .expect("live job");
        self.send_reply(ctx, &j, outcome, retry_after);
    }

    /// Counts the answer and sends it to the caller (a caller that no longer exists gets
    /// nothing).
    pub(in crate::world) fn send_reply(
        &mut self,
        ctx: C,
        j: &Job,
        outcome: Outcome,
        retry_after: Option<SimDuration>,
    ) {
        let s = &mut self.services[j.service()];
        s.record_answer(
            ctx.now(),
            match outcome {
                Outcome::Ok => None,
                Outcome::Fail(r) => Some(r),
            },
        );
        let source = s.node();
        // Only a `Pace` layer reads a quota: without one, none is worked out or kept.
        let quota = if self.paced { s.quota(ctx.now()) } else { None };
        let Some(target) = self.calls.get(j.call).map(|c| c.source) else {
            return;
        };
        if let Some(q) = quota {
            self.send_quota(j.call, j.attempt, q);
        }
        let packet = Packet::Reply {
            call: j.call,
            attempt: j.attempt,
            outcome,
            retry_after,
        };
        self.transmit(ctx, source, target, packet);
    }

    /// The caller's cancellation reaches the replica: the job stops wherever it is.
    pub(in crate::world) fn on_cancel(&mut self, ctx: C, job: JobKey) {
        let now = ctx.now();
        let Some(j) = self.end_job(now, job, Ending::Cancelled) else {
            return;
        };
        let (svc, r) = (j.service(), j.replica());
        self.services[svc].counts().cancelled += 1;
        match j.stage {
            Stage::Transit => {}
            Stage::Shaping { timer } => {
                ctx.cancel(timer);
            }
            Stage::Queued => {
                let removed = self.services[svc].replica(r).remove_queued(job);
                assert!(removed, "a queued job is in its queue");
                self.services[svc].queue_change(now, r, -1);
            }
            Stage::Working { timer, .. } => {
                ctx.cancel(timer);
                self.stop_holding(ctx, &j);
            }
            Stage::Calling { ref calls, .. } => {
                for child in calls.running() {
                    self.cancel_call(ctx, child);
                }
                self.stop_holding(ctx, &j);
            }
            Stage::Following { .. } => self.stop_holding(ctx, &j),
            Stage::Admitting { limiter, call } => {
                self.leave_admission(ctx, job, limiter, call, r);
            }
            Stage::Locking { timer, .. } => {
                ctx.cancel(timer);
                self.stop_holding(ctx, &j);
            }
        }
    }

    /// A job that held a worker stops: the worker is freed, requests waiting on its fetch
    /// learn that it will not come, and the queue moves.
    pub(in crate::world) fn stop_holding(&mut self, ctx: C, j: &Job) {
        self.release_worker(ctx.now(), j);
        self.complete_flight(ctx, j, Outcome::Fail(Reason::Dependency));
        self.dequeue(ctx, j.service(), j.replica());
    }

    /// Every job at replica `r` of `svc` is lost in a crash: callers learn at once (the
    /// connection resets), downstream calls are cancelled, workers freed.
    pub(in crate::world) fn lose_jobs(&mut self, ctx: C, svc: usize, r: usize) {
        let now = ctx.now();
        let mut lost = std::mem::take(&mut self.scratch);
        lost.clear();
        let mut queued = 0;
        lost.extend(self.jobs.iter().filter_map(|(k, j)| {
            (j.service() == svc && j.replica() == r && !matches!(j.stage, Stage::Transit))
                .then_some(k)
        }));
        for &job in &lost {
            // The idempotency store outlives the replica (it is the service's database): the
            // operation did not finish, so a retry may run it.
            let Some(j) = self.end_job(now, job, Ending::Lost) else {
                continue;
            };
            match j.stage {
                Stage::Shaping { timer }
                | Stage::Working { timer, .. }
                | Stage::Locking { timer, .. } => {
                    ctx.cancel(timer);
                }
                Stage::Calling { ref calls, .. } => {
                    for child in calls.running() {
                        self.cancel_call(ctx, child);
                    }
                }
                // Its queue is emptied at once below.
                Stage::Queued => queued += 1,
                Stage::Admitting { limiter, call } => {
                    self.leave_admission(ctx, job, limiter, call, r);
                }
                Stage::Transit | Stage::Following { .. } => {}
            }
            self.release_worker(now, &j);
            self.send_reply(ctx, &j, Outcome::Fail(Reason::Unavailable), None);
        }
        self.scratch = lost;
        assert_eq!(
            queued,
            self.services[svc].replica_ref(r).queue_len(),
            "every job in a queue is a live queued job"
        );
        self.services[svc].clear_queue(now, r);
        let jobs = &self.jobs;
        self.services[svc].forget_followers(|k| jobs.contains_key(k));
    }
}
