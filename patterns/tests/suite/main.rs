//! The integration tests of `patterns`, as one test binary: `admission_*` modules test the
//! layers that admit or refuse a call, `recovery_*` those that retry, hedge, time out or fall
//! back, each against its upstream library's tests or its stated theory.

mod admission_breaker;
mod admission_breaker_props;
mod admission_bulkhead;
mod admission_concurrency;
mod admission_configs;
mod admission_limiter;
mod admission_limiter_props;
mod admission_shedder;
mod admission_shedder_props;
mod recovery_backoff;
mod recovery_budget;
mod recovery_configs;
mod recovery_fallback;
mod recovery_hedge;
mod recovery_idempotency;
mod recovery_retry;
mod recovery_retry_breaker;
mod recovery_robustness;
mod recovery_timeout;
