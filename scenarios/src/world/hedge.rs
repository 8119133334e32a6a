//! Hedged calls: a shell call that its owner sees, racing calls that each go through the
//! whole stack, and the hedging machine that says when to send the next one and who won.

use super::call::{Call, Carries, Owner};
use super::msg::Msg;
use super::outcome::{Outcome, Reason};
use super::{C, CallKey, HedgeKey, World};
use patterns::hedge::{HedgeAction, HedgedRequest};
use sim_core::{SimTime, TimerId};
use slotmap::Key;

/// The most calls one hedged call races (the first and at most ten hedges).
const HEDGE_CALLS_MAX: usize = 11;

/// The race of a hedged call: which racing call is which attempt, and the hedge timer.
#[derive(Debug, Clone)]
pub struct Race {
    request: HedgedRequest,
    /// The racing call of each attempt still running (null once it ended).
    children: [CallKey; HEDGE_CALLS_MAX],
    timer: Option<TimerId>,
    /// Why the last racing call failed, for the shell's failure.
    last: Reason,
}

impl World {
    /// Starts the race of a hedged call: the shell `key` makes no attempt of its own; its
    /// racing calls do.
    pub(super) fn start_race(&mut self, ctx: C, key: CallKey) {
        let now = ctx.now();
        let site = self.calls[key].site as usize;
        let safety = if self.calls[key].attrs.retry {
            self.sites[site].safety().as_safety()
        } else {
            patterns::retry::Safety::Unsafe
        };
        let (hedger, budget) = self.sites[site].hedging();
        let (request, action) = hedger.begin(now, safety, budget);
        let race = self.races.insert(Race {
            request,
            children: [CallKey::null(); HEDGE_CALLS_MAX],
            timer: None,
            last: Reason::Timeout,
        });
        self.carry(key, Carries::Race(race));
        self.apply_hedge(ctx, key, action);
    }

    fn set_hedge_timer(&mut self, ctx: C, race: HedgeKey, shell: CallKey, at: Option<SimTime>) {
        if let Some(t) = self.races[race].timer.take() {
            ctx.cancel(t);
        }
        if let Some(at) = at {
            let delay = at.saturating_duration_since(ctx.now());
            self.races[race].timer = Some(ctx.timer_self(delay, Msg::HedgeTimer { call: shell }));
        }
    }

    /// Does what the hedging machine says: send a racing call, (re)set the hedge timer,
    /// declare a winner and cancel the rest, or fail.
    fn apply_hedge(&mut self, ctx: C, shell: CallKey, action: HedgeAction) {
        let Some(race) = self.calls.get(shell).and_then(Call::race) else {
            return;
        };
        let site = self.calls[shell].site;
        match action {
            HedgeAction::Send { attempt, hedge_at } => {
                self.set_hedge_timer(ctx, race, shell, hedge_at);
                if attempt > 0 {
                    self.sites[site as usize].stats().hedges += 1;
                }
                let deadline = self.calls[shell].deadline;
                let child = self.start_call(ctx, site, Owner::Hedge { shell, attempt }, deadline);
                if self.calls.contains_key(child)
                    && let Some(r) = self.races.get_mut(race)
                    && (attempt as usize) < HEDGE_CALLS_MAX
                {
                    r.children[attempt as usize] = child;
                }
            }
            HedgeAction::Wait { hedge_at } => self.set_hedge_timer(ctx, race, shell, hedge_at),
            HedgeAction::Done { winner, cancel } => {
                for a in cancel {
                    let child = self.races[race].children[a as usize];
                    self.cancel_call(ctx, child);
                }
                if winner > 0 {
                    self.sites[site as usize].stats().hedge_wins += 1;
                }
                self.finish_call(ctx, shell, Outcome::Ok, false);
            }
            HedgeAction::Failed => {
                let last = self.races[race].last;
                self.finish_call(ctx, shell, Outcome::Fail(last), false);
            }
            HedgeAction::Ended => {}
        }
    }

    /// The hedge delay of a race passed.
    pub(super) fn on_hedge_timer(&mut self, ctx: C, shell: CallKey) {
        let Some((site, race)) = self
            .calls
            .get(shell)
            .and_then(|c| Some((c.site, c.race()?)))
        else {
            return;
        };
        self.races[race].timer = None;
        let (hedger, budget) = self.sites[site as usize].hedging();
        let action = self.races[race].request.on_timer(ctx.now(), hedger, budget);
        self.apply_hedge(ctx, shell, action);
    }

    /// One racing call of a hedged call ended.
    pub(super) fn race_call_done(
        &mut self,
        ctx: C,
        shell: CallKey,
        attempt: u32,
        outcome: Outcome,
    ) {
        let Some((site, race)) = self
            .calls
            .get(shell)
            .and_then(|c| Some((c.site, c.race()?)))
        else {
            return;
        };
        let r = &mut self.races[race];
        if (attempt as usize) < HEDGE_CALLS_MAX {
            r.children[attempt as usize] = CallKey::null();
        }
        if let Outcome::Fail(reason) = outcome {
            r.last = reason;
        }
        let (hedger, budget) = self.sites[site as usize].hedging();
        let ok = outcome == Outcome::Ok;
        let action = self.races[race]
            .request
            .on_response(ctx.now(), attempt, ok, hedger, budget);
        self.apply_hedge(ctx, shell, action);
    }

    /// Ends a race whose shell is gone: its timer stops and racing calls still out are
    /// cancelled.
    pub(super) fn end_race(&mut self, ctx: C, race: HedgeKey) {
        let Some(r) = self.races.remove(race) else {
            return;
        };
        if let Some(t) = r.timer {
            ctx.cancel(t);
        }
        for child in r.children {
            if !child.is_null() {
                self.cancel_call(ctx, child);
            }
        }
    }
}
