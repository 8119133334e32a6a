//! [`ConfigError`]: what `validate()` returns for every pattern configuration.
//!
//! It is sim-core's error type, so that a pattern config embedded in a scenario reports its
//! field path in the same shape as every other part of the file.

pub use sim_core::ConfigError;
