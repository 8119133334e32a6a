//! Concurrency limits: cap the calls in flight, and (for the adaptive algorithms) find the cap
//! from the latency the calls see.
//!
//! [`ConcurrencyLimiter`] runs one algorithm chosen by [`ConcurrencyConfig`]: `fixed`, `aimd`,
//! `vegas`, `gradient2` (Netflix concurrency-limits' semantics and defaults) or
//! `envoy_gradient` (Envoy's adaptive-concurrency gradient controller).
//!
//! ```text
//!   try_acquire ── inflight < limit ──▶ IN FLIGHT ── on_success / on_dropped ──▶ sample(rtt,
//!        │                                  │                                   inflight at
//!        └── inflight ≥ limit ──▶ REJECTED  └── on_ignored ──▶ freed, no sample  start, drop)
//!                                                                     │
//!                                         algorithm moves the limit ◀─┘
//!
//!   envoy_gradient:  MIN_RTT (limit = min_concurrency, collect request_count samples)
//!                       │ minRTT = percentile                      ▲ every min_rtt_calc_interval
//!                       ▼                                          │ (+ jitter), or after 5
//!                    NORMAL: every update interval,                │ windows at the floor
//!                    limit = limit·g + √(limit·g), g = (minRTT·(1 + buffer)) / sampleRTT in [0.5, 2]
//! ```

mod config;
mod machine;

pub use config::{
    AimdConfig, CONCURRENCY_LIMIT_MAX, ConcurrencyConfig, EnvoyGradientConfig, Gradient2Config,
    VegasConfig,
};
pub use machine::{
    ConcurrencyLimiter, ConcurrencyRejection, ConcurrencyToken, ENVOY_WINDOW_SAMPLES_MAX,
    log10_root,
};
