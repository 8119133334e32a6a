//! The glue between a call's pattern stack and the `patterns` crate: each [`Gate`] wraps one
//! pattern machine (breaker, bulkhead, rate limiter, adaptive throttle), and [`Held`] is what
//! a call keeps while a gate has admitted it.
//!
//! No field of a machine's decision is dropped on the way to the call: a refusal carries the
//! refuser's hint of when to come back (`Refusal::retry_after`: a limiter's `retry_after`,
//! the end of a breaker's open wait), which the retry policy honours like a server's
//! `Retry-After`; an admission with a delay (a leaky bucket used as a queue) makes the call
//! wait that long at the gate ([`Acquire::Delay`]) before it goes on.
//!
//! Gates hold no per-request state beyond what the machines hand out (a breaker permit, a
//! bulkhead permit), and those are kept inline in the call, so the hot path allocates nothing.
//!
//! A bulkhead with a `max_wait_duration` may make a call wait for a slot: acquisition stops at
//! that gate ([`Acquire::Wait`]) and resumes after it when a release grants the slot, or the
//! call fails when the wait times out. Releases report such grants and time-outs as
//! [`Wake`]s, which the world acts on once the release is done.

use super::outcome::{Outcome, Reason, Refusal, accepted_by_backend};
use super::pace::Pace;
use super::stream::LazyStream;
use crate::format::schema::Layer;
use patterns::breaker::{Breaker, BreakerDecision, Permit};
use patterns::bulkhead::{Bulkhead, BulkheadDecision, BulkheadPermit};
use patterns::limiter::{Cost, Limiter, RateLimiter};
use patterns::shedder::AdaptiveThrottle;
use sim_core::{SimDuration, SimTime};

/// One admitting layer of a pattern stack.
#[derive(Debug, Clone)]
pub enum Gate {
    /// A circuit breaker (boxed: it is much larger than the other gates, and built once).
    Breaker(Box<Breaker>),
    /// A bulkhead; its waiters are named by their call's key.
    Bulkhead(Bulkhead<u64>),
    /// A rate limiter.
    Limiter(Limiter),
    /// Client-side adaptive throttling (Google SRE).
    Throttle(AdaptiveThrottle),
    /// Pacing on the target's rate-limit quota.
    Pace(Pace),
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

/// A world is copied whole, each gate's machine with the permits of its calls, so each copy
/// reports and releases its permits to its own machines (the permits are not `Clone`
/// otherwise: reporting one twice is a bug).
impl Clone for Held {
    fn clone(&self) -> Self {
        match self {
            Held::Nothing => Held::Nothing,
            Held::Breaker(permit) => Held::Breaker(permit.clone_with_machine()),
            Held::Bulkhead(permit) => Held::Bulkhead(permit.clone_with_machine()),
            Held::Throttle => Held::Throttle,
        }
    }
}

/// What a call holds from the gates of its stack, in gate order: the outer gates' first,
/// then the inner gates'. One list serves both; it is inline up to [`PERMITS_INLINE`] gates
/// (every stack of the library; keeping it small keeps a call small, and a call is moved
/// into and out of its table once per request) and boxed for a longer stack (up to
/// [`LAYERS_MAX`](crate::format::limits::LAYERS_MAX) layers), the box counted in `World::carried_bytes` while its call lives.
#[derive(Debug, Clone)]
pub enum Permits {
    /// Up to [`PERMITS_INLINE`] gates' permits, in the call.
    Inline([Held; PERMITS_INLINE]),
    /// One per gate of a longer stack.
    Boxed(Box<[Held]>),
}

/// The gates whose permits a call keeps inline.
pub const PERMITS_INLINE: usize = 6;

// The box takes no room of its own: a call is as large as with the inline permits alone.
const _: () =
    assert!(std::mem::size_of::<Permits>() == std::mem::size_of::<[Held; PERMITS_INLINE]>());

impl Default for Permits {
    fn default() -> Self {
        Permits::Inline(Default::default())
    }
}

/// How far a pass through the gates got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquire {
    /// Every gate admitted.
    Done,
    /// The bulkhead at `gate` queued the call until `deadline` at the latest.
    Wait {
        /// The gate's index.
        gate: usize,
        /// When the wait times out.
        deadline: SimTime,
    },
    /// The rate limiter at `gate` admitted the call but holds it back until `until` (it
    /// shapes traffic instead of refusing it); the pass resumes after that gate then.
    Delay {
        /// The gate's index.
        gate: usize,
        /// When the call may go on.
        until: SimTime,
    },
    /// A gate refused; everything the earlier gates admitted was given back.
    Refused(Refusal),
}

/// What one gate answers.
enum Answer {
    Admit(Held),
    AdmitAfter(SimDuration),
    Wait(SimTime),
    Refuse(Refusal),
}

/// A waiting call's turn came at a bulkhead (`permit` is its slot), or its wait timed out
/// (`permit` is `None`).
#[derive(Debug)]
pub struct Wake {
    /// The waiting call's key, as the bulkhead knows it.
    pub id: u64,
    /// The gate's index.
    pub gate: usize,
    /// The slot granted, if any.
    pub permit: Option<BulkheadPermit>,
}

/// Copied with its world, as [`Held`] is.
impl Clone for Wake {
    fn clone(&self) -> Self {
        Wake {
            id: self.id,
            gate: self.gate,
            permit: self.permit.as_ref().map(BulkheadPermit::clone_with_machine),
        }
    }
}

impl Permits {
    /// Room for the permits of a stack of `gates` gates.
    pub fn for_gates(gates: usize) -> Permits {
        if gates <= PERMITS_INLINE {
            return Permits::default();
        }
        Permits::Boxed((0..gates).map(|_| Held::Nothing).collect())
    }

    /// The permits of a gate list that starts at `offset` in the stack's gate order.
    pub fn from(&mut self, offset: usize) -> &mut [Held] {
        match self {
            Permits::Inline(held) => &mut held[offset..],
            Permits::Boxed(held) => &mut held[offset..],
        }
    }

    /// The heap bytes it holds (a long stack's permits).
    pub fn heap_bytes(&self) -> u64 {
        match self {
            Permits::Inline(_) => 0,
            Permits::Boxed(held) => std::mem::size_of_val::<[Held]>(held) as u64,
        }
    }
}

impl Gate {
    /// The gate of a layer; `None` for `Retry`, `Hedge`, `Fallback` and `AdaptiveTimeout`,
    /// which are not gates.
    pub fn of(layer: &Layer) -> Option<Gate> {
        // Configs were validated with the file, so building cannot fail here.
        let built = "pattern configs are validated with the scenario";
        match layer {
            Layer::Retry(_) | Layer::Hedge(_) | Layer::Fallback(_) | Layer::AdaptiveTimeout(_) => {
                None
            }
            Layer::Pace(c) => Some(Gate::Pace(Pace::new(c))),
            Layer::Breaker(c) => Some(Gate::Breaker(Box::new(Breaker::new(c).expect(built)))),
            Layer::Bulkhead(c) => Some(Gate::Bulkhead(Bulkhead::new(c).expect(built))),
            Layer::Limiter(c) => Some(Gate::Limiter(Limiter::new(c).expect(built))),
            Layer::Throttle(c) => Some(Gate::Throttle(AdaptiveThrottle::new(c).expect(built))),
        }
    }

    fn try_acquire(&mut self, now: SimTime, rng: &mut LazyStream, ticket: Ticket) -> Answer {
        let refuse = |reason, retry_after| {
            Answer::Refuse(Refusal {
                reason,
                retry_after,
            })
        };
        match self {
            Gate::Breaker(b) => match b.try_acquire(now) {
                BreakerDecision::Admit(p) => Answer::Admit(Held::Breaker(p)),
                BreakerDecision::Reject { retry_at, .. } => refuse(
                    Reason::BreakerOpen,
                    retry_at.map(|at| at.saturating_duration_since(now)),
                ),
            },
            Gate::Bulkhead(b) => match b.try_acquire(now, ticket.id) {
                BulkheadDecision::Admit(p) => Answer::Admit(Held::Bulkhead(p)),
                BulkheadDecision::Wait { deadline } => Answer::Wait(deadline),
                BulkheadDecision::Reject(_) => refuse(Reason::BulkheadFull, None),
            },
            Gate::Throttle(t) => {
                if t.try_send(now, rng.get()) {
                    Answer::Admit(Held::Throttle)
                } else {
                    refuse(Reason::ClientLimited, None)
                }
            }
            Gate::Pace(p) => match p.hold(now) {
                Some(wait) => Answer::AdmitAfter(wait),
                None => Answer::Admit(Held::Nothing),
            },
            Gate::Limiter(l) => {
                let d = l.acquire(now, ticket.cost);
                if !d.allowed() {
                    refuse(Reason::ClientLimited, d.retry_after)
                } else if d.delay.is_zero() {
                    Answer::Admit(Held::Nothing)
                } else {
                    Answer::AdmitAfter(d.delay)
                }
            }
        }
    }
}

/// What a call shows its gates: its id (a bulkhead's waiter is named by it) and its cost,
/// the tokens a rate limiter takes for it (its request class's cost).
#[derive(Debug, Clone, Copy)]
pub struct Ticket {
    /// The call's (or attempt's) id.
    pub id: u64,
    /// Tokens a limiter takes.
    pub cost: Cost,
}

impl Ticket {
    /// The ticket of call `id` of a request whose class costs `cost` tokens (at least 1).
    pub fn new(id: u64, cost: u32) -> Ticket {
        let cost = if cost == 1 {
            Cost::ONE
        } else {
            Cost::new(u64::from(cost)).expect("class costs are at least 1")
        };
        Ticket { id, cost }
    }
}

/// Passes a call (or attempt) with `ticket` through `gates` in order, from gate `from` (0 for
/// a new pass, the gate after a granted wait to resume one). On a refusal, what the gates
/// before it admitted is given back unused (its wakes go to `wakes`).
pub fn acquire_from(
    gates: &mut [Gate],
    from: usize,
    now: SimTime,
    permits: &mut [Held],
    rng: &mut LazyStream,
    ticket: Ticket,
    wakes: &mut Vec<Wake>,
) -> Acquire {
    for i in from..gates.len() {
        match gates[i].try_acquire(now, rng, ticket) {
            Answer::Admit(h) => permits[i] = h,
            Answer::AdmitAfter(delay) => {
                return Acquire::Delay {
                    gate: i,
                    until: now.saturating_add(delay),
                };
            }
            Answer::Wait(deadline) => return Acquire::Wait { gate: i, deadline },
            Answer::Refuse(refusal) => {
                release_all(&mut gates[..i], now, permits, None, wakes);
                return Acquire::Refused(refusal);
            }
        }
    }
    Acquire::Done
}

/// Takes a call that waits at the bulkhead `gate` out of its queue (its caller gave up).
pub fn leave_queue(gates: &mut [Gate], gate: usize, now: SimTime, id: u64) {
    if let Gate::Bulkhead(b) = &mut gates[gate] {
        b.cancel(now, &id);
    }
}

/// Times out the waits of the bulkhead `gate` that are due at `now`.
pub fn expire(gates: &mut [Gate], gate: usize, now: SimTime, wakes: &mut Vec<Wake>) {
    if let Gate::Bulkhead(b) = &mut gates[gate] {
        for (id, _) in b.expire(now) {
            wakes.push(Wake {
                id,
                gate,
                permit: None,
            });
        }
    }
}

/// Gives back what `acquire_from` took, reporting the outcome to breakers and throttles
/// (`None`: the call never ran, so it says nothing about the dependency). A bulkhead slot
/// given back may go to a waiting call, and waits found timed out end: both go to `wakes`.
pub fn release_all(
    gates: &mut [Gate],
    now: SimTime,
    permits: &mut [Held],
    outcome: Option<Outcome>,
    wakes: &mut Vec<Wake>,
) {
    for (i, (gate, held)) in gates.iter_mut().zip(permits.iter_mut()).enumerate() {
        match (gate, std::mem::take(held)) {
            (Gate::Breaker(b), Held::Breaker(p)) => match outcome {
                Some(Outcome::Ok) => b.on_success(now, p),
                Some(Outcome::Fail(_)) => b.on_failure(now, p),
                None => b.on_ignored(now, p),
            },
            (Gate::Throttle(t), Held::Throttle) if outcome.is_some_and(accepted_by_backend) => {
                t.on_accepted(now);
            }
            (Gate::Bulkhead(b), Held::Bulkhead(p)) => {
                let (granted, expired) = b.release(now, p);
                for (id, _) in expired {
                    wakes.push(Wake {
                        id,
                        gate: i,
                        permit: None,
                    });
                }
                if let Some(g) = granted {
                    wakes.push(Wake {
                        id: g.id,
                        gate: i,
                        permit: Some(g.permit),
                    });
                }
            }
            _ => {}
        }
    }
}
