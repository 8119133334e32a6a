//! Calls: a call's gates and retries, its attempts' journey to a replica and back, timeouts,
//! bulkhead waits, outlier detection and cancellation.

use super::*;

impl World {
    pub(super) fn start_call(
        &mut self,
        ctx: C,
        spec: u32,
        owner: Owner,
        parent_deadline: SimTime,
    ) -> CallKey {
        let now = ctx.now();
        let sp = &mut self.specs[spec as usize];
        // A racing call of a hedged call is counted with its shell, not as a call of its own.
        let racing = matches!(owner, Owner::Hedge { .. });
        if !racing {
            sp.stats.calls += 1;
        }
        let hedged = sp.hedger.is_some() && !racing;
        let deadline = sp
            .deadline
            .map_or(SimTime::MAX, |d| now.saturating_add(d))
            .min(parent_deadline);
        let key = self.calls.insert(CallState {
            spec,
            owner,
            deadline,
            attempt: 0,
            in_flight: false,
            job: JobKey::null(),
            replica: 0,
            timer: None,
            source: match owner {
                Owner::Client { client, .. } => client,
                Owner::Job { job, .. } => self.client_count + self.jobs[job].service,
                Owner::Hedge { shell, .. } => self.calls[shell].source,
            },
            retry: None,
            outer: Permits::default(),
            inner: Permits::default(),
            waiting: None,
            hedge: None,
            executions: 0,
        });
        if now >= deadline {
            self.finish_call(ctx, key, Outcome::Fail(Reason::Deadline), false);
            return key;
        }
        if hedged {
            self.start_race(ctx, key);
        } else {
            self.continue_outer(ctx, key, 0);
        }
        key
    }

    /// The hedging policy of a call site and the budget its hedges draw from.
    fn hedging(sp: &mut CallSpec) -> (&mut Hedger, &mut RetryBudget) {
        let hedger = sp.hedger.as_mut().expect("only hedged call sites race");
        let budget = match &mut sp.retry {
            Some(policy) => policy.budget_mut(),
            None => &mut sp.hedge_budget,
        };
        (hedger, budget)
    }

    /// Starts the race of a hedged call: the shell `key` makes no attempt of its own; its
    /// racing calls do, each through the whole stack.
    fn start_race(&mut self, ctx: C, key: CallKey) {
        let now = ctx.now();
        let spec = self.calls[key].spec;
        let safety = self.specs[spec as usize].safety.as_safety();
        let (hedger, budget) = Self::hedging(&mut self.specs[spec as usize]);
        let (request, action) = hedger.begin(now, safety, budget);
        let race = self.hedges.insert(HedgeState {
            request,
            children: [CallKey::null(); HEDGE_CALLS_MAX],
            timer: None,
            last: Reason::Timeout,
        });
        self.calls[key].hedge = Some(race);
        self.apply_hedge(ctx, key, action);
    }

    /// Does what the hedging machine says: send a racing call, (re)set the hedge timer,
    /// declare a winner and cancel the rest, or fail.
    fn apply_hedge(&mut self, ctx: C, shell: CallKey, action: HedgeAction) {
        let Some(race) = self.calls.get(shell).and_then(|c| c.hedge) else {
            return;
        };
        let set_timer = |w: &mut World, ctx: C, at: Option<SimTime>| {
            if let Some(t) = w.hedges[race].timer.take() {
                ctx.cancel(t);
            }
            if let Some(at) = at {
                let me = ctx.me();
                let delay = at.saturating_duration_since(ctx.now());
                w.hedges[race].timer = Some(ctx.timer(me, delay, Msg::HedgeTimer { call: shell }));
            }
        };
        match action {
            HedgeAction::Send { attempt, hedge_at } => {
                set_timer(self, ctx, hedge_at);
                let spec = self.calls[shell].spec;
                if attempt > 0 {
                    self.specs[spec as usize].stats.hedges += 1;
                }
                let deadline = self.calls[shell].deadline;
                let child = self.start_call(ctx, spec, Owner::Hedge { shell, attempt }, deadline);
                if self.calls.contains_key(child)
                    && let Some(h) = self.hedges.get_mut(race)
                    && (attempt as usize) < HEDGE_CALLS_MAX
                {
                    h.children[attempt as usize] = child;
                }
            }
            HedgeAction::Wait { hedge_at } => set_timer(self, ctx, hedge_at),
            HedgeAction::Done { winner, cancel } => {
                for a in cancel {
                    let child = self.hedges[race].children[a as usize];
                    self.cancel_call(ctx, child);
                }
                if winner > 0 {
                    let spec = self.calls[shell].spec;
                    self.specs[spec as usize].stats.hedge_wins += 1;
                }
                self.finish_call(ctx, shell, Outcome::Ok, false);
            }
            HedgeAction::Failed => {
                let last = self.hedges[race].last;
                self.finish_call(ctx, shell, Outcome::Fail(last), false);
            }
            HedgeAction::Ended => {}
        }
    }

    pub(super) fn on_hedge_timer(&mut self, ctx: C, shell: CallKey) {
        let now = ctx.now();
        let Some(call) = self.calls.get(shell) else {
            return;
        };
        let (spec, Some(race)) = (call.spec, call.hedge) else {
            return;
        };
        self.hedges[race].timer = None;
        let (hedger, budget) = Self::hedging(&mut self.specs[spec as usize]);
        let action = self.hedges[race].request.on_timer(now, hedger, budget);
        self.apply_hedge(ctx, shell, action);
    }

    /// One racing call of a hedged call ended.
    fn race_call_done(&mut self, ctx: C, shell: CallKey, attempt: u32, outcome: Outcome) {
        let now = ctx.now();
        let Some(call) = self.calls.get(shell) else {
            return;
        };
        let (spec, Some(race)) = (call.spec, call.hedge) else {
            return;
        };
        let h = &mut self.hedges[race];
        if (attempt as usize) < HEDGE_CALLS_MAX {
            h.children[attempt as usize] = CallKey::null();
        }
        if let Outcome::Fail(r) = outcome {
            h.last = r;
        }
        let (hedger, budget) = Self::hedging(&mut self.specs[spec as usize]);
        let action = self.hedges[race].request.on_response(
            now,
            attempt,
            outcome == Outcome::Ok,
            hedger,
            budget,
        );
        self.apply_hedge(ctx, shell, action);
    }

    /// Passes a call through the gates of one `side` from `from`. A refusal is counted and
    /// the slots it gave back are handed on before the caller fails the call or attempt.
    fn pass_gates(&mut self, now: SimTime, key: CallKey, side: Side, from: usize) -> Acquire {
        let call = &mut self.calls[key];
        let spec = call.spec;
        let sp = &mut self.specs[spec as usize];
        let (gates, permits) = match side {
            Side::Outer => (&mut sp.outer, &mut call.outer),
            Side::Inner => (&mut sp.inner, &mut call.inner),
        };
        let acquired = acquire_from(
            gates,
            from,
            now,
            permits,
            &mut sp.gate_rng,
            key.data().as_ffi(),
            &mut self.wake_buf,
        );
        if let Acquire::Refused(reason) = acquired {
            sp.stats.rejected.add(reason);
            self.tag_wakes(spec, side);
        }
        acquired
    }

    /// Passes a call through its once-per-call gates from `from`, then starts its first
    /// attempt (or makes it wait at a bulkhead, or fails it).
    pub(super) fn continue_outer(&mut self, ctx: C, key: CallKey, from: usize) {
        let now = ctx.now();
        match self.pass_gates(now, key, Side::Outer, from) {
            Acquire::Done => {
                let call = &mut self.calls[key];
                let sp = &mut self.specs[call.spec as usize];
                if let Some(policy) = &mut sp.retry {
                    let deadline = (call.deadline != SimTime::MAX).then_some(call.deadline);
                    let safety = sp.safety.as_safety();
                    call.retry = Some(policy.begin(now, deadline, safety));
                }
                self.start_attempt(ctx, key);
            }
            Acquire::Wait { gate, deadline } => self.wait(ctx, key, Side::Outer, gate, deadline),
            Acquire::Refused(reason) => self.finish_call(ctx, key, Outcome::Fail(reason), false),
        }
    }

    /// Parks a call at a bulkhead until a slot is granted or the wait times out.
    pub(super) fn wait(
        &mut self,
        ctx: C,
        key: CallKey,
        side: Side,
        gate: usize,
        deadline: SimTime,
    ) {
        let call = &mut self.calls[key];
        call.waiting = Some((side, gate));
        let spec = call.spec;
        self.specs[spec as usize].stats.bulkhead_waits += 1;
        let me = ctx.me();
        ctx.send_at(
            me,
            deadline,
            Msg::BulkheadExpire {
                spec,
                inner: side == Side::Inner,
                gate: gate as u8,
            },
        );
    }

    /// Moves the wakes of the last release into the queue of wakes to act on.
    pub(super) fn tag_wakes(&mut self, spec: u32, side: Side) {
        for w in self.wake_buf.drain(..) {
            self.wakes.push((spec, side, w));
        }
    }

    /// Acts on bulkhead wakes: a granted slot resumes its call after that gate, a timed-out
    /// wait fails it. A slot granted to a call that no longer waits is given back.
    pub(super) fn process_wakes(&mut self, ctx: C) {
        let now = ctx.now();
        // Bounded: each round acts on wakes that releases produced, and every wake consumes
        // a waiter, of which there are finitely many.
        while !self.wakes.is_empty() {
            let round = std::mem::take(&mut self.wakes);
            for (spec, side, w) in round {
                let key = CallKey::from(KeyData::from_ffi(w.id));
                let waits_here = self
                    .calls
                    .get(key)
                    .is_some_and(|c| c.spec == spec && c.waiting == Some((side, w.gate)));
                match (waits_here, w.permit) {
                    (true, Some(permit)) => {
                        let call = &mut self.calls[key];
                        call.waiting = None;
                        match side {
                            Side::Outer => {
                                call.outer.grant(w.gate, permit);
                                self.continue_outer(ctx, key, w.gate + 1);
                            }
                            Side::Inner => {
                                call.inner.grant(w.gate, permit);
                                self.continue_inner(ctx, key, w.gate + 1);
                            }
                        }
                    }
                    (true, None) => self.fail_waiting(ctx, key),
                    (false, Some(permit)) => {
                        let mut lone = Permits::default();
                        lone.grant(w.gate, permit);
                        let sp = &mut self.specs[spec as usize];
                        let gates = match side {
                            Side::Outer => &mut sp.outer,
                            Side::Inner => &mut sp.inner,
                        };
                        release_all(gates, now, &mut lone, None, &mut self.wake_buf);
                        self.tag_wakes(spec, side);
                    }
                    (false, None) => {}
                }
            }
        }
    }

    /// A call's wait at a bulkhead timed out: it fails as if the bulkhead were full.
    pub(super) fn fail_waiting(&mut self, ctx: C, key: CallKey) {
        let now = ctx.now();
        let call = &mut self.calls[key];
        let Some((side, _)) = call.waiting.take() else {
            return;
        };
        let spec = call.spec;
        let sp = &mut self.specs[spec as usize];
        sp.stats.rejected.add(Reason::BulkheadFull);
        let (gates, permits) = match side {
            Side::Outer => (&mut sp.outer, &mut call.outer),
            Side::Inner => (&mut sp.inner, &mut call.inner),
        };
        release_all(gates, now, permits, None, &mut self.wake_buf);
        self.tag_wakes(spec, side);
        let failed = Outcome::Fail(Reason::BulkheadFull);
        match side {
            Side::Outer => self.finish_call(ctx, key, failed, false),
            Side::Inner => self.attempt_done(ctx, key, failed, false, None),
        }
    }

    pub(super) fn start_attempt(&mut self, ctx: C, key: CallKey) {
        let call = &mut self.calls[key];
        call.attempt += 1;
        self.specs[call.spec as usize].stats.attempts += 1;
        self.continue_inner(ctx, key, 0);
    }

    /// Passes an attempt through its per-attempt gates from `from`, then sends it (or makes
    /// it wait at a bulkhead, or fails it without touching a replica).
    pub(super) fn continue_inner(&mut self, ctx: C, key: CallKey, from: usize) {
        let now = ctx.now();
        match self.pass_gates(now, key, Side::Inner, from) {
            Acquire::Done => self.send_attempt(ctx, key),
            Acquire::Wait { gate, deadline } => self.wait(ctx, key, Side::Inner, gate, deadline),
            Acquire::Refused(reason) => {
                self.attempt_done(ctx, key, Outcome::Fail(reason), false, None)
            }
        }
    }

    /// Sends an attempt that passed its gates to a replica chosen by the balancer.
    pub(super) fn send_attempt(&mut self, ctx: C, key: CallKey) {
        let now = ctx.now();
        let call = &mut self.calls[key];
        let attempt = call.attempt;
        let deadline = call.deadline;
        let spec = call.spec;
        let sp = &mut self.specs[spec as usize];
        if now >= deadline {
            // A wait for a bulkhead slot outlasted the call's deadline: nothing is sent.
            release_all(
                &mut sp.inner,
                now,
                &mut call.inner,
                None,
                &mut self.wake_buf,
            );
            self.tag_wakes(spec, Side::Inner);
            self.attempt_done(ctx, key, Outcome::Fail(Reason::Deadline), false, None);
            return;
        }
        let attempt_deadline = sp
            .timeout
            .map_or(SimTime::MAX, |t| now.saturating_add(t))
            .min(deadline);
        let svc = sp.target;
        let replica = self.pick_replica(now, svc);
        let call = &mut self.calls[key];
        call.in_flight = true;
        call.replica = replica as u32;
        self.services[svc].replicas[replica].outstanding += 1;
        if attempt_deadline != SimTime::MAX {
            let timer = ctx.timer_self(attempt_deadline - now, Msg::Timeout { call: key, attempt });
            self.calls[key].timer = Some(timer);
        }
        let job = self.jobs.insert(Job {
            service: svc as u32,
            replica: replica as u32,
            call: key,
            attempt,
            deadline: attempt_deadline,
            enqueued: now,
            started: now,
            phase: Phase::Transit,
            timer: None,
            next_call: 0,
            pending: 0,
            failed: false,
            children: [CallKey::null(); CALLS_MAX],
            abandoned: false,
            lead_key: None,
            admitted: None,
            idempotency_key: None,
        });
        self.calls[key].job = job;
        let source = self.calls[key].source;
        let target = self.client_count + svc as u32;
        if !self.transmit(ctx, svc, source, target, Packet::Deliver { job }) {
            self.jobs.remove(job);
        }
    }

    /// Sends `packet` from node `source` to node `target`, through sim-net when the scenario
    /// has a network, else with the service's own latency and network faults. False when it
    /// is lost at once (a message lost later just never arrives).
    pub(super) fn transmit(
        &mut self,
        ctx: C,
        svc: usize,
        source: u32,
        target: u32,
        packet: Packet,
    ) -> bool {
        if !self.nodes.is_empty() {
            let (from, to) = (self.nodes[source as usize], self.nodes[target as usize]);
            let outcome = sim_net::send(ctx, from, to, PACKET_BYTES, packet);
            return matches!(outcome, sim_net::SendOutcome::Scheduled { .. });
        }
        let Some(delay) = self.network(ctx, svc) else {
            return false;
        };
        let msg = match packet {
            Packet::Deliver { job } => Msg::Deliver { job },
            Packet::Reply {
                call,
                attempt,
                outcome,
                retry_after,
            } => Msg::Reply {
                call,
                attempt,
                outcome,
                retry_after,
            },
            Packet::Cancel { job } => Msg::Cancel { job },
        };
        ctx.send_self(delay, msg);
        true
    }

    pub(super) fn on_net(&mut self, ctx: C, delivery: sim_net::Delivery<Packet>) {
        let Some(arrived) = sim_net::receive(ctx, delivery).delivered() else {
            return;
        };
        // A duplicated copy carries a message already acted on; the model's messages are
        // not idempotent operations, so the copy is counted and ignored.
        if arrived.duplicate {
            self.duplicates_ignored += 1;
            return;
        }
        match arrived.payload {
            Packet::Deliver { job } => self.on_deliver(ctx, job),
            Packet::Reply {
                call,
                attempt,
                outcome,
                retry_after,
            } => self.on_reply(ctx, call, attempt, outcome, retry_after),
            Packet::Cancel { job } => self.on_cancel(ctx, job),
        }
    }

    pub(super) fn pick_replica(&mut self, now: SimTime, svc: usize) -> usize {
        let s = &mut self.services[svc];
        let n = s.replicas.len();
        if n == 1 {
            return 0;
        }
        let eligible = |r: &Replica| r.ejected_until <= now && r.healthy;
        let any_eligible = s.replicas.iter().any(eligible);
        let ok = |r: &Replica| !any_eligible || eligible(r);
        match s.config.balancer {
            Balancer::RoundRobin => {
                for _ in 0..n {
                    let i = s.round_robin % n;
                    s.round_robin = (s.round_robin + 1) % n;
                    if ok(&s.replicas[i]) {
                        return i;
                    }
                }
                0
            }
            Balancer::Random => {
                let candidates = s.replicas.iter().filter(|r| ok(r)).count() as u64;
                let k = uniform_below(&mut s.rng_balance, candidates) as usize;
                s.replicas
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| ok(r))
                    .nth(k)
                    .map_or(0, |(i, _)| i)
            }
            Balancer::LeastOutstanding => s
                .replicas
                .iter()
                .enumerate()
                .filter(|(_, r)| ok(r))
                .min_by_key(|(i, r)| (r.outstanding, *i))
                .map_or(0, |(i, _)| i),
            Balancer::PowerOfTwo => {
                let mut pick = || loop {
                    let i = uniform_below(&mut s.rng_balance, n as u64) as usize;
                    if ok(&s.replicas[i]) {
                        break i;
                    }
                };
                let a = pick();
                let b = pick();
                if s.replicas[b].outstanding < s.replicas[a].outstanding {
                    b
                } else {
                    a
                }
            }
        }
    }

    pub(super) fn on_reply(
        &mut self,
        ctx: C,
        key: CallKey,
        attempt: u32,
        outcome: Outcome,
        retry_after: Option<SimDuration>,
    ) {
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        if call.attempt != attempt || !call.in_flight {
            self.specs[call.spec as usize].stats.late_replies += 1;
            return;
        }
        if let Some(t) = call.timer.take() {
            ctx.cancel(t);
        }
        self.attempt_done(ctx, key, outcome, true, retry_after);
    }

    pub(super) fn on_timeout(&mut self, ctx: C, key: CallKey, attempt: u32) {
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        if call.attempt != attempt || !call.in_flight {
            return;
        }
        call.timer = None;
        let job = call.job;
        let spec = call.spec as usize;
        let source = call.source;
        self.specs[spec].stats.timeouts += 1;
        self.abandon_job(ctx, self.specs[spec].target, source, job);
        self.attempt_done(ctx, key, Outcome::Fail(Reason::Timeout), true, None);
    }

    /// The caller (at node `source`) gave up on `job`: mark it, and cancel it if the
    /// service listens.
    pub(super) fn abandon_job(&mut self, ctx: C, svc: usize, source: u32, job: JobKey) {
        if let Some(j) = self.jobs.get_mut(job) {
            j.abandoned = true;
            if self.services[svc].config.on_abandoned == Abandoned::Cancel {
                let target = self.client_count + svc as u32;
                self.transmit(ctx, svc, source, target, Packet::Cancel { job });
            }
        }
    }

    pub(super) fn attempt_done(
        &mut self,
        ctx: C,
        key: CallKey,
        outcome: Outcome,
        sent: bool,
        retry_after: Option<SimDuration>,
    ) {
        let now = ctx.now();
        let call = &mut self.calls[key];
        let spec = call.spec as usize;
        let replica = call.replica as usize;
        call.in_flight = false;
        let sp = &mut self.specs[spec];
        let svc = sp.target;
        if sent {
            release_all(
                &mut sp.inner,
                now,
                &mut call.inner,
                Some(outcome),
                &mut self.wake_buf,
            );
            self.tag_wakes(spec as u32, Side::Inner);
            self.observe_replica(now, svc, replica, outcome);
        }
        let call = &mut self.calls[key];
        let sp = &mut self.specs[spec];
        let (Some(policy), Some(request)) = (&mut sp.retry, &mut call.retry) else {
            self.finish_call(ctx, key, outcome, true);
            return;
        };
        let Outcome::Fail(reason) = outcome else {
            policy.on_success(now, request);
            self.finish_call(ctx, key, outcome, true);
            return;
        };
        match policy.on_failure(now, request, failure_of(reason, retry_after), &mut sp.rng) {
            RetryDecision::Retry { after, .. } => {
                sp.stats.retries += 1;
                ctx.send_self(after, Msg::Retry { call: key });
            }
            RetryDecision::GiveUp { reason: why } => {
                if why == GiveUpReason::BudgetExhausted {
                    sp.stats.budget_exhausted += 1;
                }
                self.finish_call(ctx, key, outcome, true);
            }
        }
    }

    /// Outlier detection: consecutive failures seen by callers eject a replica.
    pub(super) fn observe_replica(
        &mut self,
        now: SimTime,
        svc: usize,
        replica: usize,
        outcome: Outcome,
    ) {
        let s = &mut self.services[svc];
        s.replicas[replica].outstanding -= 1;
        let Some(o) = &s.config.outlier else {
            return;
        };
        if outcome == Outcome::Ok {
            s.replicas[replica].consecutive_failures = 0;
            return;
        }
        let r = &mut s.replicas[replica];
        r.consecutive_failures += 1;
        if r.consecutive_failures < o.consecutive_failures || r.ejected_until > now {
            return;
        }
        let ejected = s.replicas.iter().filter(|r| r.ejected_until > now).count();
        let n = s.replicas.len();
        let allowed = ((n as f64 * o.max_ejection_percent / 100.0) as usize).max(1);
        if ejected < allowed {
            let r = &mut s.replicas[replica];
            r.ejected_until = now + o.ejection;
            r.consecutive_failures = 0;
            s.stats.ejections += 1;
        }
    }

    pub(super) fn on_retry(&mut self, ctx: C, key: CallKey) {
        if self.calls.contains_key(key) {
            self.start_attempt(ctx, key);
        }
    }

    pub(super) fn finish_call(&mut self, ctx: C, key: CallKey, outcome: Outcome, admitted: bool) {
        let now = ctx.now();
        let mut call = self.calls.remove(key).expect("finishing a live call");
        let sp = &mut self.specs[call.spec as usize];
        if admitted {
            release_all(
                &mut sp.outer,
                now,
                &mut call.outer,
                Some(outcome),
                &mut self.wake_buf,
            );
            self.tag_wakes(call.spec, Side::Outer);
        }
        if let Some(race) = call.hedge {
            self.end_race(ctx, race);
        }
        let sp = &mut self.specs[call.spec as usize];
        let racing = matches!(call.owner, Owner::Hedge { .. });
        let outcome = match (&sp.fallback, outcome) {
            // A racing call's failure is its shell's to fall back from.
            (Some(_), Outcome::Ok) if !racing => {
                sp.last_success = Some(now);
                outcome
            }
            (Some(fallback), Outcome::Fail(reason)) if !racing => {
                let primary = match reason {
                    Reason::Timeout | Reason::Deadline => PrimaryFailure::Timeout,
                    Reason::BreakerOpen | Reason::BulkheadFull | Reason::ClientLimited => {
                        PrimaryFailure::Rejected
                    }
                    _ => PrimaryFailure::Error,
                };
                match fallback.decide(now, Err(primary), sp.last_success).served {
                    Served::Cache { .. } => {
                        sp.stats.fallback_cache += 1;
                        Outcome::Ok
                    }
                    Served::Static => {
                        sp.stats.fallback_static += 1;
                        Outcome::Ok
                    }
                    Served::Primary | Served::Nothing => outcome,
                }
            }
            _ => outcome,
        };
        match (outcome, call.owner) {
            // A racing call's outcome is its shell's business.
            (_, Owner::Hedge { .. }) => {}
            (Outcome::Ok, _) => sp.stats.successes += 1,
            (Outcome::Fail(_), _) => sp.stats.failures += 1,
        }
        match call.owner {
            Owner::Client {
                client,
                user,
                offered_at,
            } => self.client_done(ctx, client, user, offered_at, outcome),
            Owner::Job { job, index } => self.child_done(ctx, job, index, outcome),
            Owner::Hedge { shell, attempt } => self.race_call_done(ctx, shell, attempt, outcome),
        }
    }

    /// Ends a race whose shell is gone: its timer stops and racing calls still out are
    /// cancelled.
    fn end_race(&mut self, ctx: C, race: HedgeKey) {
        let Some(h) = self.hedges.remove(race) else {
            return;
        };
        if let Some(t) = h.timer {
            ctx.cancel(t);
        }
        for child in h.children {
            if !child.is_null() {
                self.cancel_call(ctx, child);
            }
        }
    }

    /// Drops a call whose owner no longer needs it, cancelling its attempt downstream.
    pub(super) fn cancel_call(&mut self, ctx: C, key: CallKey) {
        let now = ctx.now();
        let Some(mut call) = self.calls.remove(key) else {
            return;
        };
        if let Some(t) = call.timer {
            ctx.cancel(t);
        }
        if let Some(race) = call.hedge {
            self.end_race(ctx, race);
        }
        let spec = call.spec;
        let sp = &mut self.specs[spec as usize];
        let id = key.data().as_ffi();
        match call.waiting {
            Some((Side::Outer, gate)) => leave_queue(&mut sp.outer, gate, now, id),
            Some((Side::Inner, gate)) => leave_queue(&mut sp.inner, gate, now, id),
            None => {}
        }
        release_all(
            &mut sp.outer,
            now,
            &mut call.outer,
            None,
            &mut self.wake_buf,
        );
        self.tag_wakes(spec, Side::Outer);
        let sp = &mut self.specs[spec as usize];
        if let (Some(policy), Some(request)) = (&mut sp.retry, &mut call.retry) {
            policy.abandon(now, request);
        }
        let svc = sp.target;
        // Gates not reached hold nothing, so releasing the whole list is always right.
        release_all(
            &mut sp.inner,
            now,
            &mut call.inner,
            None,
            &mut self.wake_buf,
        );
        self.tag_wakes(spec, Side::Inner);
        if call.in_flight {
            self.services[svc].replicas[call.replica as usize].outstanding -= 1;
            self.abandon_job(ctx, svc, call.source, call.job);
        }
    }
}
