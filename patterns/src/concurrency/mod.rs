//! Concurrency limits: cap the calls in flight, and (for the adaptive algorithms) find the cap
//! from the latency the calls see.
//!
//! [`ConcurrencyLimiter`] runs one algorithm chosen by [`ConcurrencyConfig`]: `fixed`, `aimd`,
//! `vegas`, `gradient2` (Netflix concurrency-limits' semantics and defaults) or
//! `envoy_gradient` (Envoy's adaptive-concurrency gradient controller). Each config's docs list
//! where it differs from upstream; [`ConcurrencyConfig::warnings`] returns what upstream's
//! builders would log (an initial limit outside `[min_limit, max_limit]` is accepted, as there).
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
//!                    NORMAL: every update interval,                │ windows in a row from the
//!                    limit = limit·g + √(limit·g),                 │ floor to the floor
//!                    g = (minRTT·(1 + buffer)) / sampleRTT in [0.5, 2]
//! ```
//!
//! As in Envoy, a call sent before the latest minRTT measurement began is never a sample: it
//! ran at the earlier concurrency, so it would end the measurement early with an inflated
//! minRTT.

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
