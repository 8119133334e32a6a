//! Shared state with contention, in the scenario format: a service's keyed [`Store`] (rows
//! with versions, updated under optimistic concurrency control), and its validation.
//!
//! A service with a `store` is a database: each attempt that starts work reads one row (its
//! version), the work is the time between that read and the write, and when the work is done
//! the attempt writes the row back. Under [`StoreOp::OccUpdate`] the write commits only if
//! the row still has the version the attempt read; otherwise it fails with the reason
//! `version_conflict` (a 409 to the caller, retried only by a policy with
//! `retry_on_conflict: true`, which then reads the row again). Under [`StoreOp::Locked`] the
//! attempt takes the row's lock first, waiting for it in a bounded FIFO queue, and its write
//! always commits. Which row an attempt touches is
//! drawn from [`KeyDist`] over `rows`, from the stream `services/<name>/store`; a store of
//! one row draws nothing.
//!
//! The world's side (versions, the reads in flight, the figures) is `world::store`.

use crate::format::limits::ROWS_MAX;
use serde::{Deserialize, Serialize};
use sim_core::{ConfigError, SimDuration};

/// A keyed store in a service: rows with versions that its requests read and write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Store {
    /// How many rows (keys) the store holds.
    #[serde(default = "default_rows")]
    pub rows: u32,
    /// Which row each request reads and writes.
    #[serde(default)]
    pub key: KeyDist,
    /// What a request does with its row.
    #[serde(default)]
    pub op: StoreOp,
}

fn default_rows() -> u32 {
    1
}

/// How requests pick their row.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum KeyDist {
    /// Every row equally likely.
    #[default]
    Uniform,
    /// Row `i` (from 1) with probability proportional to `1 / i^exponent`: a few hot rows.
    Zipf {
        /// The skew; 0 is uniform, 1 is classic Zipf, larger is hotter.
        exponent: f64,
    },
}

/// What a request does with its row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum StoreOp {
    /// Read the version when work starts, write when it ends; the write fails with
    /// `version_conflict` if another write committed in between (optimistic concurrency,
    /// a conditional put).
    #[default]
    OccUpdate,
    /// Take the row's lock before the work (`SELECT ... FOR UPDATE`), hold it through the
    /// work, write and release it when the work ends (or when the attempt fails or is
    /// cancelled). A held lock makes the next attempts wait, holding their workers, in the
    /// row's FIFO queue; a wait longer than `wait_timeout`, or one that finds `queue_max`
    /// attempts waiting already, fails with `lock_timeout`. Writes never conflict.
    Locked {
        /// How long an attempt waits for the lock (InnoDB's `innodb_lock_wait_timeout`,
        /// 50s by default).
        #[serde(default = "default_wait_timeout")]
        wait_timeout: SimDuration,
        /// The most attempts waiting for one row's lock.
        #[serde(default = "default_queue_max")]
        queue_max: u32,
    },
}

fn default_wait_timeout() -> SimDuration {
    SimDuration::from_secs(50)
}

fn default_queue_max() -> u32 {
    1000
}

impl Store {
    /// Checks the store; field names are relative to it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=ROWS_MAX).contains(&self.rows) {
            return Err(ConfigError::new(
                "rows",
                format!("must be in [1, {ROWS_MAX}], got {}", self.rows),
            ));
        }
        if let KeyDist::Zipf { exponent } = self.key
            && !(exponent.is_finite() && (0.0..=10.0).contains(&exponent))
        {
            return Err(ConfigError::new(
                "key.exponent",
                format!("must be in [0, 10] (1 is classic Zipf), got {exponent}"),
            ));
        }
        if let StoreOp::Locked {
            wait_timeout,
            queue_max,
        } = self.op
        {
            if wait_timeout.is_zero() {
                return Err(ConfigError::new(
                    "op.wait_timeout",
                    "must be positive, got 0s",
                ));
            }
            if queue_max == 0 {
                return Err(ConfigError::new(
                    "op.queue_max",
                    "must be at least 1, got 0",
                ));
            }
        }
        Ok(())
    }
}
