//! What a job does after its work: an injected error, the cache (a hit, or a coalesced wait
//! for another job's fetch of the same key), and its downstream calls, stage by stage
//! ([`crate::format::schema::stages`]: a stage's calls at once, or one picked by weight, each
//! made on its `call_ratio` of requests), each through its own call site's pattern stack.
//!
//! A stage draws which of its calls are made first, counts them as `pending`, then starts
//! them in the order listed: a call that ends at once (refused by a gate, answered by a
//! fallback) counts down like any other, so only the last call made can end the stage, as
//! `call_mode: FanOut` always counted. The stage ends when its last call ends, and a failure
//! among them fails the job then (`Dependency`), else the next stage starts. A stage that
//! makes no call is passed over in the same loop. Old files run event for event as before:
//! their stages draw nothing, and a stage's end comes where a call mode's did.
//!
//! A job keeps the call of each downstream call still running, to cancel them when it is
//! abandoned or lost: one slot per place in a stage, as many as the widest stage
//! ([`super::plan::Plan::width`]), inline up to [`CHILDREN_INLINE`] (every fan-out the
//! library has) and boxed beyond it, up to [`CALLS_MAX`]: the box is counted in
//! `World::carried_bytes` from the job's call stage until [`World::end_job`], so that a job
//! stays its size whatever a service's calls, and the memory check still sees every byte.

use super::call::Owner;
use super::effects::Effect;
use super::job::{Job, Stage};
use super::outcome::{Outcome, Reason};
use super::refresh::Refresh;
use super::{C, CallKey, JobKey, World};
use crate::format::limits::CALLS_MAX;
use crate::format::schema::Abandoned;
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
    /// Calls of the stage still running (and one more while the stage starts them).
    pending: u16,
    /// The stage running.
    stage: u16,
    /// Whether one of the stage's calls failed.
    failed: bool,
}

const _: () = assert!(CALLS_MAX <= u16::MAX as usize, "call indices are u16");
// The box takes no room of its own: a job is as large as with the inline slots alone.
const _: () =
    assert!(std::mem::size_of::<Children>() == std::mem::size_of::<[CallKey; CHILDREN_INLINE]>());

impl Downstream {
    /// Slots for the calls of a job whose widest stage runs `width` calls at once.
    fn new(width: usize) -> Downstream {
        let children = if width > CHILDREN_INLINE {
            Children::Boxed(vec![CallKey::null(); width].into_boxed_slice())
        } else {
            Children::Inline([CallKey::null(); CHILDREN_INLINE])
        };
        Downstream {
            children,
            pending: 0,
            stage: 0,
            failed: false,
        }
    }

    fn slots(&mut self) -> &mut [CallKey] {
        match &mut self.children {
            Children::Inline(a) => a,
            Children::Boxed(b) => b,
        }
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
        let plan = self.services[svc].plan();
        if plan.stages() == 0 {
            self.finish_job(ctx, job, Outcome::Ok);
            return;
        }
        let calls = Downstream::new(plan.width());
        self.carried_bytes += calls.heap_bytes();
        self.jobs[job].set_stage(Stage::Calling { since, calls });
        self.run_stages(ctx, job, 0);
    }

    /// Runs the stages of `job` from `stage` on: the first whose draws make a call starts its
    /// calls, and ends through [`World::child_done`]; stages that make none are passed over.
    fn run_stages(&mut self, ctx: C, job: JobKey, mut stage: usize) {
        let svc = self.jobs[job].service();
        loop {
            if stage == self.services[svc].plan().stages() {
                self.finish_job(ctx, job, Outcome::Ok);
                return;
            }
            let taken = self.services[svc].take_stage(stage);
            let made = self.services[svc].plan().draw(taken.clone());
            let count = made
                .as_ref()
                .map_or(taken.len(), |m| m.iter().filter(|&&b| b).count());
            if count == 0 {
                stage += 1;
                continue;
            }
            let Some(calls) = self.jobs[job].downstream() else {
                panic!("stages of a job that is not calling");
            };
            (calls.stage, calls.pending) = (stage as u16, count as u16);
            for (n, k) in taken.enumerate() {
                if made.as_ref().is_some_and(|m| !m[n]) {
                    continue;
                }
                // A downstream call that ends the job at once leaves nothing to start.
                if !self.jobs.contains_key(job) {
                    return;
                }
                let index = self.services[svc].plan().member(k);
                self.start_child(ctx, job, index);
            }
            return;
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
        let j = &self.jobs[job];
        let s = &self.services[j.service()];
        // A deadline-aware service passes its caller's deadline down; a naive one does not.
        let parent_deadline = if s.config().on_abandoned == Abandoned::Work {
            SimTime::MAX
        } else {
            j.deadline()
        };
        let site = s.site(j.replica(), index);
        let svc = j.service();
        let owner = Owner::Job {
            job,
            index: index as u16,
        };
        let key = self.start_call(ctx, site, owner, parent_deadline);
        if self.calls.contains_key(key)
            && let Some(calls) = self.jobs.get_mut(job).and_then(Job::downstream)
        {
            calls.slots()[self.services[svc].plan().slot(index)] = key;
        }
    }

    /// Downstream call `index` of `job` ended: its stage ends with its last call.
    pub(super) fn child_done(&mut self, ctx: C, job: JobKey, index: u16, outcome: Outcome) {
        let Some(j) = self.jobs.get_mut(job) else {
            return;
        };
        let svc = j.service();
        let slot = self.services[svc].plan().slot(usize::from(index));
        let Some(calls) = self.jobs[job].downstream() else {
            panic!("a downstream call ended for a job that is not calling");
        };
        assert!(calls.pending > 0, "a downstream call ends once");
        calls.slots()[slot] = CallKey::null();
        calls.pending -= 1;
        calls.failed |= outcome != Outcome::Ok;
        if calls.pending > 0 {
            return;
        }
        if calls.failed {
            self.finish_job(ctx, job, Outcome::Fail(Reason::Dependency));
        } else {
            let next = usize::from(calls.stage) + 1;
            self.run_stages(ctx, job, next);
        }
    }
}
