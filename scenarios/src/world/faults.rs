//! Faults and controllers: the fault timeline, crashes and cold restarts, the PID shedder's
//! updates and active health checks.

use super::*;

impl World {
    pub(super) fn on_fault(&mut self, ctx: C, fault: usize, start: bool) {
        let now = ctx.now();
        self.fault_active[fault] = start;
        let f = self.faults[fault].clone();
        if start && let Some(d) = f.duration {
            later(
                ctx,
                d,
                Msg::FaultEnd {
                    fault: fault as u32,
                },
            );
        }
        let service_index = |w: &World, name: &str| {
            w.services
                .iter()
                .position(|s| s.name == name)
                .expect("fault targets are checked by validation")
        };
        match &f.kind {
            FaultKind::Crash { service, replicas } => {
                let svc = service_index(self, service);
                let n = replicas.unwrap_or(self.services[svc].replicas.len() as u32);
                for r in 0..n as usize {
                    if start {
                        self.crash(ctx, svc, r);
                    } else {
                        let delay = self.services[svc].config.restart.unwrap_or_default();
                        later(
                            ctx,
                            delay,
                            Msg::Restart {
                                service: svc as u32,
                                replica: r as u32,
                            },
                        );
                    }
                }
            }
            FaultKind::CacheFlush { service } => {
                if start {
                    let svc = service_index(self, service);
                    for r in &mut self.services[svc].replicas {
                        r.cold_since = Some(now);
                    }
                }
            }
            FaultKind::LoadSpike { client, .. } => {
                let c = self
                    .clients
                    .iter()
                    .position(|c| &c.name == client)
                    .expect("fault targets are checked by validation");
                let mut spike = 1.0;
                for (i, g) in self.faults.iter().enumerate() {
                    if let FaultKind::LoadSpike {
                        client: other,
                        factor,
                    } = &g.kind
                        && self.fault_active[i]
                        && other == client
                    {
                        spike *= factor;
                    }
                }
                self.clients[c].spike = spike;
            }
            FaultKind::Slowdown { service, .. }
            | FaultKind::ErrorRate { service, .. }
            | FaultKind::CapacityDrop { service, .. }
            | FaultKind::Latency { service, .. }
            | FaultKind::Loss { service, .. }
            | FaultKind::Partition { service } => {
                let svc = service_index(self, service);
                self.recompute_service_faults(svc);
                for r in 0..self.services[svc].replicas.len() {
                    self.dequeue(ctx, svc, r);
                }
            }
        }
    }

    /// Applies every active fault aimed at `svc` (overlapping faults compose).
    pub(super) fn recompute_service_faults(&mut self, svc: usize) {
        let s = &mut self.services[svc];
        s.slowdown = 1.0;
        s.error_ratio = 0.0;
        s.workers_now = s.config.workers;
        s.extra_latency = None;
        s.loss_ratio = 0.0;
        s.partitioned = false;
        for (f, active) in self.faults.iter().zip(&self.fault_active) {
            if !active {
                continue;
            }
            match &f.kind {
                FaultKind::Slowdown { service, factor } if *service == s.name => {
                    s.slowdown *= factor
                }
                FaultKind::ErrorRate {
                    service,
                    error_ratio,
                } if *service == s.name => {
                    s.error_ratio = 1.0 - (1.0 - s.error_ratio) * (1.0 - error_ratio)
                }
                FaultKind::CapacityDrop { service, workers } if *service == s.name => {
                    s.workers_now = s.workers_now.min(*workers)
                }
                FaultKind::Latency { service, extra } if *service == s.name => {
                    s.extra_latency = Some(compile(extra))
                }
                FaultKind::Loss {
                    service,
                    loss_ratio,
                } if *service == s.name => {
                    s.loss_ratio = 1.0 - (1.0 - s.loss_ratio) * (1.0 - loss_ratio)
                }
                FaultKind::Partition { service } if *service == s.name => s.partitioned = true,
                _ => {}
            }
        }
    }

    pub(super) fn crash(&mut self, ctx: C, svc: usize, r: usize) {
        let now = ctx.now();
        self.services[svc].stats.crashes += 1;
        self.services[svc].replicas[r].up = false;
        let mut lost = std::mem::take(&mut self.scratch);
        lost.clear();
        lost.extend(self.jobs.iter().filter_map(|(k, j)| {
            (j.service as usize == svc && j.replica as usize == r && j.phase != Phase::Transit)
                .then_some(k)
        }));
        for &job in &lost {
            let Some(j) = self.jobs.remove(job) else {
                continue;
            };
            // The store outlives the replica (it is the service's database): the operation
            // did not finish, so a retry may run it.
            if let Some(key) = j.idempotency_key
                && let Some(store) = &mut self.services[svc].idempotency
            {
                store.abort(now, &key);
            }
            if let Some(t) = j.timer {
                ctx.cancel(t);
            }
            for child in j.children {
                if !child.is_null() {
                    self.cancel_call(ctx, child);
                }
            }
            if j.phase == Phase::Queued {
                self.queue_change(now, svc, -1);
            }
            self.release_worker(now, &j);
            // The connection resets: callers learn at once that the attempt failed.
            self.send_reply(ctx, &j, Outcome::Fail(Reason::Unavailable), None);
        }
        let s = &mut self.services[svc];
        s.replicas[r].queue = Waiting::new(&s.config.queue);
        // The replica's flights and admission state died with it (their jobs were lost above);
        // it restarts with fresh ones.
        s.replicas[r].coalescer = coalescer_of(&s.config);
        s.replicas[r].concurrency = concurrency_of(&s.config);
        let jobs = &self.jobs;
        s.waiters.retain(|_, job| jobs.contains_key(*job));
        self.scratch = lost;
    }

    pub(super) fn on_restart(&mut self, ctx: C, svc: usize, r: usize) {
        let now = ctx.now();
        let replica = &mut self.services[svc].replicas[r];
        replica.up = true;
        replica.cold_since = Some(now);
    }

    pub(super) fn on_health_tick(&mut self, ctx: C, svc: usize) {
        let now = ctx.now();
        let s = &mut self.services[svc];
        let h = s
            .config
            .health_check
            .clone()
            .expect("ticks are for services with health checks");
        let capacity = s.config.queue.capacity.map_or(usize::MAX, |c| c as usize);
        for r in &mut s.replicas {
            let waited_too_long = match &r.queue {
                Waiting::Plain(q) => q
                    .iter()
                    .find_map(|k| self.jobs.get(*k))
                    .is_some_and(|j| now - j.enqueued > h.timeout),
                Waiting::CoDel(_) => false,
            };
            let pass = r.up && r.queue.len() < capacity && !waited_too_long;
            if pass == r.healthy {
                r.probe_streak = 0;
                continue;
            }
            r.probe_streak += 1;
            let needed = if r.healthy {
                h.unhealthy_threshold
            } else {
                h.healthy_threshold
            };
            if r.probe_streak >= needed {
                r.healthy = pass;
                r.probe_streak = 0;
                if !pass {
                    s.stats.marked_unhealthy += 1;
                }
            }
        }
        later(
            ctx,
            h.interval,
            Msg::HealthTick {
                service: svc as u32,
            },
        );
    }

    pub(super) fn on_pid_tick(&mut self, ctx: C, svc: usize) {
        let now = ctx.now();
        let s = &mut self.services[svc];
        // The signal: the mean queueing delay of the requests served since the last tick, or
        // the age of the oldest waiting request if that is longer (nothing may have left).
        let oldest = s
            .replicas
            .iter()
            .filter_map(|r| match &r.queue {
                Waiting::Plain(q) => q.iter().find_map(|k| self.jobs.get(*k)),
                Waiting::CoDel(_) => None,
            })
            .map(|j| now - j.enqueued)
            .max()
            .unwrap_or_default();
        let mean = s
            .pid_delay_sum_ns
            .checked_div(s.pid_delay_count)
            .map_or(SimDuration::ZERO, SimDuration::from_nanos);
        s.pid_delay_sum_ns = 0;
        s.pid_delay_count = 0;
        let (pid, interval) = s
            .pid
            .as_mut()
            .expect("ticks are for services with a PID shedder");
        let drop_ratio = pid.update(now, mean.max(oldest).as_millis_f64());
        s.pid_drop_ratio_max = s.pid_drop_ratio_max.max(drop_ratio);
        let interval = *interval;
        later(
            ctx,
            interval,
            Msg::PidTick {
                service: svc as u32,
            },
        );
    }
}
