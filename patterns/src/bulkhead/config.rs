//! [`BulkheadConfig`]: resilience4j's names and defaults, with the wait queue bounded.

use crate::ConfigError;
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;

/// The most calls a bulkhead may run or queue.
pub const BULKHEAD_SIZE_MAX: u32 = 1_000_000;

/// A bulkhead's configuration: resilience4j's semaphore bulkhead.
///
/// # Differences from resilience4j
///
/// - `queue_capacity` bounds the calls waiting for a slot; resilience4j's semaphore lets any
///   number of threads wait. Its default, 100, is resilience4j's thread-pool bulkhead queue.
/// - `max_concurrent_calls` is at most 1,000,000 and durations are nanoseconds (resilience4j
///   counts the wait in milliseconds).
/// - Not modelled: `writableStackTraceEnabled` (no exceptions here) and
///   `fairCallHandlingEnabled` (waiters are always served in arrival order, resilience4j's
///   default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BulkheadConfig {
    /// Calls running at once. Default 25 (resilience4j). Zero is valid, as in resilience4j:
    /// every call is refused (after waiting `max_wait_duration`, if set), a kill switch.
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
    /// Checks that the sizes are within bounds.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max_concurrent_calls > BULKHEAD_SIZE_MAX {
            return Err(ConfigError::new(
                "max_concurrent_calls",
                format!(
                    "must be at most {BULKHEAD_SIZE_MAX}, got {}",
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
