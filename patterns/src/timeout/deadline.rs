//! Per-attempt timeouts and deadline propagation.

use crate::ConfigError;
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};

/// An absolute deadline on the virtual clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Deadline(pub SimTime);

impl Deadline {
    /// The deadline `budget` after `now` ([`SimTime::MAX`], "never", if that overflows).
    pub fn after(now: SimTime, budget: SimDuration) -> Self {
        Deadline(now.saturating_add(budget))
    }

    /// The instant.
    pub fn at(self) -> SimTime {
        self.0
    }

    /// Time left at `now` (zero once passed).
    pub fn remaining(self, now: SimTime) -> SimDuration {
        self.0.saturating_duration_since(now)
    }

    /// True at and after the deadline.
    pub fn is_expired(self, now: SimTime) -> bool {
        now >= self.0
    }
}

/// Per-attempt timeout and deadline reserve. Defaults: 1s per attempt (resilience4j's
/// TimeLimiter), no reserve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TimeoutConfig {
    /// The longest one attempt may take.
    pub attempt_timeout: SimDuration,
    /// Time a caller keeps for its own work after the callee answers; subtracted from the
    /// remaining time before it is handed down.
    pub deadline_reserve: SimDuration,
}

impl Default for TimeoutConfig {
    fn default() -> Self {
        TimeoutConfig {
            attempt_timeout: SimDuration::from_secs(1),
            deadline_reserve: SimDuration::ZERO,
        }
    }
}

impl TimeoutConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.attempt_timeout.is_zero() {
            return Err(ConfigError::new(
                "attempt_timeout",
                "must be greater than 0s; an attempt needs some time",
            ));
        }
        if self.deadline_reserve >= self.attempt_timeout.saturating_mul(1000) {
            return Err(ConfigError::new(
                "deadline_reserve",
                format!(
                    "must be less than 1000 times attempt_timeout ({}), got {}; check the unit",
                    self.attempt_timeout, self.deadline_reserve
                ),
            ));
        }
        Ok(())
    }
}

/// Why a call is not made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// The parent's deadline has passed.
    DeadlineExpired,
    /// Some time is left, but not more than the reserve.
    ReserveExhausted {
        /// Time left before the parent's deadline.
        remaining: SimDuration,
        /// The reserve the caller keeps.
        reserve: SimDuration,
    },
}

/// What an attempt (or a call to a dependency) gets from its caller's deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Make the call with this timeout; it ends at `deadline`.
    Call {
        /// The attempt's timeout.
        timeout: SimDuration,
        /// `now + timeout`; never later than the parent's deadline minus the reserve.
        deadline: Deadline,
    },
    /// Do not make the call.
    Skip {
        /// Why.
        reason: SkipReason,
    },
}

/// A validated [`TimeoutConfig`].
#[derive(Debug, Clone, PartialEq)]
pub struct Timeouts {
    config: TimeoutConfig,
}

impl Timeouts {
    /// From a config; fails with its first invalid field.
    pub fn new(config: TimeoutConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Timeouts { config })
    }

    /// The config.
    pub fn config(&self) -> &TimeoutConfig {
        &self.config
    }

    /// The timeout of an attempt starting `now` under `parent` (if any):
    /// `min(attempt_timeout, remaining − reserve)`.
    pub fn propagate(&self, now: SimTime, parent: Option<Deadline>) -> Propagation {
        self.propagate_with(now, parent, self.config.attempt_timeout)
    }

    /// As [`Timeouts::propagate`], with the callee's own timeout given (e.g. from an
    /// [`super::AdaptiveTimeout`]).
    pub fn propagate_with(
        &self,
        now: SimTime,
        parent: Option<Deadline>,
        own_timeout: SimDuration,
    ) -> Propagation {
        let Some(parent) = parent else {
            return Propagation::Call {
                timeout: own_timeout,
                deadline: Deadline::after(now, own_timeout),
            };
        };
        if parent.is_expired(now) {
            return Propagation::Skip {
                reason: SkipReason::DeadlineExpired,
            };
        }
        let remaining = parent.remaining(now);
        let reserve = self.config.deadline_reserve;
        let Some(usable) = remaining.checked_sub(reserve).filter(|d| !d.is_zero()) else {
            return Propagation::Skip {
                reason: SkipReason::ReserveExhausted { remaining, reserve },
            };
        };
        let timeout = own_timeout.min(usable);
        let deadline = Deadline::after(now, timeout);
        assert!(
            deadline <= parent,
            "child deadline {} after parent {}",
            deadline.0,
            parent.0
        );
        Propagation::Call { timeout, deadline }
    }
}
