//! Replicas that join and leave rotation: a service's [`Scaling`] (the autoscaler's metric
//! and decisions, the rotation integral, cold starts, rolling deploys) and the world's
//! handlers of its events (`ScaleTick`, `Scaled`, `DeployBatch`).
//!
//! A service that autoscales has `max_replicas` replica slots from the start; a slot
//! ([`super::lifecycle::Rotation`]) is `Parked` (down), `Starting` (down until its start-up
//! ends), `In` rotation, `Draining` (up and serving what it holds, taking nothing new, until
//! its drain ends) or `Redeploying` (draining, then restarted cold by a deploy); the slots
//! are the service's [`Lifecycle`], which `Scaling` moves. Only slots in rotation are seen
//! by the balancer, the health checks and outlier ejection; a slot's queue and workers are
//! its replica's, so a draining replica finishes its queue as it would have. A service
//! without a scaler, a cold start or a deploy has no `Scaling` at all: every replica is in
//! rotation and the hot path pays one `Option` check when a job starts work and when the
//! queue changes.
//!
//! The scaler (see [`crate::format::schema::scaling`] for the rule it follows) reads integrals, not samples:
//! the busy workers' time (the service's own), the queued requests' time and the replicas in
//! rotation's time, snapshotted at every tick, so a datapoint is the exact time-average over
//! its period. Nothing here draws a random number.
//!
//! # Decisions
//!
//! A service that autoscales gets `max_replicas` replica slots (call sites, limiters and cache
//! entries included) when the world is built, and `Scaling` moves them between parked,
//! starting, in rotation, draining and redeploying; only the slots in rotation are seen by the
//! balancer, the health checks and outlier ejection, and a draining replica serves its own
//! queue until its drain ends (what it still holds is then lost). The scaler follows the
//! Kubernetes HPA rule (`ceil(current × metric / target)`, a tolerance band, a scale-in
//! stabilisation window) with AWS target tracking's cooldowns, on exact time-averages: the
//! service's busy-worker integral and the scaling's own queue and rotation integrals,
//! snapshotted at each tick, a datapoint becoming visible `delay` after its period ends. It
//! draws no random numbers. A service without a scaler, a cold start or a deploy has no
//! `Scaling`: its hot path pays an `Option` check when work starts and when its queue changes,
//! and its digest is what it was (measured with `bench_mm1_scenario`: 925 against 930 ns per
//! request, interleaved runs of the binaries before and after, within the machine's noise).

use super::lifecycle::{Down, Lifecycle, Rotation, Up};
use super::msg::Msg;
use super::{C, World, later};
use crate::figures::ScalingFigures;
use crate::format::schema::FaultKind;
use crate::format::schema::scaling::{Autoscale, ColdStart, ScaleMetric};
use sim_core::metrics::GaugeSeries;
use sim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// The integrals at one tick.
#[derive(Debug, Clone, Copy)]
struct Snapshot {
    at: SimTime,
    busy_ns: u128,
    queue_ns: u128,
    rotation_ns: u128,
}

/// The most snapshots kept: enough for any delay of up to this many periods.
const SNAPSHOTS_MAX: usize = 4096;

/// What moves a service's replica slots, and its figures.
#[derive(Debug, Clone)]
pub struct Scaling {
    autoscale: Option<Autoscale>,
    cold: Option<ColdStart>,
    /// When each slot last started after time 0 (`None`: warm since the start).
    started: Vec<Option<SimTime>>,
    /// Slots in rotation since `rotation_since` (the [`Lifecycle`]'s count).
    in_rotation: u32,
    rotation_ns: u128,
    rotation_since: SimTime,
    queued: u32,
    queue_ns: u128,
    queue_since: SimTime,
    snapshots: VecDeque<Snapshot>,
    /// The scaler's recommendations within the scale-in stabilisation window.
    recommendations: VecDeque<(SimTime, u32)>,
    last_scale_out: Option<SimTime>,
    last_scale: Option<SimTime>,
    series: GaugeSeries,
    figures: ScalingFigures,
}

/// What a tick decided: replicas to start and to take out of rotation.
#[derive(Debug, Default)]
pub struct Decision {
    /// Slots to start.
    pub start: Vec<usize>,
    /// Slots to drain.
    pub drain: Vec<usize>,
}

impl Scaling {
    /// The scaling of a service of `config` with `slots` slots, the first `replicas` in
    /// rotation, if it autoscales or cold-starts (or `deployed`: its slots may leave
    /// rotation).
    pub fn new(
        config: &crate::format::schema::Service,
        slots: usize,
        deployed: bool,
        bucket: SimDuration,
    ) -> Option<Scaling> {
        if config.autoscale.is_none() && config.cold_start.is_none() && !deployed {
            return None;
        }
        let replicas = config.replicas as usize;
        let mut series = GaugeSeries::new(bucket);
        series.set(SimTime::ZERO, replicas as f64);
        Some(Scaling {
            autoscale: config.autoscale.clone(),
            cold: config.cold_start.clone(),
            started: vec![None; slots],
            in_rotation: config.replicas,
            rotation_ns: 0,
            rotation_since: SimTime::ZERO,
            queued: 0,
            queue_ns: 0,
            queue_since: SimTime::ZERO,
            // The integrals are zero at time 0: the first period's datapoint is whole.
            snapshots: VecDeque::from([Snapshot {
                at: SimTime::ZERO,
                busy_ns: 0,
                queue_ns: 0,
                rotation_ns: 0,
            }]),
            recommendations: VecDeque::new(),
            last_scale_out: None,
            last_scale: None,
            series,
            figures: ScalingFigures {
                replicas_min: config.replicas,
                replicas_max: config.replicas,
                ..ScalingFigures::default()
            },
        })
    }

    /// The work multiplier of slot `r` at `now` under the cold start (1 when warm); counts
    /// a cold job.
    pub fn cold_factor(&mut self, r: usize, now: SimTime) -> f64 {
        let (Some(cold), Some(started)) = (&self.cold, self.started[r]) else {
            return 1.0;
        };
        let f = cold.factor_after(now.saturating_duration_since(started));
        if f > 1.0 {
            self.figures.cold_jobs += 1;
        }
        f
    }

    /// The service's queued requests change to `queued` at `now`.
    pub fn queue_change(&mut self, now: SimTime, queued: u32) {
        let held = now.saturating_duration_since(self.queue_since).as_nanos();
        self.queue_ns += u128::from(self.queued) * u128::from(held);
        self.queue_since = now;
        self.queued = queued;
    }

    /// The slots in rotation change to `in_rotation` at `now`.
    pub fn rotation_change(&mut self, now: SimTime, in_rotation: u32) {
        assert_eq!(
            self.in_rotation.abs_diff(in_rotation),
            1,
            "one slot at a time"
        );
        let held = now
            .saturating_duration_since(self.rotation_since)
            .as_nanos();
        self.rotation_ns += u128::from(self.in_rotation) * u128::from(held);
        self.rotation_since = now;
        self.in_rotation = in_rotation;
        self.series.set(now, f64::from(self.in_rotation));
        self.figures.replicas_min = self.figures.replicas_min.min(self.in_rotation);
        self.figures.replicas_max = self.figures.replicas_max.max(self.in_rotation);
    }

    /// Slot `r` of `life` moves to `to` at `now`, and the rotation integral follows.
    fn rotate(&mut self, now: SimTime, life: &mut Lifecycle, r: usize, to: Rotation) {
        life.move_slot(now, r, to, Some(self));
        life.check(r);
    }

    /// Slot `r` (re)started at `now`: cold, if the service cold-starts.
    pub fn started(&mut self, now: SimTime, r: usize) {
        self.started[r] = Some(now);
    }

    /// A deploy's downtime ended and its slot is back.
    pub fn deploy_restarted(&mut self) {
        self.figures.deploy_restarts += 1;
    }

    /// A slot stopped holding `held` jobs, which are lost.
    pub fn lost_at_stop(&mut self, held: u64) {
        self.figures.lost_at_stop += held;
    }

    /// The integrals at `now`, given the busy workers' integral.
    fn snapshot(&self, now: SimTime, busy_ns: u128) -> Snapshot {
        let q = now.saturating_duration_since(self.queue_since).as_nanos();
        let rot = now
            .saturating_duration_since(self.rotation_since)
            .as_nanos();
        Snapshot {
            at: now,
            busy_ns,
            queue_ns: self.queue_ns + u128::from(self.queued) * u128::from(q),
            rotation_ns: self.rotation_ns + u128::from(self.in_rotation) * u128::from(rot),
        }
    }

    /// One tick of the scaler at `now`: takes a snapshot, reads the newest datapoint that
    /// is at least `delay` old, decides (Kubernetes HPA's rule with AWS target tracking's
    /// cooldowns; see [`crate::format::schema::scaling`]) and moves the slots of `life` it
    /// decides on. `busy_ns` is the service's busy-worker integral, `workers` its workers
    /// per replica.
    pub fn tick(
        &mut self,
        now: SimTime,
        busy_ns: u128,
        workers: u32,
        life: &mut Lifecycle,
    ) -> Decision {
        let a = self
            .autoscale
            .clone()
            .expect("ticks are for services that autoscale");
        let Some(metric) = self.datapoint(now, busy_ns, workers, &a) else {
            return Decision::default();
        };
        let (desired, stable) = self.recommend(now, metric, &a);
        // What is planned: in rotation, starting, and back from a deploy soon.
        let planned = life.planned();
        let since = |t: Option<SimTime>, d: SimDuration| {
            t.is_none_or(|t| now.saturating_duration_since(t) >= d)
        };
        if desired > planned && since(self.last_scale_out, a.scale_out_cooldown) {
            self.scale_out(now, desired - planned, &a, life)
        } else if stable < planned && since(self.last_scale, a.scale_in_cooldown) {
            self.scale_in(now, planned - stable, &a, life)
        } else {
            Decision::default()
        }
    }

    /// Takes the snapshot at `now` and reads the newest whole period's metric that is at
    /// least `delay` old, if there is one.
    fn datapoint(
        &mut self,
        now: SimTime,
        busy_ns: u128,
        workers: u32,
        a: &Autoscale,
    ) -> Option<f64> {
        let snap = self.snapshot(now, busy_ns);
        self.snapshots.push_back(snap);
        if self.snapshots.len() > SNAPSHOTS_MAX {
            self.snapshots.pop_front();
        }
        // The newest whole period that ended at least `delay` ago.
        let visible = now.as_nanos().checked_sub(a.delay.as_nanos())?;
        let e = self
            .snapshots
            .iter()
            .rposition(|s| s.at.as_nanos() <= visible)
            .filter(|&e| e > 0)?;
        let (x, y) = (self.snapshots[e - 1], self.snapshots[e]);
        let rot = y.rotation_ns - x.rotation_ns;
        let metric = (rot > 0).then(|| match a.metric {
            ScaleMetric::Utilisation { .. } => {
                (y.busy_ns - x.busy_ns) as f64 / (rot as f64 * f64::from(workers))
            }
            ScaleMetric::QueueDepth { .. } => (y.queue_ns - x.queue_ns) as f64 / rot as f64,
        });
        // Older snapshots are never read again.
        self.snapshots.drain(..e - 1);
        metric
    }

    /// The replicas `metric` asks for at `now`, and the highest recommendation of the
    /// scale-in stabilisation window (which scale-in follows).
    fn recommend(&mut self, now: SimTime, metric: f64, a: &Autoscale) -> (u32, u32) {
        let target = match a.metric {
            ScaleMetric::Utilisation { target_ratio } => target_ratio,
            ScaleMetric::QueueDepth { per_replica } => per_replica,
        };
        let current = self.in_rotation;
        let ratio = metric / target;
        let desired = if (ratio - 1.0).abs() <= a.tolerance_ratio {
            current
        } else {
            let d = (f64::from(current) * ratio).ceil();
            if d >= f64::from(a.max_replicas) {
                a.max_replicas
            } else {
                d as u32
            }
        }
        .clamp(a.min_replicas, a.max_replicas);
        self.recommendations.push_back((now, desired));
        while let Some(&(t, _)) = self.recommendations.front() {
            if now.saturating_duration_since(t) > a.scale_in_stabilisation {
                self.recommendations.pop_front();
            } else {
                break;
            }
        }
        let stable = self
            .recommendations
            .iter()
            .map(|(_, d)| *d)
            .max()
            .unwrap_or(desired);
        (desired, stable)
    }

    /// Starts up to `more` parked slots of `life` at `now`, lowest first.
    fn scale_out(
        &mut self,
        now: SimTime,
        more: u32,
        a: &Autoscale,
        life: &mut Lifecycle,
    ) -> Decision {
        let ready_at = now.saturating_add(a.startup);
        let mut out = Decision::default();
        for r in 0..life.len() {
            if out.start.len() as u32 == more {
                break;
            }
            if life.rotation(r) == Rotation::Parked {
                self.rotate(now, life, r, Rotation::Starting { ready_at });
                out.start.push(r);
            }
        }
        if !out.start.is_empty() {
            self.figures.scale_outs += 1;
            self.figures.replicas_added += out.start.len() as u64;
            self.last_scale_out = Some(now);
            self.last_scale = Some(now);
        }
        out
    }

    /// Takes `remove` slots of `life` out at `now`: starting slots are cancelled first
    /// (they serve nothing yet), then the highest slots in rotation drain, never below the
    /// fewest replicas in rotation.
    fn scale_in(
        &mut self,
        now: SimTime,
        mut remove: u32,
        a: &Autoscale,
        life: &mut Lifecycle,
    ) -> Decision {
        for r in (0..life.len()).rev() {
            if remove > 0 && matches!(life.rotation(r), Rotation::Starting { .. }) {
                self.rotate(now, life, r, Rotation::Parked);
                remove -= 1;
                self.figures.replicas_removed += 1;
            }
        }
        let stop_at = now.saturating_add(a.drain);
        let mut out = Decision::default();
        for r in (0..life.len()).rev() {
            if remove == 0 || self.in_rotation <= a.min_replicas {
                break;
            }
            if life.rotation(r) == Rotation::In {
                self.rotate(now, life, r, Rotation::Draining { stop_at });
                out.drain.push(r);
                remove -= 1;
                self.figures.replicas_removed += 1;
            }
        }
        assert_eq!(
            self.in_rotation,
            life.rotating(),
            "the integral counts the slots"
        );
        self.figures.scale_ins += 1;
        self.last_scale = Some(now);
        out
    }

    /// The slots a deploy's next batch takes out of rotation at `now`: up to `batch` slots
    /// of `life` in rotation that have not started since the deploy began at `since`,
    /// lowest first.
    pub fn deploy_batch(
        &mut self,
        now: SimTime,
        since: SimTime,
        batch: u32,
        downtime: SimDuration,
        life: &mut Lifecycle,
    ) -> Vec<usize> {
        let back_at = now.saturating_add(downtime);
        let mut out = Vec::new();
        for r in 0..life.len() {
            if out.len() as u32 == batch {
                break;
            }
            let old = self.started[r].is_none_or(|t| t <= since);
            if life.in_rotation(r) && old {
                self.rotate(now, life, r, Rotation::Redeploying { back_at });
                out.push(r);
            }
        }
        out
    }

    /// Its figures at `end`.
    pub fn figures(&mut self, end: SimTime) -> ScalingFigures {
        let mut f = self.figures.clone();
        f.replicas = self.series.finish(end);
        f
    }
}

impl World {
    /// The autoscaler of `svc` ticks: it decides, and the replicas it starts or drains get
    /// their events.
    pub(super) fn on_scale_tick(&mut self, ctx: C, svc: usize) {
        let now = ctx.now();
        let s = &mut self.services[svc];
        let (busy_ns, workers) = (s.busy_integral(now), s.config().workers);
        let (life, scaling) = s.slots_mut();
        let scaling = scaling.expect("ticks are for services that autoscale");
        let decision = scaling.tick(now, busy_ns, workers, life);
        let a = s.config().autoscale.as_ref().expect("autoscales");
        let (startup, drain, period) = (a.startup, a.drain, a.period);
        let service = svc as u32;
        for r in decision.start {
            let replica = r as u32;
            later(ctx, startup, Msg::Scaled { service, replica });
        }
        for r in decision.drain {
            let replica = r as u32;
            later(ctx, drain, Msg::Scaled { service, replica });
        }
        s.capacity_change(now);
        later(ctx, period, Msg::ScaleTick { service });
    }

    /// A slot's start-up, drain or deploy downtime ends (unless the scaler changed its
    /// mind): it comes up, stops, or stops and comes up cold.
    pub(super) fn on_scaled(&mut self, ctx: C, svc: usize, r: usize) {
        let now = ctx.now();
        let Some(due) = self.services[svc].life().due(now, r) else {
            return;
        };
        match due {
            Rotation::Starting { .. } => self.replica_up(ctx, svc, r, Up::Start),
            Rotation::Draining { .. } => self.replica_down(ctx, svc, r, Down::Stop),
            Rotation::Redeploying { .. } => {
                self.replica_down(ctx, svc, r, Down::Stop);
                self.replica_up(ctx, svc, r, Up::Redeploy);
            }
            Rotation::Parked | Rotation::In | Rotation::Out => {
                unreachable!("only waiting slots are due")
            }
        }
    }

    /// The next batch of the rolling deploy `fault`: its replicas leave rotation, come back
    /// cold after the downtime, and the batch after starts once they have warmed up.
    pub(super) fn on_deploy_batch(&mut self, ctx: C, fault: usize) {
        let now = ctx.now();
        let f = &self.faults.faults()[fault];
        let FaultKind::Deploy {
            service,
            batch,
            downtime,
            warmup,
        } = &f.kind
        else {
            unreachable!("deploy batches are for deploys");
        };
        let since = SimTime::ZERO.saturating_add(f.at);
        let (batch, downtime, warmup) = (*batch, *downtime, *warmup);
        let svc = self.service_index(&service.clone());
        let (life, scaling) = self.services[svc].slots_mut();
        let scaling = scaling.expect("a deployed service");
        let taken = scaling.deploy_batch(now, since, batch, downtime, life);
        if taken.is_empty() {
            return;
        }
        let service = svc as u32;
        for r in taken {
            let replica = r as u32;
            later(ctx, downtime, Msg::Scaled { service, replica });
        }
        self.services[svc].capacity_change(now);
        let fault = fault as u32;
        later(
            ctx,
            downtime.saturating_add(warmup),
            Msg::DeployBatch { fault },
        );
    }
}
