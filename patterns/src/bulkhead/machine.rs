//! [`Bulkhead`]: the state machine.

use super::config::BulkheadConfig;
use crate::ConfigError;
use sim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// A running call's slot. Not `Clone`: releasing consumes it, so a slot cannot be released
/// twice.
#[derive(Debug, PartialEq, Eq)]
pub struct BulkheadPermit {
    started_at: SimTime,
}

impl BulkheadPermit {
    /// When the call got its slot.
    pub fn started_at(&self) -> SimTime {
        self.started_at
    }

    /// The same slot, for a copy of the bulkhead that granted it (a world cloned mid-run):
    /// each copy releases it to its own bulkhead. Releasing both this and the original to
    /// one bulkhead is the double release the type prevents; hence a named method, not
    /// `Clone`.
    pub fn clone_with_machine(&self) -> BulkheadPermit {
        BulkheadPermit {
            started_at: self.started_at,
        }
    }
}

/// Why a call was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BulkheadRejection {
    /// All slots busy and waiting is not allowed (`max_wait_duration` is zero).
    Full {
        /// Calls running.
        active: u32,
    },
    /// All slots busy and the wait queue is full.
    QueueFull {
        /// Calls waiting.
        waiting: u32,
    },
}

/// The answer to a call.
#[derive(Debug, PartialEq, Eq)]
pub enum BulkheadDecision {
    /// Run now.
    Admit(BulkheadPermit),
    /// Wait: a [`Bulkhead::release`] grants the slot in arrival order, or the wait ends at
    /// `deadline` (the caller calls [`Bulkhead::expire`] then).
    Wait {
        /// When the wait times out.
        deadline: SimTime,
    },
    /// Refused now.
    Reject(BulkheadRejection),
}

/// A waiting call that got a slot.
#[derive(Debug, PartialEq, Eq)]
pub struct Granted<T> {
    /// The caller's id for the call.
    pub id: T,
    /// Its slot.
    pub permit: BulkheadPermit,
    /// How long it waited.
    pub waited: SimDuration,
}

/// Counts for reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BulkheadStats {
    /// Calls running now.
    pub active: u32,
    /// Calls waiting now.
    pub waiting: u32,
    /// Calls admitted so far (at once or after waiting).
    pub admitted: u64,
    /// Calls refused so far.
    pub rejected: u64,
    /// Calls whose wait timed out so far.
    pub timed_out: u64,
}

/// Max concurrent calls, with a bounded wait queue served in arrival order.
///
/// `try_acquire(now, id)` admits, queues or refuses; `release(now, permit)` frees a slot and
/// hands it to the oldest waiter still within its deadline; `expire(now)` removes the waiters
/// whose deadline has passed (the simulation calls it at the deadline it was given);
/// `cancel(now, id)` removes a waiter whose caller gave up.
#[derive(Debug, Clone)]
pub struct Bulkhead<T> {
    config: BulkheadConfig,
    active: u32,
    /// (id, enqueued at, deadline), oldest first; deadlines are in the same order.
    waiters: VecDeque<(T, SimTime, SimTime)>,
    stats: BulkheadStats,
    last: SimTime,
}

impl<T> Bulkhead<T> {
    /// An idle bulkhead; fails if the config does not validate.
    pub fn new(config: &BulkheadConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Bulkhead {
            config: config.clone(),
            active: 0,
            waiters: VecDeque::new(),
            stats: BulkheadStats::default(),
            last: SimTime::ZERO,
        })
    }

    fn clock(&mut self, now: SimTime) -> SimTime {
        self.last = self.last.max(now);
        self.last
    }

    /// Figures for reports.
    pub fn stats(&self) -> BulkheadStats {
        BulkheadStats {
            active: self.active,
            waiting: self.waiters.len() as u32,
            ..self.stats
        }
    }

    fn check_invariants(&self) {
        assert!(
            self.active <= self.config.max_concurrent_calls,
            "bulkhead above max_concurrent_calls"
        );
        assert!(
            self.waiters.len() <= self.config.queue_capacity as usize,
            "bulkhead queue above its capacity"
        );
        // Nobody waits while a slot is free: the slot would have been granted.
        assert!(
            self.waiters.is_empty() || self.active == self.config.max_concurrent_calls,
            "a call waits while a slot is free"
        );
    }

    /// A call `id` arrives at `now`.
    pub fn try_acquire(&mut self, now: SimTime, id: T) -> BulkheadDecision {
        let now = self.clock(now);
        // Waiters past their deadline are not removed here (the caller would not learn of
        // it): the caller removes them with `expire` at the deadline it was given.
        let decision = if self.active < self.config.max_concurrent_calls {
            self.active += 1;
            self.stats.admitted += 1;
            BulkheadDecision::Admit(BulkheadPermit { started_at: now })
        } else if self.config.max_wait_duration.is_zero() {
            self.stats.rejected += 1;
            BulkheadDecision::Reject(BulkheadRejection::Full {
                active: self.active,
            })
        } else if self.waiters.len() >= self.config.queue_capacity as usize {
            self.stats.rejected += 1;
            BulkheadDecision::Reject(BulkheadRejection::QueueFull {
                waiting: self.waiters.len() as u32,
            })
        } else {
            let deadline = now.saturating_add(self.config.max_wait_duration);
            self.waiters.push_back((id, now, deadline));
            BulkheadDecision::Wait { deadline }
        };
        self.check_invariants();
        decision
    }

    /// Remove the waiters whose deadline is at or before `now`; returns them with how long
    /// they waited.
    pub fn expire(&mut self, now: SimTime) -> Vec<(T, SimDuration)> {
        let now = self.clock(now);
        let mut expired = Vec::new();
        while self.waiters.front().is_some_and(|w| w.2 <= now) {
            let (id, since, _) = self.waiters.pop_front().expect("front exists");
            expired.push((id, now.saturating_duration_since(since)));
        }
        self.stats.timed_out += expired.len() as u64;
        expired
    }

    /// A running call ended at `now`: its slot goes to the oldest waiter still in time, if any.
    /// Returns that waiter, and the waiters found timed out on the way.
    pub fn release(
        &mut self,
        now: SimTime,
        permit: BulkheadPermit,
    ) -> (Option<Granted<T>>, Vec<(T, SimDuration)>) {
        let _ = permit;
        let now = self.clock(now);
        assert!(self.active > 0, "released a slot that was not held");
        self.active -= 1;
        let expired = self.expire(now);
        let granted = self.waiters.pop_front().map(|(id, since, _)| {
            self.active += 1;
            self.stats.admitted += 1;
            Granted {
                id,
                permit: BulkheadPermit { started_at: now },
                waited: now.saturating_duration_since(since),
            }
        });
        self.check_invariants();
        (granted, expired)
    }
}

impl<T: PartialEq> Bulkhead<T> {
    /// The caller of waiting call `id` gave up; returns whether it was waiting.
    pub fn cancel(&mut self, now: SimTime, id: &T) -> bool {
        self.clock(now);
        match self.waiters.iter().position(|w| &w.0 == id) {
            Some(i) => {
                self.waiters.remove(i);
                true
            }
            None => false,
        }
    }
}
