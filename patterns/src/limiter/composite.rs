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

fn combine(decisions: &[RateDecision], cost: Cost) -> RateDecision {
    let refused = decisions.iter().any(|d| !d.allowed());
    let mut all = *decisions
        .first()
        .expect("a composite has at least one layer");
    all.outcome = RateOutcome::Admit;
    all.retry_after = None;
    all.remaining = u64::MAX;
    all.reset_at = SimTime::ZERO;
    for d in decisions {
        // On a refusal nothing is charged, so a layer that would have admitted reports what it
        // has now (its figures before the charge) and its reset does not bind.
        let remaining = if refused && d.allowed() {
            d.remaining.saturating_add(cost.units()).min(d.limit)
        } else {
            d.remaining
        };
        if remaining < all.remaining {
            all.remaining = remaining;
            all.limit = d.limit;
        }
        if !refused || !d.allowed() {
            all.reset_at = all.reset_at.max(d.reset_at);
        }
        all.delay = all.delay.max(d.delay);
        let hopeless = |o: RateOutcome| {
            matches!(
                o,
                RateOutcome::Reject(RateRejection::CostAboveCapacity { .. })
            )
        };
        match (all.outcome, d.outcome) {
            (_, RateOutcome::Admit) => {}
            (a, _) if hopeless(a) => {}
            (_, o) if hopeless(o) => {
                all.outcome = o;
                all.retry_after = None;
            }
            (_, o) => {
                all.outcome = o;
                all.retry_after = all.retry_after.max(d.retry_after);
            }
        }
    }
    if refused {
        all.delay = sim_core::SimDuration::ZERO;
    }
    all
}

impl RateLimiter for Composite {
    fn peek(&self, now: SimTime, cost: Cost) -> RateDecision {
        // At most COMPOSITE_LAYERS_MAX layers: a fixed array keeps the hot path free of allocation.
        let mut decisions = [RateDecision::admit(0, 0, SimTime::ZERO); COMPOSITE_LAYERS_MAX];
        for (slot, layer) in decisions.iter_mut().zip(&self.layers) {
            *slot = layer.peek(now, cost);
        }
        combine(&decisions[..self.layers.len()], cost)
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
