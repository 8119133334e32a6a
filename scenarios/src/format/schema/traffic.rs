//! Traffic classes and tenants: the attributes a request carries ([`RequestClass`],
//! [`Priority`], [`Tenants`]) and the admission layers that read them ([`KeyedLimit`]), as scenario-file types, with their validation.
//!
//! A client may declare a mix of request classes (`classes: [..]`); each request picks one in
//! proportion to the shares, from the client's stream `clients/NAME/classes`, and, when the
//! class has tenants, a tenant key from the class's own stream
//! `clients/NAME/classes/CLASS/tenants`, so adding a class to one client shifts no other
//! stream. A client without classes sends every request as one default class (priority
//! `Critical`, cost 1, tenant 0, retries allowed) and draws nothing: its runs are the runs it
//! had before classes existed.
//!
//! The attributes travel with the request through every hop: a service's downstream calls
//! inherit the class, priority, cost, tenant and retry safety of the request they serve, as
//! gRPC's criticality and a tenant header propagate.

use crate::format::limits::{
    CLASSES_MAX, PRIORITY_LEVEL_MAX, TENANT_KEYS_MAX, TENANTS_REPORTED_MAX,
};
use patterns::ConfigError;
use patterns::limiter::{LimiterConfig, WhenFull};
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;

/// One class of a client's requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestClass {
    /// Its name, in reports and expectations.
    pub name: String,
    /// Its share of the client's requests, relative to the other classes' shares (they need
    /// not sum to 1, but to more than 0).
    pub share: f64,
    /// How important its requests are (Google SRE's criticality, or a level 0–63).
    #[serde(default)]
    pub priority: Priority,
    /// The tokens one of its requests takes from every rate limiter on its way (at least 1).
    #[serde(default = "default_cost")]
    pub cost: u32,
    /// The tenants (users, API keys) its requests come from; without it, all come from
    /// tenant 0.
    #[serde(default)]
    pub tenants: Option<Tenants>,
    /// Whether its requests may be retried and hedged (false: never, at any hop, whatever the
    /// call's stack says).
    #[serde(default = "default_retry")]
    pub retry: bool,
}

fn default_cost() -> u32 {
    1
}

fn default_retry() -> bool {
    true
}

/// How important a request is: Google SRE's four criticalities, or a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Priority {
    /// The most important: the user sees its failure at once (level 3).
    CriticalPlus,
    /// The default of production requests (level 2).
    #[default]
    Critical,
    /// May be dropped under overload, retried later (level 1).
    SheddablePlus,
    /// Batch work, the first to go (level 0).
    Sheddable,
    /// A level from 0 (least important) to 63.
    Level(u8),
}

impl Priority {
    /// Its level: 0 is the least important. Criticalities are levels 0 to 3, so a
    /// `Priority` shedder's four default thresholds are for them, least important first.
    pub fn level(self) -> u8 {
        match self {
            Priority::Sheddable => 0,
            Priority::SheddablePlus => 1,
            Priority::Critical => 2,
            Priority::CriticalPlus => 3,
            Priority::Level(n) => n,
        }
    }
}

/// The tenant keys a class's requests come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tenants {
    /// How many keys: `first` to `first + keys - 1`.
    pub keys: u32,
    /// The first key (so two classes or two clients can have tenants of their own).
    #[serde(default)]
    pub first: u32,
    /// How requests spread over the keys.
    #[serde(default)]
    pub popularity: Popularity,
    /// How many of the most popular keys the report shows one by one (the rest as
    /// "others"); the key of rank i is `first + i`.
    #[serde(default = "default_reported")]
    pub reported: u32,
}

fn default_reported() -> u32 {
    10
}

/// How requests spread over tenant keys.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Popularity {
    /// Every key equally likely.
    #[default]
    Uniform,
    /// The key of rank i (from 0) has weight 1 / (i + 1)^exponent: a few heavy tenants and
    /// a long tail.
    Zipf {
        /// The skew (1 is the classic Zipf law; 0 would be uniform).
        exponent: f64,
    },
}

/// What a rate-limit admission layer keys on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum LimitKey {
    /// One limiter for every request of the service.
    #[default]
    Global,
    /// One limiter per tenant key.
    Tenant,
}

/// A rate limit at a service's admission that may key on the tenant, charge the class's
/// cost, and run in shadow mode ([`patterns::limiter::Keyed`], [`patterns::limiter::Shadow`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyedLimit {
    /// The limiter (per key with `key: Tenant`).
    pub limiter: LimiterConfig,
    /// What it keys on.
    #[serde(default)]
    pub key: LimitKey,
    /// Per tenant: the most keys held at once.
    #[serde(default = "default_max_keys")]
    pub max_keys: usize,
    /// Per tenant: how long a key goes unused before it is forgotten (never before its
    /// limiter is back at rest).
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout: SimDuration,
    /// Per tenant: what a full registry does with a new key.
    #[serde(default = "default_when_full")]
    pub when_full: WhenFull,
    /// Decide and count, but admit everything: the report's `shadow_refusals` says what
    /// enforcement would have refused.
    #[serde(default)]
    pub shadow: bool,
}

fn default_max_keys() -> usize {
    10_000
}

fn default_idle_timeout() -> SimDuration {
    SimDuration::from_secs(60)
}

fn default_when_full() -> WhenFull {
    WhenFull::RejectNewKeys
}

fn err(field: impl Into<String>, reason: impl Into<String>) -> ConfigError {
    ConfigError::new(field, reason)
}

/// Checks a client's classes; `path` is `clients.NAME.classes`.
pub fn validate_classes(path: &str, classes: &[RequestClass]) -> Result<(), ConfigError> {
    if classes.len() > CLASSES_MAX {
        return Err(err(
            path,
            format!(
                "at most {CLASSES_MAX} classes per client, got {}; merge classes that share their attributes",
                classes.len()
            ),
        ));
    }
    let mut total = 0.0;
    for (i, c) in classes.iter().enumerate() {
        let cpath = format!("{path}[{i}]");
        if c.name.trim().is_empty() {
            return Err(err(format!("{cpath}.name"), "must not be empty"));
        }
        if let Some(j) = classes[..i].iter().position(|o| o.name == c.name) {
            return Err(err(
                format!("{cpath}.name"),
                format!(
                    "class {:?} is declared twice (also {path}[{j}]); rename one",
                    c.name
                ),
            ));
        }
        if !(c.share.is_finite() && c.share >= 0.0) {
            return Err(err(
                format!("{cpath}.share"),
                format!("must be a finite number of at least 0, got {}", c.share),
            ));
        }
        total += c.share;
        if let Priority::Level(n) = c.priority
            && n > PRIORITY_LEVEL_MAX
        {
            return Err(err(
                format!("{cpath}.priority"),
                format!(
                    "a level must be 0 to {PRIORITY_LEVEL_MAX}, got {n}; or write CriticalPlus, Critical, SheddablePlus or Sheddable"
                ),
            ));
        }
        if c.cost == 0 {
            return Err(err(
                format!("{cpath}.cost"),
                "must be at least 1 token, got 0",
            ));
        }
        if let Some(t) = &c.tenants {
            tenants(&format!("{cpath}.tenants"), t)?;
        }
    }
    if !classes.is_empty() && total <= 0.0 {
        return Err(err(
            path,
            "the classes' shares sum to 0; give at least one class a positive share",
        ));
    }
    Ok(())
}

fn tenants(path: &str, t: &Tenants) -> Result<(), ConfigError> {
    if t.keys == 0 {
        return Err(err(
            format!("{path}.keys"),
            "must be at least 1, got 0: a key distribution needs keys to draw from",
        ));
    }
    if t.keys > TENANT_KEYS_MAX {
        return Err(err(
            format!("{path}.keys"),
            format!("must be at most {TENANT_KEYS_MAX}, got {}", t.keys),
        ));
    }
    if u64::from(t.first) + u64::from(t.keys) > u64::from(u32::MAX) + 1 {
        return Err(err(
            format!("{path}.first"),
            format!(
                "first + keys must be at most 2^32 (keys are 32-bit), got {} + {}",
                t.first, t.keys
            ),
        ));
    }
    if t.reported > TENANTS_REPORTED_MAX {
        return Err(err(
            format!("{path}.reported"),
            format!(
                "must be at most {TENANTS_REPORTED_MAX}, got {}; the rest are reported as others",
                t.reported
            ),
        ));
    }
    if let Popularity::Zipf { exponent } = t.popularity
        && !(exponent.is_finite() && (0.0..=10.0).contains(&exponent))
    {
        return Err(err(
            format!("{path}.popularity.exponent"),
            format!("must be between 0 and 10, got {exponent}"),
        ));
    }
    Ok(())
}

/// Checks a keyed limit; `path` is its admission entry.
pub fn validate_keyed_limit(path: &str, k: &KeyedLimit) -> Result<(), ConfigError> {
    k.limiter
        .validate()
        .map_err(|e| e.at(&format!("{path}.limiter")))?;
    if k.max_keys == 0 {
        return Err(err(format!("{path}.max_keys"), "must be at least 1, got 0"));
    }
    if k.max_keys > TENANT_KEYS_MAX as usize {
        return Err(err(
            format!("{path}.max_keys"),
            format!("must be at most {TENANT_KEYS_MAX}, got {}", k.max_keys),
        ));
    }
    if k.idle_timeout > SimDuration::CONFIG_MAX {
        return Err(err(
            format!("{path}.idle_timeout"),
            "must be at most 100 years (\"100y\")",
        ));
    }
    Ok(())
}
