//! Where a service's rate limiter keeps its state, and fan-out to many leaves: the scenario
//! types ([`DistributedLimiter`], [`LimiterState`], [`StoreClock`], [`OnStoreFailure`],
//! [`FanOut`]) and their validation ([`validate_limiter`], [`validate_fan_out`]).
//!
//! A limiter in a service's `admission` list written as `Distributed(..)` names where its
//! state lives:
//!
//! ```text
//!  Local                 each replica its own bucket: N replicas admit N × the limit
//!  Central(atomic)       replica ──script──► store ──decision──► replica      (1 round-trip)
//!  Central(not atomic)   replica ──read──► store, compute, ──write──► store   (2 round-trips:
//!                        decisions that read the same state both admit: over-admission)
//!  Lease(batch)          replica ──take b tokens──► store, then b local decisions
//! ```
//!
//! The store is an ordinary service of the scenario: its latency, workers, queue and faults
//! are the world's own, and the script runs at the end of its work. A store call has a
//! timeout and may have a breaker; a call that fails is decided by `on_store_failure`.
//!
//! These types live here rather than in [`crate::format::schema`] so that the schema file only
//! names them; the world's side is `world::distributed` and `world::fanout`.

use crate::format::limits::{FAN_OUT_MAX, LEASE_BATCH_MAX};
use patterns::ConfigError;
pub use patterns::breaker::BreakerConfig;
pub use patterns::limiter::LimiterConfig;
use patterns::limiter::{Cost, Limiter, RateLimiter};
use serde::{Deserialize, Serialize};
use sim_core::{Dist, SimDuration, SimTime};
use std::collections::BTreeMap;

/// A rate limiter at a service whose state may live outside the replica: in a store service
/// reached over the network, or in leases of tokens taken from that store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DistributedLimiter {
    /// The limit, as for a local limiter (`(kind: "fixed_window", limit: 100, window: "1s")`).
    pub limiter: LimiterConfig,
    /// Where its state lives (default `Local`: per replica).
    #[serde(default)]
    pub state: LimiterState,
    /// How a decision the store could not make is decided (a timeout, an open breaker, a
    /// store that refused or failed the call).
    #[serde(default)]
    pub on_store_failure: OnStoreFailure,
    /// How long a replica waits for the store (default 100ms).
    #[serde(default)]
    pub timeout: Option<SimDuration>,
    /// A circuit breaker around the store calls of each replica.
    #[serde(default)]
    pub breaker: Option<BreakerConfig>,
    /// A local decision cache: after a refusal, the replica refuses for this long without
    /// asking the store.
    #[serde(default)]
    pub cache: Option<SimDuration>,
}

/// The timeout of a store call when the file gives none.
pub const STORE_TIMEOUT_DEFAULT: SimDuration = SimDuration::from_millis(100);

/// Where a limiter's state lives.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum LimiterState {
    /// In each replica: every replica enforces the whole limit on its own.
    #[default]
    Local,
    /// In the store service `store`: every decision is a call to it.
    Central {
        /// The store service (a service of the scenario, not the limiter's own).
        store: String,
        /// The check-and-update runs at the store as one step (a Lua script); false: read,
        /// compute at the replica, write, as two round-trips that concurrent decisions race.
        #[serde(default = "default_true")]
        atomic: bool,
        /// Whose clock times the decision.
        #[serde(default)]
        clock: StoreClock,
        /// With `clock: Replica`, how far ahead each replica's clock runs, drawn once per
        /// replica from its own stream. (Boxed: a distribution declaration is large, and
        /// most limiters have none.)
        #[serde(default)]
        skew: Option<Box<Dist>>,
    },
    /// Quota leases: a replica takes `batch` tokens from the store at a time and spends them
    /// locally.
    Lease {
        /// The store service.
        store: String,
        /// Tokens per lease.
        batch: u64,
    },
}

fn default_true() -> bool {
    true
}

/// Whose clock a central decision reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum StoreClock {
    /// The store's (one clock for all replicas).
    #[default]
    Store,
    /// The calling replica's, sent with the call (skewed by `skew`).
    Replica,
}

/// What a replica does when the store cannot decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum OnStoreFailure {
    /// Admit (fail-open): the limit is not enforced during an outage.
    #[default]
    Open,
    /// Refuse (fail-closed): the service refuses everything during an outage.
    Closed,
}

/// A call made to `n` leaves of its target at once (scatter-gather): it succeeds when
/// `quorum` of them (all by default) succeed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FanOut {
    /// Leaves called, each through the call's whole stack, to replicas the balancer picks.
    pub n: u32,
    /// Successes that complete the call (at most `n`; default `n`).
    #[serde(default)]
    pub quorum: Option<u32>,
}

impl FanOut {
    /// The successes that complete the call.
    pub fn needed(&self) -> u32 {
        self.quorum.unwrap_or(self.n)
    }
}

/// The most leaves of any fan-out call of scenario `s` (1 without one): the most calls one
/// event may start, which sets how often a run checks its memory.
pub fn fan_out_max(s: &crate::format::schema::Scenario) -> u64 {
    let calls = s.clients.values().map(|c| &c.call);
    let calls = calls.chain(s.services.values().flat_map(|sv| sv.calls.iter()));
    calls
        .filter_map(|c| c.fan_out.as_ref().map(|f| u64::from(f.n)))
        .max()
        .unwrap_or(1)
        .max(1)
}

/// The store a service's admission layer calls, if it is a distributed limiter with one.
pub fn store_of(a: &crate::format::schema::Admission) -> Option<&String> {
    match a {
        crate::format::schema::Admission::Distributed(DistributedLimiter {
            state: LimiterState::Central { store, .. } | LimiterState::Lease { store, .. },
            ..
        }) => Some(store),
        _ => None,
    }
}

fn err(field: impl Into<String>, reason: impl Into<String>) -> ConfigError {
    ConfigError::new(field, reason)
}

/// Checks a fan-out at `path` (a call's `fan_out`).
pub fn validate_fan_out(path: &str, f: &FanOut) -> Result<(), ConfigError> {
    if f.n == 0 {
        return Err(err(
            format!("{path}.n"),
            "must be at least 1, got 0 (leave fan_out out for a single call)",
        ));
    }
    if f.n > FAN_OUT_MAX {
        return Err(err(
            format!("{path}.n"),
            format!("must be at most {FAN_OUT_MAX}, got {}", f.n),
        ));
    }
    match f.quorum {
        Some(0) => Err(err(
            format!("{path}.quorum"),
            "must be at least 1, got 0 (leave it out to wait for all n leaves)",
        )),
        Some(k) if k > f.n => Err(err(
            format!("{path}.quorum"),
            format!("must be at most n ({}), got {k}; lower it or raise n", f.n),
        )),
        _ => Ok(()),
    }
}

/// Checks a distributed limiter at `path` (`services.NAME.admission[i]`) of service `own`.
pub fn validate_limiter<T>(
    path: &str,
    own: &str,
    d: &DistributedLimiter,
    services: &BTreeMap<String, T>,
) -> Result<(), ConfigError> {
    let lpath = format!("{path}.limiter");
    d.limiter.validate().map_err(|e| e.at(&lpath))?;
    let store_of = |store: &str| -> Result<(), ConfigError> {
        let field = format!("{path}.state.store");
        if store == own {
            return Err(err(
                field,
                format!(
                    "{store:?} is the limiter's own service; name another service as the store"
                ),
            ));
        }
        if !services.contains_key(store) {
            let names: Vec<&str> = services.keys().map(String::as_str).take(12).collect();
            return Err(err(
                field,
                format!(
                    "{store:?} is not a service of the scenario; the store must be one of: {}",
                    names.join(", ")
                ),
            ));
        }
        Ok(())
    };
    let remote = !matches!(d.state, LimiterState::Local);
    match &d.state {
        LimiterState::Local => {}
        LimiterState::Central {
            store, clock, skew, ..
        } => {
            store_of(store)?;
            if let Some(skew) = skew {
                if *clock != StoreClock::Replica {
                    return Err(err(
                        format!("{path}.state.skew"),
                        "skews replica clocks, which only clock: Replica reads; add it or remove skew",
                    ));
                }
                skew.validate().map_err(|e| {
                    ConfigError::new(e.field, e.reason).at(&format!("{path}.state.skew"))
                })?;
            }
        }
        LimiterState::Lease { store, batch } => {
            store_of(store)?;
            let field = format!("{path}.state.batch");
            if *batch == 0 {
                return Err(err(field, "must be at least 1, got 0"));
            }
            if *batch > LEASE_BATCH_MAX {
                return Err(err(
                    field,
                    format!("must be at most {LEASE_BATCH_MAX}, got {batch}"),
                ));
            }
            let fits = Cost::new(*batch).is_ok_and(|cost| {
                let limiter = Limiter::new(&d.limiter).expect("validated above");
                limiter.peek(SimTime::ZERO, cost).allowed()
            });
            if !fits {
                let limit = Limiter::new(&d.limiter)
                    .expect("validated above")
                    .peek(SimTime::ZERO, Cost::ONE)
                    .limit;
                return Err(err(
                    field,
                    format!(
                        "a lease of {batch} tokens is larger than the limiter's bucket ({limit}); \
                         lower the batch to at most {limit}"
                    ),
                ));
            }
        }
    }
    if !remote {
        for (name, set) in [
            ("timeout", d.timeout.is_some()),
            ("breaker", d.breaker.is_some()),
        ] {
            if set {
                return Err(err(
                    format!("{path}.{name}"),
                    "only a limiter whose state is Central or Lease calls a store; remove it",
                ));
            }
        }
    }
    if let Some(t) = d.timeout
        && t.is_zero()
    {
        return Err(err(format!("{path}.timeout"), "must be positive, got 0s"));
    }
    if let Some(b) = &d.breaker {
        b.validate().map_err(|e| e.at(&format!("{path}.breaker")))?;
    }
    if let Some(c) = d.cache
        && c.is_zero()
    {
        return Err(err(
            format!("{path}.cache"),
            "must be positive, got 0s (leave it out for no cache)",
        ));
    }
    Ok(())
}
