//! The fallback decision.

use crate::ConfigError;
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};

/// Which levels of the chain are used. Defaults: cache values up to 5 minutes old, then a
/// static answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FallbackConfig {
    /// Serve a cached value when the primary fails.
    pub use_cache: bool,
    /// The oldest cached value worth serving.
    pub cache_age_max: SimDuration,
    /// Serve a static default when neither the primary nor the cache can answer.
    pub use_static: bool,
}

impl Default for FallbackConfig {
    fn default() -> Self {
        FallbackConfig {
            use_cache: true,
            cache_age_max: SimDuration::from_secs(300),
            use_static: true,
        }
    }
}

impl FallbackConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.use_cache && self.cache_age_max.is_zero() {
            return Err(ConfigError::new(
                "cache_age_max",
                "must be greater than 0s when use_cache is true; set use_cache: false instead",
            ));
        }
        Ok(())
    }
}

/// How the primary failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrimaryFailure {
    /// It answered with an error.
    Error,
    /// It did not answer in time.
    Timeout,
    /// A local guard refused the call (breaker open, limiter, bulkhead, shedder, budget).
    Rejected,
}

/// Why the cache was passed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheSkip {
    /// `use_cache` is false.
    Disabled,
    /// No cached value.
    Missing,
    /// The cached value is older than `cache_age_max`.
    Stale {
        /// Its age.
        age: SimDuration,
    },
}

/// Which source answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// The primary.
    Primary,
    /// The cached value, this old.
    Cache {
        /// Its age.
        age: SimDuration,
    },
    /// The static default.
    Static,
    /// Nothing: the request fails.
    Nothing,
}

/// Why the answer is degraded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Degradation {
    /// How the primary failed.
    pub primary: PrimaryFailure,
    /// Why the cache was passed over, if it was.
    pub cache: Option<CacheSkip>,
}

/// The decision: what was served and, unless it was the primary, why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FallbackResult {
    /// The source served.
    pub served: Served,
    /// `None` when the primary answered.
    pub degradation: Option<Degradation>,
}

impl FallbackResult {
    /// True when the answer did not come from the primary.
    pub fn is_degraded(&self) -> bool {
        self.degradation.is_some()
    }
}

/// A validated fallback chain.
#[derive(Debug, Clone, PartialEq)]
pub struct Fallback {
    config: FallbackConfig,
}

impl Fallback {
    /// From a config; fails with its first invalid field.
    pub fn new(config: FallbackConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Fallback { config })
    }

    /// What to serve at `now`, given how the primary ended (`Ok(())` for success) and when
    /// the cached value, if any, was stored.
    pub fn decide(
        &self,
        now: SimTime,
        primary: Result<(), PrimaryFailure>,
        cached_at: Option<SimTime>,
    ) -> FallbackResult {
        let Err(failure) = primary else {
            return FallbackResult {
                served: Served::Primary,
                degradation: None,
            };
        };
        let cache = if !self.config.use_cache {
            Err(CacheSkip::Disabled)
        } else {
            match cached_at {
                None => Err(CacheSkip::Missing),
                Some(at) => {
                    let age = now.saturating_duration_since(at);
                    if age <= self.config.cache_age_max {
                        Ok(age)
                    } else {
                        Err(CacheSkip::Stale { age })
                    }
                }
            }
        };
        let (served, skip) = match cache {
            Ok(age) => (Served::Cache { age }, None),
            Err(skip) if self.config.use_static => (Served::Static, Some(skip)),
            Err(skip) => (Served::Nothing, Some(skip)),
        };
        FallbackResult {
            served,
            degradation: Some(Degradation {
                primary: failure,
                cache: skip,
            }),
        }
    }
}
