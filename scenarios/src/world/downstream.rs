//! What a job does after its work: an injected error, the cache (a hit, or a coalesced wait
//! for another job's fetch of the same key), and its downstream calls, sequential, fanned
//! out or picked by weight, each through its own call site's pattern stack.
//!
//! A job keeps the call of each downstream call still running, to cancel them when it is
//! abandoned or lost. Sequential and picked calls run one at a time and keep one slot; a
//! fan-out keeps one per call, inline up to [`CHILDREN_INLINE`] (every fan-out the library
//! has) and boxed beyond it, up to [`CALLS_MAX`]: the box is counted in
//! `World::carried_bytes` from the job's call stage until [`World::end_job`], so that a job
//! stays its size whatever a service's calls, and the memory check still sees every byte.

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

/// The running calls a job keeps inline: a fan-out of more calls boxes them.
pub const CHILDREN_INLINE: usize = 8;

/// The call of each downstream call still running (null when none), by slot.
#[derive(Debug, Clone)]
enum Children {
    /// Up to [`CHILDREN_INLINE`] slots, in the job.
    Inline([CallKey; CHILDREN_INLINE]),
    /// A fan-out's slots beyond that, one per call.
    Boxed(Box<[CallKey]>),
}

/// A job's downstream calls while it waits on them.
#[derive(Debug, Clone)]
pub struct Downstream {
    children: Children,
    /// Calls still running.
    pending: u16,
    /// The next call to start (sequential mode).
    next: u16,
    /// Whether one of them failed.
    failed: bool,
    /// Whether every call has a slot of its own (a fan-out), or they share slot 0.
    fanned: bool,
}

const _: () = assert!(CALLS_MAX <= u16::MAX as usize, "call indices are u16");
// The box takes no room of its own: a job is as large as with the inline slots alone.
const _: () =
    assert!(std::mem::size_of::<Children>() == std::mem::size_of::<[CallKey; CHILDREN_INLINE]>());

impl Downstream {
    /// Slots for the calls of a job that makes `n` calls, fanned out or one at a time.
    fn new(n: usize, fanned: bool) -> Downstream {
        let children = if fanned && n > CHILDREN_INLINE {
            Children::Boxed(vec![CallKey::null(); n].into_boxed_slice())
        } else {
            Children::Inline([CallKey::null(); CHILDREN_INLINE])
        };
        Downstream {
            children,
            pending: 1,
            next: 0,
            failed: false,
            fanned,
        }
    }

    fn slots(&mut self) -> &mut [CallKey] {
        match &mut self.children {
            Children::Inline(a) => a,
            Children::Boxed(b) => b,
        }
    }

    /// The slot of downstream call `index`.
    fn slot(&mut self, index: usize) -> &mut CallKey {
        let at = if self.fanned { index } else { 0 };
        &mut self.slots()[at]
    }

    /// The downstream calls still running.
    pub fn running(&self) -> impl Iterator<Item = CallKey> + '_ {
        let slots: &[CallKey] = match &self.children {
            Children::Inline(a) => a,
            Children::Boxed(b) => b,
        };
        slots.iter().copied().filter(|c| !c.is_null())
    }

    /// The heap bytes it holds (a large fan-out's slots), which `World::carried_bytes`
    /// counts.
    pub fn heap_bytes(&self) -> u64 {
        match &self.children {
            Children::Inline(_) => 0,
            Children::Boxed(b) => std::mem::size_of_val::<[CallKey]>(b) as u64,
        }
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
        let mode = s.config().call_mode;
        let mut calls = Downstream::new(n, mode == CallMode::FanOut);
        let first = match mode {
            CallMode::Sequential => 0..1,
            CallMode::FanOut => {
                calls.pending = n as u16;
                0..n
            }
            CallMode::Pick => {
                let pick = s.pick_call();
                // The request makes only this call: nothing follows it.
                calls.next = n as u16;
                pick..pick + 1
            }
        };
        self.carried_bytes += calls.heap_bytes();
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
        calls.next = calls.next.max(index as u16 + 1);
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
            index: index as u16,
        };
        let key = self.start_call(ctx, site, owner, parent_deadline);
        if self.calls.contains_key(key)
            && let Some(calls) = self.jobs.get_mut(job).and_then(Job::downstream)
        {
            *calls.slot(index) = key;
        }
    }

    /// Downstream call `index` of `job` ended.
    pub(super) fn child_done(&mut self, ctx: C, job: JobKey, index: u16, outcome: Outcome) {
        let Some(j) = self.jobs.get_mut(job) else {
            return;
        };
        let svc = j.service();
        let Some(calls) = j.downstream() else {
            panic!("a downstream call ended for a job that is not calling");
        };
        assert!(calls.pending > 0, "a downstream call ends once");
        *calls.slot(usize::from(index)) = CallKey::null();
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
