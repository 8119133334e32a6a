//! [`Keyed`]: one limiter per key, with idle keys forgotten and the number of keys capped.

use super::any::{Limiter, LimiterConfig};
use super::decision::{Cost, RateDecision, RateLimiter, RateOutcome, RateRejection};
use crate::ConfigError;
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::BTreeMap;

/// What a full registry does with a key it has not seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WhenFull {
    /// Refuse the request with [`RateRejection::TooManyKeys`]; known keys are unaffected.
    RejectNewKeys,
    /// Forget the key that would have been forgotten soonest, giving it a fresh limit on its
    /// next request: fails open for that key, but new keys always get in.
    EvictSoonest,
}

/// One limiter per key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyedConfig {
    /// The limiter each key gets.
    pub limiter: LimiterConfig,
    /// The most keys held at once.
    pub max_keys: usize,
    /// How long a key must go unused before it is forgotten. A key is never forgotten before
    /// its limiter is back at rest, so forgetting never hands out extra credit.
    pub idle_timeout: SimDuration,
    /// What to do with a new key when `max_keys` are held.
    pub when_full: WhenFull,
}

impl Default for KeyedConfig {
    /// The default limiter per key, up to 10 000 keys, forgotten after 60s idle, new keys
    /// refused when full (so a flood of keys cannot reset the limits of the others).
    fn default() -> Self {
        KeyedConfig {
            limiter: LimiterConfig::default(),
            max_keys: 10_000,
            idle_timeout: SimDuration::from_secs(60),
            when_full: WhenFull::RejectNewKeys,
        }
    }
}

impl KeyedConfig {
    /// Checks the limiter (`limiter.field`) and that `max_keys` is at least 1.
    pub fn validate(&self) -> Result<(), ConfigError> {
        Limiter::new(&self.limiter).map_err(|e| e.at("limiter"))?;
        if self.max_keys == 0 {
            return Err(ConfigError::new("max_keys", "must be at least 1, got 0"));
        }
        Ok(())
    }
}

/// The latest expiry a call at `now` may forget. An expiry of [`SimTime::MAX`] is a reset
/// time that saturated at the end of representable time, not one the limiter reaches, so it
/// never makes a key idle (a limiter used at `SimTime::MAX` is not back at rest there).
fn forgettable_until(now: SimTime) -> SimTime {
    now.min(SimTime::MAX.saturating_sub(SimDuration::from_nanos(1)))
}

#[derive(Debug, Clone)]
struct Entry {
    limiter: Limiter,
    /// When this key may be forgotten: the later of idle timeout and rest.
    expiry: SimTime,
}

/// A registry of limiters by key (`BTreeMap`, so iteration order never depends on hashing).
///
/// Each key's limiter is created on first use. A key is forgotten once it has been idle for
/// `idle_timeout` *and* its limiter is back at rest (the later of the two), so a forgotten key
/// comes back to exactly the state it left. Forgetting happens lazily on each call, oldest
/// first.
///
/// The expiry index holds one entry per key, possibly earlier than the key's real expiry: a
/// call on a known key only moves the expiry in its entry (one map lookup, no re-indexing),
/// and the index entry is corrected when it comes up. Since every index time is at most the
/// real one, the first index entry found correct is the true soonest.
#[derive(Debug, Clone)]
pub struct Keyed<K: Ord + Clone> {
    config: KeyedConfig,
    entries: BTreeMap<K, Entry>,
    /// (indexed expiry, sequence number) → key, earliest first; one per key.
    by_expiry: BTreeMap<(SimTime, u64), K>,
    seq: u64,
    evicted: u64,
    last: SimTime,
}

impl<K: Ord + Clone> Keyed<K> {
    /// An empty registry; fails if the config does not validate.
    pub fn new(config: &KeyedConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Keyed {
            config: config.clone(),
            entries: BTreeMap::new(),
            by_expiry: BTreeMap::new(),
            seq: 0,
            evicted: 0,
            last: SimTime::ZERO,
        })
    }

    /// Keys held now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no key is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Keys forgotten so far (idle or evicted to make room).
    pub fn forgotten(&self) -> u64 {
        self.evicted
    }

    /// True when `key` has a limiter.
    pub fn contains(&self, key: &K) -> bool {
        self.entries.contains_key(key)
    }

    fn index(&mut self, expiry: SimTime, key: K) {
        self.seq += 1;
        self.by_expiry.insert((expiry, self.seq), key);
    }

    /// Pops the key with the soonest real expiry if it is at most `until`, correcting stale
    /// index entries on the way; returns it with its expiry.
    fn pop_soonest(&mut self, until: SimTime) -> Option<(K, SimTime)> {
        while let Some((&(at, seq), _)) = self.by_expiry.first_key_value() {
            if at > until {
                return None;
            }
            let key = self.by_expiry.remove(&(at, seq)).expect("first key exists");
            let expiry = self
                .entries
                .get(&key)
                .expect("indexed key has an entry")
                .expiry;
            assert!(expiry >= at, "index later than the real expiry");
            if expiry == at {
                return Some((key, expiry));
            }
            self.index(expiry, key);
        }
        None
    }

    fn forget_idle(&mut self, now: SimTime) {
        while let Some((key, _)) = self.pop_soonest(forgettable_until(now)) {
            let entry = self.entries.remove(&key).expect("indexed key has an entry");
            assert!(
                entry.limiter.at_rest(now),
                "forgot a key whose limiter is not at rest"
            );
            self.evicted += 1;
        }
    }

    /// Decide for `key` without charging it or creating it.
    pub fn peek(&self, now: SimTime, key: &K, cost: Cost) -> RateDecision {
        let now = now.max(self.last);
        match self.entries.get(key) {
            Some(e) => e.limiter.peek(now, cost),
            None => {
                let fresh = Limiter::new(&self.config.limiter).expect("validated config");
                let mut d = fresh.peek(now, cost);
                // Full, and no key would be forgotten by now: acquire would refuse the key.
                let until = forgettable_until(now);
                let full = self.entries.len() >= self.config.max_keys
                    && self.entries.values().all(|e| e.expiry > until);
                if full && self.config.when_full == WhenFull::RejectNewKeys {
                    d.outcome = RateOutcome::Reject(RateRejection::TooManyKeys {
                        max_keys: self.config.max_keys,
                    });
                    d.retry_after = None;
                    d.delay = SimDuration::ZERO;
                }
                d
            }
        }
    }

    /// Decide for `key` and charge it on admit; creates the key's limiter on first use.
    pub fn acquire(&mut self, now: SimTime, key: &K, cost: Cost) -> RateDecision {
        let now = now.max(self.last);
        self.last = now;
        self.forget_idle(now);
        let idle_until = now.saturating_add(self.config.idle_timeout);
        if let Some(entry) = self.entries.get_mut(key) {
            let d = entry.limiter.acquire(now, cost);
            // Only ever later: the index entry stays at or before it.
            entry.expiry = entry.expiry.max(idle_until.max(d.reset_at));
            return d;
        }
        if self.entries.len() >= self.config.max_keys {
            match self.config.when_full {
                WhenFull::RejectNewKeys => {
                    let d = self.peek(now, key, cost);
                    assert!(!d.allowed(), "peek admits a key acquire refuses");
                    return d;
                }
                WhenFull::EvictSoonest => {
                    let (victim, _) = self.pop_soonest(SimTime::MAX).expect("full registry");
                    self.entries.remove(&victim);
                    self.evicted += 1;
                }
            }
        }
        let mut limiter = Limiter::new(&self.config.limiter).expect("validated config");
        let d = limiter.acquire(now, cost);
        let expiry = idle_until.max(d.reset_at);
        self.entries.insert(key.clone(), Entry { limiter, expiry });
        self.index(expiry, key.clone());
        assert!(
            self.entries.len() <= self.config.max_keys,
            "registry above max_keys"
        );
        assert_eq!(
            self.entries.len(),
            self.by_expiry.len(),
            "index out of step"
        );
        d
    }
}
