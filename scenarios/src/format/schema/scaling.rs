//! Capacity that changes while the load does, in the scenario format: a service's
//! [`Autoscale`] (target tracking), its replicas' [`ColdStart`], and the numbers of a rolling
//! [`Deploy`](crate::format::schema::FaultKind::Deploy); their validation.
//!
//! The scaler follows the Kubernetes Horizontal Pod Autoscaler's rule and AWS target
//! tracking's cooldowns: every `period` it reads the average of its metric over the last
//! whole period that ended at least `delay` ago (a stale average, as a metrics pipeline
//! delivers it), and asks for `desired = ceil(in_rotation × metric / target)` replicas,
//! unless `metric / target` is within `tolerance_ratio` of 1 (HPA's tolerance band, 0.1 by
//! default). It scales out to `desired` at once unless a scale-out happened within
//! `scale_out_cooldown`; it scales in to the highest recommendation of the last
//! `scale_in_stabilisation` (HPA's stabilisation window, 5 minutes by default) unless a
//! scaling action happened within `scale_in_cooldown`. New replicas take `startup` before
//! they enter rotation; a replica leaving rotation drains for up to `drain` (Kubernetes'
//! termination grace period, 30 s by default) and loses what it still holds after that.
//!
//! The world's side (the replica slots, the metric's integrals, the ticks) is
//! `world::scaling`.

use serde::{Deserialize, Serialize};
use sim_core::{ConfigError, SimDuration};

/// Target tracking on one metric of a service, between `min_replicas` and `max_replicas`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Autoscale {
    /// The fewest replicas in rotation the scaler keeps.
    pub min_replicas: u32,
    /// The most replicas the scaler runs (the world allocates this many replica slots).
    pub max_replicas: u32,
    /// What it tracks, and the value it aims at.
    pub metric: ScaleMetric,
    /// How often it reads its metric and decides; each reading is the average over one
    /// period (CloudWatch's one-minute datapoints, HPA's 15 s sync period).
    #[serde(default = "default_period")]
    pub period: SimDuration,
    /// How old the newest datapoint it sees is: it reads the last whole period that ended at
    /// least this long ago.
    #[serde(default)]
    pub delay: SimDuration,
    /// No change while `metric / target` is within this of 1 (HPA's tolerance).
    #[serde(default = "default_tolerance")]
    pub tolerance_ratio: f64,
    /// No scale-out within this of the last one (AWS target tracking's scale-out cooldown).
    #[serde(default)]
    pub scale_out_cooldown: SimDuration,
    /// No scale-in within this of the last scaling action, out or in (AWS's scale-in
    /// cooldown).
    #[serde(default)]
    pub scale_in_cooldown: SimDuration,
    /// Scale in only to the highest recommendation of this window (HPA's scale-down
    /// stabilisation window).
    #[serde(default = "default_stabilisation")]
    pub scale_in_stabilisation: SimDuration,
    /// From the decision to add a replica to its entering rotation (boot, image pull,
    /// readiness).
    #[serde(default = "default_startup")]
    pub startup: SimDuration,
    /// How long a replica leaving rotation may finish what it holds before it stops.
    #[serde(default = "default_drain")]
    pub drain: SimDuration,
}

/// What a scaler tracks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum ScaleMetric {
    /// Busy workers over the workers of the replicas in rotation (CPU utilisation's role).
    Utilisation {
        /// The utilisation to hold, in (0, 1].
        target_ratio: f64,
    },
    /// Requests waiting in the queues per replica in rotation (a backlog per instance).
    QueueDepth {
        /// The waiting requests per replica to hold, above 0.
        per_replica: f64,
    },
}

/// A replica that has just started works slower: its work is multiplied by `factor` at the
/// start, falling in a straight line to 1 over `warmup` (caches, JIT, connection set-up).
/// Applies to every start after time 0: a scale-out, a deploy's restart, a crash's restart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColdStart {
    /// The work multiplier of a replica's first request, at least 1.
    pub factor: f64,
    /// How long the multiplier takes to fall to 1.
    pub warmup: SimDuration,
}

fn default_period() -> SimDuration {
    SimDuration::from_secs(15)
}

fn default_tolerance() -> f64 {
    0.1
}

fn default_stabilisation() -> SimDuration {
    SimDuration::from_secs(300)
}

fn default_startup() -> SimDuration {
    SimDuration::from_secs(30)
}

fn default_drain() -> SimDuration {
    SimDuration::from_secs(30)
}

impl Autoscale {
    /// Checks the scaler; field names are relative to it. Whether the service's `replicas`
    /// lie within `min_replicas` and `max_replicas` is checked with the service.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.min_replicas == 0 {
            return Err(ConfigError::new(
                "min_replicas",
                "must be at least 1, got 0 (a service scaled to zero has no replica to serve)",
            ));
        }
        if self.min_replicas > self.max_replicas {
            return Err(ConfigError::new(
                "min_replicas",
                format!(
                    "must be at most max_replicas ({}), got {}; raise max_replicas or lower min_replicas",
                    self.max_replicas, self.min_replicas
                ),
            ));
        }
        match self.metric {
            ScaleMetric::Utilisation { target_ratio } => {
                if !(target_ratio.is_finite() && target_ratio > 0.0 && target_ratio <= 1.0) {
                    return Err(ConfigError::new(
                        "metric.target_ratio",
                        format!(
                            "must be in (0, 1] (0.6 holds 60% of workers busy), got {target_ratio}"
                        ),
                    ));
                }
            }
            ScaleMetric::QueueDepth { per_replica } => {
                if !(per_replica.is_finite() && per_replica > 0.0) {
                    return Err(ConfigError::new(
                        "metric.per_replica",
                        format!(
                            "must be above 0 (waiting requests per replica), got {per_replica}"
                        ),
                    ));
                }
            }
        }
        if self.period.is_zero() {
            return Err(ConfigError::new(
                "period",
                "must be above 0 (the scaler reads its metric once a period; 15s is HPA's)",
            ));
        }
        if !(self.tolerance_ratio.is_finite() && (0.0..1.0).contains(&self.tolerance_ratio)) {
            return Err(ConfigError::new(
                "tolerance_ratio",
                format!(
                    "must be in [0, 1) (0.1 is HPA's), got {}",
                    self.tolerance_ratio
                ),
            ));
        }
        Ok(())
    }
}

impl ColdStart {
    /// Checks the cold start; field names are relative to it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.factor.is_finite() && (1.0..=1000.0).contains(&self.factor)) {
            return Err(ConfigError::new(
                "factor",
                format!(
                    "must be in [1, 1000] (3 makes a new replica's first request 3 times slower), got {}",
                    self.factor
                ),
            ));
        }
        if self.warmup.is_zero() {
            return Err(ConfigError::new(
                "warmup",
                "must be above 0 (leave `cold_start` out for replicas that start warm)",
            ));
        }
        Ok(())
    }

    /// The work multiplier of a replica that started `since` ago.
    pub fn factor_after(&self, since: SimDuration) -> f64 {
        if since >= self.warmup {
            return 1.0;
        }
        let left = 1.0 - since.as_secs_f64() / self.warmup.as_secs_f64();
        1.0 + (self.factor - 1.0) * left
    }
}

/// How many batches a rolling deploy of `replicas` replicas, `batch` at a time, takes.
pub fn deploy_batches(replicas: u32, batch: u32) -> u32 {
    replicas.div_ceil(batch.max(1))
}

/// When a rolling deploy that starts at `at` ends, nominally: each batch is out of rotation
/// for `downtime`, then warms up for `warmup` before the next one starts, and the deploy
/// ends with the last batch's warm-up.
pub fn deploy_end(
    at: SimDuration,
    replicas: u32,
    batch: u32,
    downtime: SimDuration,
    warmup: SimDuration,
) -> SimDuration {
    let per_batch = downtime.saturating_add(warmup);
    let mut end = at;
    for _ in 0..deploy_batches(replicas, batch) {
        end = end.saturating_add(per_batch);
    }
    end
}

/// The replica slots the world allocates for service `s`: its `max_replicas` when it
/// autoscales (slots out of rotation cost a few hundred bytes and no events), else its
/// `replicas`.
pub fn slots(s: &crate::format::schema::Service) -> u32 {
    s.autoscale
        .as_ref()
        .map_or(s.replicas, |a| a.max_replicas.max(s.replicas))
}
