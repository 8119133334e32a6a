//! What a service answers besides success and 5xx, in the scenario format: the `Retry-After`
//! of a 429 fault ([`RetryAfter`]), the client-side pacing on a service's rate-limit figures
//! ([`PaceConfig`], the `Pace` layer) and their validation.
//!
//! A service with an admission `Limiter` sends its quota with every reply, as the IETF
//! draft "RateLimit header fields for HTTP" has a server send `RateLimit: r=remaining,
//! t=reset`: how many requests it would still admit now, and how long until that quota
//! resets. A call site with a `Pace` layer reads them: after a reply that says nothing is left
//! (`remaining` = 0), it holds its next calls at that layer until the reset instead of
//! sending them to be refused (`world::pace`).
//!
//! A 4xx fault (`ClientErrorRate`) fails requests after their work with `client_error`
//! (status 400), which no retry policy retries; a 429 fault (`TooManyRequests`) refuses
//! requests at arrival, before they queue, as `rate_limited` with the given `Retry-After`,
//! which a retry policy honours up to its `retry_after_max`.

use serde::{Deserialize, Serialize};
use sim_core::{ConfigError, SimDuration, SimTime};

/// The `Retry-After` of a 429 fault: a delay, or an instant (HTTP's date form).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum RetryAfter {
    /// Come back after this long (`Retry-After: 2`).
    After(SimDuration),
    /// Come back at this time of the run (`Retry-After: <date>`); a refusal after it says
    /// "now" (a zero wait).
    Until(SimDuration),
}

impl RetryAfter {
    /// The wait a refusal at `now` asks for.
    pub fn wait(self, now: SimTime) -> SimDuration {
        match self {
            RetryAfter::After(d) => d,
            RetryAfter::Until(at) => {
                (SimTime::ZERO.saturating_add(at)).saturating_duration_since(now)
            }
        }
    }

    /// Checks it against a run of length `run`, at `path`.
    pub fn validate(self, path: &str, run: SimDuration) -> Result<(), ConfigError> {
        match self {
            RetryAfter::After(d) if d.is_zero() => Err(ConfigError::new(
                format!("{path}.After"),
                "must be greater than 0s (a zero Retry-After asks for an immediate retry; leave the fault out)",
            )),
            RetryAfter::Until(at) if at > run => Err(ConfigError::new(
                format!("{path}.Until"),
                format!("must be within the run ({run}), got {at}"),
            )),
            _ => Ok(()),
        }
    }
}

/// Client-side pacing on the target's rate-limit figures (the `Pace` layer): when a reply
/// says the quota is used up, the calls that pass this layer wait until its reset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PaceConfig {
    /// The longest a reset may hold calls back: a reset further away is not waited for (the
    /// calls go and are refused, as without the layer), like a retry policy's
    /// `retry_after_max`. Default 60s.
    pub hold_max: SimDuration,
}

impl Default for PaceConfig {
    fn default() -> Self {
        PaceConfig {
            hold_max: SimDuration::from_secs(60),
        }
    }
}

impl PaceConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.hold_max.is_zero() {
            return Err(ConfigError::new(
                "hold_max",
                "must be greater than 0s (a pace that never holds does nothing; leave the layer out)",
            ));
        }
        Ok(())
    }
}
