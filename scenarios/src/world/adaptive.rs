//! An adaptive per-attempt timeout on a call site (the `AdaptiveTimeout` layer): the
//! `patterns` crate's [`AdaptiveTimeout`] fed with the latency of every attempt the site's
//! instance sent, and its figures (the timeout in use, by report bucket).
//!
//! Every answered attempt is observed with its latency, from send to reply, whatever the
//! answer; an attempt that timed out is observed with its timeout (a censored sample, so the
//! percentile, and the timeout, rise when the target slows down instead of shrinking to the
//! attempts that were quick enough). An attempt lost on the way is observed only by its
//! timeout. Each instance of a service's call site (one per calling replica) learns on its
//! own, as each process would.

use crate::figures::AdaptiveTimeoutFigures;
use patterns::timeout::{AdaptiveTimeout, AdaptiveTimeoutConfig};
use sim_core::SimDuration;

/// A call site's adaptive timeout and its figures.
#[derive(Debug, Clone)]
pub struct Adaptive {
    machine: AdaptiveTimeout,
    figures: AdaptiveTimeoutFigures,
}

impl Adaptive {
    /// The adaptive timeout of `config` (validated with the scenario).
    pub fn new(config: &AdaptiveTimeoutConfig) -> Adaptive {
        let machine =
            AdaptiveTimeout::new(config.clone()).expect("configs are validated with the scenario");
        let t = machine.timeout().as_nanos();
        Adaptive {
            machine,
            figures: AdaptiveTimeoutFigures {
                timeout_ns_min: t,
                timeout_ns_max: t,
                timeout_ns_last: t,
                observed: 0,
            },
        }
    }

    /// The timeout of the next attempt.
    pub fn timeout(&self) -> SimDuration {
        self.machine.timeout()
    }

    /// Learns the latency of a finished attempt (its timeout, if it timed out).
    pub fn observe(&mut self, latency: SimDuration) {
        self.machine.observe(latency);
        let t = self.machine.timeout().as_nanos();
        let f = &mut self.figures;
        f.observed += 1;
        f.timeout_ns_min = f.timeout_ns_min.min(t);
        f.timeout_ns_max = f.timeout_ns_max.max(t);
        f.timeout_ns_last = t;
    }

    /// Its figures.
    pub fn figures(&self) -> AdaptiveTimeoutFigures {
        self.figures
    }
}
