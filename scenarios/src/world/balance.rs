//! Which replica an attempt goes to, and the health that steers it: a service's [`Balance`]
//! (round robin, random, least outstanding, power of two choices) over the replicas in
//! rotation, or over a caller unit's cell or shard when the service is isolated, and the
//! outlier ejection and active health checks that take replicas out of its choice.
//!
//! Ejected and unhealthy replicas are avoided while any other candidate is eligible; slots
//! out of rotation ([`super::lifecycle`]) are not candidates unless none is in rotation (over
//! all the replicas, or over the unit's cell or shard). The
//! draws come from the service's stream `services/NAME/balancer`.

use super::lifecycle::Lifecycle;
use super::replica::Replica;
use crate::format::schema::{Balancer, HealthCheck, Outlier};
use sim_core::sample::uniform_below;
use sim_core::{RngStream, Seed, SimTime};

/// A service's balancer and its state.
#[derive(Debug, Clone)]
pub struct Balance {
    balancer: Balancer,
    round_robin: usize,
    rng: RngStream,
}

impl Balance {
    /// A `balancer` drawing from `rng`.
    pub fn new(balancer: Balancer, rng: RngStream) -> Balance {
        Balance {
            balancer,
            round_robin: 0,
            rng,
        }
    }

    /// Gives its picks fresh randomness from `seed` (a branch's).
    pub fn reseed(&mut self, seed: Seed) {
        self.rng.reseed(seed);
    }

    /// The replica an attempt goes to among `replicas` at `now`: among `shard` if the
    /// caller's unit has one, else among the slots in rotation of `life` (`None`: every
    /// slot is in rotation).
    pub fn pick(
        &mut self,
        now: SimTime,
        replicas: &[Replica],
        life: Option<&Lifecycle>,
        shard: Option<&[u32]>,
    ) -> usize {
        if let Some(shard) = shard {
            return self.pick_in(shard, replicas, life, now);
        }
        let n = replicas.len();
        if n == 1 {
            return 0;
        }
        // Replicas out of rotation (scaling, deploys) are not candidates, unless none is in
        // rotation; then ejection and health decide among all as before.
        let any_rotating = life.is_none_or(|l| l.rotating() > 0);
        let rotating = |i: usize| !any_rotating || life.is_none_or(|l| l.in_rotation(i));
        let any_eligible = replicas
            .iter()
            .enumerate()
            .any(|(i, r)| rotating(i) && r.eligible(now));
        let ok = |i: usize, r: &Replica| rotating(i) && (!any_eligible || r.eligible(now));
        let candidates = || replicas.iter().enumerate().filter(|(i, r)| ok(*i, r));
        match self.balancer {
            Balancer::RoundRobin => {
                for _ in 0..n {
                    let i = self.round_robin % n;
                    self.round_robin = (self.round_robin + 1) % n;
                    if ok(i, &replicas[i]) {
                        return i;
                    }
                }
                unreachable!("some replica is in rotation when none is eligible")
            }
            Balancer::Random => {
                let count = candidates().count() as u64;
                let k = uniform_below(&mut self.rng, count) as usize;
                candidates().nth(k).map_or(0, |(i, _)| i)
            }
            Balancer::LeastOutstanding => candidates()
                .min_by_key(|(i, r)| (r.outstanding(), *i))
                .map_or(0, |(i, _)| i),
            Balancer::PowerOfTwo => {
                // Two draws among the replicas in rotation (not rejection sampling over all
                // of them, which has no bound when few are in rotation).
                let eligible: u64 = candidates().count() as u64;
                let mut draw = || {
                    let k = uniform_below(&mut self.rng, eligible) as usize;
                    candidates().nth(k).map_or(0, |(i, _)| i)
                };
                let (a, b) = (draw(), draw());
                if replicas[b].outstanding() < replicas[a].outstanding() {
                    b
                } else {
                    a
                }
            }
        }
    }

    /// The replica an attempt goes to among `shard`: the rules of [`Balance::pick`], over
    /// the shard's replicas instead of all of them (its replicas in rotation, unless none
    /// is).
    fn pick_in(
        &mut self,
        shard: &[u32],
        replicas: &[Replica],
        life: Option<&Lifecycle>,
        now: SimTime,
    ) -> usize {
        let k = shard.len();
        if k == 1 {
            return shard[0] as usize;
        }
        let in_rotation = |i: u32| life.is_none_or(|l| l.in_rotation(i as usize));
        let any_rotating = shard.iter().any(|&i| in_rotation(i));
        let rotating = |i: u32| !any_rotating || in_rotation(i);
        let any_eligible = shard
            .iter()
            .any(|&i| rotating(i) && replicas[i as usize].eligible(now));
        let ok = |i: u32| rotating(i) && (!any_eligible || replicas[i as usize].eligible(now));
        let candidates = || shard.iter().copied().filter(|&i| ok(i));
        let rng = &mut self.rng;
        match self.balancer {
            Balancer::RoundRobin => {
                for _ in 0..k {
                    let i = shard[self.round_robin % k];
                    self.round_robin = self.round_robin.wrapping_add(1);
                    if ok(i) {
                        return i as usize;
                    }
                }
                unreachable!("some replica of the shard is in rotation when none is eligible")
            }
            Balancer::Random => {
                let count = candidates().count() as u64;
                let pick = uniform_below(rng, count) as usize;
                candidates().nth(pick).map_or(shard[0], |i| i) as usize
            }
            Balancer::LeastOutstanding => candidates()
                .min_by_key(|&i| (replicas[i as usize].outstanding(), i))
                .map_or(shard[0], |i| i) as usize,
            Balancer::PowerOfTwo => {
                let count = candidates().count() as u64;
                let mut draw = || {
                    let pick = uniform_below(rng, count) as usize;
                    candidates().nth(pick).map_or(shard[0], |i| i) as usize
                };
                let (a, b) = (draw(), draw());
                if replicas[b].outstanding() < replicas[a].outstanding() {
                    b
                } else {
                    a
                }
            }
        }
    }
}

/// Outlier detection (`o`): a caller saw an attempt of replica `r` fail at `now`; enough
/// failures in a row eject it, within the most replicas that may be ejected at once out of
/// the `rotating` in rotation. True if it was ejected.
pub fn eject(
    replicas: &mut [Replica],
    rotating: usize,
    o: &Outlier,
    now: SimTime,
    r: usize,
) -> bool {
    let failures = replicas[r].observed_failure();
    if failures < o.consecutive_failures || replicas[r].ejected(now) {
        return false;
    }
    let ejected = replicas.iter().filter(|x| x.ejected(now)).count();
    let allowed = ((rotating as f64 * o.max_ejection_percent / 100.0) as usize).max(1);
    if ejected >= allowed {
        return false;
    }
    replicas[r].eject(now.saturating_add(o.ejection));
    true
}

/// One round of active health checks (`h`) at `now` over the replicas in rotation of `life`
/// (a replica out of rotation is not probed: its endpoint is not registered); returns how
/// many it marked unhealthy.
pub fn health_check(
    replicas: &mut [Replica],
    life: &Lifecycle,
    h: &HealthCheck,
    queue_capacity: Option<u32>,
    now: SimTime,
) -> u64 {
    let mut marked = 0;
    for (i, r) in replicas.iter_mut().enumerate() {
        if !life.in_rotation(i) {
            continue;
        }
        let pass = life.is_up(i) && r.probe_passes(now, queue_capacity, h.timeout);
        if r.probe(pass, h.unhealthy_threshold, h.healthy_threshold) {
            marked += 1;
        }
    }
    marked
}
