//! A fallback chain: primary → cache → static, with a result that says whether and why the
//! answer was degraded.
//!
//! The caller tries the primary (a dependency call, usually behind its own retry, timeout
//! and breaker), then asks [`Fallback::decide`] what to serve, telling it how the primary
//! ended and how old the cached value is, if there is one. The decision names the source
//! served and, when it is not the primary, a [`Degradation`] with the primary's failure and,
//! when the cache was passed over, why (disabled, missing, too old). The values themselves
//! stay with the caller: the machine only decides.
//!
//! ```text
//!   primary ok ─────────────────────────────> Primary
//!   primary failed ─> cache enabled, present, age ≤ cache_age_max ─> Cache { age }
//!                  └> otherwise ─> static enabled ─> Static
//!                                └> otherwise ────> Nothing (the request fails)
//! ```

mod chain;

pub use chain::{
    CacheSkip, Degradation, Fallback, FallbackConfig, FallbackResult, PrimaryFailure, Served,
};
