//! Capacity events in the scenario format: a service's [`Liveness`] probes, its `zones`, a
//! client's `zone`, and the checks of the `Pause` and `ZoneFailure` faults.
//!
//! - A **pause** (`FaultKind::Pause`) stops the world in some replicas of a service for the
//!   fault's `duration`, as a stop-the-world garbage collection does: their workers make no
//!   progress (the work in progress resumes after it, its end pushed back by the pause),
//!   requests keep arriving and queue, and callers time out. With `every`, the pause comes
//!   back each period until the end of the run (a periodic GC).
//! - **Zones**: a service with `zones: Some(n)` puts replica `i` in zone `i mod n`; a client
//!   may stand in a zone. A `ZoneFailure { zone }` takes down every replica of that zone (as a
//!   crash: what they hold is lost; out of rotation, so balancers send nothing to them) and
//!   silences the clients there for the fault's `duration`; the replicas restart cold after
//!   their service's `restart`.
//! - **Liveness probes** (Kubernetes' `livenessProbe`): every `period`, each replica in
//!   rotation is probed; a probe not answered within `timeout` fails, and
//!   `failure_threshold` failures in a row restart the replica (out of rotation, everything
//!   it holds lost, back cold after the service's `restart`). A probe `served_by: Workers`
//!   waits in the replica's queue for a worker like a request, so a replica that is merely
//!   busy fails it: the liveness death spiral. `Dedicated` probes are answered by a thread of
//!   their own and fail only when the replica is paused.
//!
//! The world's side is `world::capacity`.

use serde::{Deserialize, Serialize};
use sim_core::{ConfigError, SimDuration};

/// Liveness probes on every replica of a service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Liveness {
    /// How often each replica is probed (Kubernetes' `periodSeconds`, 10 s by default).
    #[serde(default = "default_period")]
    pub period: SimDuration,
    /// A probe not answered within this fails (`timeoutSeconds`, 1 s by default); it may be
    /// longer than the period.
    #[serde(default = "default_timeout")]
    pub timeout: SimDuration,
    /// Failures in a row that restart the replica (`failureThreshold`, 3 by default).
    #[serde(default = "default_threshold")]
    pub failure_threshold: u32,
    /// What answers a probe.
    #[serde(default)]
    pub served_by: ProbeServer,
}

/// What answers a liveness probe.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProbeServer {
    /// The request workers: a probe waits its turn in the queue (first in, first out, as in
    /// a listen backlog) and needs a free worker, so a busy replica fails it.
    #[default]
    Workers,
    /// A thread of its own: a probe fails only while the replica is paused.
    Dedicated,
}

fn default_period() -> SimDuration {
    SimDuration::from_secs(10)
}

fn default_timeout() -> SimDuration {
    SimDuration::from_secs(1)
}

fn default_threshold() -> u32 {
    3
}

impl Liveness {
    /// Checks the probes; field names are relative to them.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.period.is_zero() {
            return Err(ConfigError::new(
                "period",
                "must be above 0 (each replica is probed once a period; 10s is Kubernetes')",
            ));
        }
        if self.timeout.is_zero() {
            return Err(ConfigError::new(
                "timeout",
                "must be above 0 (a probe needs time to be answered; 1s is Kubernetes')",
            ));
        }
        if self.failure_threshold == 0 {
            return Err(ConfigError::new(
                "failure_threshold",
                "must be at least 1, got 0 (failures in a row before a restart; 3 is Kubernetes')",
            ));
        }
        Ok(())
    }
}

/// Checks a service's `zones` against its `replicas` (the most replica slots it may have).
pub fn validate_zones(zones: u32, replicas: u32) -> Result<(), ConfigError> {
    if zones == 0 {
        return Err(ConfigError::new(
            "zones",
            "must be at least 1, got 0 (leave `zones` out for a service in no zone)",
        ));
    }
    if zones > replicas {
        return Err(ConfigError::new(
            "zones",
            format!(
                "must be at most the service's {replicas} replicas (replica i stands in zone i mod zones), got {zones}"
            ),
        ));
    }
    Ok(())
}

/// Checks a pause's `every` against its `duration`.
pub fn validate_every(every: SimDuration, duration: SimDuration) -> Result<(), ConfigError> {
    if every <= duration {
        return Err(ConfigError::new(
            "every",
            format!(
                "must be longer than the pause's duration ({duration}) so that replicas run between pauses, got {every}"
            ),
        ));
    }
    Ok(())
}

/// The zone of replica slot `r` of a service in `zones` zones.
pub fn zone_of(r: usize, zones: u32) -> u32 {
    (r % zones as usize) as u32
}
