//! The single-flight table.

use crate::ConfigError;
use serde::{Deserialize, Serialize};
use sim_core::SimTime;
use std::collections::BTreeMap;

/// Bounds on a coalescer. Defaults: 10000 keys in flight, 1000 followers per key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CoalesceConfig {
    /// Keys with a call in flight, at least 1.
    pub max_keys: u32,
    /// Followers waiting on one call, at least 1.
    pub max_waiters: u32,
}

impl Default for CoalesceConfig {
    fn default() -> Self {
        CoalesceConfig {
            max_keys: 10_000,
            max_waiters: 1_000,
        }
    }
}

impl CoalesceConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max_keys == 0 {
            return Err(ConfigError::new("max_keys", "must be at least 1, got 0"));
        }
        if self.max_waiters == 0 {
            return Err(ConfigError::new("max_waiters", "must be at least 1, got 0"));
        }
        Ok(())
    }
}

/// Names one follower, so that the caller can hand it the leader's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WaiterId(pub u64);

/// Why a request could neither lead nor follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoalesceRejection {
    /// `max_keys` calls are in flight already.
    TooManyKeys,
    /// The call for this key has `max_waiters` followers already.
    TooManyWaiters,
}

/// What a request for a key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Join {
    /// Make the call, then [`Coalescer::complete`] the key.
    Lead,
    /// Wait for the leader's result.
    Follow {
        /// Who to hand the result to.
        waiter: WaiterId,
        /// When the leader's call started.
        since: SimTime,
    },
    /// Neither: fail (or call directly, uncoalesced) for this reason.
    Reject {
        /// Why.
        reason: CoalesceRejection,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Flight {
    since: SimTime,
    waiters: Vec<WaiterId>,
}

/// The single-flight table: at most one call in flight per key.
#[derive(Debug, Clone, PartialEq)]
pub struct Coalescer<K: Ord + Clone> {
    config: CoalesceConfig,
    flights: BTreeMap<K, Flight>,
    next_waiter: u64,
}

impl<K: Ord + Clone> Coalescer<K> {
    /// From a config; fails with its first invalid field.
    pub fn new(config: CoalesceConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Coalescer {
            config,
            flights: BTreeMap::new(),
            next_waiter: 0,
        })
    }

    /// A request for `key` arrives.
    pub fn join(&mut self, now: SimTime, key: &K) -> Join {
        let join = match self.flights.get_mut(key) {
            Some(flight) => {
                if flight.waiters.len() >= self.config.max_waiters as usize {
                    Join::Reject {
                        reason: CoalesceRejection::TooManyWaiters,
                    }
                } else {
                    let waiter = WaiterId(self.next_waiter);
                    self.next_waiter += 1;
                    flight.waiters.push(waiter);
                    Join::Follow {
                        waiter,
                        since: flight.since,
                    }
                }
            }
            None => {
                if self.flights.len() >= self.config.max_keys as usize {
                    Join::Reject {
                        reason: CoalesceRejection::TooManyKeys,
                    }
                } else {
                    self.flights.insert(
                        key.clone(),
                        Flight {
                            since: now,
                            waiters: Vec::new(),
                        },
                    );
                    Join::Lead
                }
            }
        };
        self.check();
        join
    }

    /// The leader's call for `key` ended (success or failure): returns the followers to hand
    /// its result to, in arrival order. Empty if no call was in flight.
    pub fn complete(&mut self, _now: SimTime, key: &K) -> Vec<WaiterId> {
        let waiters = self
            .flights
            .remove(key)
            .map(|f| f.waiters)
            .unwrap_or_default();
        self.check();
        waiters
    }

    /// True while a call for `key` is in flight.
    pub fn in_flight(&self, key: &K) -> bool {
        self.flights.contains_key(key)
    }

    /// Keys with a call in flight.
    pub fn len(&self) -> usize {
        self.flights.len()
    }

    /// True when no call is in flight.
    pub fn is_empty(&self) -> bool {
        self.flights.is_empty()
    }

    fn check(&self) {
        assert!(self.flights.len() <= self.config.max_keys as usize);
        assert!(
            self.flights
                .values()
                .all(|f| f.waiters.len() <= self.config.max_waiters as usize)
        );
    }
}
