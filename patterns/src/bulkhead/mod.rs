//! Bulkhead: a cap on concurrent calls to one dependency, so a slow dependency cannot take
//! every worker, with a bounded wait queue served in arrival order.
//!
//! [`Bulkhead`] is configured by [`BulkheadConfig`] (resilience4j's `max_concurrent_calls` 25
//! and `max_wait_duration` 0, plus a `queue_capacity` bound, default 100). As in resilience4j,
//! `max_concurrent_calls: 0` is valid and refuses every call: a kill switch.
//!
//! [`KeyedBulkhead`] caps the requests in flight per key instead (a tenant, a user), without a
//! wait queue: a service's per-tenant bulkhead, so one tenant's flood cannot take every worker.
//!
//! ```text
//!   arrival ──▶ slot free? ── yes ──▶ RUNNING (active += 1) ── release ──┐
//!                  │ no                                                  │
//!                  ▼                                                     │ slot goes to the
//!          max_wait_duration = 0 or queue full? ── yes ──▶ REJECTED      │ oldest waiter
//!                  │ no                                                  │ still in time
//!                  ▼                                                     │
//!               WAITING (FIFO) ◀──────────────────────────────────────────┘
//!                  │ deadline passes (expire) or caller cancels
//!                  ▼
//!               TIMED OUT / CANCELLED
//! ```

mod config;
mod keyed;
mod machine;

pub use config::{BULKHEAD_SIZE_MAX, BulkheadConfig};
pub use keyed::{KeyedBulkhead, KeyedBulkheadConfig, KeyedRejection};
pub use machine::{
    Bulkhead, BulkheadDecision, BulkheadPermit, BulkheadRejection, BulkheadStats, Granted,
};
