//! Circuit breakers: stop calling a dependency that is failing, and test it before trusting
//! it again.
//!
//! [`Breaker`] is configured by [`BreakerConfig`], whose field names and defaults are
//! resilience4j's (`failure_rate_threshold` 50, `slow_call_rate_threshold` 100,
//! `slow_call_duration_threshold` 60s, count-based window of 100 calls, `minimum_number_of_calls`
//! 100, `wait_duration_in_open_state` 60s, 10 permitted calls half-open, no automatic
//! transition). Added: a consecutive-failures trip, an open wait that backs off, three more
//! half-open policies ([`HalfOpenPolicy`]), and a positive `max_wait_duration_in_half_open_state`
//! (default 60s) so a half-open call that never reports back cannot wedge the breaker. The
//! config's docs list every difference from resilience4j.
//!
//! A caller asks [`Breaker::try_acquire`]`(now)`, gets a [`BreakerDecision`] (admit with a
//! [`Permit`], or reject with the reason and, when open, the first instant a call will be let
//! through), and reports back with `on_success(now, permit)`, `on_failure(now, permit)` or
//! `on_ignored(now, permit)`. Every change of state is logged with its time and cause
//! ([`Breaker::transitions`]); an operator moving the breaker to the state it is already in
//! re-enters that state (a reset of a closed breaker empties its window) but logs nothing, as
//! resilience4j publishes no event for it.
//!
//! ```text
//!            failure rate ≥ threshold, slow-call rate ≥ threshold,
//!            or consecutive failures ≥ threshold (once minimum calls are in)
//!   ┌────────┐ ──────────────────────────────────────▶ ┌──────┐
//!   │ CLOSED │                                         │ OPEN │ ◀─┐ wait: fixed or backing off
//!   └────────┘ ◀───────┐                               └──────┘   │
//!        ▲             │ trial passed                     │       │ trial failed, or
//!        │             │                                  │ wait  │ no verdict within
//!        │          ┌───────────┐ ◀───────────────────────┘ over  │ max_wait_duration_in_
//!        │          │ HALF-OPEN │ ────────────────────────────────┘ half_open_state
//!        │          └───────────┘
//!        │   reset
//!   FORCED_OPEN · FORCED_CLOSED · DISABLED   (operator: from any state, back by reset)
//! ```
//!
//! As in resilience4j, the open state ends strictly after its wait: a call exactly at the end is
//! refused. Without automatic transition only a call moves the breaker from open to half-open
//! (and that call is the first one admitted); with it, the breaker moves at the end of the wait
//! by itself. Half-open states decide once `min(minimum_number_of_calls, permitted calls)` calls
//! have reported, and give up after `max_wait_duration_in_half_open_state` counted from the
//! moment they began, traffic or not: a breaker with automatic transition and no traffic cycles
//! open → half-open → open, as resilience4j's does.
//!
//! Time-driven changes (the open wait ending, a half-open timeout, a ramp finishing) happen on
//! the next call or on [`Breaker::advance`], stamped with the time they took effect when that
//! time is known (automatic transition, half-open deadline, ramp end), else with the call's.

mod config;
mod machine;
mod window;

pub use config::{
    BREAKER_WINDOW_MAX, BreakerConfig, HalfOpenPolicy, SlidingWindowType, StateAfterWait,
};
pub use machine::{
    Breaker, BreakerDecision, BreakerRejection, BreakerStats, Cause, Permit, StateKind,
    TRANSITION_LOG_MAX, Transition, is_legal_edge,
};
pub use window::WindowTotals;
