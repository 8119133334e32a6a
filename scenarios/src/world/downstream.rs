//! What a job does after its work: an injected error, the cache (a hit, or a coalesced wait
//! for another job's fetch of the same key), and its downstream calls, sequential, fanned
//! out or picked by weight, each through its own call site's pattern stack.

use super::call::Owner;
use super::effects::Effect;
use super::job::{Job, Stage};
use super::outcome::{Outcome, Reason};
use super::refresh::Refresh;
use super::{C, CallKey, JobKey, World};
use crate::format::limits::CALLS_MAX;
use crate::format::schema::{Abandoned, CallMode};
use patterns::coalesce::Join;
use sim_core::SimTime;
use sim_core::sample::{bernoulli, uniform_below};
use slotmap::Key;

/// A job's downstream calls while it waits on them.
#[derive(Debug, Clone, Copy)]
pub struct Downstream {
    /// The call of each downstream call still running (null when none).
    children: [CallKey; CALLS_MAX],
    /// Calls still running.
    pending: u8,
    /// The next call to start (sequential mode).
    next: u8,
    /// Whether one of them failed.
    failed: bool,
}

impl Downstream {
    /// The downstream calls still running.
    pub fn running(&self) -> impl Iterator<Item = CallKey> + '_ {
        self.children.iter().copied().filter(|c| !c.is_null())
    }
}

impl World {
    /// A job's work is done: an injected error, a cache hit or a coalesced wait, or its
    /// downstream calls.
    pub(super) fn on_work_done(&mut self, ctx: C, job: JobKey) {
        let Some(j) = self.jobs.get(job) else {
            return;
        };
        let Stage::Working { since, read, .. } = *j.stage() else {
            panic!("work done for a job that is not working");
        };
        let svc = j.service();
        if self.services[svc].fails_now() {
            self.finish_job(ctx, job, Outcome::Fail(Reason::Error));
            return;
        }
        if self.services[svc].client_error_now() {
            self.finish_job(ctx, job, Outcome::Fail(Reason::ClientError));
            return;
        }
        if !self.distributed.is_empty() {
            self.run_store_op(ctx, job);
        }
        if let Some(store) = self.services[svc].store()
            && !store.write(read.expect("a job of a store reads when its work starts"))
        {
            self.finish_job(ctx, job, Outcome::Fail(Reason::VersionConflict));
            return;
        }
        // A locked row's lock is given back with the write.
        if let Some(store) = self.services[svc].store()
            && let Some(next) = store.unlock(job, read, ctx.now(), false)
        {
            self.effects.push(Effect::LockGranted { job: next });
        }
        if self.services[svc].config().cache.is_some() && self.consult_cache(ctx, job, since) {
            return;
        }
        let s = &mut self.services[svc];
        let n = s.config().calls.len();
        if n == 0 {
            self.finish_job(ctx, job, Outcome::Ok);
            return;
        }
        let mut calls = Downstream {
            children: [CallKey::null(); CALLS_MAX],
            pending: 1,
            next: 0,
            failed: false,
        };
        let first = match s.config().call_mode {
            CallMode::Sequential => 0..1,
            CallMode::FanOut => {
                calls.pending = n as u8;
                0..n
            }
            CallMode::Pick => {
                let pick = s.pick_call();
                // The request makes only this call: nothing follows it.
                calls.next = n as u8;
                pick..pick + 1
            }
        };
        self.jobs[job].set_stage(Stage::Calling { since, calls });
        for i in first {
            // A downstream call that fails at once may end the job before the others start.
            if !self.jobs.contains_key(job) {
                break;
            }
            self.start_child(ctx, job, i);
        }
    }

    /// The cache in front of the downstream calls: true when the job is done with it (a hit
    /// answered it, or it waits for another job's fetch), false when it goes on to fetch.
    fn consult_cache(&mut self, ctx: C, job: JobKey, since: SimTime) -> bool {
        let now = ctx.now();
        let (svc, r) = (self.jobs[job].service(), self.jobs[job].replica());
        let s = &mut self.services[svc];
        let cache = s.config().cache.clone().expect("checked by the caller");
        let warm = s.replica_ref(r).cache_warmth(now, cache.warmup);
        if bernoulli(s.rng_fault(), cache.hit_ratio * warm) {
            // An entry with a ttl may have expired, or XFetch may refresh it early: then the
            // request fetches it (uncoalesced: it is this entry's refresh).
            if let Some(refresh) = s.refresh()
                && let Some(fetch) = refresh.consult(now, r)
            {
                self.jobs[job].fetch(fetch);
                return false;
            }
            s.counts().cache_hits += 1;
            self.finish_job(ctx, job, Outcome::Ok);
            return true;
        }
        if s.refresh().is_some() {
            self.jobs[job].fetch(Refresh::measure(now));
        }
        if !s.replica_ref(r).coalesces() {
            return false;
        }
        let key = uniform_below(s.rng_fault(), u64::from(cache.keys)) as u32;
        let coalescer = s.replica(r).coalescer().expect("checked above");
        match coalescer.join(now, &key) {
            Join::Lead => {
                self.jobs[job].lead(key);
                false
            }
            Join::Follow { waiter, .. } => {
                s.counts().coalesced += 1;
                s.follow(r, waiter.0, job);
                self.jobs[job].set_stage(Stage::Following { since });
                true
            }
            // Too many flights or followers: fetch uncoalesced.
            Join::Reject { .. } => false,
        }
    }

    /// Starts downstream call `index` of `job`.
    fn start_child(&mut self, ctx: C, job: JobKey, index: usize) {
        let j = &mut self.jobs[job];
        let Some(calls) = j.downstream() else {
            panic!("a downstream call of a job that is not calling");
        };
        calls.next = calls.next.max(index as u8 + 1);
        let s = &self.services[j.service()];
        // A deadline-aware service passes its caller's deadline down; a naive one does not.
        let parent_deadline = if s.config().on_abandoned == Abandoned::Work {
            SimTime::MAX
        } else {
            j.deadline()
        };
        let site = s.site(j.replica(), index);
        let owner = Owner::Job {
            job,
            index: index as u8,
        };
        let key = self.start_call(ctx, site, owner, parent_deadline);
        if self.calls.contains_key(key)
            && let Some(calls) = self.jobs.get_mut(job).and_then(Job::downstream)
        {
            calls.children[index] = key;
        }
    }

    /// Downstream call `index` of `job` ended.
    pub(super) fn child_done(&mut self, ctx: C, job: JobKey, index: u8, outcome: Outcome) {
        let Some(j) = self.jobs.get_mut(job) else {
            return;
        };
        let svc = j.service();
        let Some(calls) = j.downstream() else {
            panic!("a downstream call ended for a job that is not calling");
        };
        assert!(calls.pending > 0, "a downstream call ends once");
        calls.children[index as usize] = CallKey::null();
        calls.pending -= 1;
        calls.failed |= outcome != Outcome::Ok;
        let (failed, pending, next) = (calls.failed, calls.pending, calls.next as usize);
        let config = self.services[svc].config();
        // Sequential calls stop at the first failure; the others wait for every call out.
        let sequential = config.call_mode == CallMode::Sequential;
        let done =
            (failed && sequential) || (pending == 0 && (failed || next >= config.calls.len()));
        if done {
            let o = if failed {
                Outcome::Fail(Reason::Dependency)
            } else {
                Outcome::Ok
            };
            self.finish_job(ctx, job, o);
        } else if pending == 0 {
            if let Some(calls) = self.jobs[job].downstream() {
                calls.pending = 1;
            }
            self.start_child(ctx, job, next);
        }
    }
}
