//! [`Composite`]: several limiters that must all admit, charged only when they all do.

use super::any::{Limiter, LimiterConfig};
use super::decision::{Cost, RateDecision, RateLimiter, RateOutcome, RateRejection};
use crate::ConfigError;
use serde::{Deserialize, Serialize};
use sim_core::SimTime;

/// The most layers a composite may stack.
pub const COMPOSITE_LAYERS_MAX: usize = 16;

/// Layers that must all admit, e.g. 10/s and 500/min.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompositeConfig {
    /// The limiters, checked in order.
    pub layers: Vec<LimiterConfig>,
}

impl Default for CompositeConfig {
    /// One default layer.
    fn default() -> Self {
        CompositeConfig {
            layers: vec![LimiterConfig::default()],
        }
    }
}

impl CompositeConfig {
    /// Checks that there are 1 to [`COMPOSITE_LAYERS_MAX`] layers and that each validates.
    pub fn validate(&self) -> Result<(), ConfigError> {
        Composite::new(self).map(|_| ())
    }
}

/// Peek every layer; charge them all only if all admit.
///
/// The decision reports the tightest layer: the smallest `remaining` (with that layer's
/// `limit`), the latest `reset_at`, the longest `retry_after` of the layers that refused, and
/// the longest `delay`. On a refusal, nothing is charged: layers that would have admitted
/// report their uncharged `remaining`, and `reset_at` comes from the layers that refused. A cost no layer can ever take is reported as such even if another layer
/// only asks to wait.
#[derive(Debug, Clone)]
pub struct Composite {
    layers: Vec<Limiter>,
}

impl Composite {
    /// Fresh layers; an invalid layer is reported as `layers[i].field`.
    pub fn new(config: &CompositeConfig) -> Result<Self, ConfigError> {
        if config.layers.is_empty() || config.layers.len() > COMPOSITE_LAYERS_MAX {
            return Err(ConfigError::new(
                "layers",
                format!(
                    "must hold 1 to {COMPOSITE_LAYERS_MAX} limiters, got {}",
                    config.layers.len()
                ),
            ));
        }
        let layers = config
            .layers
            .iter()
            .enumerate()
            .map(|(i, c)| Limiter::new(c).map_err(|e| e.at(&format!("layers[{i}]"))))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Composite { layers })
    }

    /// The layers, in order, for reports.
    pub fn layers(&self) -> &[Limiter] {
        &self.layers
    }
}

/// The layers' decisions folded in one pass: the figures both for the case where every layer
/// admits and for a refusal, since which case it is is known only at the end.
struct Combined {
    outcome: RateOutcome,
    retry_after: Option<sim_core::SimDuration>,
    /// (remaining, limit) of the tightest layer if all admit (figures after the charge).
    tightest_admit: (u64, u64),
    /// (remaining, limit) of the tightest layer on a refusal (figures without the charge).
    tightest_refuse: (u64, u64),
    reset_all: SimTime,
    reset_refusing: SimTime,
    delay: sim_core::SimDuration,
}

impl Combined {
    fn new() -> Self {
        Combined {
            outcome: RateOutcome::Admit,
            retry_after: None,
            tightest_admit: (u64::MAX, 0),
            tightest_refuse: (u64::MAX, 0),
            reset_all: SimTime::ZERO,
            reset_refusing: SimTime::ZERO,
            delay: sim_core::SimDuration::ZERO,
        }
    }

    fn add(&mut self, d: &RateDecision, cost: Cost) {
        if d.remaining < self.tightest_admit.0 {
            self.tightest_admit = (d.remaining, d.limit);
        }
        // On a refusal nothing is charged, so a layer that would have admitted reports what it
        // has now (its figures before the charge) and its reset does not bind.
        let uncharged = if d.allowed() {
            d.remaining.saturating_add(cost.units()).min(d.limit)
        } else {
            d.remaining
        };
        if uncharged < self.tightest_refuse.0 {
            self.tightest_refuse = (uncharged, d.limit);
        }
        self.reset_all = self.reset_all.max(d.reset_at);
        self.delay = self.delay.max(d.delay);
        let hopeless = |o: RateOutcome| {
            matches!(
                o,
                RateOutcome::Reject(RateRejection::CostAboveCapacity { .. })
            )
        };
        if !d.allowed() {
            self.reset_refusing = self.reset_refusing.max(d.reset_at);
        }
        match (self.outcome, d.outcome) {
            (_, RateOutcome::Admit) => {}
            (a, _) if hopeless(a) => {}
            (_, o) if hopeless(o) => {
                self.outcome = o;
                self.retry_after = None;
            }
            (_, o) => {
                self.outcome = o;
                self.retry_after = self.retry_after.max(d.retry_after);
            }
        }
    }

    fn finish(self) -> RateDecision {
        let refused = self.outcome != RateOutcome::Admit;
        let (remaining, limit) = if refused {
            self.tightest_refuse
        } else {
            self.tightest_admit
        };
        RateDecision {
            outcome: self.outcome,
            limit,
            remaining,
            retry_after: self.retry_after,
            reset_at: if refused {
                self.reset_refusing
            } else {
                self.reset_all
            },
            delay: if refused {
                sim_core::SimDuration::ZERO
            } else {
                self.delay
            },
        }
    }
}

impl RateLimiter for Composite {
    fn peek(&self, now: SimTime, cost: Cost) -> RateDecision {
        let mut combined = Combined::new();
        for layer in &self.layers {
            combined.add(&layer.peek(now, cost), cost);
        }
        combined.finish()
    }

    fn acquire(&mut self, now: SimTime, cost: Cost) -> RateDecision {
        let d = self.peek(now, cost);
        if d.allowed() {
            for layer in &mut self.layers {
                let charged = layer.acquire(now, cost);
                // Nothing changed since the peek, so a layer that admitted then admits now.
                assert!(
                    charged.allowed(),
                    "a layer changed its mind between peek and commit"
                );
            }
        }
        d
    }

    fn at_rest(&self, now: SimTime) -> bool {
        self.layers.iter().all(|l| l.at_rest(now))
    }
}
