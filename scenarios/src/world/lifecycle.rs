//! A replica's life: its [`Slot`] (whether it runs — up, paused, or down and why — and
//! whether balancers see it — in rotation, parked, starting, draining, redeploying, or out
//! until its restart), one [`Lifecycle`] per service holding every slot, and the world's one
//! way down ([`World::replica_down`]) and one way up ([`World::replica_up`]) that every fault,
//! liveness probe, scaler, deploy, zone failure and poison request goes through.
//!
//! ```text
//!                 Crash, Poison                     Restart
//!   Up/Paused ───────────────────► Down (in rotation) ─────────► Up
//!   in rotation   Zone, Liveness                    Restart
//!             ───────────────────► Down (Out) ──────────────────► Up (in rotation)
//!   scaler:  Parked ──► Starting ──Start──► Up ──► Draining ──Stop──► Parked
//!   deploy:  Up ──► Redeploying ──Stop, then Redeploy──► Up (cold)
//! ```
//!
//! Rotation changes only for a service with replica slots that can leave it (a
//! [`super::scaling::Scaling`]); every other service keeps every slot in rotation, and its hot
//! path reads one slot (whether the replica runs) where it read the replica's flag before.
//!
//! # Decisions
//!
//! The steps of going down and up are written once, and where a cause takes other steps
//! (a stop is not a crash: it counts what it held, not a crash; only zone failures and
//! liveness restarts take the slot out of rotation) the difference is one arm of a `match`
//! on the cause, with the reason beside it. Whatever takes a process down ends the rest of
//! its pause (paused time counts only what happened) and its liveness probes (the process
//! that comes back is probed afresh, its failures in a row counted from none, as the kubelet
//! does for a new container).
//!
//! A slot is owed at most one restart at a time (its `restart_at`): a second cause that
//! would restart it (its zone back while a liveness restart is on the way) does not add
//! one, a fall voids the restart owed for the one before (a crash fault that starts while a
//! poison restart is on the way restarts it when the fault ends), and a `Restart` that
//! reaches a replica already up does nothing. A crash fault's end restarts only the
//! replicas no other crash fault holds down. A replica whose restart comes while its zone is
//! failing joins the zone's replicas out of rotation, so the zone's return restarts it.
//!
//! The blast-radius groups are told of every change and count a replica lost while it is
//! down for anything but a stop: a replica its scaler parked or a deploy restarts is not a
//! unit's lost replica.

use super::msg::Msg;
use super::scaling::Scaling;
use super::{C, World, later};
use sim_core::SimTime;

/// Why a replica goes down; the cause chooses the steps that differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Down {
    /// A `Crash` fault: the slot stays in rotation and restarts when the fault ends.
    Crash,
    /// A poison request crashed it as a worker took it up; it restarts after `restart`.
    Poison,
    /// Its zone failed: out of rotation until the zone is back.
    Zone,
    /// Its liveness probes failed: out of rotation, restarted after `restart`.
    Liveness,
    /// A drain or a deploy's downtime ended (or the slot is parked from the start): stopped,
    /// not crashed.
    Stop,
}

/// Why a replica comes up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Up {
    /// Its `Restart` event: after a crash, a poison request, a zone failure or a liveness
    /// restart.
    Restart,
    /// The scaler's start-up ended.
    Start,
    /// A deploy's downtime ended: it is back, cold, with the new version.
    Redeploy,
}

/// Whether a replica runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    Up,
    /// Stopped by a pause until then; its workers take nothing meanwhile.
    Paused {
        until: SimTime,
    },
    Down(Down),
}

/// Whether balancers, health checks and the autoscaler see a replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rotation {
    /// Serving, in rotation.
    In,
    /// Not running; the scaler may start it.
    Parked,
    /// Starting; enters rotation at `ready_at`.
    Starting { ready_at: SimTime },
    /// Out of rotation, finishing what it holds; stops (and parks) at `stop_at`.
    Draining { stop_at: SimTime },
    /// Out of rotation for a deploy, finishing what it holds; restarts cold at `back_at`.
    Redeploying { back_at: SimTime },
    /// Down after a zone failure or a liveness restart, until its restart.
    Out,
}

/// One replica slot: whether it runs, whether it is seen, and when the one restart it is
/// owed comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    run: Run,
    rotation: Rotation,
    /// When its `Restart` event is due, if one is on the way: one at a time, so two causes
    /// that each restart it (a liveness restart and its zone's return) restart it once, and
    /// a restart owed for an earlier fall is void when it falls again.
    restart_at: Option<SimTime>,
}

impl Slot {
    /// Asserts that the two halves agree: a slot that is parked or starting is stopped, a
    /// slot out of rotation is down after a zone failure or a liveness restart (and only
    /// such a slot is), and a slot in rotation or leaving it was never stopped.
    fn check(self) {
        let ok = match (self.rotation, self.run) {
            (Rotation::Parked | Rotation::Starting { .. }, run) => run == Run::Down(Down::Stop),
            (Rotation::Out, run) => matches!(run, Run::Down(Down::Zone | Down::Liveness)),
            (_, Run::Down(cause)) => matches!(cause, Down::Crash | Down::Poison),
            (_, Run::Up | Run::Paused { .. }) => true,
        };
        assert!(ok, "replica slot out of step: {self:?}");
    }
}

/// Every replica slot of a service.
#[derive(Debug, Clone)]
pub struct Lifecycle {
    slots: Vec<Slot>,
    /// Slots in rotation.
    in_rotation: u32,
}

impl Lifecycle {
    /// `slots` slots, the first `replicas` up and in rotation, the others parked.
    pub fn new(slots: usize, replicas: usize) -> Lifecycle {
        let slot = |i| {
            if i < replicas {
                Slot {
                    run: Run::Up,
                    rotation: Rotation::In,
                    restart_at: None,
                }
            } else {
                Slot {
                    run: Run::Down(Down::Stop),
                    rotation: Rotation::Parked,
                    restart_at: None,
                }
            }
        };
        Lifecycle {
            slots: (0..slots).map(slot).collect(),
            in_rotation: replicas.min(slots) as u32,
        }
    }

    /// Its slots.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether replica `r` is up (running or paused).
    pub fn is_up(&self, r: usize) -> bool {
        !matches!(self.slots[r].run, Run::Down(_))
    }

    /// Whether replica `r` is lost: down for a crash, a poison request, a zone failure or a
    /// liveness restart (a stopped replica is not lost: its scaler or a deploy planned it).
    pub fn lost(&self, r: usize) -> bool {
        matches!(self.slots[r].run, Run::Down(cause) if cause != Down::Stop)
    }

    /// Whether replica `r` runs: up and not paused.
    pub fn running(&self, r: usize) -> bool {
        self.slots[r].run == Run::Up
    }

    /// When the pause of replica `r` ends, if it is paused.
    pub fn paused_until(&self, r: usize) -> Option<SimTime> {
        match self.slots[r].run {
            Run::Paused { until } => Some(until),
            Run::Up | Run::Down(_) => None,
        }
    }

    /// When each paused replica's pause ends.
    pub fn pauses(&self) -> impl Iterator<Item = SimTime> + '_ {
        (0..self.slots.len()).filter_map(|r| self.paused_until(r))
    }

    /// Replica `r`, up, is paused until `until` (a pause under way is lengthened, never
    /// shortened).
    pub fn pause(&mut self, r: usize, until: SimTime) {
        let slot = &mut self.slots[r];
        slot.run = match slot.run {
            Run::Up => Run::Paused { until },
            Run::Paused { until: u } => Run::Paused {
                until: u.max(until),
            },
            Run::Down(_) => unreachable!("a replica that is down has nothing to pause"),
        };
    }

    /// The pause of replica `r` ends at `now`, unless a later pause keeps it stopped; true
    /// if it runs again.
    pub fn resume(&mut self, r: usize, now: SimTime) -> bool {
        let slot = &mut self.slots[r];
        match slot.run {
            Run::Paused { until } if until <= now => {
                slot.run = Run::Up;
                true
            }
            _ => false,
        }
    }

    /// Whether replica `r` is in rotation.
    pub fn in_rotation(&self, r: usize) -> bool {
        self.slots[r].rotation == Rotation::In
    }

    /// Slots in rotation.
    pub fn rotating(&self) -> u32 {
        self.in_rotation
    }

    /// Where slot `r` stands in rotation.
    pub fn rotation(&self, r: usize) -> Rotation {
        self.slots[r].rotation
    }

    /// Replicas up and in rotation: the ones whose workers count as capacity.
    pub fn serving(&self) -> usize {
        (0..self.slots.len()).filter(|&r| self.serves(r)).count()
    }

    /// Whether replica `r` is up and in rotation: one that [`Lifecycle::serving`] counts.
    pub fn serves(&self, r: usize) -> bool {
        let s = &self.slots[r];
        s.rotation == Rotation::In && !matches!(s.run, Run::Down(_))
    }

    /// Slots planned to serve: in rotation, starting, and back from a deploy soon.
    pub fn planned(&self) -> u32 {
        let planned = |s: &&Slot| {
            matches!(
                s.rotation,
                Rotation::In | Rotation::Starting { .. } | Rotation::Redeploying { .. }
            )
        };
        self.slots.iter().filter(planned).count() as u32
    }

    /// Slot `r` moves to `to` at `now`, and `scaling`'s rotation integral follows (a service
    /// without one never changes rotation). The caller checks the slot once its run is set
    /// too.
    pub fn move_slot(
        &mut self,
        now: SimTime,
        r: usize,
        to: Rotation,
        scaling: Option<&mut Scaling>,
    ) {
        let moved = self.rotate(r, to);
        match scaling {
            Some(s) if moved => s.rotation_change(now, self.in_rotation),
            Some(_) => {}
            None => assert!(!moved, "only a service with scaling changes rotation"),
        }
    }

    /// Slot `r` moves to `to` in rotation; true if it entered or left rotation.
    fn rotate(&mut self, r: usize, to: Rotation) -> bool {
        let slot = &mut self.slots[r];
        let was = slot.rotation == Rotation::In;
        slot.rotation = to;
        let is = to == Rotation::In;
        match (was, is) {
            (false, true) => self.in_rotation += 1,
            (true, false) => self.in_rotation -= 1,
            _ => return false,
        }
        debug_assert!(self.in_rotation as usize <= self.slots.len());
        true
    }

    /// What slot `r`'s scaling event at `now` means, if it is still due.
    pub fn due(&self, now: SimTime, r: usize) -> Option<Rotation> {
        let s = self.slots[r].rotation;
        let due = match s {
            Rotation::Starting { ready_at } => ready_at == now,
            Rotation::Draining { stop_at } => stop_at == now,
            Rotation::Redeploying { back_at } => back_at == now,
            Rotation::Parked | Rotation::In | Rotation::Out => false,
        };
        due.then_some(s)
    }

    /// Asserts that slot `r`'s two halves agree (after each transition).
    pub fn check(&self, r: usize) {
        self.slots[r].check();
    }

    /// Asserts what may go down for `cause` (see [`World::replica_down`]).
    fn check_down(&self, r: usize, cause: Down) {
        let s = self.slots[r];
        let ok = match cause {
            // A crash fault crashes every slot in rotation, a slot already crashed included.
            Down::Crash => s.rotation == Rotation::In,
            // A worker was about to start the poison request.
            Down::Poison => self.is_up(r),
            Down::Zone | Down::Liveness => s.rotation == Rotation::In && self.is_up(r),
            Down::Stop => matches!(
                s.rotation,
                Rotation::Draining { .. } | Rotation::Redeploying { .. }
            ),
        };
        assert!(ok, "replica {r} cannot go down for {cause:?}: {s:?}");
    }

    /// Replica `r` is down for `cause`; returns where its slot goes in rotation, if it moves
    /// (out for a zone failure or a liveness restart, parked at the end of a stop).
    fn go_down(&mut self, r: usize, cause: Down) -> Option<Rotation> {
        self.slots[r].run = Run::Down(cause);
        self.slots[r].restart_at = None;
        match cause {
            Down::Zone | Down::Liveness => Some(Rotation::Out),
            Down::Stop => Some(Rotation::Parked),
            Down::Crash | Down::Poison => None,
        }
    }

    /// Replica `r` is owed a restart at `at`; false if one is already on the way (it comes
    /// sooner or at the same time: every restart waits the service's one `restart` time).
    fn owe_restart(&mut self, r: usize, at: SimTime) -> bool {
        let slot = &mut self.slots[r];
        if slot.restart_at.is_some() {
            return false;
        }
        slot.restart_at = Some(at);
        true
    }

    /// The `Restart` event of replica `r` fires at `now`: true if it is the one owed (not
    /// one voided by a fall since).
    fn take_restart(&mut self, r: usize, now: SimTime) -> bool {
        let slot = &mut self.slots[r];
        if slot.restart_at != Some(now) {
            return false;
        }
        slot.restart_at = None;
        true
    }

    /// Replica `r`, down in rotation when its restart came, stays down with its zone that
    /// is failing: out of rotation until the zone is back (which restarts it).
    fn down_with_zone(&mut self, r: usize) -> bool {
        let slot = &mut self.slots[r];
        slot.run = Run::Down(Down::Zone);
        slot.rotation == Rotation::In
    }

    /// Replica `r` runs again (a replica already up keeps running, or stays paused).
    fn come_up(&mut self, r: usize) {
        let slot = &mut self.slots[r];
        if let Run::Down(_) = slot.run {
            slot.run = Run::Up;
        }
    }
}

impl World {
    /// Replica `r` of `svc` goes down for `cause`, the one way down: what it held is lost
    /// (its jobs fail as `Unavailable`, its queue, flights and admission state start
    /// afresh), its pause ends, and the capacity gauge, the rotation and the blast-radius
    /// groups follow.
    pub(super) fn replica_down(&mut self, ctx: C, svc: usize, r: usize, cause: Down) {
        let now = ctx.now();
        let s = &mut self.services[svc];
        s.life().check_down(r, cause);
        match cause {
            // A stop is planned, not a crash: what it still held is its own figure.
            Down::Stop => {
                let held = u64::from(s.replica_ref(r).busy()) + s.replica_ref(r).queue_len() as u64;
                s.scaling_mut()
                    .expect("a slot that stops has a scaling")
                    .lost_at_stop(held);
            }
            Down::Poison => {
                s.count_poison_crash();
                s.counts().crashes += 1;
            }
            Down::Crash | Down::Zone | Down::Liveness => s.counts().crashes += 1,
        }
        // The rest of a pause under way does not happen, whatever stops the process.
        if let Some(u) = s.life().paused_until(r)
            && let Some(c) = s.capacity_mut()
        {
            c.pause_cut(u.saturating_duration_since(now));
        }
        // Jobs a shaping limiter holds back, or waiting for a distributed decision, hold no
        // worker and no queue place but do hold the replica's admission slots (concurrency,
        // tenant bulkhead), which start afresh: they are lost with the rest.
        self.lose_jobs(ctx, svc, r);
        let s = &mut self.services[svc];
        s.reset_replica(r);
        if let Some(to) = s.life_mut().go_down(r, cause) {
            let (life, scaling) = s.slots_mut();
            life.move_slot(now, r, to, scaling);
        }
        // Its probes die with the process: the one that comes back is probed afresh, its
        // failures in a row counted from none (as the kubelet does for a new container).
        if let Some(c) = s.capacity_mut() {
            c.forget_probes(r);
        }
        s.capacity_change(now);
        // The groups count it lost unless it stopped (a drained replica is not a unit's
        // lost one); a stop is told too, for a lost replica that a drain then stops.
        s.replica_changed(now, r);
        // A crash restarts when its fault ends, a zone's replicas when the zone is back, a
        // stopped slot when its scaler or deploy starts it.
        if matches!(cause, Down::Poison | Down::Liveness) {
            self.restart_later(ctx, svc, r);
        }
        let s = &self.services[svc];
        s.life().check(r);
        assert!(!s.life().is_up(r), "replica {r} went down");
        let replica = s.replica_ref(r);
        assert_eq!(
            replica.busy() as usize + replica.queue_len(),
            0,
            "lost with it"
        );
    }

    /// Replica `r` of `svc` restarts after the service's `restart` time
    /// ([`World::replica_up`] with [`Up::Restart`] then).
    /// A restart already on the way is not doubled.
    pub(super) fn restart_later(&mut self, ctx: C, svc: usize, r: usize) {
        let delay = self.services[svc].config().restart.unwrap_or_default();
        let at = ctx.now().saturating_add(delay);
        if !self.services[svc].life_mut().owe_restart(r, at) {
            return;
        }
        let (service, replica) = (svc as u32, r as u32);
        later(ctx, delay, Msg::Restart { service, replica });
    }

    /// Replica `r` of `svc` comes up for `cause`, the one way up: cold (its cache empty, its
    /// cold start from now), back in rotation, and the capacity gauge and the blast-radius
    /// groups follow.
    pub(super) fn replica_up(&mut self, ctx: C, svc: usize, r: usize, cause: Up) {
        let now = ctx.now();
        let was_down = !self.services[svc].life().is_up(r);
        let s = &mut self.services[svc];
        let rotation = s.life().rotation(r);
        match cause {
            // The restart owed, to a replica still down: one the scaler took out meanwhile
            // (draining, parked) stays down, one in a failing zone waits for the zone, and
            // one out of rotation after a zone failure or a liveness restart is back in it.
            Up::Restart => {
                if !s.life_mut().take_restart(r, now) || !was_down {
                    return;
                }
                if !matches!(rotation, Rotation::In | Rotation::Out) {
                    return;
                }
                if self.zone_failed(svc, r) {
                    self.down_with_zone(now, svc, r);
                    return;
                }
                let s = &mut self.services[svc];
                if rotation == Rotation::Out {
                    let (life, scaling) = s.slots_mut();
                    life.move_slot(now, r, Rotation::In, scaling);
                }
            }
            Up::Start => {
                assert!(
                    matches!(rotation, Rotation::Starting { .. }),
                    "{rotation:?}"
                );
                let (life, scaling) = s.slots_mut();
                life.move_slot(now, r, Rotation::In, scaling);
            }
            Up::Redeploy => {
                assert!(was_down && rotation == Rotation::Parked, "{rotation:?}");
                let (life, scaling) = s.slots_mut();
                life.move_slot(now, r, Rotation::In, scaling);
                s.scaling_mut()
                    .expect("a deployed service")
                    .deploy_restarted();
            }
        }
        let s = &mut self.services[svc];
        if let Some(sc) = s.scaling_mut() {
            sc.started(now, r);
        }
        s.replica(r).flush_cache(now);
        s.life_mut().come_up(r);
        s.capacity_change(now);
        s.replica_changed(now, r);
        s.life().check(r);
        assert!(s.in_rotation(r) && s.life().is_up(r), "replica {r} came up");
    }

    /// Replica `r` of `svc`, down when its restart came, stays down with its failing zone:
    /// out of rotation, like the zone's other replicas, so the zone's return restarts it.
    fn down_with_zone(&mut self, now: SimTime, svc: usize, r: usize) {
        let s = &mut self.services[svc];
        if s.life_mut().down_with_zone(r) {
            let (life, scaling) = s.slots_mut();
            life.move_slot(now, r, Rotation::Out, scaling);
            s.capacity_change(now);
        }
        let s = &self.services[svc];
        s.life().check(r);
        assert_eq!(s.life().rotation(r), Rotation::Out, "down with its zone");
    }
}
