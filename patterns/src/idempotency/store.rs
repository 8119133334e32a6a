//! The store.

use crate::ConfigError;
use crate::coalesce::WaiterId;
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::BTreeMap;

/// What a duplicate gets while the first request with its key is still running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum InFlightPolicy {
    /// An immediate conflict (HTTP 409): the client retries later (Stripe's behaviour).
    Conflict,
    /// Wait for the first request's result.
    Wait,
}

/// An idempotency-key store. Defaults: keys kept 24h (Stripe), duplicates in flight get a
/// conflict, 100000 keys, 100 waiters per key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IdempotencyConfig {
    /// How long a completed key replays its result.
    pub ttl: SimDuration,
    /// What a duplicate gets while the first is in flight.
    pub in_flight: InFlightPolicy,
    /// Keys held at most, at least 1.
    pub capacity: u32,
    /// Duplicates waiting on one key at most (with `Wait`), at least 1.
    pub max_waiters: u32,
}

impl Default for IdempotencyConfig {
    fn default() -> Self {
        IdempotencyConfig {
            ttl: SimDuration::from_secs(24 * 3600),
            in_flight: InFlightPolicy::Conflict,
            capacity: 100_000,
            max_waiters: 100,
        }
    }
}

impl IdempotencyConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.ttl.is_zero() {
            return Err(ConfigError::new(
                "ttl",
                "must be greater than 0s, or a retry could run the work again",
            ));
        }
        if self.capacity == 0 {
            return Err(ConfigError::new("capacity", "must be at least 1, got 0"));
        }
        if self.max_waiters == 0 {
            return Err(ConfigError::new("max_waiters", "must be at least 1, got 0"));
        }
        Ok(())
    }
}

/// What the server does with a request carrying a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begin<V> {
    /// Do the work, then [`IdempotencyStore::complete`] (or `abort`) the key.
    Execute,
    /// The work was done: answer with this stored result and run nothing.
    Replay {
        /// The result of the first execution.
        result: V,
    },
    /// The first request with this key is still running: answer 409, retry later.
    Conflict {
        /// When the first request started.
        since: SimTime,
    },
    /// Wait for the first request's result; it is handed to `waiter` on completion.
    Wait {
        /// Who to hand the result to.
        waiter: WaiterId,
    },
    /// The key was used for a different request: answer 422 (a client bug).
    FingerprintMismatch {
        /// The fingerprint stored with the key.
        stored: u64,
        /// The fingerprint of this request.
        given: u64,
    },
    /// The store is full of live keys, or too many duplicates wait on this key: answer 503.
    Full,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry<V> {
    InFlight {
        fingerprint: u64,
        since: SimTime,
        waiters: Vec<WaiterId>,
    },
    Done {
        fingerprint: u64,
        result: V,
        expires_at: SimTime,
    },
}

impl<V> Entry<V> {
    fn fingerprint(&self) -> u64 {
        match self {
            Entry::InFlight { fingerprint, .. } | Entry::Done { fingerprint, .. } => *fingerprint,
        }
    }

    fn expired(&self, now: SimTime) -> bool {
        matches!(self, Entry::Done { expires_at, .. } if *expires_at <= now)
    }
}

/// The store: keys of type `K`, results of type `V`.
#[derive(Debug, Clone, PartialEq)]
pub struct IdempotencyStore<K: Ord + Clone, V: Clone> {
    config: IdempotencyConfig,
    entries: BTreeMap<K, Entry<V>>,
    next_waiter: u64,
}

impl<K: Ord + Clone, V: Clone> IdempotencyStore<K, V> {
    /// From a config; fails with its first invalid field.
    pub fn new(config: IdempotencyConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(IdempotencyStore {
            config,
            entries: BTreeMap::new(),
            next_waiter: 0,
        })
    }

    /// A request with `key` and `fingerprint` arrives at `now`.
    pub fn begin(&mut self, now: SimTime, key: &K, fingerprint: u64) -> Begin<V> {
        if self.entries.get(key).is_some_and(|e| e.expired(now)) {
            self.entries.remove(key);
        }
        let begin = match self.entries.get_mut(key) {
            Some(entry) if entry.fingerprint() != fingerprint => Begin::FingerprintMismatch {
                stored: entry.fingerprint(),
                given: fingerprint,
            },
            Some(Entry::Done { result, .. }) => Begin::Replay {
                result: result.clone(),
            },
            Some(Entry::InFlight { since, waiters, .. }) => match self.config.in_flight {
                InFlightPolicy::Conflict => Begin::Conflict { since: *since },
                InFlightPolicy::Wait => {
                    if waiters.len() >= self.config.max_waiters as usize {
                        Begin::Full
                    } else {
                        let waiter = WaiterId(self.next_waiter);
                        self.next_waiter += 1;
                        waiters.push(waiter);
                        Begin::Wait { waiter }
                    }
                }
            },
            None => {
                if self.entries.len() >= self.config.capacity as usize {
                    self.entries.retain(|_, e| !e.expired(now));
                }
                if self.entries.len() >= self.config.capacity as usize {
                    Begin::Full
                } else {
                    self.entries.insert(
                        key.clone(),
                        Entry::InFlight {
                            fingerprint,
                            since: now,
                            waiters: Vec::new(),
                        },
                    );
                    Begin::Execute
                }
            }
        };
        self.check();
        begin
    }

    /// The work for `key` finished with `result`: store it for `ttl` and return the waiters
    /// to hand it to. Does nothing (and returns no one) if the key is not in flight.
    pub fn complete(&mut self, now: SimTime, key: &K, result: V) -> Vec<WaiterId> {
        let Some(Entry::InFlight {
            fingerprint,
            waiters,
            ..
        }) = self.entries.get_mut(key)
        else {
            return Vec::new();
        };
        let waiters = core::mem::take(waiters);
        let fingerprint = *fingerprint;
        self.entries.insert(
            key.clone(),
            Entry::Done {
                fingerprint,
                result,
                expires_at: now.saturating_add(self.config.ttl),
            },
        );
        self.check();
        waiters
    }

    /// The work for `key` failed without a result to keep: forget the key so that a retry
    /// executes, and return the waiters, who should retry.
    pub fn abort(&mut self, _now: SimTime, key: &K) -> Vec<WaiterId> {
        let waiters = match self.entries.get(key) {
            Some(Entry::InFlight { .. }) => match self.entries.remove(key) {
                Some(Entry::InFlight { waiters, .. }) => waiters,
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        self.check();
        waiters
    }

    /// True while the work for `key` runs.
    pub fn in_flight(&self, key: &K) -> bool {
        matches!(self.entries.get(key), Some(Entry::InFlight { .. }))
    }

    /// Keys held (in flight, done, and expired but not yet swept).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no key is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn check(&self) {
        assert!(self.entries.len() <= self.config.capacity as usize);
    }
}
