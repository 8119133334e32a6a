//! Capacity events ([`crate::format::schema::capacity`]): stop-the-world pauses, zone failures and liveness
//! probes, and the world's handlers of their events (`Pause` and `ZoneFailure` faults,
//! `LivenessTick`, `LivenessDeadline`).
//!
//! A service that a pause aims at, that has liveness probes, or that spreads over zones in
//! a scenario with a zone failure has a [`Capacity`]; any other has none and pays one
//! `Option` check when a worker looks for a waiting job. Zone failures and liveness restarts
//! take replicas down through [`World::replica_down`] ([`Down::Zone`], [`Down::Liveness`]:
//! out of rotation until their restart), so balancers, health checks and the autoscaler see
//! what they see of any slot out of rotation, and the crash and cold restart are the `Crash`
//! fault's own.
//!
//! A pause pushes back the end of every job working on the replica by the pause's length
//! (the timer is rescheduled), and its workers take nothing from the queue until it ends.
//! Jobs waiting on their downstream calls when a pause starts are answered when those calls
//! return: the pause stops the workers' computation, not the replies already on their way.
//!
//! A liveness probe served by the workers waits for its turn as the last job in the queue
//! at the instant it is sent (its *turn* is the replica's count of jobs that will have left
//! the queue when it is first in line) and is answered by the first free worker after that,
//! instantly; a probe the workers did not answer within `timeout` fails. Each replica slot
//! is probed at a phase of its own (slot `r` of `n` at `period × (r + 1) / n`, then every
//! period), as a kubelet probes each pod from its own start. Nothing here draws a random
//! number.
//!
//! # Decisions
//!
//! A pause stops a replica's workers, not its admission: requests are admitted and queue, and
//! the end of each job working there is pushed back by the pause's length (its `WorkDone` timer
//! rescheduled; `Stage::Working` keeps its `until` for this). A job waiting on downstream calls
//! is not frozen (the replies are handled when they come). Zone failures and liveness restarts
//! go through the replica's one way down and up ([`super::lifecycle`]: a slot out of
//! rotation until its restart) like the `Crash` fault's crash and cold restart, so balancers, health checks and the autoscaler
//! treat them like any slot out of rotation. A probe served by the workers waits its turn first
//! in, first out whatever the queue's discipline (a listen backlog): its turn is the replica's
//! count of jobs that will have left the queue when it is first in line, and the first free
//! worker after that answers it at once; each replica is probed at a phase of its own (slot `r`
//! of `n` at `period × (r + 1) / n`), because probes that all fire at once restart every
//! replica together and hide the spiral a kubelet's staggered probes produce. None of it draws
//! a random number; a service without any of it has no `Capacity` and pays one `Option` check
//! when a worker looks for a waiting job, and a replica pays one check of its pause when a job
//! could start.

use super::lifecycle::{Down, Rotation};
use super::msg::Msg;
use super::{C, World, later};
use crate::figures::CapacityFigures;
use crate::format::schema::capacity::{Liveness, ProbeServer, zone_of};
use crate::format::schema::{FaultKind, Scenario};
use sim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// One probe waiting for its answer.
#[derive(Debug, Clone, Copy)]
struct Probe {
    /// When it fails if not answered.
    deadline: SimTime,
    /// The replica's count of jobs that have left its queue once it is first in line.
    turn: u64,
}

/// A replica's probes.
#[derive(Debug, Default, Clone)]
struct Probes {
    pending: VecDeque<Probe>,
    /// Failures in a row.
    failures: u32,
}

/// A service's capacity events: its zones, its liveness probes and their figures.
#[derive(Debug, Clone)]
pub struct Capacity {
    zones: Option<u32>,
    liveness: Option<Liveness>,
    /// Per replica slot (empty without liveness probes).
    probes: Vec<Probes>,
    bucket: SimDuration,
    figures: CapacityFigures,
}

impl Capacity {
    /// The zone of replica slot `r`, if the service spreads over zones.
    pub fn zone(&self, r: usize) -> Option<u32> {
        self.zones.map(|z| zone_of(r, z))
    }

    /// Its liveness probes, if any.
    pub fn liveness(&self) -> Option<&Liveness> {
        self.liveness.as_ref()
    }

    /// Replica `r` was paused for `extra` more.
    fn paused(&mut self, extra: SimDuration) {
        self.figures.pauses += 1;
        self.figures.paused_ns += extra.as_nanos();
    }

    /// A paused replica crashed: the rest of its pause, `left`, never happens.
    pub fn pause_cut(&mut self, left: SimDuration) {
        self.figures.paused_ns = self.figures.paused_ns.saturating_sub(left.as_nanos());
    }

    /// Replica slot `r` left rotation: its probes start afresh when it is back.
    pub fn forget_probes(&mut self, r: usize) {
        if let Some(p) = self.probes.get_mut(r) {
            *p = Probes::default();
        }
    }

    /// Its figures.
    pub fn figures(&self) -> CapacityFigures {
        self.figures.clone()
    }
}

/// Gives a [`Capacity`] (and, where replicas may go down, replica slots that can leave
/// rotation) to every service of `s` that needs one.
pub fn install(s: &Scenario, services: &mut [super::service::Service]) {
    let zone_failures = s
        .faults
        .iter()
        .any(|f| matches!(f.kind, FaultKind::ZoneFailure { .. }));
    for (svc, (name, config)) in services.iter_mut().zip(&s.services) {
        let paused = s
            .faults
            .iter()
            .any(|f| matches!(&f.kind, FaultKind::Pause { service, .. } if service == name));
        let zoned = config.zones.is_some() && zone_failures;
        if !(paused || zoned || config.liveness.is_some()) {
            continue;
        }
        if zoned || config.liveness.is_some() {
            svc.deployed();
        }
        let slots = svc.replica_count();
        svc.set_capacity(Capacity {
            zones: config.zones,
            liveness: config.liveness.clone(),
            probes: if config.liveness.is_some() {
                vec![Probes::default(); slots]
            } else {
                Vec::new()
            },
            bucket: svc.bucket(),
            figures: CapacityFigures {
                liveness: config.liveness.is_some(),
                ..CapacityFigures::default()
            },
        });
    }
}

impl World {
    /// Pause fault `fault` starts or ends on its replicas.
    pub(super) fn on_pause(&mut self, ctx: C, fault: usize, start: bool) {
        let now = ctx.now();
        let f = &self.faults.faults()[fault];
        let FaultKind::Pause {
            service,
            replicas,
            every,
        } = &f.kind
        else {
            unreachable!("pauses are for pause faults");
        };
        let (duration, every) = (f.duration.expect("validated: a pause lasts"), *every);
        let svc = self.service_index(&service.clone());
        let n = replicas.map_or(self.services[svc].replica_count(), |n| n as usize);
        if !start {
            for r in 0..n {
                if self.services[svc].life_mut().resume(r, now) {
                    self.serve_probes(now, svc, r);
                    self.dequeue(ctx, svc, r);
                }
            }
            return;
        }
        if let Some(p) = every {
            let fault = fault as u32;
            later(ctx, p, Msg::FaultStart { fault });
        }
        let until = now.saturating_add(duration);
        for r in 0..n {
            let life = self.services[svc].life_mut();
            // A replica that is down has nothing to pause.
            if !life.is_up(r) {
                continue;
            }
            let from = life.paused_until(r).map_or(now, |u| u.max(now));
            let extra = until.saturating_duration_since(from);
            life.pause(r, until);
            if extra.is_zero() {
                continue;
            }
            self.services[svc]
                .capacity_mut()
                .expect("a paused service has capacity events")
                .paused(extra);
            self.push_back_work(ctx, svc, r, extra);
        }
    }

    /// The work of every job working at replica `r` of `svc` ends `extra` later.
    fn push_back_work(&mut self, ctx: C, svc: usize, r: usize, extra: SimDuration) {
        let now = ctx.now();
        for (job, j) in self.jobs.iter_mut() {
            if j.service() != svc || j.replica() != r {
                continue;
            }
            if let super::job::Stage::Working { timer, until, .. } = j.stage_mut() {
                ctx.cancel(*timer);
                *until = until.saturating_add(extra);
                *timer = ctx.timer_self(*until - now, Msg::WorkDone { job });
            }
        }
    }

    /// Zone `zone` fails (`start`) or is back.
    pub(super) fn on_zone_failure(&mut self, ctx: C, zone: u32, start: bool) {
        let now = ctx.now();
        for svc in 0..self.services.len() {
            let Some(zones) = self.services[svc].capacity().and_then(|c| c.zones) else {
                continue;
            };
            for r in 0..self.services[svc].replica_count() {
                if zone_of(r, zones) != zone {
                    continue;
                }
                let life = self.services[svc].life();
                if start {
                    if life.in_rotation(r) && life.is_up(r) {
                        self.replica_down(ctx, svc, r, Down::Zone);
                        let c = self.services[svc].capacity_mut().expect("zoned");
                        c.figures.zone_downs += 1;
                    }
                } else if life.rotation(r) == Rotation::Out {
                    // Every slot out with the zone: those it took down, and those down
                    // before whose restart came while it was failing. A slot out after a
                    // liveness restart keeps the restart already on the way.
                    self.restart_later(ctx, svc, r);
                }
            }
            self.services[svc].capacity_change(now);
        }
        for c in 0..self.clients.len() {
            if self.clients[c].zone() == Some(zone) {
                self.refresh_load(ctx, c);
            }
        }
    }

    /// Whether replica `r` of `svc` stands in a zone that is failing now.
    pub(super) fn zone_failed(&self, svc: usize, r: usize) -> bool {
        let Some(zone) = self.services[svc].capacity().and_then(|c| c.zone(r)) else {
            return false;
        };
        self.faults.zone_failing(zone)
    }

    /// Replica `r` of `svc` is probed, if it is up and in rotation.
    pub(super) fn on_liveness_tick(&mut self, ctx: C, svc: usize, r: usize) {
        let now = ctx.now();
        let l = self.services[svc]
            .capacity()
            .and_then(Capacity::liveness)
            .cloned()
            .expect("ticks are for services with liveness probes");
        let (service, replica) = (svc as u32, r as u32);
        later(ctx, l.period, Msg::LivenessTick { service, replica });
        let s = &mut self.services[svc];
        if !s.in_rotation(r) || !s.life().is_up(r) {
            return;
        }
        let replica_ref = s.replica_ref(r);
        let turn = replica_ref.left_queue() + replica_ref.queue_len() as u64;
        let c = s.capacity_mut().expect("probed");
        c.figures.probes += 1;
        c.probes[r].pending.push_back(Probe {
            deadline: now.saturating_add(l.timeout),
            turn,
        });
        self.serve_probes(now, svc, r);
        later(ctx, l.timeout, Msg::LivenessDeadline { service, replica });
    }

    /// Answers the probes of replica `r` of `svc` that can be answered at `now`: all of
    /// them if a dedicated thread serves them and the replica runs; those whose turn has come
    /// while a worker is free if the workers serve them.
    pub(super) fn serve_probes(&mut self, now: SimTime, svc: usize, r: usize) {
        let s = &mut self.services[svc];
        let workers = s.workers();
        let replica = s.replica_ref(r);
        let running = s.life().running(r);
        let free = running && replica.busy() < workers;
        let left = replica.left_queue();
        let Some(c) = s.capacity_mut() else {
            return;
        };
        let Some(served_by) = c.liveness.as_ref().map(|l| l.served_by) else {
            return;
        };
        let p = &mut c.probes[r];
        while let Some(front) = p.pending.front() {
            let answered = match served_by {
                ProbeServer::Dedicated => running,
                ProbeServer::Workers => free && front.turn <= left,
            };
            if !answered || front.deadline < now {
                break;
            }
            p.pending.pop_front();
            p.failures = 0;
        }
    }

    /// Probes of replica `r` of `svc` not answered by their deadline fail; enough failures
    /// in a row restart the replica.
    pub(super) fn on_liveness_deadline(&mut self, ctx: C, svc: usize, r: usize) {
        let now = ctx.now();
        let s = &mut self.services[svc];
        let up = s.life().is_up(r) && s.in_rotation(r);
        let c = s.capacity_mut().expect("probed");
        let threshold = c.liveness.as_ref().expect("probed").failure_threshold;
        let p = &mut c.probes[r];
        // A replica that went down or left rotation (a drain, a deploy) meanwhile is not
        // judged.
        if !up {
            *p = Probes::default();
            return;
        }
        let mut restart = false;
        while p.pending.front().is_some_and(|x| x.deadline <= now) {
            p.pending.pop_front();
            p.failures += 1;
            c.figures.probe_failures += 1;
            if p.failures >= threshold {
                restart = true;
                break;
            }
        }
        if !restart {
            return;
        }
        let bucket = (now.as_nanos() / c.bucket.as_nanos()) as usize;
        c.figures.liveness_restarts += 1;
        if c.figures.restarts_per_bucket.len() <= bucket {
            c.figures.restarts_per_bucket.resize(bucket + 1, 0);
        }
        c.figures.restarts_per_bucket[bucket] += 1;
        self.replica_down(ctx, svc, r, Down::Liveness);
    }
}
