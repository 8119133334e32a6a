//! Blast-radius isolation in the scenario format: a service's [`Isolation`] (cells, or
//! shuffle sharding), the [`Units`] its replicas are assigned to, and their validation.
//!
//! A *caller unit* is a tenant key: the key a request carries from its class's `tenants`
//! (see [`crate::format::schema::traffic`]), or key 0 for a client without classes and a class without
//! tenants. It is the unit a real cell router or shuffle-sharding table keys on (a customer,
//! an API key), and it is what makes "the callers that lost all their replicas" a count: a
//! tenant key is the one thing all of a customer's requests, retries and downstream calls
//! have in common, at every hop. The units of a scenario are every tenant key any of its
//! classes can draw, in key order ([`Units::of`]); every isolated service assigns each of them
//! replicas, whether or not the unit's requests reach it (the assignment is configuration, as
//! a real routing table is).
//!
//! - [`Isolation::Cells`]: the replicas are split into `count` cells of equal size (replica
//!   `r` is in cell `r / (replicas / count)`), and each unit is pinned to one cell, drawn
//!   uniformly. A failure that takes a cell down takes down the units of that cell, about
//!   `1 / count` of them.
//! - [`Isolation::ShuffleSharding`]: each unit gets its own `shard_size` distinct replicas,
//!   drawn uniformly among all `C(replicas, shard_size)` sets. A failure that takes down one
//!   unit's whole shard takes down the units that drew the same set, about
//!   `1 / C(replicas, shard_size)` of them (1/28 for 2 of 8), while many others lose part of
//!   their shard.
//!
//! The draws come from the service's own stream `services/NAME/isolation`, unit by unit in
//! key order; a service without isolation draws nothing. The balancer then picks among the
//! unit's replicas only, with its usual rule. A request whose tenant key is no unit's (a
//! lease refill of a distributed limiter carries none) is balanced over every replica.
//!
//! The world's side (the assignment tables, the tracking of units that lost their replicas,
//! the poison requests) is `world::sharding`.

use crate::format::limits::ASSIGNMENTS_MAX;
use crate::format::overrides::segment;
use crate::format::schema::{Client, FaultKind, Scenario, Service};
use serde::{Deserialize, Serialize};
use sim_core::ConfigError;
use std::collections::BTreeMap;

/// How a service's replicas are split among its callers (see the [module](self) docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Isolation {
    /// Cells: the replicas split into `count` equal cells, each caller unit pinned to one.
    Cells {
        /// How many cells (a divisor of the service's replicas).
        count: u32,
    },
    /// Shuffle sharding: each caller unit gets its own random `shard_size` of the replicas.
    ShuffleSharding {
        /// Replicas per unit (at least 1, at most the service's replicas).
        shard_size: u32,
    },
}

impl Isolation {
    /// How many replicas each unit may use out of `replicas`.
    pub fn replicas_per_unit(self, replicas: u32) -> u32 {
        match self {
            Isolation::Cells { count } => replicas / count.max(1),
            Isolation::ShuffleSharding { shard_size } => shard_size,
        }
    }

    /// Its name in reports (`cells`, `shuffle_sharding`).
    pub fn name(self) -> &'static str {
        match self {
            Isolation::Cells { .. } => "cells",
            Isolation::ShuffleSharding { .. } => "shuffle_sharding",
        }
    }

    /// Checks it against the service's `replicas`; field names are relative to it.
    pub fn validate(self, replicas: u32) -> Result<(), ConfigError> {
        match self {
            Isolation::Cells { count } => {
                if count == 0 {
                    return Err(ConfigError::new(
                        "count",
                        "must be at least 1, got 0; write 2 or more to split the replicas into cells",
                    ));
                }
                if count > replicas {
                    return Err(ConfigError::new(
                        "count",
                        format!(
                            "the service has {replicas} replicas, too few for {count} cells; raise `replicas` or lower `count`"
                        ),
                    ));
                }
                if !replicas.is_multiple_of(count) {
                    return Err(ConfigError::new(
                        "count",
                        format!(
                            "must divide the service's {replicas} replicas into equal cells, got {count}; pick a divisor of {replicas} or change `replicas`"
                        ),
                    ));
                }
            }
            Isolation::ShuffleSharding { shard_size } => {
                if shard_size == 0 {
                    return Err(ConfigError::new(
                        "shard_size",
                        "must be at least 1, got 0 (a unit needs a replica to call)",
                    ));
                }
                if shard_size > replicas {
                    return Err(ConfigError::new(
                        "shard_size",
                        format!(
                            "must be at most the service's {replicas} replicas, got {shard_size}; lower it or raise `replicas`"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The caller units of a scenario: every tenant key its classes can draw, as sorted,
/// disjoint ranges of keys.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Units {
    /// `(first key, count)`, sorted by key, neither overlapping nor touching.
    ranges: Vec<(u32, u32)>,
}

impl Units {
    /// The units of scenario `s`.
    pub fn of(s: &Scenario) -> Units {
        Units::of_clients(s.clients.values())
    }

    /// The units of these clients: each class's tenant keys, or key 0.
    pub fn of_clients<'a>(clients: impl Iterator<Item = &'a Client>) -> Units {
        // Key ranges as half-open u64 intervals, merged by a map on their start.
        let mut spans: BTreeMap<u64, u64> = BTreeMap::new();
        let mut add = |first: u64, end: u64| {
            let e = spans.entry(first).or_insert(end);
            *e = (*e).max(end);
        };
        for c in clients {
            if c.classes.is_empty() {
                add(0, 1);
            }
            for class in &c.classes {
                match &class.tenants {
                    Some(t) => add(
                        u64::from(t.first),
                        u64::from(t.first) + u64::from(t.keys.max(1)),
                    ),
                    None => add(0, 1),
                }
            }
        }
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for (first, end) in spans {
            match ranges.last_mut() {
                Some(last) if first <= last.1 => last.1 = last.1.max(end),
                _ => ranges.push((first, end)),
            }
        }
        Units {
            ranges: ranges
                .into_iter()
                // A range that reaches past u32::MAX keys is cut there (validation refuses
                // tenants past it anyway).
                .map(|(f, e)| {
                    (
                        f as u32,
                        (e.min(1 << 32) - f).min(u64::from(u32::MAX)) as u32,
                    )
                })
                .collect(),
        }
    }

    /// How many units.
    pub fn len(&self) -> u64 {
        self.ranges.iter().map(|&(_, n)| u64::from(n)).sum()
    }

    /// Whether there are none (a scenario without clients).
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The index (from 0, in key order) of the unit of tenant `key`, if it is one.
    pub fn index_of(&self, key: u32) -> Option<u64> {
        let mut before = 0u64;
        for &(first, n) in &self.ranges {
            if key < first {
                return None;
            }
            if u64::from(key) < u64::from(first) + u64::from(n) {
                return Some(before + u64::from(key - first));
            }
            before += u64::from(n);
        }
        None
    }

    /// A few of its keys for a message: `0–9, 100–199`.
    pub fn describe(&self) -> String {
        let shown: Vec<String> = self
            .ranges
            .iter()
            .take(4)
            .map(|&(f, n)| {
                if n == 1 {
                    f.to_string()
                } else {
                    format!("{f}–{}", u64::from(f) + u64::from(n) - 1)
                }
            })
            .collect();
        let more = if self.ranges.len() > 4 { ", …" } else { "" };
        format!("{}{more}", shown.join(", "))
    }
}

/// Checks every service's `isolation` against the scenario's units, and that every `Poison`
/// fault names a tenant key some client sends.
pub fn check(s: &Scenario) -> Result<(), ConfigError> {
    let uses = s.services.values().any(|sv| sv.isolation.is_some())
        || s.faults
            .iter()
            .any(|f| matches!(f.kind, FaultKind::Poison { .. }));
    if !uses {
        return Ok(());
    }
    let units = Units::of(s);
    for (name, sv) in &s.services {
        check_service(&format!("services.{}", segment(name)), sv, &units)?;
    }
    for (i, f) in s.faults.iter().enumerate() {
        check_poison(&format!("faults[{i}].kind"), &f.kind, &units)?;
    }
    Ok(())
}

/// Checks that a `BlastRadiusAtMost` expectation at `path` names a service that reports its
/// blast radius.
pub fn check_expectation(path: &str, service: &str, s: &Scenario) -> Result<(), ConfigError> {
    let field = format!("{path}.service");
    let Some(sv) = s.services.get(service) else {
        let names: Vec<String> = s
            .services
            .keys()
            .take(12)
            .map(|n| format!("{n:?}"))
            .collect();
        return Err(ConfigError::new(
            field,
            format!(
                "unknown service {service:?}; known services: {}",
                names.join(", ")
            ),
        ));
    };
    let poisoned = s
        .faults
        .iter()
        .any(|f| matches!(&f.kind, FaultKind::Poison { service: p, .. } if p == service));
    if sv.isolation.is_none() && !poisoned {
        return Err(ConfigError::new(
            field,
            format!(
                "service {service:?} reports no blast radius: give it an `isolation` (Cells(count: N) or ShuffleSharding(shard_size: K)) or aim a `Poison` fault at it"
            ),
        ));
    }
    Ok(())
}

/// Checks a service's `isolation` at `path` (`services.NAME`) against the scenario's units.
fn check_service(path: &str, sv: &Service, units: &Units) -> Result<(), ConfigError> {
    let Some(iso) = sv.isolation else {
        return Ok(());
    };
    let at = format!("{path}.isolation");
    iso.validate(sv.replicas).map_err(|e| e.at(&at))?;
    let per_unit = match iso {
        // A cell keeps one number per unit.
        Isolation::Cells { .. } => 1,
        Isolation::ShuffleSharding { shard_size } => u64::from(shard_size),
    };
    let assignments = units.len().saturating_mul(per_unit);
    if assignments > ASSIGNMENTS_MAX {
        return Err(ConfigError::new(
            at,
            format!(
                "{} caller units (tenant keys) × {per_unit} replicas each is {assignments} assignments, more than {ASSIGNMENTS_MAX}; use fewer tenant keys or a smaller shard",
                units.len()
            ),
        ));
    }
    Ok(())
}

/// Checks a `Poison` fault's tenant at `path` (`faults[i].kind`): it must be a unit.
fn check_poison(path: &str, kind: &FaultKind, units: &Units) -> Result<(), ConfigError> {
    let FaultKind::Poison { tenant, .. } = kind else {
        return Ok(());
    };
    if units.index_of(*tenant).is_none() {
        return Err(ConfigError::new(
            format!("{path}.tenant"),
            format!(
                "no client sends requests of tenant {tenant}; the scenario's tenant keys are {} (a class's `tenants: (keys: N, first: F)` gives F to F+N-1, a client without classes sends tenant 0)",
                units.describe()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(ranges: &[(u32, u32)]) -> Units {
        Units {
            ranges: ranges.to_vec(),
        }
    }

    #[test]
    fn a_key_is_found_by_its_rank_among_every_range() {
        let u = units(&[(0, 1), (10, 5)]);
        assert_eq!(u.len(), 6);
        assert_eq!(u.index_of(0), Some(0));
        assert_eq!(u.index_of(10), Some(1));
        assert_eq!(u.index_of(14), Some(5));
        assert_eq!(u.index_of(5), None);
        assert_eq!(u.index_of(15), None);
        assert_eq!(u.describe(), "0, 10–14");
    }

    #[test]
    fn cells_must_divide_the_replicas_and_shards_fit_in_them() {
        assert!(Isolation::Cells { count: 4 }.validate(8).is_ok());
        let e = Isolation::Cells { count: 3 }.validate(8).unwrap_err();
        assert!(e.to_string().contains("divisor of 8"), "{e}");
        assert!(Isolation::Cells { count: 9 }.validate(8).is_err());
        assert!(Isolation::Cells { count: 0 }.validate(8).is_err());
        assert!(
            Isolation::ShuffleSharding { shard_size: 8 }
                .validate(8)
                .is_ok()
        );
        assert!(
            Isolation::ShuffleSharding { shard_size: 9 }
                .validate(8)
                .is_err()
        );
        assert!(
            Isolation::ShuffleSharding { shard_size: 0 }
                .validate(8)
                .is_err()
        );
    }
}
