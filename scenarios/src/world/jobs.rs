//! Jobs: an attempt at its replica — admission, the queue and its discipline, work, the cache,
//! downstream calls, the reply, cancellation.

use super::*;

impl World {
    pub(super) fn on_deliver(&mut self, ctx: C, job: JobKey) {
        let now = ctx.now();
        let Some(j) = self.jobs.get(job) else {
            return;
        };
        let svc = j.service as usize;
        let r = j.replica as usize;
        let s = &mut self.services[svc];
        s.stats.arrivals += 1;
        s.arrival_series.add(now, 1);
        if !s.replicas[r].up {
            self.reply(ctx, job, Outcome::Fail(Reason::Unavailable), None);
            return;
        }
        let one = Cost::new(1).expect("a cost of one is valid");
        // A limiter's refusal says when to come back; other overload refusals send the
        // service's configured Retry-After, if any.
        let mut retry_after = s.config.retry_after;
        let limited = s.limiters.iter_mut().find_map(|l| {
            let d = l.acquire(now, one);
            (!d.allowed()).then_some(d.retry_after)
        });
        let rejected = if let Some(hint) = limited {
            retry_after = hint.or(retry_after);
            Some(Reason::RateLimited)
        } else if s
            .pid
            .as_ref()
            .is_some_and(|(p, _)| p.should_drop(&mut s.rng_admission))
        {
            Some(Reason::Shed)
        } else if let Some(limiter) = &mut s.replicas[r].concurrency {
            // Last, so that a request refused above holds no slot.
            match limiter.try_acquire(now) {
                Ok(token) => {
                    self.jobs[job].admitted = Some(token);
                    None
                }
                Err(_) => Some(Reason::ConcurrencyLimited),
            }
        } else {
            None
        };
        if let Some(reason) = rejected {
            self.reply(ctx, job, Outcome::Fail(reason), retry_after);
            return;
        }
        let replica = &mut s.replicas[r];
        if replica.busy < s.workers_now && replica.queue.len() == 0 {
            s.wait.record(SimDuration::ZERO);
            self.start_work(ctx, job);
            return;
        }
        let accepted = match &mut replica.queue {
            Waiting::Plain(q) => {
                let room = s.config.queue.capacity.is_none_or(|c| (q.len() as u32) < c);
                if room {
                    q.push_back(job);
                }
                room
            }
            Waiting::CoDel(q) => q.enqueue(now, job).is_ok(),
        };
        if !accepted {
            let hint = self.services[svc].config.retry_after;
            self.reply(ctx, job, Outcome::Fail(Reason::QueueFull), hint);
            return;
        }
        let depth = replica.queue.len() as u64;
        s.stats.queue_depth_max = s.stats.queue_depth_max.max(depth);
        s.stats.queued += 1;
        let j = &mut self.jobs[job];
        j.phase = Phase::Queued;
        j.enqueued = now;
        self.queue_change(now, svc, 1);
    }

    /// Starts work on `job`, or drops it if it expired and the service drops expired work.
    pub(super) fn start_work(&mut self, ctx: C, job: JobKey) -> bool {
        let now = ctx.now();
        let j = &mut self.jobs[job];
        let svc = j.service as usize;
        let r = j.replica as usize;
        let s = &mut self.services[svc];
        if s.config.on_abandoned == Abandoned::DropExpired && now >= j.deadline {
            s.stats.dropped_expired += 1;
            self.take_job(now, job, Some(Outcome::Fail(Reason::Deadline)));
            return false;
        }
        // The operation's identity: a racing call of a hedged call is its shell's operation.
        let mut op = j.call;
        if let Some(Owner::Hedge { shell, .. }) = self.calls.get(op).map(|c| c.owner) {
            op = shell;
        }
        let keyed = self
            .calls
            .get(op)
            .is_some_and(|c| self.specs[c.spec as usize].safety == CallSafety::IdempotencyKey);
        if keyed && let Some(store) = &mut s.idempotency {
            let key = op.data().as_ffi();
            match store.begin(now, &key, 0) {
                Begin::Execute => j.idempotency_key = Some(key),
                Begin::Replay { .. } => {
                    s.stats.replayed += 1;
                    self.reply(ctx, job, Outcome::Ok, None);
                    return false;
                }
                Begin::Conflict { .. } | Begin::Wait { .. } | Begin::FingerprintMismatch { .. } => {
                    self.reply(ctx, job, Outcome::Fail(Reason::Conflict), None);
                    return false;
                }
                Begin::Full => {
                    let hint = s.config.retry_after;
                    self.reply(ctx, job, Outcome::Fail(Reason::Shed), hint);
                    return false;
                }
            }
        }
        let j = &mut self.jobs[job];
        let s = &mut self.services[svc];
        if let Some(c) = self.calls.get_mut(op) {
            c.executions += 1;
            if c.executions > 1 && j.idempotency_key.is_none() {
                s.stats.duplicate_executions += 1;
            }
        }
        let replica = &mut s.replicas[r];
        replica.busy += 1;
        let in_flight = f64::from(replica.busy) + replica.queue.len() as f64;
        let factor = s.slowdown * (1.0 + s.config.work_per_in_flight * in_flight);
        let work = s.work.sample(&mut s.rng_work);
        // The common case (no slowdown, no growth with load) skips the float round trip.
        // Scaled work is capped like any sample, so `now + work` stays representable.
        let work = if factor == 1.0 {
            work
        } else {
            work.mul_f64(factor).min(SAMPLE_MAX)
        };
        j.phase = Phase::Working;
        j.started = now;
        j.timer = Some(ctx.timer_self(work, Msg::WorkDone { job }));
        self.busy_change(now, svc, 1);
        true
    }

    /// Lets free workers of a replica take waiting jobs.
    pub(super) fn dequeue(&mut self, ctx: C, svc: usize, r: usize) {
        let now = ctx.now();
        loop {
            let s = &mut self.services[svc];
            let replica = &mut s.replicas[r];
            if replica.busy >= s.workers_now || !replica.up {
                return;
            }
            let mut shed = std::mem::take(&mut self.scratch);
            shed.clear();
            let next = match &mut replica.queue {
                Waiting::Plain(q) => {
                    let newest_first = match &s.config.queue.discipline {
                        Discipline::Lifo => true,
                        Discipline::AdaptiveLifo { threshold } => q.front().is_some_and(|f| {
                            self.jobs
                                .get(*f)
                                .is_some_and(|j| now - j.enqueued > *threshold)
                        }),
                        _ => false,
                    };
                    if newest_first {
                        q.pop_back()
                    } else {
                        q.pop_front()
                    }
                }
                Waiting::CoDel(q) => {
                    let out = q.dequeue(now);
                    shed.extend(out.dropped.into_iter().map(|(job, _)| job));
                    out.delivered.map(|(job, _)| job)
                }
            };
            for &job in &shed {
                if self.jobs.contains_key(job) {
                    self.queue_change(now, svc, -1);
                    let hint = self.services[svc].config.retry_after;
                    self.reply(ctx, job, Outcome::Fail(Reason::Shed), hint);
                }
            }
            self.scratch = shed;
            let Some(job) = next else {
                return;
            };
            // A job cancelled while it waited was already taken off the gauge.
            let Some(j) = self.jobs.get(job) else {
                continue;
            };
            let sojourn = now - j.enqueued;
            self.queue_change(now, svc, -1);
            let s = &mut self.services[svc];
            s.wait.record(sojourn);
            if s.pid.is_some() {
                s.pid_delay_sum_ns += sojourn.as_nanos();
                s.pid_delay_count += 1;
            }
            self.start_work(ctx, job);
        }
    }

    pub(super) fn on_work_done(&mut self, ctx: C, job: JobKey) {
        let now = ctx.now();
        let Some(j) = self.jobs.get_mut(job) else {
            return;
        };
        j.timer = None;
        let svc = j.service as usize;
        let r = j.replica as usize;
        let s = &mut self.services[svc];
        if s.error_ratio > 0.0 && bernoulli(&mut s.rng_fault, s.error_ratio) {
            self.finish_job(ctx, job, Outcome::Fail(Reason::Error));
            return;
        }
        if let Some(cache) = &s.config.cache {
            let warm = match s.replicas[r].cold_since {
                Some(cold) if !cache.warmup.is_zero() => {
                    let since = now.saturating_duration_since(cold);
                    (since.as_secs_f64() / cache.warmup.as_secs_f64()).min(1.0)
                }
                _ => 1.0,
            };
            if bernoulli(&mut s.rng_fault, cache.hit_ratio * warm) {
                s.stats.cache_hits += 1;
                self.finish_job(ctx, job, Outcome::Ok);
                return;
            }
            if let Some(coalescer) = &mut s.replicas[r].coalescer {
                let key = uniform_below(&mut s.rng_fault, u64::from(cache.keys)) as u32;
                match coalescer.join(now, &key) {
                    Join::Lead => self.jobs[job].lead_key = Some(key),
                    Join::Follow { waiter, .. } => {
                        s.stats.coalesced += 1;
                        s.waiters.insert((r as u32, waiter.0), job);
                        self.jobs[job].phase = Phase::Following;
                        return;
                    }
                    // Too many flights or followers: fetch uncoalesced.
                    Join::Reject { .. } => {}
                }
            }
        }
        let n = s.config.calls.len();
        if n == 0 {
            self.finish_job(ctx, job, Outcome::Ok);
            return;
        }
        let j = &mut self.jobs[job];
        j.phase = Phase::Calling;
        match s.config.call_mode {
            CallMode::Sequential => {
                j.pending = 1;
                self.start_child(ctx, job, 0);
            }
            CallMode::FanOut => {
                j.pending = n as u8;
                for i in 0..n {
                    if !self.jobs.contains_key(job) {
                        break;
                    }
                    self.start_child(ctx, job, i);
                }
            }
            CallMode::Pick => {
                let weights = s.config.calls.iter().map(|c| c.weight);
                let total: f64 = weights.clone().sum();
                let mut u = unit_f64(&mut s.rng_route) * total;
                let mut pick = n - 1;
                for (i, w) in weights.enumerate() {
                    if u < w {
                        pick = i;
                        break;
                    }
                    u -= w;
                }
                j.pending = 1;
                // The request makes only this call: nothing follows it.
                self.start_child(ctx, job, pick);
                if let Some(j) = self.jobs.get_mut(job) {
                    j.next_call = n as u8;
                }
            }
        }
    }

    pub(super) fn start_child(&mut self, ctx: C, job: JobKey, index: usize) {
        let j = &mut self.jobs[job];
        j.next_call = index as u8 + 1;
        let svc = j.service as usize;
        let s = &self.services[svc];
        // A deadline-aware service passes its caller's deadline down; a naive one does not.
        let parent_deadline = if s.config.on_abandoned == Abandoned::Work {
            SimTime::MAX
        } else {
            j.deadline
        };
        let spec = s.calls[j.replica as usize][index];
        let key = self.start_call(
            ctx,
            spec,
            Owner::Job {
                job,
                index: index as u8,
            },
            parent_deadline,
        );
        if self.calls.contains_key(key)
            && let Some(j) = self.jobs.get_mut(job)
        {
            j.children[index] = key;
        }
    }

    pub(super) fn child_done(&mut self, ctx: C, job: JobKey, index: u8, outcome: Outcome) {
        let Some(j) = self.jobs.get_mut(job) else {
            return;
        };
        j.children[index as usize] = CallKey::null();
        j.pending -= 1;
        if outcome != Outcome::Ok {
            j.failed = true;
        }
        let svc = j.service as usize;
        let n = self.services[svc].config.calls.len();
        match self.services[svc].config.call_mode {
            CallMode::Sequential => {
                if j.failed {
                    self.finish_job(ctx, job, Outcome::Fail(Reason::Dependency));
                } else if (j.next_call as usize) < n {
                    j.pending = 1;
                    let next = j.next_call as usize;
                    self.start_child(ctx, job, next);
                } else {
                    self.finish_job(ctx, job, Outcome::Ok);
                }
            }
            CallMode::Pick => {
                let o = if j.failed {
                    Outcome::Fail(Reason::Dependency)
                } else {
                    Outcome::Ok
                };
                self.finish_job(ctx, job, o);
            }
            CallMode::FanOut => {
                if j.pending == 0 {
                    let o = if j.failed {
                        Outcome::Fail(Reason::Dependency)
                    } else {
                        Outcome::Ok
                    };
                    self.finish_job(ctx, job, o);
                }
            }
        }
    }

    /// Whether no one waits for `j` any more: its caller gave up, or its caller is itself a
    /// job no one waits for (a db call made for a request whose user left is wasted too).
    pub(super) fn nobody_waits(&self, j: &Job) -> bool {
        let mut j = j;
        // The call graph is acyclic (validated), so the walk ends at a client.
        loop {
            if j.abandoned {
                return true;
            }
            let mut owner = self.calls.get(j.call).map(|c| c.owner);
            // A racing call answers to its shell, whose owner is the one waiting.
            if let Some(Owner::Hedge { shell, .. }) = owner {
                owner = self.calls.get(shell).map(|c| c.owner);
            }
            match owner {
                None | Some(Owner::Hedge { .. }) => return true,
                Some(Owner::Client { .. }) => return false,
                Some(Owner::Job { job, .. }) => match self.jobs.get(job) {
                    None => return true,
                    Some(parent) => j = parent,
                },
            }
        }
    }

    /// Releases the worker `job` holds (if any), accounting wasted work.
    pub(super) fn release_worker(&mut self, now: SimTime, j: &Job) -> bool {
        if !matches!(j.phase, Phase::Working | Phase::Calling | Phase::Following) {
            return false;
        }
        let wasted = self.nobody_waits(j);
        let svc = j.service as usize;
        let s = &mut self.services[svc];
        s.replicas[j.replica as usize].busy -= 1;
        if wasted {
            s.stats.wasted_jobs += 1;
            s.stats.wasted_ns += (now - j.started).as_nanos();
        }
        self.busy_change(now, svc, -1);
        true
    }

    pub(super) fn finish_job(&mut self, ctx: C, job: JobKey, outcome: Outcome) {
        let now = ctx.now();
        let j = &self.jobs[job];
        let (svc, r) = (j.service as usize, j.replica as usize);
        let j = self.take_job(now, job, Some(outcome)).expect("live job");
        let freed = self.release_worker(now, &j);
        self.send_reply(ctx, &j, outcome, None);
        self.complete_flight(ctx, &j, outcome);
        if freed {
            self.dequeue(ctx, svc, r);
        }
    }

    /// Removes a job, handing its concurrency slot back with its outcome (`None`: cancelled,
    /// no sample).
    pub(super) fn take_job(
        &mut self,
        now: SimTime,
        job: JobKey,
        outcome: Option<Outcome>,
    ) -> Option<Job> {
        let mut j = self.jobs.remove(job)?;
        if let Some(key) = j.idempotency_key.take()
            && let Some(store) = &mut self.services[j.service as usize].idempotency
        {
            // A success is stored for replay; anything else lets a retry run it again.
            if outcome == Some(Outcome::Ok) {
                store.complete(now, &key, ());
            } else {
                store.abort(now, &key);
            }
        }
        if let Some(token) = j.admitted.take() {
            let s = &mut self.services[j.service as usize];
            let limiter = s.replicas[j.replica as usize]
                .concurrency
                .as_mut()
                .expect("a token comes from the replica's limiter");
            match outcome {
                Some(Outcome::Ok) => limiter.on_success(now, token, &mut s.rng_admission),
                Some(Outcome::Fail(_)) => limiter.on_dropped(now, token, &mut s.rng_admission),
                None => limiter.on_ignored(now, token),
            }
        }
        Some(j)
    }

    /// A job that led a coalesced cache miss is gone: its followers get its outcome.
    pub(super) fn complete_flight(&mut self, ctx: C, j: &Job, outcome: Outcome) {
        let Some(key) = j.lead_key else {
            return;
        };
        let (svc, r) = (j.service as usize, j.replica as usize);
        let s = &mut self.services[svc];
        let Some(coalescer) = &mut s.replicas[r].coalescer else {
            return;
        };
        let waiters = coalescer.complete(ctx.now(), &key);
        for waiter in waiters {
            let follower = self.services[svc].waiters.remove(&(r as u32, waiter.0));
            if let Some(follower) = follower
                && self.jobs.contains_key(follower)
            {
                self.finish_job(ctx, follower, outcome);
            }
        }
    }

    /// Answers a job that never reached a worker (rejected, shed, replica down).
    pub(super) fn reply(
        &mut self,
        ctx: C,
        job: JobKey,
        outcome: Outcome,
        retry_after: Option<SimDuration>,
    ) {
        let j = self
            .take_job(ctx.now(), job, Some(outcome))
            .expect("live job");
        self.send_reply(ctx, &j, outcome, retry_after);
    }

    pub(super) fn send_reply(
        &mut self,
        ctx: C,
        j: &Job,
        outcome: Outcome,
        retry_after: Option<SimDuration>,
    ) {
        let svc = j.service as usize;
        let s = &mut self.services[svc];
        match outcome {
            Outcome::Ok => {
                s.stats.ok += 1;
                s.ok_series.add(ctx.now(), 1);
            }
            Outcome::Fail(r) => s.stats.failed.add(r),
        }
        // The caller's node: a caller that no longer exists gets nothing.
        let Some(source) = self.calls.get(j.call).map(|c| c.source) else {
            return;
        };
        let packet = Packet::Reply {
            call: j.call,
            attempt: j.attempt,
            outcome,
            retry_after,
        };
        self.transmit(ctx, svc, self.client_count + svc as u32, source, packet);
    }

    pub(super) fn on_cancel(&mut self, ctx: C, job: JobKey) {
        let now = ctx.now();
        let Some(j) = self.take_job(now, job, None) else {
            return;
        };
        let (svc, r) = (j.service as usize, j.replica as usize);
        self.services[svc].stats.cancelled += 1;
        match j.phase {
            Phase::Transit => {}
            Phase::Queued => {
                // The entry stays in the queue and is skipped when it reaches the front.
                self.queue_change(now, svc, -1);
            }
            Phase::Working | Phase::Calling | Phase::Following => {
                if let Some(t) = j.timer {
                    ctx.cancel(t);
                }
                for child in j.children {
                    if !child.is_null() {
                        self.cancel_call(ctx, child);
                    }
                }
                self.release_worker(now, &j);
                // Requests waiting on this one's fetch learn that it will not come.
                self.complete_flight(ctx, &j, Outcome::Fail(Reason::Dependency));
                self.dequeue(ctx, svc, r);
            }
        }
    }
}
