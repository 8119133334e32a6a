//! The fault timeline and the controllers that run on ticks: faults starting and ending,
//! what each does when it does (a crash takes replicas down through
//! [`World::replica_down`], its end restarts them), PID shedder updates and active health
//! checks; and what the active faults do to one service ([`ServiceFaults`]).
//!
//! Network faults (`Latency`, `Loss`, `Partition`) are sim-net's, installed when the network
//! is built ([`super::network`]); their start and end events here only mark the timeline
//! for traces.

use super::lifecycle::Down;
use super::msg::Msg;
use super::{C, World, later};
use crate::format::schema::answers::RetryAfter;
use crate::format::schema::{Fault, FaultKind, FaultTarget};
use sim_core::SimDuration;

/// The scenario's faults and which are active.
#[derive(Debug, Clone)]
pub struct Timeline {
    faults: Vec<Fault>,
    active: Vec<bool>,
}

impl Timeline {
    /// The timeline of `faults`, none active.
    pub fn new(faults: &[Fault]) -> Timeline {
        Timeline {
            faults: faults.to_vec(),
            active: vec![false; faults.len()],
        }
    }

    /// Every fault, in file order.
    pub fn faults(&self) -> &[Fault] {
        &self.faults
    }

    /// Whether a `ZoneFailure` of `zone` is under way.
    pub fn zone_failing(&self, zone: u32) -> bool {
        self.active_kinds()
            .any(|k| k.target() == FaultTarget::Zone(zone))
    }

    /// Whether an active `Crash` fault holds replica `r` of the service named `service`
    /// down.
    pub fn crash_holds(&self, service: &str, r: usize) -> bool {
        self.active_kinds().any(|k| {
            matches!(k, FaultKind::Crash { service: s, replicas }
                if s == service && replicas.is_none_or(|n| r < n as usize))
        })
    }

    /// The kinds of the active faults, in file order.
    fn active_kinds(&self) -> impl Iterator<Item = &FaultKind> + '_ {
        self.faults
            .iter()
            .zip(&self.active)
            .filter(|(_, a)| **a)
            .map(|(f, _)| &f.kind)
    }
}

/// What the active faults do to a service (overlapping faults compose).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServiceFaults {
    /// The factor of its work time.
    pub slowdown: f64,
    /// The share of requests failed with an error after their work.
    pub error_ratio: f64,
    /// Its workers per replica.
    pub workers: u32,
    /// The share of requests failed with a client error (4xx) after their work.
    pub client_error_ratio: f64,
    /// The share of arrivals refused with 429, and the `Retry-After` sent.
    pub too_many: Option<(f64, RetryAfter)>,
}

impl ServiceFaults {
    /// No fault, `workers` workers per replica.
    pub fn none(workers: u32) -> ServiceFaults {
        ServiceFaults {
            slowdown: 1.0,
            error_ratio: 0.0,
            workers,
            client_error_ratio: 0.0,
            too_many: None,
        }
    }

    /// What the `active` faults aimed at service `name` (of `workers` workers per replica)
    /// do to it. Network faults are sim-net's.
    pub fn of<'a>(
        name: &str,
        workers: u32,
        active: impl Iterator<Item = &'a FaultKind>,
    ) -> ServiceFaults {
        let mut f = ServiceFaults::none(workers);
        for kind in active {
            match kind {
                FaultKind::Slowdown { service, factor } if service == name => f.slowdown *= factor,
                FaultKind::ErrorRate {
                    service,
                    error_ratio,
                } if service == name => {
                    f.error_ratio = 1.0 - (1.0 - f.error_ratio) * (1.0 - error_ratio)
                }
                FaultKind::CapacityDrop { service, workers } if service == name => {
                    f.workers = f.workers.min(*workers)
                }
                FaultKind::ClientErrorRate {
                    service,
                    error_ratio,
                } if service == name => {
                    f.client_error_ratio = 1.0 - (1.0 - f.client_error_ratio) * (1.0 - error_ratio)
                }
                // Overlapping 429 faults refuse independently; the later one's Retry-After
                // is sent.
                FaultKind::TooManyRequests {
                    service,
                    refused_ratio,
                    retry_after,
                } if service == name => {
                    let before = f.too_many.map_or(0.0, |(r, _)| r);
                    let ratio = 1.0 - (1.0 - before) * (1.0 - refused_ratio);
                    f.too_many = Some((ratio, *retry_after));
                }
                _ => {}
            }
        }
        f
    }
}

impl World {
    /// Fault `fault` starts (`start`) or ends.
    pub(super) fn on_fault(&mut self, ctx: C, fault: usize, start: bool) {
        let now = ctx.now();
        self.faults.active[fault] = start;
        let f = self.faults.faults[fault].clone();
        if start && let Some(d) = f.duration {
            let fault = fault as u32;
            later(ctx, d, Msg::FaultEnd { fault });
        }
        match &f.kind {
            FaultKind::Crash { service, replicas } => {
                let svc = self.service_index(service);
                let n = replicas.map_or(self.services[svc].replica_count(), |n| n as usize);
                for r in 0..n {
                    // A slot out of rotation (parked, starting, draining) is not crashed
                    // and not restarted by the fault.
                    if !self.services[svc].in_rotation(r) {
                        continue;
                    }
                    if start {
                        self.replica_down(ctx, svc, r, Down::Crash);
                    } else if !self.faults.crash_holds(service, r) {
                        // Another crash fault that holds it still down restarts it when
                        // it ends.
                        self.restart_later(ctx, svc, r);
                    }
                }
            }
            FaultKind::CacheFlush { service } if start => {
                let svc = self.service_index(service);
                for r in 0..self.services[svc].replica_count() {
                    self.services[svc].replica(r).flush_cache(now);
                }
            }
            FaultKind::LoadSpike { client, .. } => {
                let c = self.client_index(client);
                self.refresh_load(ctx, c);
            }
            FaultKind::Slowdown { service, .. }
            | FaultKind::ErrorRate { service, .. }
            | FaultKind::CapacityDrop { service, .. }
            | FaultKind::ClientErrorRate { service, .. }
            | FaultKind::TooManyRequests { service, .. } => {
                let svc = self.service_index(service);
                self.services[svc].apply_faults(self.faults.active_kinds());
                self.services[svc].capacity_change(now);
                for r in 0..self.services[svc].replica_count() {
                    self.dequeue(ctx, svc, r);
                }
            }
            FaultKind::Poison { service, .. } => {
                let svc = self.service_index(service);
                self.services[svc].apply_poison(self.faults.active_kinds());
            }
            FaultKind::Deploy { .. } if start => {
                self.on_deploy_batch(ctx, fault);
            }
            FaultKind::Pause { .. } => self.on_pause(ctx, fault, start),
            FaultKind::ZoneFailure { zone } => self.on_zone_failure(ctx, *zone, start),
            FaultKind::CacheFlush { .. }
            | FaultKind::Deploy { .. }
            | FaultKind::Latency { .. }
            | FaultKind::Loss { .. }
            | FaultKind::Partition { .. } => {}
        }
    }

    /// Client `c`'s load follows its active load spikes, and stops while its zone fails
    /// (its closed-loop users wait for the zone to come back).
    pub(super) fn refresh_load(&mut self, ctx: C, c: usize) {
        let name = self.clients[c].name();
        let mut spike: f64 = self
            .faults
            .active_kinds()
            .filter_map(|k| match k {
                FaultKind::LoadSpike { client, factor } if client == name => Some(*factor),
                _ => None,
            })
            .product();
        let down = self.clients[c]
            .zone()
            .is_some_and(|z| self.faults.zone_failing(z));
        if down {
            spike = 0.0;
        }
        self.clients[c].set_spike(spike);
        for user in self.clients[c].set_zone_down(down) {
            let (client, user) = (c as u32, user);
            ctx.send_self(SimDuration::ZERO, Msg::Think { client, user });
        }
    }

    pub(super) fn service_index(&self, name: &str) -> usize {
        self.services
            .iter()
            .position(|s| s.name() == name)
            .expect("fault targets are checked by validation")
    }

    fn client_index(&self, name: &str) -> usize {
        self.clients
            .iter()
            .position(|c| c.name() == name)
            .expect("fault targets are checked by validation")
    }

    /// Active health checks probe a service's replicas.
    pub(super) fn on_health_tick(&mut self, ctx: C, svc: usize) {
        let interval = self.services[svc].health_check(ctx.now());
        let service = svc as u32;
        later(ctx, interval, Msg::HealthTick { service });
    }

    /// A PID shedder measures and updates.
    pub(super) fn on_pid_tick(&mut self, ctx: C, svc: usize) {
        let interval = self.services[svc].pid_tick(ctx.now());
        let service = svc as u32;
        later(ctx, interval, Msg::PidTick { service });
    }
}
