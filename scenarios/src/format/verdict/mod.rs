//! The verdict settings of a file: [`VerdictConfig`] (the optional `verdict: (...)` section:
//! the thresholds of the metastability verdict), the triggers on a scenario's timeline that a
//! verdict is counted from and the [`Window`] it is judged over ([`triggers`]), and the checks
//! of the expectations that need a verdict (`validate_expectation`). The verdict itself is
//! the report's ([`crate::report::metastability`]): it computes it from these settings and the
//! run's figures.
//!
//! What counts as a trigger: a fault with a `duration` (it ends at `at + duration`), a cache
//! flush (an instant: the cold cache is the system's to recover from), a `Spike` schedule
//! (`base`, then `peak` from `start` to `end`), and a `Steps` schedule that goes back down
//! (from the first step of the stretch above the lower rate to the step that brings it down).
//! A `Ramp` never returns, and a fault without a `duration` never ends: a scenario with such a
//! fault has no verdict, since nothing ever stops disturbing it.

mod triggers;

pub use triggers::{NoVerdict, Trigger, Window, triggers, window};

use crate::format::schema::Scenario;
use patterns::ConfigError;
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;

/// The thresholds of the verdict: the file's optional `verdict: (...)` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerdictConfig {
    /// A bucket is healthy when its success ratio is at least this share of the baseline's
    /// (0–1; default 0.9).
    #[serde(default = "default_healthy_ratio")]
    pub healthy_ratio: f64,
    /// The least success ratio of the baseline (0–1; default 0.9); below it the run is
    /// collapsed: it was not healthy before the trigger.
    #[serde(default = "default_baseline_min_ratio")]
    pub baseline_min_ratio: f64,
    /// How long healthy buckets must follow one another to count as recovery (default 5s;
    /// rounded up to whole report buckets).
    #[serde(default = "default_sustain")]
    pub sustain: SimDuration,
}

fn default_healthy_ratio() -> f64 {
    0.9
}

fn default_baseline_min_ratio() -> f64 {
    0.9
}

fn default_sustain() -> SimDuration {
    SimDuration::from_secs(5)
}

impl Default for VerdictConfig {
    fn default() -> Self {
        VerdictConfig {
            healthy_ratio: default_healthy_ratio(),
            baseline_min_ratio: default_baseline_min_ratio(),
            sustain: default_sustain(),
        }
    }
}

impl VerdictConfig {
    /// Checks the thresholds; field paths are relative to the section.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (field, value) in [
            ("healthy_ratio", self.healthy_ratio),
            ("baseline_min_ratio", self.baseline_min_ratio),
        ] {
            if !(value.is_finite() && value > 0.0 && value <= 1.0) {
                return Err(ConfigError::new(
                    field,
                    format!("must be a ratio above 0 and at most 1, got {value}"),
                ));
            }
        }
        if self.sustain.is_zero() || self.sustain > SimDuration::CONFIG_MAX {
            return Err(ConfigError::new(
                "sustain",
                format!(
                    "must be longer than 0s and at most 100 years, got {}",
                    self.sustain
                ),
            ));
        }
        Ok(())
    }
}

/// Validation of a `Recovers` or `Metastable` expectation at `path` beyond its client's name
/// (which validation checks as for every expectation): a client left out must be the only one
/// (`named` says whether one was given), and the scenario needs a trigger that ends within the
/// run.
pub(crate) fn validate_expectation(
    path: &str,
    named: bool,
    scenario: &Scenario,
) -> Result<(), ConfigError> {
    if !named && scenario.clients.len() > 1 {
        return Err(ConfigError::new(
            format!("{path}.client"),
            format!(
                "the scenario has {} clients; say which one the verdict is about, e.g. client: {:?}",
                scenario.clients.len(),
                scenario.clients.keys().next().map_or("", String::as_str)
            ),
        ));
    }
    window(scenario, scenario.duration).map(|_| ()).map_err(|why| {
        ConfigError::new(
            path,
            format!(
                "needs a verdict, but {why} (or judge a window with GoodputAtLeast or GoodputAtMost)"
            ),
        )
    })
}
