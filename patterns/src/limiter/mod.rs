//! Rate limiters: how many units per span of time, per key.
//!
//! Every limiter implements [`RateLimiter`]: `peek(now, cost)` decides without charging,
//! `acquire(now, cost)` decides and charges on admit. A [`RateDecision`] carries what the
//! `X-RateLimit-*` and `Retry-After` headers need: allowed or why not, `limit`, `remaining`,
//! `retry_after` and `reset_at`. A [`Cost`] is at least 1 (zero is refused when the cost is
//! built); a cost larger than the limiter could ever admit is its own rejection
//! ([`RateRejection::CostAboveCapacity`]) with no `retry_after`, since waiting cannot help.
//! A `now` earlier than one already seen counts as the latest time seen: no credit, no panic.
//!
//! | type | algorithm | state |
//! |---|---|---|
//! | [`FixedWindow`] | count per aligned window; with `wait_max`, resilience4j's reserving limiter | 3 integers |
//! | [`SlidingLog`] | exact count over the last window | one entry per admitted request |
//! | [`SlidingCounter`] | previous window weighted by its overlap + current window | 3 integers |
//! | [`TokenBucket`] | tokens refill at `rate` up to `burst` | 2 integers |
//! | [`LeakyMeter`] | water leaks at `rate`, overflow refused | 2 integers |
//! | [`LeakyQueue`] | admitted requests released at `rate` after a `delay` | 1 timestamp |
//! | [`Gcra`] | theoretical arrival time | 1 timestamp |
//!
//! Around them: [`Limiter`] / [`LimiterConfig`] (the choice a scenario file makes, tagged by
//! `kind`), [`Keyed`] (one limiter per key, idle keys forgotten, the number of keys capped),
//! [`Composite`] (all layers must admit; nothing is charged unless all do) and [`Shadow`]
//! (decide, record, allow).
//!
//! A token bucket's credit over time (`burst` = 3, one unit per `T`):
//!
//! ```text
//!   credit
//!   3 ─┐          ┌──────        admit: credit ≥ cost, then credit −= cost
//!   2  └─┐      ┌─┘              reject: retry_after = (cost − credit) × T
//!   1    └─┐  ┌─┘                reset_at: when credit is back to burst
//!   0      └──┘
//!      ──────────────────▶ t     refill: +1 per T, never above burst
//! ```
//!
//! Fixed window against sliding log at a window boundary (limit 3, window W):
//!
//! ```text
//!        window k            window k+1
//!   |──────────────xxx|xxx──────────────|     fixed window admits all 6 within ~W
//!   |──────────────xxx|...──────────────|     sliding log refuses the second 3 until
//!                                              the first 3 are W old
//! ```

mod any;
mod bucket;
mod composite;
mod decision;
mod keyed;
mod shadow;
mod window;

pub use any::{Limiter, LimiterConfig};
pub use bucket::{BucketConfig, Gcra, LeakyMeter, LeakyQueue, LeakyQueueConfig, TokenBucket};
pub use composite::{COMPOSITE_LAYERS_MAX, Composite, CompositeConfig};
pub use decision::{Cost, RateDecision, RateLimiter, RateOutcome, RateRejection};
pub use keyed::{Keyed, KeyedConfig, WhenFull};
pub use shadow::{Shadow, ShadowStats};
pub use window::{
    FixedWindow, FixedWindowConfig, SLIDING_LOG_LIMIT_MAX, SlidingCounter, SlidingLog, WindowConfig,
};
