//! How a call ends: an attempt's end (a retry, or the call's end), the call finished with
//! its outcome for its owner, or cancelled because its owner no longer needs it. Both go
//! through [`World::end_call`], which removes the call with what it carries ([`Carries`]).

use super::{Attempt, Call, Carries, Owner};
use crate::figures::Decision;
use crate::world::client::Requester;
use crate::world::follow;
use crate::world::msg::Msg;
use crate::world::outcome::{Outcome, failure_of};
use crate::world::site::{Fell, Side};
use crate::world::traffic::Attrs;
use crate::world::{C, CallKey, World};
use patterns::retry::{GiveUpReason, RetryDecision};
use sim_core::{SimDuration, SimTime};
use slotmap::Key;

impl World {
    /// The current attempt ended with `outcome` (`sent`: it reached the network, so its
    /// inner gates and its replica hear about it); retry or finish the call.
    pub(in crate::world) fn attempt_done(
        &mut self,
        ctx: C,
        key: CallKey,
        outcome: Outcome,
        sent: bool,
        retry_after: Option<SimDuration>,
    ) {
        let now = ctx.now();
        let bucket = self.series_bucket_of(now);
        let call = &mut self.calls[key];
        let site = call.site as usize;
        let replica = match call.attempt {
            Attempt::InFlight { replica, .. } => Some(replica as usize),
            _ => None,
        };
        call.attempt = Attempt::Idle;
        let sp = &mut self.sites[site];
        if sent {
            sp.release(
                Side::Inner,
                now,
                &mut call.permits,
                Some(outcome),
                &mut self.effects.buf,
            );
            self.effects.tag(site as u32, Side::Inner);
            let r = replica.expect("a sent attempt has a replica");
            self.services[sp.target()].observe(now, r, outcome == Outcome::Ok);
            if !self.pools.is_empty() {
                self.checkin(now, site as u32);
            }
        }
        let decision = self.retry_decision(now, key, outcome, retry_after);
        if self.follow.is_some() {
            let followed = match (outcome, &decision) {
                (Outcome::Ok, _) => None,
                (Outcome::Fail(_), None) => Some(Decision::NoPolicy),
                (Outcome::Fail(_), Some(d)) => Some(follow::decision_of(d)),
            };
            self.note_attempt(now, key, outcome, sent, followed);
        }
        let sp = &mut self.sites[site];
        match decision {
            Some(RetryDecision::Retry { after, .. }) => {
                sp.stats().retries += 1;
                sp.tally(bucket).retries += 1;
                ctx.send_self(after, Msg::Retry { call: key });
            }
            Some(RetryDecision::GiveUp { reason: why }) => {
                if why == GiveUpReason::BudgetExhausted {
                    sp.stats().budget_exhausted += 1;
                    sp.tally(bucket).budget_exhausted += 1;
                }
                self.finish_call(ctx, key, outcome, true);
            }
            None => self.finish_call(ctx, key, outcome, true),
        }
    }

    /// What the retry policy of call `key` decides after its attempt ended with a failed
    /// `outcome`; `None` for a success, or without a policy.
    fn retry_decision(
        &mut self,
        now: SimTime,
        key: CallKey,
        outcome: Outcome,
        retry_after: Option<SimDuration>,
    ) -> Option<RetryDecision> {
        let call = &mut self.calls[key];
        let sp = &mut self.sites[call.site as usize];
        let (Some((policy, rng)), Some(request)) = (sp.retry(), call.retry.as_mut()) else {
            return None;
        };
        let Outcome::Fail(reason) = outcome else {
            policy.on_success(now, request);
            return None;
        };
        Some(policy.on_failure(now, request, failure_of(reason, retry_after), rng))
    }

    /// A backoff delay ended.
    pub(in crate::world) fn on_retry(&mut self, ctx: C, key: CallKey) {
        if self.calls.contains_key(key) {
            self.start_attempt(ctx, key);
        }
    }

    /// A call ends with `outcome` (`admitted`: it passed its outer gates, which hear the
    /// outcome); its owner learns it, after the fallback chain had its say.
    pub(in crate::world) fn finish_call(
        &mut self,
        ctx: C,
        key: CallKey,
        outcome: Outcome,
        admitted: bool,
    ) {
        let now = ctx.now();
        let followed = self.followed_call(key);
        // The outer gates hear the outcome before the call's race or gather ends.
        let call = self.calls.get_mut(key).expect("finishing a live call");
        debug_assert!(
            call.attempt == Attempt::Idle,
            "a call finishes with no attempt out"
        );
        let site = call.site as usize;
        if admitted {
            let sp = &mut self.sites[site];
            sp.release(
                Side::Outer,
                now,
                &mut call.permits,
                Some(outcome),
                &mut self.effects.buf,
            );
            self.effects.tag(site as u32, Side::Outer);
        }
        let (owner, slot) = self.end_call(ctx, key, |c| (c.owner, c.carries.take_store()));
        let sp = &mut self.sites[site];
        let fell = match owner {
            Owner::Client { .. } | Owner::Job { .. } => sp.fall_back(now, outcome),
            Owner::Hedge { .. } | Owner::Leaf { .. } | Owner::Store { .. } => {
                Fell::Through(outcome)
            }
        };
        if let Some(call) = followed {
            self.note_finished(now, call, outcome, matches!(fell, Fell::Back));
        }
        let sp = &mut self.sites[site];
        match owner {
            // A racing call's outcome, and its fallback, are its shell's business.
            Owner::Hedge { shell, attempt } => {
                self.race_call_done(ctx, shell, attempt, outcome);
                return;
            }
            Owner::Leaf { shell } => {
                self.leaf_done(ctx, shell, outcome);
                return;
            }
            Owner::Store { .. } => {
                sp.count_outcome(outcome);
                self.store_done(ctx, owner, slot, outcome);
                return;
            }
            Owner::Client { .. } | Owner::Job { .. } => {}
        }
        let outcome = match fell {
            Fell::Through(outcome) => outcome,
            Fell::Back => Outcome::Ok,
        };
        sp.count_outcome(outcome);
        match owner {
            Owner::Client {
                client,
                requester,
                offered_at,
                attrs,
            } => {
                if let Some((id, _)) = followed {
                    let bucket = self.bucket_of(offered_at);
                    match outcome {
                        Outcome::Fail(reason) => self.note_failed(bucket, reason, id),
                        Outcome::Ok => self.note_succeeded(bucket, id, now - offered_at),
                    }
                }
                self.client_done(ctx, client, requester, offered_at, attrs, outcome)
            }
            Owner::Job { job, index } => self.child_done(ctx, job, index, outcome),
            Owner::Hedge { .. } | Owner::Leaf { .. } | Owner::Store { .. } => {
                unreachable!("handled above")
            }
        }
    }

    /// Drops a call whose owner no longer needs it, cancelling its attempt downstream (a call
    /// that already ended is left alone).
    pub(in crate::world) fn cancel_call(&mut self, ctx: C, key: CallKey) {
        let now = ctx.now();
        if !self.calls.contains_key(key) {
            return;
        }
        if let Some(call) = self.followed_call(key) {
            self.note_cancelled(now, call);
        }
        let (site, source, attempt, mut permits, mut retry) = self.end_call(ctx, key, |c| {
            let permits = std::mem::take(&mut c.permits);
            (c.site, c.source, c.attempt, permits, c.retry.take())
        });
        let sp = &mut self.sites[site as usize];
        match attempt {
            Attempt::Idle => {}
            Attempt::Waiting { side, gate } => sp.leave_queue(side, gate, now, key.data().as_ffi()),
            Attempt::Delayed { timer, .. } => {
                ctx.cancel(timer);
            }
            Attempt::InFlight { timer, .. } => {
                if let Some(t) = timer {
                    ctx.cancel(t);
                }
            }
            Attempt::Checkout { timer } => {
                ctx.cancel(timer);
                self.leave_pool(site, key);
            }
        }
        let sp = &mut self.sites[site as usize];
        // Gates not reached hold nothing, so releasing whole lists is always right.
        for side in [Side::Outer, Side::Inner] {
            sp.release(side, now, &mut permits, None, &mut self.effects.buf);
            self.effects.tag(site, side);
        }
        let sp = &mut self.sites[site as usize];
        if let (Some(policy), Some(request)) = (sp.retry_policy(), retry.as_mut()) {
            policy.abandon(now, request);
        }
        if let Attempt::InFlight { job, replica, .. } = attempt {
            if !self.pools.is_empty() {
                self.checkin(now, site);
            }
            let sp = &mut self.sites[site as usize];
            let svc = sp.target();
            self.services[svc].replica(replica as usize).answered();
            self.abandon_job(ctx, svc, source, job);
        }
    }

    /// Removes call `key` with what it carries: the one way a call ends, finished or
    /// cancelled; `keep` first takes what the caller needs of it (a store call's slot is
    /// its owner's to take). Its race or its gather ends with it (racing calls and leaves
    /// still out are cancelled), and a quota whose reply is late or lost goes with it. The
    /// call is dropped in its table's slot, not moved out whole.
    pub(in crate::world) fn end_call<R>(
        &mut self,
        ctx: C,
        key: CallKey,
        keep: impl FnOnce(&mut Call) -> R,
    ) -> R {
        let call = self.calls.get_mut(key).expect("a call ends once");
        let carried = call.carries.heap_bytes() + call.permits.heap_bytes();
        assert!(
            self.carried_bytes >= carried,
            "carried bytes are counted once"
        );
        self.carried_bytes -= carried;
        let kept = keep(call);
        let carries = std::mem::replace(&mut call.carries, Carries::Nothing);
        self.calls.remove(key);
        match carries {
            Carries::Race(race) => self.end_race(ctx, race),
            Carries::Gather(gather) => self.end_gather(ctx, *gather),
            Carries::Nothing | Carries::Store(_) | Carries::Quota(_) => {}
        }
        kept
    }

    /// What a client request's outcome does: counted, and a closed-loop user thinks.
    pub(in crate::world) fn client_done(
        &mut self,
        ctx: C,
        client: u32,
        requester: Requester,
        offered_at: SimTime,
        attrs: Attrs,
        o: Outcome,
    ) {
        let now = ctx.now();
        let latency = now - offered_at;
        let (offered_in, ended_in) = (self.bucket_of(offered_at), self.bucket_of(now));
        let c = &mut self.clients[client as usize];
        c.record_outcome(o, offered_in, ended_in, latency);
        c.record_class_outcome(attrs, o, offered_in, latency);
        if o == Outcome::Ok && self.series_kept {
            crate::world::client::bucket_mut(&mut self.run_buckets, offered_in).record(latency);
        }
        if let Requester::User(user) = requester
            && let Some(think) = self.clients[client as usize].user_done(now)
        {
            ctx.send_self(think, Msg::Think { client, user });
        }
    }
}
