//! The admission layers that read a request's attributes: rate limits keyed on the tenant and
//! charged the class's cost, in shadow mode or enforced ([`RateLimits`]), and the priority
//! shedder ([`PriorityShedding`]).
//!
//! A service's enforcing `RateLimit` layers act as one composite limiter (peek then commit,
//! as [`patterns::limiter::Composite`]): every layer is asked without charging, and only when
//! all admit is each charged, so a request the per-tenant limit refuses takes no token from
//! the global one. Shadow layers decide on their own, are charged as enforcement would charge
//! them (only for what they would admit), count what they would refuse, and refuse nothing.

use super::outcome::Reason;
use super::traffic::Attrs;
use crate::format::schema::{KeyedLimit, LimitKey};
use patterns::limiter::{Cost, Keyed, KeyedConfig, Limiter, RateDecision, RateLimiter};
use patterns::shedder::{PriorityConfig, PriorityShedder};
use sim_core::{SimDuration, SimTime};

/// One limiter or one registry of limiters by tenant.
#[derive(Debug)]
enum Store {
    Global(Limiter),
    Tenant(Keyed<u32>),
}

impl Store {
    fn peek(&self, now: SimTime, attrs: Attrs, cost: Cost) -> RateDecision {
        match self {
            Store::Global(l) => l.peek(now, cost),
            Store::Tenant(k) => k.peek(now, &attrs.tenant, cost),
        }
    }

    fn acquire(&mut self, now: SimTime, attrs: Attrs, cost: Cost) -> RateDecision {
        match self {
            Store::Global(l) => l.acquire(now, cost),
            Store::Tenant(k) => k.acquire(now, &attrs.tenant, cost),
        }
    }
}

#[derive(Debug)]
struct Layer {
    store: Store,
    shadow: bool,
}

/// A service's `RateLimit` admission layers.
#[derive(Debug, Default)]
pub struct RateLimits {
    layers: Vec<Layer>,
    /// Requests a shadow layer would have refused.
    shadow_refusals: u64,
}

/// A rate limit's answer.
pub enum Limited {
    /// Admitted; a shaping limiter may hold it back for this long.
    Pass(SimDuration),
    /// Refused, with the limiter's `Retry-After`.
    Refused(Option<SimDuration>),
}

impl RateLimits {
    /// Adds the layer `config` (validated with the scenario).
    pub fn push(&mut self, config: &KeyedLimit) {
        let built = "configs are validated with the scenario";
        let store = match config.key {
            LimitKey::Global => Store::Global(Limiter::new(&config.limiter).expect(built)),
            LimitKey::Tenant => Store::Tenant(
                Keyed::new(&KeyedConfig {
                    limiter: config.limiter.clone(),
                    max_keys: config.max_keys,
                    idle_timeout: config.idle_timeout,
                    when_full: config.when_full,
                })
                .expect(built),
            ),
        };
        self.layers.push(Layer {
            store,
            shadow: config.shadow,
        });
    }

    /// True when the service has no `RateLimit` layer.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// Requests its shadow layers would have refused.
    pub fn shadow_refusals(&self) -> u64 {
        self.shadow_refusals
    }

    /// Decides for a request of `attrs` arriving at `now`.
    pub fn admit(&mut self, now: SimTime, attrs: Attrs) -> Limited {
        let cost = Cost::new(u64::from(attrs.cost)).expect("class costs are at least 1");
        for l in self.layers.iter_mut().filter(|l| l.shadow) {
            if !l.store.acquire(now, attrs, cost).allowed() {
                self.shadow_refusals += 1;
            }
        }
        for l in self.layers.iter().filter(|l| !l.shadow) {
            let d = l.store.peek(now, attrs, cost);
            if !d.allowed() {
                return Limited::Refused(d.retry_after);
            }
        }
        let mut delay = SimDuration::ZERO;
        for l in self.layers.iter_mut().filter(|l| !l.shadow) {
            let d = l.store.acquire(now, attrs, cost);
            assert!(d.allowed(), "a limiter refused what its peek admitted");
            delay = delay.max(d.delay);
        }
        Limited::Pass(delay)
    }
}

/// A service's priority shedder.
#[derive(Debug)]
pub struct PriorityShedding {
    shedder: PriorityShedder,
}

impl PriorityShedding {
    /// The shedder of `config` (validated with the scenario).
    pub fn new(config: &PriorityConfig) -> PriorityShedding {
        PriorityShedding {
            shedder: PriorityShedder::new(config).expect("configs are validated with the scenario"),
        }
    }

    /// Sheds or admits a request of `attrs` at a replica holding `in_flight` requests (busy
    /// workers and queue) for `workers` workers.
    pub fn admit(&mut self, attrs: Attrs, in_flight: u64, workers: u32) -> Result<(), Reason> {
        let load = if workers == 0 {
            f64::INFINITY
        } else {
            in_flight as f64 * 100.0 / f64::from(workers)
        };
        // A replica without workers (a capacity drop to zero) is past every threshold.
        self.shedder.set_load(load.min(f64::MAX));
        self.shedder
            .admit(usize::from(attrs.level))
            .map_err(|_| Reason::Shed)
    }
}
