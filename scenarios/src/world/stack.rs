//! The glue between a call's pattern stack and the `patterns` crate: each [`Gate`] wraps one
//! pattern machine (breaker, bulkhead, rate limiter), [`Held`] is what a call keeps while a
//! gate has admitted it, and [`failure_of`] says how an outcome looks to a retry policy.
//!
//! Gates hold no per-request state beyond what the machines hand out (a breaker permit, a
//! bulkhead permit), and those are kept inline in the call, so the hot path allocates nothing.

use super::{Outcome, Reason};
use crate::schema::Layer;
use crate::validate::LAYERS_MAX;
use patterns::breaker::{Breaker, BreakerDecision, Permit};
use patterns::bulkhead::{Bulkhead, BulkheadDecision, BulkheadPermit};
use patterns::limiter::{Cost, Limiter, RateLimiter};
use patterns::retry::Failure;
use patterns::shedder::AdaptiveThrottle;
use sim_core::{RngStream, SimDuration, SimTime};

/// One admitting layer of a pattern stack.
#[derive(Debug)]
pub enum Gate {
    /// A circuit breaker (boxed: it is much larger than the other gates, and built once).
    Breaker(Box<Breaker>),
    /// A bulkhead (rejecting when full; waiting is not simulated).
    Bulkhead(Bulkhead<u64>),
    /// A rate limiter.
    Limiter(Limiter),
    /// Client-side adaptive throttling (Google SRE).
    Throttle(AdaptiveThrottle),
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
    /// A request the adaptive throttle let through, whose answer it wants to hear.
    Throttle,
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
            Layer::Throttle(c) => Some(Gate::Throttle(AdaptiveThrottle::new(c).expect(built))),
        }
    }

    fn try_acquire(&mut self, now: SimTime, rng: &mut RngStream) -> Result<Held, Reason> {
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
            Gate::Throttle(t) => {
                if t.try_send(now, rng) {
                    Ok(Held::Throttle)
                } else {
                    Err(Reason::ClientLimited)
                }
            }
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
pub fn acquire_all(
    gates: &mut [Gate],
    now: SimTime,
    permits: &mut Permits,
    rng: &mut RngStream,
) -> Result<(), Reason> {
    for i in 0..gates.len() {
        match gates[i].try_acquire(now, rng) {
            Ok(h) => permits.held[i] = h,
            Err(reason) => {
                release_all(&mut gates[..i], now, permits, None);
                return Err(reason);
            }
        }
    }
    Ok(())
}

/// Gives back what `acquire_all` took, reporting the outcome to breakers and throttles
/// (`None`: the call never ran, so it says nothing about the dependency).
pub fn release_all(
    gates: &mut [Gate],
    now: SimTime,
    permits: &mut Permits,
    outcome: Option<Outcome>,
) {
    for (gate, held) in gates.iter_mut().zip(permits.held.iter_mut()) {
        match (gate, std::mem::take(held)) {
            (Gate::Breaker(b), Held::Breaker(p)) => match outcome {
                Some(Outcome::Ok) => b.on_success(now, p),
                Some(Outcome::Fail(_)) => b.on_failure(now, p),
                None => b.on_ignored(now, p),
            },
            (Gate::Throttle(t), Held::Throttle) if outcome.is_some_and(accepted) => {
                t.on_accepted(now);
            }
            (Gate::Bulkhead(b), Held::Bulkhead(p)) => {
                // Nothing waits in a rejecting bulkhead, so nothing is granted here.
                let _ = b.release(now, p);
            }
            _ => {}
        }
    }
}

/// Whether the backend accepted a request, for adaptive throttling: it did unless it refused
/// it for overload or never answered.
fn accepted(outcome: Outcome) -> bool {
    match outcome {
        Outcome::Ok => true,
        Outcome::Fail(r) => !matches!(
            r,
            Reason::Timeout
                | Reason::Deadline
                | Reason::Unavailable
                | Reason::QueueFull
                | Reason::RateLimited
                | Reason::ConcurrencyLimited
                | Reason::Shed
                | Reason::BreakerOpen
                | Reason::BulkheadFull
                | Reason::ClientLimited
        ),
    }
}

/// How a failed attempt looks to a retry policy: HTTP-style statuses for what a server
/// answered (with its `Retry-After`, if it sent one), timeouts and connection errors for what
/// the network did.
pub fn failure_of(reason: Reason, retry_after: Option<SimDuration>) -> Failure {
    let status = |code| Failure::Status { code, retry_after };
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
