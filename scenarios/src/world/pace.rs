//! Pacing on a service's rate-limit figures: the [`Quota`] a reply carries from a service with
//! an admission rate limiter (what the IETF draft's `RateLimit: r=.., t=..` header says), and
//! the `Pace` gate of a call site that holds calls back while that quota is used up.
//!
//! A reply says `remaining` (requests the service's limiters would still admit now, the least
//! over its `Limiter` layers) and `reset` (how long until the quota is back: when the limiter
//! with the least left admits its next request if it has none left, else when it is full
//! again). After a reply with nothing left, the gate delays every call that reaches it until
//! `now + reset` (unless that is more than `hold_max` away): those calls would have been
//! refused. A call held this way goes on through the rest of the stack when the hold ends,
//! exactly like one a shaping limiter delayed.
//!
//! The quota waits beside the reply packet, carried by the call (with the attempt it answers,
//! [`Carries::Quota`]), and is taken when the reply arrives: a lost reply carries nothing, a
//! call that ends first drops it, and a reply of a service without a limiter costs no bytes
//! on the wire. Only a call site with a `Pace` layer reads a quota, so only its calls carry
//! one.
//!
//! # Decisions
//!
//! A 429 fault refuses at admission, before the priority shedder and the limiters, as a gateway
//! in front of the service would, and a 4xx fault fails after the work, as a handler that
//! rejects a request does; both draw from the service's fault stream only while active, so no
//! other scenario's numbers move. The quota travels in the reply packet, read from the
//! service's admission `Limiter`s by `peek` when the reply leaves (the IETF draft's headers
//! describe the quota at response time); a service without one sends none and pays one
//! emptiness check per reply. A `Pace` gate holds calls with the shaping limiter's `Delay` path
//! and counts its holds apart from `shaped`. An adaptive timeout replaces the call's `timeout`,
//! learns from every answered attempt (timed-out ones at their timeout) and is one `Option` on
//! the call site; the attempt's send time is kept in `Attempt::InFlight`.

use super::call::Carries;
use super::{CallKey, World};
use crate::figures::PaceFigures;
use crate::format::schema::answers::PaceConfig;
use sim_core::{SimDuration, SimTime};

impl World {
    /// The reply to `attempt` of `call` leaves its service with `quota`: the call carries
    /// it until the reply arrives, if its call site has a `Pace` layer to read it (a later
    /// reply's quota replaces an earlier one's).
    pub(super) fn send_quota(&mut self, call: CallKey, attempt: u32, quota: Quota) {
        let Some(c) = self.calls.get_mut(call) else {
            return;
        };
        if !self.sites[c.site as usize].paces() {
            return;
        }
        debug_assert!(
            attempt <= c.attempt_no,
            "a reply answers an attempt that was made"
        );
        if let Carries::Quota(carried) = &mut c.carries {
            **carried = (attempt, quota);
        } else {
            self.carry(call, Carries::Quota(Box::new((attempt, quota))));
        }
    }

    /// The quota the reply to `attempt` of `call` brings, if its service sent one.
    pub(super) fn take_quota(&mut self, call: CallKey, attempt: u32) -> Option<Quota> {
        match self.calls.get(call).map(|c| &c.carries) {
            Some(Carries::Quota(carried)) if carried.0 == attempt => {
                let quota = carried.1;
                self.uncarry(call);
                Some(quota)
            }
            _ => None,
        }
    }
}

/// A service's quota as a reply reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quota {
    /// Requests the service would still admit at the time of the reply.
    pub remaining: u32,
    /// How long until it admits again (with nothing left) or is full again.
    pub reset: SimDuration,
}

/// The `Pace` gate.
#[derive(Debug, Clone)]
pub struct Pace {
    hold_max: SimDuration,
    /// Calls reaching the gate before this wait until then.
    until: SimTime,
    figures: PaceFigures,
}

impl Pace {
    /// The gate of `config` (validated with the scenario).
    pub fn new(config: &PaceConfig) -> Pace {
        Pace {
            hold_max: config.hold_max,
            until: SimTime::ZERO,
            figures: PaceFigures::default(),
        }
    }

    /// How long a call reaching the gate at `now` waits (`None`: it goes on at once); a wait
    /// is counted.
    pub fn hold(&mut self, now: SimTime) -> Option<SimDuration> {
        if now >= self.until {
            return None;
        }
        let wait = self.until - now;
        self.figures.held += 1;
        self.figures.held_ns += wait.as_nanos();
        Some(wait)
    }

    /// Reads the quota of a reply that arrived at `now`.
    pub fn observe(&mut self, now: SimTime, quota: Quota) {
        if quota.remaining > 0 {
            return;
        }
        self.figures.exhausted_replies += 1;
        if quota.reset > self.hold_max {
            self.figures.resets_too_far += 1;
            return;
        }
        self.until = self.until.max(now.saturating_add(quota.reset));
    }

    /// Its figures.
    pub fn figures(&self) -> PaceFigures {
        self.figures
    }
}
