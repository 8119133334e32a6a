//! Blast radius at run time: a service's [`Sharding`] (which replicas each caller unit may
//! use, under cells or shuffle sharding), the balancer's pick among a unit's replicas, the
//! tracking of units that lost their replicas, and poison requests.
//!
//! The replicas a unit may use form its *group*: one group of every replica for a service
//! without isolation (that a `Poison` fault aims at: its figures say that every unit shares
//! the fate of every replica), one group per cell, one group per unit under shuffle sharding.
//! Each group remembers the most of its replicas that were lost at once (down for anything
//! but a stop: a replica its scaler parked or a deploy restarts is not lost); a unit *lost
//! all its replicas* when its group was entirely lost at some instant, and *lost some* when
//! part of it was. A gauge counts the units whose every replica is lost, over time.
//!
//! The tables are built once, with the world, from the service's stream
//! `services/NAME/isolation` (see [`crate::format::schema::isolation`] for the draws); a service neither
//! isolated nor poisoned has no `Sharding` and pays one `Option` check per attempt sent and
//! per job started.
//!
//! # Decisions
//!
//! The caller unit is the tenant key, the one thing a customer's requests, retries and
//! downstream calls share at every hop, so "the units that lost all their replicas" is a count
//! a reader can act on. An isolated service draws its table once, with the world, from its own
//! stream `services/NAME/isolation` (unit by unit in key order: a cell, or a partial
//! Fisher–Yates shuffle of the replicas), and the balancer applies its usual rule to the unit's
//! replicas only. A service neither isolated nor aimed at by a `Poison` fault has no table and
//! draws nothing, so every earlier digest is unchanged; it pays one `Option` check per attempt
//! sent and per job started. A poison request crashes its replica when a worker would start it
//! (the replica's jobs are lost as in a `Crash`), and the replica restarts after the service's
//! `restart`. Each group of replicas (all of them, a cell, a unit's shard) keeps the most of
//! its replicas lost at once (down for anything but a stop: a replica its scaler parked is
//! not lost), updated whenever one goes down or comes up, and a gauge counts the units with
//! every replica lost.

use super::lifecycle::{Down, Lifecycle};
use super::outcome::{Outcome, Reason};
use super::service::Service;
use super::{C, JobKey, World};
use crate::figures::BlastFigures;
use crate::format::schema::isolation::{Isolation, Units};
use crate::format::schema::{FaultKind, Scenario};
use sim_core::metrics::GaugeSeries;
use sim_core::sample::uniform_below;
use sim_core::{RngStream, Seed, SimDuration, SimTime};

/// Which replicas each caller unit of a service may use, and what happened to them.
#[derive(Debug, Clone)]
pub struct Sharding {
    /// `None`: no isolation, one group of every replica (a poisoned service).
    isolation: Option<Isolation>,
    units: Units,
    /// Per unit, its group (empty without isolation: every unit is in group 0).
    group_of: Vec<u32>,
    /// Per group, its replicas in increasing order, `size` each, one group after the other.
    members: Vec<u32>,
    size: usize,
    /// Per replica, the groups it is in.
    groups_of: Vec<Vec<u32>>,
    /// Per group, how many units it serves (empty under shuffle sharding: one each).
    unit_counts: Vec<u64>,
    /// Per group, the most of its replicas lost (down, not stopped) at once so far.
    down_max: Vec<u32>,
    /// Per group, whether all its replicas are lost now (its units counted in `units_down`).
    /// Kept rather than recounted on the way up: a replica may change state without its
    /// group being told (one an autoscaler added, a crash of a replica already down), so
    /// "the others are down" does not say the group was counted.
    group_down: Vec<bool>,
    /// Units whose every replica is down now, and over time.
    units_down: u64,
    units_down_series: GaugeSeries,
    /// The tenants whose requests are poison now (active `Poison` faults at this service).
    poison: Vec<u32>,
    poison_crashes: u64,
}

impl Sharding {
    /// The sharding of service `name` in scenario `s`, if it is isolated or a `Poison` fault
    /// aims at it.
    pub fn of(name: &str, s: &Scenario, seed: Seed, bucket: SimDuration) -> Option<Sharding> {
        let sv = &s.services[name];
        let poisoned = s
            .faults
            .iter()
            .any(|f| matches!(&f.kind, FaultKind::Poison { service, .. } if service == name));
        if sv.isolation.is_none() && !poisoned {
            return None;
        }
        let units = Units::of(s);
        let n = sv.replicas as usize;
        let count = units.len() as usize;
        let mut sharding = Sharding {
            isolation: sv.isolation,
            units,
            group_of: Vec::new(),
            members: Vec::new(),
            size: n,
            groups_of: vec![Vec::new(); n],
            unit_counts: Vec::new(),
            down_max: Vec::new(),
            group_down: Vec::new(),
            units_down: 0,
            units_down_series: GaugeSeries::new(bucket),
            poison: Vec::new(),
            poison_crashes: 0,
        };
        let rng = || seed.stream(&format!("services/{name}/isolation"));
        match sv.isolation {
            None => {
                sharding.members = (0..n as u32).collect();
                for g in &mut sharding.groups_of {
                    g.push(0);
                }
                sharding.unit_counts = vec![count as u64];
            }
            Some(Isolation::Cells { count: cells }) => {
                let cells = cells as usize;
                let size = n / cells;
                sharding.size = size;
                sharding.members = (0..n as u32).collect();
                for (r, g) in sharding.groups_of.iter_mut().enumerate() {
                    g.push((r / size) as u32);
                }
                sharding.unit_counts = vec![0; cells];
                let mut rng = rng();
                sharding.group_of = (0..count)
                    .map(|_| {
                        let cell = uniform_below(&mut rng, cells as u64) as u32;
                        sharding.unit_counts[cell as usize] += 1;
                        cell
                    })
                    .collect();
            }
            Some(Isolation::ShuffleSharding { shard_size }) => {
                let k = shard_size as usize;
                sharding.size = k;
                sharding.members.reserve(count * k);
                sharding.group_of = (0..count as u32).collect();
                let mut rng = rng();
                let mut deck: Vec<u32> = (0..n as u32).collect();
                let mut shard = Vec::with_capacity(k);
                for unit in 0..count as u32 {
                    draw_shard(&mut rng, &mut deck, k, &mut shard);
                    for &r in &shard {
                        sharding.groups_of[r as usize].push(unit);
                    }
                    sharding.members.extend_from_slice(&shard);
                }
            }
        }
        let groups = sharding.members.len() / sharding.size.max(1);
        sharding.down_max = vec![0; groups];
        sharding.group_down = vec![false; groups];
        Some(sharding)
    }

    fn group(&self, unit: usize) -> usize {
        self.group_of.get(unit).map_or(0, |&g| g as usize)
    }

    fn replicas_of(&self, group: usize) -> &[u32] {
        &self.members[group * self.size..(group + 1) * self.size]
    }

    fn units_in(&self, group: usize) -> u64 {
        self.unit_counts.get(group).copied().unwrap_or(1)
    }

    /// The replicas the requests of `tenant` may go to, when the service is isolated and the
    /// tenant is one of its units (otherwise the balancer uses every replica).
    pub fn shard_of(&self, tenant: u32) -> Option<&[u32]> {
        self.isolation?;
        let unit = self.units.index_of(tenant)? as usize;
        Some(self.replicas_of(self.group(unit)))
    }

    /// Replica `r` went down or came up at `now`, whatever the cause: each group it is in
    /// counts its replicas `life` says are lost (down for a crash, a poison request, a zone
    /// failure or a liveness restart; a replica stopped by its scaler or a deploy is not a
    /// lost one).
    pub fn replica_changed(&mut self, now: SimTime, r: usize, life: &Lifecycle) {
        // A replica an autoscaler added beyond the file's `replicas` is in no group.
        let groups = self.groups_of.get(r).map_or(0, Vec::len);
        for i in 0..groups {
            let g = self.groups_of[r][i] as usize;
            let lost = self
                .replicas_of(g)
                .iter()
                .filter(|&&x| life.lost(x as usize))
                .count() as u32;
            self.down_max[g] = self.down_max[g].max(lost);
            let all = lost as usize == self.size;
            if all != self.group_down[g] {
                self.group_down[g] = all;
                if all {
                    self.units_down += self.units_in(g);
                } else {
                    self.units_down -= self.units_in(g);
                }
            }
        }
        self.units_down_series.set(now, self.units_down as f64);
    }

    /// Whether a request of `tenant` is poison now.
    pub fn poisoned(&self, tenant: u32) -> bool {
        self.poison.contains(&tenant)
    }

    /// The tenants of the active `Poison` faults aimed at service `name` become its poison.
    pub fn apply_poison<'a>(&mut self, name: &str, active: impl Iterator<Item = &'a FaultKind>) {
        self.poison = active
            .filter_map(|k| match k {
                FaultKind::Poison { service, tenant } if service == name => Some(*tenant),
                _ => None,
            })
            .collect();
    }

    /// A poison request crashed a replica.
    pub fn count_poison_crash(&mut self) {
        self.poison_crashes += 1;
    }

    /// Its figures at `end`, over `buckets` report buckets.
    pub fn figures(&mut self, end: SimTime, buckets: usize) -> BlastFigures {
        let series = self.units_down_series.finish(end);
        let size = self.size as u32;
        let (mut lost_all, mut lost_some) = (0, 0);
        for (g, &down) in self.down_max.iter().enumerate() {
            if down == size {
                lost_all += self.units_in(g);
            } else if down > 0 {
                lost_some += self.units_in(g);
            }
        }
        BlastFigures {
            isolation: self.isolation.map_or("none", Isolation::name),
            units: self.units.len(),
            replicas_per_unit: size,
            units_lost_all: lost_all,
            units_lost_some: lost_some,
            poison_crashes: self.poison_crashes,
            units_down_max: (0..buckets)
                .map(|i| series.get(i).map_or(0, |b| b.max as u64))
                .collect(),
        }
    }
}

/// Draws `k` distinct replicas out of `deck` (a permutation of them, left permuted) into
/// `shard`, in increasing order: the first `k` steps of a Fisher–Yates shuffle, each of the
/// `C(n, k)` sets equally likely whatever order the deck was left in.
fn draw_shard(rng: &mut RngStream, deck: &mut [u32], k: usize, shard: &mut Vec<u32>) {
    let n = deck.len();
    for i in 0..k {
        let j = i + uniform_below(rng, (n - i) as u64) as usize;
        deck.swap(i, j);
    }
    shard.clear();
    shard.extend_from_slice(&deck[..k]);
    shard.sort_unstable();
}

/// Builds the sharding of every service of `s` that needs one.
pub fn install(s: &Scenario, seed: Seed, bucket: SimDuration, services: &mut [Service]) {
    for (svc, name) in services.iter_mut().zip(s.services.keys()) {
        if let Some(sharding) = Sharding::of(name, s, seed, bucket) {
            svc.set_sharding(sharding);
        }
    }
}

impl World {
    /// A worker of a poisoned service was about to start `job`, a poison request: the job
    /// fails as its replica crashes under it, and the replica restarts cold after the
    /// service's `restart` time ([`Down::Poison`]).
    pub(super) fn poison_crash(&mut self, ctx: C, job: JobKey) {
        let (svc, r) = (self.jobs[job].service(), self.jobs[job].replica());
        self.reply(ctx, job, Outcome::Fail(Reason::Unavailable), None);
        self.replica_down(ctx, svc, r, Down::Poison);
    }
}
