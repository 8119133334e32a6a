//! The admission layers that read a request's attributes: rate limits keyed on the tenant and
//! charged the class's cost, in shadow mode or enforced ([`RateLimits`]), and the priority
//! shedder ([`PriorityShedding`]), and the PID shedder with the delays it reads
//! ([`PidShedding`]).
//!
//! A service's enforcing `RateLimit` layers act as one composite limiter (peek then commit,
//! as [`patterns::limiter::Composite`]): every layer is asked without charging, and only when
//! all admit is each charged, so a request the per-tenant limit refuses takes no token from
//! the global one. Shadow layers decide on their own, are charged as enforcement would charge
//! them (only for what they would admit), count what they would refuse, and refuse nothing.

use super::outcome::Reason;
use super::pace::Quota;
use super::traffic::Attrs;
use crate::format::schema::{Admission, KeyedLimit, LimitKey, Service};
use patterns::concurrency::ConcurrencyToken;
use patterns::limiter::{Cost, Keyed, KeyedConfig, Limiter, RateDecision, RateLimiter};
use patterns::shedder::{PidShedder, PriorityConfig, PriorityShedder};
use sim_core::{RngStream, SimDuration, SimTime};

/// One limiter or one registry of limiters by tenant.
#[derive(Debug, Clone)]
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

#[derive(Debug, Clone)]
struct Layer {
    store: Store,
    shadow: bool,
}

/// A service's `RateLimit` admission layers.
#[derive(Debug, Clone, Default)]
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
#[derive(Debug, Clone)]
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

/// A PID shedder and the delay samples it reads at its next tick.
#[derive(Debug, Clone)]
pub struct PidShedding {
    shedder: PidShedder,
    interval: SimDuration,
    delay_sum_ns: u64,
    delay_count: u64,
    drop_ratio_max: f64,
}

impl PidShedding {
    /// `shedder`, measuring and updating every `interval`.
    pub fn new(shedder: PidShedder, interval: SimDuration) -> PidShedding {
        PidShedding {
            shedder,
            interval,
            delay_sum_ns: 0,
            delay_count: 0,
            drop_ratio_max: 0.0,
        }
    }

    /// Its tick interval.
    pub fn interval(&self) -> SimDuration {
        self.interval
    }

    /// The drop ratio it set last.
    pub fn drop_ratio(&self) -> f64 {
        self.shedder.drop_ratio()
    }

    /// The highest drop ratio it has set.
    pub fn drop_ratio_max(&self) -> f64 {
        self.drop_ratio_max
    }

    /// Whether it drops an arrival (a draw from `rng`).
    pub fn should_drop(&self, rng: &mut RngStream) -> bool {
        self.shedder.should_drop(rng)
    }

    /// A job that queued left the queue after `sojourn`: its signal.
    pub fn record(&mut self, sojourn: SimDuration) {
        self.delay_sum_ns += sojourn.as_nanos();
        self.delay_count += 1;
    }

    /// It measures and updates at `now`. Its signal is the mean queueing delay of the
    /// requests served since the last tick, or the age of the `oldest` waiting request if
    /// that is longer (nothing may have left the queue). Returns the interval to the next
    /// tick.
    pub fn tick(&mut self, now: SimTime, oldest: SimDuration) -> SimDuration {
        let mean = self
            .delay_sum_ns
            .checked_div(self.delay_count)
            .map_or(SimDuration::ZERO, SimDuration::from_nanos);
        self.delay_sum_ns = 0;
        self.delay_count = 0;
        let drop_ratio = self.shedder.update(now, mean.max(oldest).as_millis_f64());
        self.drop_ratio_max = self.drop_ratio_max.max(drop_ratio);
        self.interval
    }
}

/// Admission control's answer to an arrival.
#[derive(Debug)]
pub enum Admit {
    /// Admitted, holding a concurrency slot if the replica has a limit.
    Yes(Option<ConcurrencyToken>),
    /// Admitted, but a shaping rate limiter holds it back until then.
    After(SimTime, Option<ConcurrencyToken>),
    /// Refused, with the `Retry-After` to send.
    No(Reason, Option<SimDuration>),
}

/// A service's admission layers that are the service's, not a replica's (those are the
/// concurrency limit and the tenant bulkhead, built with the replicas, and the distributed
/// limiters, the world's since a store call is a world's).
#[derive(Debug, Clone, Default)]
pub struct Layers {
    /// Its `Limiter` layers, in order.
    pub limiters: Vec<Limiter>,
    /// Its `RateLimit` layers (keyed, costed, shadow).
    pub rate_limits: RateLimits,
    /// Its priority shedder.
    pub priority: Option<PriorityShedding>,
    /// Its PID shedder.
    pub pid: Option<PidShedding>,
}

impl Layers {
    /// The layers of service `config`.
    pub fn of(config: &Service) -> Layers {
        let built = "configs are validated with the scenario";
        let mut layers = Layers::default();
        for a in &config.admission {
            match a {
                Admission::Limiter(l) => layers.limiters.push(Limiter::new(l).expect(built)),
                Admission::Pid {
                    interval,
                    controller,
                } => {
                    let shedder = PidShedder::new(controller).expect(built);
                    layers.pid = Some(PidShedding::new(shedder, *interval));
                }
                Admission::RateLimit(k) => layers.rate_limits.push(k),
                Admission::Priority(p) => layers.priority = Some(PriorityShedding::new(p)),
                Admission::Concurrency(_)
                | Admission::Distributed(_)
                | Admission::TenantBulkhead(_) => {}
            }
        }
        layers
    }

    /// The quota a reply at `now` reports (`None` without a `Limiter` layer): the least
    /// `remaining` over the limiters, and the `reset` of that limiter (see [`super::pace`]).
    pub fn quota(&self, now: SimTime) -> Option<Quota> {
        if self.limiters.is_empty() {
            return None;
        }
        let least = self
            .limiters
            .iter()
            .map(|l| l.peek(now, Cost::ONE))
            .min_by_key(|d| d.remaining)?;
        let reset = if least.remaining == 0 {
            least.retry_after.unwrap_or(SimDuration::ZERO)
        } else {
            least.reset_at.saturating_duration_since(now)
        };
        Some(Quota {
            remaining: u32::try_from(least.remaining).unwrap_or(u32::MAX),
            reset,
        })
    }
}
