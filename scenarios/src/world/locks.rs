//! Row locks of a `Locked` store (see [`crate::format::schema::contention::StoreOp::Locked`]), the world's
//! side: a job that has read its row takes the row's lock before its work, or waits for it
//! holding its worker; a lock given back (by [`super::store::StoreState::unlock`], wherever
//! a job ends its work or is removed) passes to the first waiter, whose work starts after
//! the event; a wait that outlasts the store's `wait_timeout` fails with `lock_timeout`.
//!
//! # Decisions
//!
//! A `Locked` store's lock table (in `store.rs`, beside the versions) has an entry only for a
//! row that is held, with its FIFO queue, so it grows with the rows in use. A job draws its
//! work time when it gets its worker, as under optimistic writes (the stream's draws are in the
//! same order), and starts it when it gets the lock; the lock is given back wherever a job's
//! work ends or the job is removed (`end_job`), and the next holder's work starts
//! after the event, like bulkhead wakes. A locked write always commits. The periodic job check
//! asserts that every holder is a live working job and every waiter a live waiting one. A store
//! under `OccUpdate` has no lock table and pays one `Option` check when a job's work starts and
//! ends.

use super::effects::Effect;
use super::job::Stage;
use super::msg::Msg;
use super::outcome::{Outcome, Reason};
use super::store::{Lock, Read};
use super::{C, JobKey, World};
use sim_core::SimDuration;

impl World {
    /// `job`, holding a worker since now, due to work for `work` and having made `read`,
    /// takes its row's lock or waits for it.
    pub(super) fn lock_row(&mut self, ctx: C, job: JobKey, work: SimDuration, read: Read) {
        let now = ctx.now();
        let svc = self.jobs[job].service();
        let store = self.services[svc].store().expect("a locking store");
        let stage = match store.lock(job, read, now) {
            Lock::Held => Stage::Working {
                since: now,
                until: now + work,
                timer: ctx.timer_self(work, Msg::WorkDone { job }),
                read: Some(read),
            },
            // A full queue times the wait out at once.
            Lock::Wait(wait) => Stage::Locking {
                since: now,
                timer: ctx.timer_self(wait, Msg::LockTimeout { job }),
                work,
                read,
            },
            Lock::Full => Stage::Locking {
                since: now,
                timer: ctx.timer_self(SimDuration::ZERO, Msg::LockTimeout { job }),
                work,
                read,
            },
        };
        self.jobs[job].set_stage(stage);
    }

    /// `job` was given its row's lock during the event (an [`Effect::LockGranted`]): its
    /// work starts.
    pub(super) fn lock_granted(&mut self, ctx: C, job: JobKey) {
        // A job removed since its grant gave the lock on as it went.
        let Some(j) = self.jobs.get(job) else {
            return;
        };
        let Stage::Locking {
            since,
            timer,
            work,
            read,
        } = *j.stage()
        else {
            panic!("a lock granted to a job that was not waiting for it");
        };
        ctx.cancel(timer);
        let timer = ctx.timer_self(work, Msg::WorkDone { job });
        let until = ctx.now() + work;
        self.jobs[job].set_stage(Stage::Working {
            since,
            until,
            timer,
            read: Some(read),
        });
    }

    /// A job's wait for its row's lock timed out: it leaves the queue and fails.
    pub(super) fn on_lock_timeout(&mut self, ctx: C, job: JobKey) {
        let Some(j) = self.jobs.get(job) else {
            return;
        };
        if !matches!(j.stage(), Stage::Locking { .. }) {
            return;
        }
        let (svc, read) = (j.service(), j.stage().read());
        let store = self.services[svc].store().expect("a locking store");
        if let Some(next) = store.unlock(job, read, ctx.now(), true) {
            self.effects.push(Effect::LockGranted { job: next });
        }
        self.finish_job(ctx, job, Outcome::Fail(Reason::LockTimeout));
    }

    /// Asserts that no lock leaks: every holder of a row's lock is a live working job and
    /// every waiter a live job waiting for it.
    pub(super) fn check_locks(&self) {
        let jobs = &self.jobs;
        for s in &self.services {
            if let Some(store) = s.store_ref() {
                store.check_locks(|k, holder| {
                    jobs.get(k).is_some_and(|j| match j.stage() {
                        Stage::Working { .. } => holder,
                        Stage::Locking { .. } => !holder,
                        _ => false,
                    })
                });
            }
        }
    }
}
