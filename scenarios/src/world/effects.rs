//! What an event leaves the world to do once it is handled: the [`Effect`]s of bulkhead
//! releases (wakes), of connection pools (opens, evictions, grants, refusals) and of row locks
//! given back (grants), in one queue ([`Effects`]) that one loop drains after every event
//! (`World::handle`, through [`World::apply`]).
//!
//! The order is part of every digest (an effect schedules events, and events at the same
//! instant run in the order they were scheduled), so the queue hands effects out in one
//! fixed order: wakes first, first in first out, until none is left; then pool effects until
//! none is left, while the wakes they cause wait; then wakes again, and so on; lock grants
//! last, once neither wakes nor pool effects are left. Each kind waits in its own lane so
//! that taking the next one costs no search.
//!
//! # Decisions
//!
//! Nothing is acted on in the middle of the code that caused it: a release hands its slot to
//! a waiter only after the event, so a handler never re-enters the call it is working on; a
//! pool decides and records, and the world then schedules what it decided. A scenario without
//! bulkheads, pools or locks pays one emptiness check per event.

use super::call::Attempt;
use super::msg::Msg;
use super::outcome::Reason;
use super::site::Side;
use super::stack::Wake;
use super::{C, CallKey, JobKey, World};
use sim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// One thing to do after an event.
#[derive(Debug, Clone)]
pub enum Effect {
    /// A bulkhead of the `side` gates of call site `site` granted a slot to a waiting call,
    /// or its wait timed out (the wake has no permit).
    Wake { site: u32, side: Side, wake: Wake },
    /// An open of a connection by the pool of `site` ends after `after` (`refused`: with the
    /// target's refusal).
    Open {
        site: u32,
        refused: bool,
        after: SimDuration,
    },
    /// The oldest idle connection of the pool of `site` times out at `at`.
    Evict { site: u32, at: SimTime },
    /// The waiting attempt `attempt` of `call` holds a connection of the pool of `site`.
    Grant {
        site: u32,
        call: CallKey,
        attempt: u32,
    },
    /// The waiting attempt `attempt` of `call` fails: the open made for it was refused.
    Refuse { call: CallKey, attempt: u32 },
    /// `job` was given its row's lock: its work starts.
    LockGranted { job: JobKey },
}

/// The effects waiting to be acted on, in their lanes (see the module docs for the order).
#[derive(Debug, Clone, Default)]
pub struct Effects {
    /// What the last release of a gate list produced, before [`Effects::tag`] says whose
    /// gates they are.
    pub buf: Vec<Wake>,
    wakes: VecDeque<Effect>,
    pools: VecDeque<Effect>,
    grants: VecDeque<Effect>,
    /// Pool effects are being taken, until none is left.
    pools_turn: bool,
}

impl Effects {
    /// Adds `effect` behind the others of its kind.
    pub fn push(&mut self, effect: Effect) {
        let lane = match effect {
            Effect::Wake { .. } => &mut self.wakes,
            Effect::LockGranted { .. } => &mut self.grants,
            Effect::Open { .. }
            | Effect::Evict { .. }
            | Effect::Grant { .. }
            | Effect::Refuse { .. } => &mut self.pools,
        };
        lane.push_back(effect);
    }

    /// Moves the wakes of the last release of call site `site`'s `side` gates to the queue.
    pub fn tag(&mut self, site: u32, side: Side) {
        for wake in self.buf.drain(..) {
            self.wakes.push_back(Effect::Wake { site, side, wake });
        }
    }

    /// The next effect to act on, if any.
    #[inline]
    pub fn pop(&mut self) -> Option<Effect> {
        // Bounded: each turn either takes an effect or switches to a lane with some.
        loop {
            let (current, other) = if self.pools_turn {
                (&mut self.pools, &self.wakes)
            } else {
                (&mut self.wakes, &self.pools)
            };
            if let Some(e) = current.pop_front() {
                return Some(e);
            }
            if other.is_empty() {
                break;
            }
            self.pools_turn = !self.pools_turn;
        }
        self.pools_turn = false;
        self.grants.pop_front()
    }

    /// Whether nothing waits.
    #[inline]
    fn is_empty(&self) -> bool {
        self.wakes.is_empty() && self.pools.is_empty() && self.grants.is_empty()
    }
}

impl World {
    /// Acts on the effects the event left, and on those they cause, until none is left.
    pub(super) fn apply_effects(&mut self, ctx: C) {
        // Most events leave nothing to do: one look at the lanes, not a turn through them.
        if !self.effects.is_empty() {
            while let Some(effect) = self.effects.pop() {
                self.apply(ctx, effect);
            }
        }
        debug_assert!(self.effects.is_empty(), "the queue hands out every effect");
        assert!(self.effects.buf.is_empty(), "every release tags its wakes");
    }

    /// Acts on one effect.
    fn apply(&mut self, ctx: C, effect: Effect) {
        let now = ctx.now();
        match effect {
            Effect::Wake { site, side, wake } => self.wake(ctx, site, side, wake),
            Effect::Open {
                site,
                refused,
                after,
            } => ctx.send_self(after, Msg::PoolOpened { site, refused }),
            Effect::Evict { site, at } => {
                let me = ctx.me();
                ctx.send_at(me, at, Msg::PoolEvict { site });
            }
            // A connection granted to a call that no longer waits is checked back in.
            Effect::Grant {
                site,
                call,
                attempt,
            } => match self.waiting(call, attempt) {
                Some(timer) => {
                    ctx.cancel(timer);
                    self.calls[call].attempt = Attempt::Idle;
                    self.send_attempt(ctx, call, true);
                }
                None => self.checkin(now, site),
            },
            Effect::Refuse { call, attempt } => {
                if let Some(timer) = self.waiting(call, attempt) {
                    ctx.cancel(timer);
                    self.calls[call].attempt = Attempt::Idle;
                    self.fail_unsent(ctx, call, Reason::ConnectionRefused);
                }
            }
            Effect::LockGranted { job } => self.lock_granted(ctx, job),
        }
    }
}
