//! [`PriorityShedder`]: drop the least important requests first as load rises.

use crate::ConfigError;
use serde::{Deserialize, Serialize};

/// Load thresholds per priority class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PriorityConfig {
    /// For each class, lowest priority first: requests of that class are shed once the load
    /// reaches this percentage. Must not decrease from one class to the next, so a more
    /// important class is never shed while a less important one is served. Default
    /// `[70, 85, 100, 120]`: four classes, the most important kept until load is 120%.
    pub shed_thresholds_percent: Vec<f64>,
}

impl Default for PriorityConfig {
    fn default() -> Self {
        PriorityConfig {
            shed_thresholds_percent: vec![70.0, 85.0, 100.0, 120.0],
        }
    }
}

/// The most classes a priority shedder may have.
pub const PRIORITY_CLASSES_MAX: usize = 64;

impl PriorityConfig {
    /// Checks that there are 1 to [`PRIORITY_CLASSES_MAX`] classes with finite, positive,
    /// non-decreasing thresholds.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let t = &self.shed_thresholds_percent;
        if t.is_empty() || t.len() > PRIORITY_CLASSES_MAX {
            return Err(ConfigError::new(
                "shed_thresholds_percent",
                format!(
                    "must list 1 to {PRIORITY_CLASSES_MAX} classes, got {}",
                    t.len()
                ),
            ));
        }
        for (i, &v) in t.iter().enumerate() {
            if !(v.is_finite() && v > 0.0) {
                return Err(ConfigError::new(
                    format!("shed_thresholds_percent[{i}]"),
                    format!("must be finite and positive, got {v}"),
                ));
            }
            if i > 0 && v < t[i - 1] {
                return Err(ConfigError::new(
                    format!("shed_thresholds_percent[{i}]"),
                    format!(
                        "must be at least the previous class's {} (less important classes go first), got {v}",
                        t[i - 1]
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// A refusal by the priority shedder.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shed {
    /// The request's class (after clamping to the known classes).
    pub class: usize,
    /// The load that shed it, percent.
    pub load_percent: f64,
    /// The class's threshold, percent.
    pub threshold_percent: f64,
}

/// Sheds by class against a load the caller measures (utilisation, queue delay over its
/// target, in percent).
#[derive(Debug, Clone)]
pub struct PriorityShedder {
    thresholds: Vec<f64>,
    load_percent: f64,
    shed_by_class: Vec<u64>,
}

impl PriorityShedder {
    /// A shedder at zero load; fails if the config does not validate.
    pub fn new(config: &PriorityConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(PriorityShedder {
            thresholds: config.shed_thresholds_percent.clone(),
            load_percent: 0.0,
            shed_by_class: vec![0; config.shed_thresholds_percent.len()],
        })
    }

    /// Set the current load, in percent; a value that is not finite is ignored.
    pub fn set_load(&mut self, load_percent: f64) {
        if load_percent.is_finite() {
            self.load_percent = load_percent.max(0.0);
        }
    }

    /// The classes being shed at the current load: `0..shed_below`.
    pub fn shed_below(&self) -> usize {
        self.thresholds
            .iter()
            .take_while(|&&t| self.load_percent >= t)
            .count()
    }

    /// Admit or shed a request of `class` (0 is the least important; classes past the last
    /// configured one count as the last).
    pub fn admit(&mut self, class: usize) -> Result<(), Shed> {
        let class = class.min(self.thresholds.len() - 1);
        let threshold = self.thresholds[class];
        if self.load_percent >= threshold {
            self.shed_by_class[class] += 1;
            Err(Shed {
                class,
                load_percent: self.load_percent,
                threshold_percent: threshold,
            })
        } else {
            Ok(())
        }
    }

    /// Requests shed so far, per class.
    pub fn shed_by_class(&self) -> &[u64] {
        &self.shed_by_class
    }
}
