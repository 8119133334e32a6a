//! The glue between a call's pattern stack and the `patterns` crate: each [`Gate`] wraps one
//! pattern machine (breaker, bulkhead, rate limiter), [`Held`] is what a call keeps while a
//! gate has admitted it, and [`failure_of`] says how an outcome looks to a retry policy.
//!
//! Gates hold no per-request state beyond what the machines hand out (a breaker permit, a
//! bulkhead permit), and those are kept inline in the call, so the hot path allocates nothing.

use super::Reason;
use crate::schema::Layer;
use crate::validate::LAYERS_MAX;
use patterns::breaker::{Breaker, BreakerDecision, Permit};
use patterns::bulkhead::{Bulkhead, BulkheadDecision, BulkheadPermit};
use patterns::limiter::{Cost, Limiter, RateLimiter};
use patterns::retry::Failure;
use sim_core::SimTime;

/// One admitting layer of a pattern stack.
#[derive(Debug)]
pub enum Gate {
    /// A circuit breaker (boxed: it is much larger than the other gates, and built once).
    Breaker(Box<Breaker>),
    /// A bulkhead (rejecting when full; waiting is not simulated).
    Bulkhead(Bulkhead<u64>),
    /// A rate limiter.
    Limiter(Limiter),
}

/// What a call holds from a gate that admitted it.
#[derive(Debug, Default)]
pub enum Held {
    /// Nothing to give back (a rate limiter, or a gate that has not admitted).
    #[default]
    Nothing,
    /// A breaker permit, to report the outcome with.
    Breaker(Permit),
    /// A bulkhead slot.
    Bulkhead(BulkheadPermit),
}

/// The permits of one pass through a list of gates, in gate order.
#[derive(Debug, Default)]
pub struct Permits {
    held: [Held; LAYERS_MAX],
}

impl Gate {
    /// The gate of a layer; `None` for `Retry`, which is not a gate.
    pub fn of(layer: &Layer) -> Option<Gate> {
        // Configs were validated with the file, so building cannot fail here.
        let built = "pattern configs are validated with the scenario";
        match layer {
            Layer::Retry(_) => None,
            Layer::Breaker(c) => Some(Gate::Breaker(Box::new(Breaker::new(c).expect(built)))),
            Layer::Bulkhead(c) => Some(Gate::Bulkhead(Bulkhead::new(c).expect(built))),
            Layer::Limiter(c) => Some(Gate::Limiter(Limiter::new(c).expect(built))),
        }
    }

    fn try_acquire(&mut self, now: SimTime) -> Result<Held, Reason> {
        match self {
            Gate::Breaker(b) => match b.try_acquire(now) {
                BreakerDecision::Admit(p) => Ok(Held::Breaker(p)),
                BreakerDecision::Reject { .. } => Err(Reason::BreakerOpen),
            },
            Gate::Bulkhead(b) => match b.try_acquire(now, 0) {
                BulkheadDecision::Admit(p) => Ok(Held::Bulkhead(p)),
                // Validation refuses waiting bulkheads, so `Wait` cannot happen; treat it as
                // a rejection rather than trusting that.
                BulkheadDecision::Wait { .. } | BulkheadDecision::Reject(_) => {
                    Err(Reason::BulkheadFull)
                }
            },
            Gate::Limiter(l) => {
                let one = Cost::new(1).expect("a cost of one is valid");
                if l.acquire(now, one).allowed() {
                    Ok(Held::Nothing)
                } else {
                    Err(Reason::ClientLimited)
                }
            }
        }
    }
}

/// Passes a call (or attempt) through `gates` in order. On a rejection, what the earlier
/// gates admitted is given back unused, and the reason is returned.
pub fn acquire_all(gates: &mut [Gate], now: SimTime, permits: &mut Permits) -> Result<(), Reason> {
    for i in 0..gates.len() {
        match gates[i].try_acquire(now) {
            Ok(h) => permits.held[i] = h,
            Err(reason) => {
                release_all(&mut gates[..i], now, permits, None);
                return Err(reason);
            }
        }
    }
    Ok(())
}

/// Gives back what `acquire_all` took, reporting `success` to breakers (`None`: the call
/// never ran, so it says nothing about the dependency).
pub fn release_all(gates: &mut [Gate], now: SimTime, permits: &mut Permits, success: Option<bool>) {
    for (gate, held) in gates.iter_mut().zip(permits.held.iter_mut()) {
        match (gate, std::mem::take(held)) {
            (Gate::Breaker(b), Held::Breaker(p)) => match success {
                Some(true) => b.on_success(now, p),
                Some(false) => b.on_failure(now, p),
                None => b.on_ignored(now, p),
            },
            (Gate::Bulkhead(b), Held::Bulkhead(p)) => {
                // Nothing waits in a rejecting bulkhead, so nothing is granted here.
                let _ = b.release(now, p);
            }
            _ => {}
        }
    }
}

/// How a failed attempt looks to a retry policy: HTTP-style statuses for what a server
/// answered, timeouts and connection errors for what the network did.
pub fn failure_of(reason: Reason) -> Failure {
    let status = |code| Failure::Status {
        code,
        retry_after: None,
    };
    match reason {
        Reason::Timeout | Reason::Deadline => Failure::Timeout,
        Reason::Unavailable => Failure::ConnectionError,
        Reason::RateLimited | Reason::ClientLimited => status(429),
        Reason::QueueFull
        | Reason::ConcurrencyLimited
        | Reason::Shed
        | Reason::BreakerOpen
        | Reason::BulkheadFull => status(503),
        Reason::Error => status(500),
        Reason::Dependency => status(502),
    }
}
