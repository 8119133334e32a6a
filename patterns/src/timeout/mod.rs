//! Timeouts and deadlines: how long one attempt may take, how an overall deadline is
//! handed down a call chain, and a timeout that adapts to measured latency.
//!
//! - [`TimeoutConfig`] / [`Timeouts`]: the per-attempt timeout and the reserve a caller keeps
//!   for its own work when it propagates its deadline. A callee gets
//!   `min(its own timeout, remaining − reserve)`, so **no child deadline is later than its
//!   parent's**; when nothing is left after the reserve, the call is not made at all
//!   ([`Propagation::Skip`]) instead of being sent with a deadline it cannot meet.
//! - [`Deadline`]: an absolute instant with the small arithmetic around it.
//! - [`LatencyWindow`]: a bounded ring of the most recent latencies and its nearest-rank
//!   percentile; shared with [`crate::hedge`].
//! - [`AdaptiveTimeoutConfig`] / [`AdaptiveTimeout`]: `clamp(multiplier · pXX, floor,
//!   ceiling)` over the window, `initial` until `min_samples` latencies were seen.
//!
//! Adaptive timeout state:
//!
//! ```text
//!   [ Warming { seen < min_samples }: timeout = initial ]
//!        | observe() x min_samples
//!        v
//!   [ Tracking: timeout = clamp(multiplier * percentile(window), floor, ceiling) ]
//! ```
//!
//! An attempt that timed out should be observed with its timeout as latency (a censored
//! sample): leaving it out would make the percentile, and so the timeout, shrink exactly when
//! the dependency slows down.

mod adaptive;
mod deadline;
mod window;

pub use adaptive::{AdaptiveTimeout, AdaptiveTimeoutConfig};
pub use deadline::{Deadline, Propagation, SkipReason, TimeoutConfig, Timeouts};
pub use window::LatencyWindow;
