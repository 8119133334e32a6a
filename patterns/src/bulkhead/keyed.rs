//! [`KeyedBulkhead`]: a cap on requests in flight per key (tenant, user, API key), so one
//! key's flood cannot take every worker.

use super::BULKHEAD_SIZE_MAX;
use crate::ConfigError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A per-key bulkhead's configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyedBulkheadConfig {
    /// Requests of one key in flight at once (at least 1).
    pub max_concurrent: u32,
    /// The most keys with requests in flight at once; a request of another key is refused
    /// while that many keys hold a slot. `None`: as many keys as come (the table holds only
    /// keys with requests in flight, so it is bounded by the requests in flight anyway).
    #[serde(default)]
    pub max_keys: Option<u32>,
}

impl KeyedBulkheadConfig {
    /// Checks that both caps are at least 1 and at most [`BULKHEAD_SIZE_MAX`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        let within = |field: &str, v: u32| {
            if v == 0 || v > BULKHEAD_SIZE_MAX {
                Err(ConfigError::new(
                    field,
                    format!("must be 1 to {BULKHEAD_SIZE_MAX}, got {v}"),
                ))
            } else {
                Ok(())
            }
        };
        within("max_concurrent", self.max_concurrent)?;
        if let Some(k) = self.max_keys {
            within("max_keys", k)?;
        }
        Ok(())
    }
}

/// Why a [`KeyedBulkhead`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyedRejection {
    /// The key has `max_concurrent` requests in flight.
    KeyFull,
    /// `max_keys` other keys have requests in flight.
    TooManyKeys,
}

/// Requests in flight per key, each key capped at `max_concurrent`.
///
/// ```text
///   acquire(key) ──▶ key in flight < max_concurrent? ── no ──▶ KeyFull
///                        │ yes (a new key: fewer than max_keys keys in flight? no ──▶ TooManyKeys)
///                        ▼
///                    in_flight[key] += 1 ── release(key) ──▶ in_flight[key] -= 1 (0: forgotten)
/// ```
///
/// Keys live in a `BTreeMap` (an ordered table, so nothing depends on hashing) and only
/// while they have requests in flight.
#[derive(Debug, Clone)]
pub struct KeyedBulkhead<K: Ord> {
    config: KeyedBulkheadConfig,
    in_flight: BTreeMap<K, u32>,
}

impl<K: Ord + Clone> KeyedBulkhead<K> {
    /// An empty bulkhead; fails if the config does not validate.
    pub fn new(config: &KeyedBulkheadConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(KeyedBulkhead {
            config: config.clone(),
            in_flight: BTreeMap::new(),
        })
    }

    /// Takes a slot for `key`, or says why not.
    pub fn try_acquire(&mut self, key: &K) -> Result<(), KeyedRejection> {
        match self.in_flight.get_mut(key) {
            Some(n) if *n >= self.config.max_concurrent => Err(KeyedRejection::KeyFull),
            Some(n) => {
                *n += 1;
                Ok(())
            }
            None => {
                let keys = self.in_flight.len();
                if self.config.max_keys.is_some_and(|m| keys >= m as usize) {
                    return Err(KeyedRejection::TooManyKeys);
                }
                self.in_flight.insert(key.clone(), 1);
                Ok(())
            }
        }
    }

    /// Gives back a slot of `key`.
    ///
    /// # Panics
    ///
    /// If `key` holds no slot: a release without its acquire is a bug of the caller.
    pub fn release(&mut self, key: &K) {
        let n = self
            .in_flight
            .get_mut(key)
            .expect("a released key holds a slot");
        *n -= 1;
        if *n == 0 {
            self.in_flight.remove(key);
        }
    }

    /// Requests of `key` in flight.
    pub fn in_flight(&self, key: &K) -> u32 {
        self.in_flight.get(key).copied().unwrap_or(0)
    }

    /// Keys with requests in flight.
    pub fn keys(&self) -> usize {
        self.in_flight.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulkhead(max_concurrent: u32, max_keys: Option<u32>) -> KeyedBulkhead<u32> {
        KeyedBulkhead::new(&KeyedBulkheadConfig {
            max_concurrent,
            max_keys,
        })
        .unwrap()
    }

    #[test]
    fn each_key_is_capped_on_its_own() {
        let mut b = bulkhead(2, None);
        assert_eq!(b.try_acquire(&7), Ok(()));
        assert_eq!(b.try_acquire(&7), Ok(()));
        assert_eq!(b.try_acquire(&7), Err(KeyedRejection::KeyFull));
        // Another key is not touched by key 7's flood.
        assert_eq!(b.try_acquire(&8), Ok(()));
        assert_eq!((b.in_flight(&7), b.in_flight(&8), b.keys()), (2, 1, 2));
        b.release(&7);
        assert_eq!(b.try_acquire(&7), Ok(()));
        b.release(&8);
        assert_eq!((b.in_flight(&8), b.keys()), (0, 1));
    }

    #[test]
    fn max_keys_caps_the_keys_in_flight_and_frees_a_key_that_empties() {
        let mut b = bulkhead(5, Some(2));
        assert_eq!(b.try_acquire(&1), Ok(()));
        assert_eq!(b.try_acquire(&2), Ok(()));
        assert_eq!(b.try_acquire(&3), Err(KeyedRejection::TooManyKeys));
        // A key already in flight still gets its slots.
        assert_eq!(b.try_acquire(&2), Ok(()));
        b.release(&1);
        assert_eq!(b.try_acquire(&3), Ok(()));
    }

    #[test]
    fn invalid_configs_name_their_field() {
        let e = |c: u32, k: Option<u32>| {
            KeyedBulkheadConfig {
                max_concurrent: c,
                max_keys: k,
            }
            .validate()
            .unwrap_err()
            .to_string()
        };
        assert_eq!(e(0, None), "max_concurrent: must be 1 to 1000000, got 0");
        assert_eq!(e(1, Some(0)), "max_keys: must be 1 to 1000000, got 0");
    }
}
