//! Backoff between retries: a [`Strategy`] (constant, linear, exponential with a cap) shaped
//! by a [`Jitter`] (none, full, equal, decorrelated, proportional).
//!
//! [`BackoffConfig`] is the serde form; [`Backoff`] is the validated, immutable schedule
//! shared by every request of a client; [`BackoffState`] is the small per-request state (how
//! many delays were drawn, and the previous delay that decorrelated jitter grows from).
//!
//! The formulas, for the `n`th retry (`n = 0` before the second attempt), with
//! `v = strategy(n)` already capped at the strategy's maximum and `u` uniform on [0, 1):
//!
//! | jitter | delay | bounds |
//! |---|---|---|
//! | none | `v` | `v` |
//! | full (AWS) | `u · v` | `[0, v]` |
//! | equal (AWS) | `v/2 + u · v/2` | `[v/2, v]` |
//! | decorrelated (AWS) | `min(cap, base + u · (3 · previous − base))`, `previous₀ = base` | `[base, cap]` |
//! | proportional (gRPC) | `v · (1 + s · (2u − 1))` | `[v · (1 − s), v · (1 + s)]` |
//!
//! Decorrelated jitter is its own recurrence: it uses the strategy only for `base` (the
//! initial delay) and `cap` (the maximum), as in the AWS architecture blog. Proportional
//! jitter follows gRPC's connection backoff: the cap bounds the value before jitter, so a
//! delay at the cap may exceed it by the spread (at most 20% with the defaults).
//!
//! ```text
//!   BackoffState { retries: n, previous }
//!        |  next(rng): delay = jitter(strategy(n), previous)
//!        v
//!   BackoffState { retries: n + 1, previous: delay }      reset() -> { 0, base }
//! ```

mod config;
mod schedule;

pub use config::{BackoffConfig, Jitter, Strategy};
pub use schedule::{Backoff, BackoffState};
