//! Shared state with contention, in the scenario format: a service's keyed [`Store`] (rows
//! with versions, updated under optimistic concurrency control), and its validation.
//!
//! A service with a `store` is a database: each attempt that starts work reads one row (its
//! version), the work is the time between that read and the write, and when the work is done
//! the attempt writes the row back. Under [`StoreOp::OccUpdate`] the write commits only if
//! the row still has the version the attempt read; otherwise it fails with the reason
//! `version_conflict` (a 409 to the caller, retried only by a policy with
//! `retry_on_conflict: true`, which then reads the row again). Which row an attempt touches is
//! drawn from [`KeyDist`] over `rows`, from the stream `services/<name>/store`; a store of
//! one row draws nothing.
//!
//! The world's side (versions, the reads in flight, the figures) is `world::store`.

use serde::{Deserialize, Serialize};
use sim_core::ConfigError;

/// The most rows of one store (each is 8 bytes of version, plus a cumulative weight for a
/// Zipf key).
pub const ROWS_MAX: u32 = 1_000_000;

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
pub enum StoreOp {
    /// Read the version when work starts, write when it ends; the write fails with
    /// `version_conflict` if another write committed in between (optimistic concurrency,
    /// a conditional put).
    #[default]
    OccUpdate,
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
        Ok(())
    }
}
