//! [`PidShedder`]: a PID controller from a measured signal to a drop probability.

use crate::ConfigError;
use rand_core::Rng;
use serde::{Deserialize, Serialize};
use sim_core::SimTime;
use sim_core::sample::bernoulli;

/// A PID controller's gains and limits. The signal's unit is the caller's (queueing delay in
/// milliseconds, p99 latency, utilisation percent); the gains are per unit of that signal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PidConfig {
    /// The signal value to hold, e.g. 20 (ms of queueing delay). Default 20.
    pub setpoint: f64,
    /// Drop probability per unit of error. Default 0.01.
    pub gain_proportional: f64,
    /// Drop probability per unit of error per second. Default 0.05.
    pub gain_integral: f64,
    /// Drop probability per unit of signal change per second (computed on the signal, not the
    /// error, so a setpoint change causes no kick). Default 0.
    pub gain_derivative: f64,
    /// The most the controller ever drops, in [0, 1]; below 1 so that some traffic always
    /// gets through to keep the signal measured. Default 0.9.
    pub drop_ratio_max: f64,
}

impl Default for PidConfig {
    fn default() -> Self {
        PidConfig {
            setpoint: 20.0,
            gain_proportional: 0.01,
            gain_integral: 0.05,
            gain_derivative: 0.0,
            drop_ratio_max: 0.9,
        }
    }
}

impl PidConfig {
    /// Checks that every number is finite, gains are not negative, and the cap is in [0, 1].
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !self.setpoint.is_finite() {
            return Err(ConfigError::new(
                "setpoint",
                format!("must be finite, got {}", self.setpoint),
            ));
        }
        for (field, gain) in [
            ("gain_proportional", self.gain_proportional),
            ("gain_integral", self.gain_integral),
            ("gain_derivative", self.gain_derivative),
        ] {
            if !(gain.is_finite() && gain >= 0.0) {
                return Err(ConfigError::new(
                    field,
                    format!("must be finite and not negative, got {gain}"),
                ));
            }
        }
        let m = self.drop_ratio_max;
        if !(0.0..=1.0).contains(&m) {
            return Err(ConfigError::new(
                "drop_ratio_max",
                format!("must be in [0, 1], got {m}"),
            ));
        }
        Ok(())
    }
}

/// Sheds a share of requests set by a PID controller that holds a measured signal at its
/// setpoint.
///
/// Feed it measurements with [`PidShedder::update`]; ask it per request with
/// [`PidShedder::should_drop`], which draws from the RNG you pass. Anti-windup: the integral
/// stops growing while the output is pinned at a limit in the direction of the error
/// (conditional integration), and is itself kept within `[0, drop_ratio_max]`.
#[derive(Debug, Clone)]
pub struct PidShedder {
    config: PidConfig,
    integral: f64,
    previous: Option<(SimTime, f64)>,
    drop_ratio: f64,
}

impl PidShedder {
    /// A controller that drops nothing yet; fails if the config does not validate.
    pub fn new(config: &PidConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(PidShedder {
            config: config.clone(),
            integral: 0.0,
            previous: None,
            drop_ratio: 0.0,
        })
    }

    /// The current drop probability.
    pub fn drop_ratio(&self) -> f64 {
        self.drop_ratio
    }

    /// Take a measurement at `now` and return the new drop probability. A measurement that is
    /// not finite is ignored; a `now` not after the previous one adds no integral or derivative.
    pub fn update(&mut self, now: SimTime, measurement: f64) -> f64 {
        if !measurement.is_finite() {
            return self.drop_ratio;
        }
        let c = &self.config;
        let error = measurement - c.setpoint;
        let (dt, slope) = match self.previous {
            Some((t, m)) if now > t => {
                let dt = now.duration_since(t).as_secs_f64();
                (dt, (measurement - m) / dt)
            }
            _ => (0.0, 0.0),
        };
        let proportional = c.gain_proportional * error;
        let derivative = c.gain_derivative * slope;
        let unclamped = proportional + self.integral + derivative;
        let pinned_high = unclamped >= c.drop_ratio_max && error > 0.0;
        let pinned_low = unclamped <= 0.0 && error < 0.0;
        // An enormous (finite) error overflows `gain × error` to infinity, and with no time
        // elapsed that meets a zero `dt`: ∞ × 0 is NaN, which would stick in the integral
        // and freeze the output for good. An infinite step is fine: the clamp holds it.
        let step = c.gain_integral * error * dt;
        if !pinned_high && !pinned_low && !step.is_nan() {
            self.integral = (self.integral + step).clamp(0.0, c.drop_ratio_max);
        }
        let output = proportional + self.integral + derivative;
        // Only ∞ − ∞ (P and D overflowing in opposite directions) has no answer: keep the
        // last one. An infinite output is simply beyond the cap.
        self.drop_ratio = if output.is_nan() {
            self.drop_ratio
        } else {
            output.clamp(0.0, c.drop_ratio_max)
        };
        self.previous = Some((now.max(self.previous.map_or(now, |p| p.0)), measurement));
        assert!(
            (0.0..=c.drop_ratio_max).contains(&self.drop_ratio),
            "pid output out of range"
        );
        assert!(
            (0.0..=c.drop_ratio_max).contains(&self.integral),
            "pid integral out of range (NaN?)"
        );
        self.drop_ratio
    }

    /// Whether to drop this request, drawn with the current probability from `rng`.
    pub fn should_drop<R: Rng + ?Sized>(&self, rng: &mut R) -> bool {
        self.drop_ratio > 0.0 && bernoulli(rng, self.drop_ratio)
    }
}
