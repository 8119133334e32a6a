//! [`BulkheadConfig`]: resilience4j's names and defaults, with the wait queue bounded.

use crate::ConfigError;
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;

/// The most calls a bulkhead may run or queue.
pub const BULKHEAD_SIZE_MAX: u32 = 1_000_000;

/// A bulkhead's configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BulkheadConfig {
    /// Calls running at once. Default 25 (resilience4j).
    pub max_concurrent_calls: u32,
    /// How long a call may wait for a slot; zero refuses at once when full. Default 0s
    /// (resilience4j).
    pub max_wait_duration: SimDuration,
    /// Calls that may wait at once (resilience4j's semaphore bulkhead leaves this unbounded;
    /// here every queue is bounded). Default 100, resilience4j's thread-pool queue capacity.
    pub queue_capacity: u32,
}

impl Default for BulkheadConfig {
    fn default() -> Self {
        BulkheadConfig {
            max_concurrent_calls: 25,
            max_wait_duration: SimDuration::ZERO,
            queue_capacity: 100,
        }
    }
}

impl BulkheadConfig {
    /// Checks that at least one call may run and that the sizes are within bounds.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=BULKHEAD_SIZE_MAX).contains(&self.max_concurrent_calls) {
            return Err(ConfigError::new(
                "max_concurrent_calls",
                format!(
                    "must be in [1, {BULKHEAD_SIZE_MAX}], got {}",
                    self.max_concurrent_calls
                ),
            ));
        }
        if self.queue_capacity > BULKHEAD_SIZE_MAX {
            return Err(ConfigError::new(
                "queue_capacity",
                format!(
                    "must be at most {BULKHEAD_SIZE_MAX}, got {}",
                    self.queue_capacity
                ),
            ));
        }
        Ok(())
    }
}
