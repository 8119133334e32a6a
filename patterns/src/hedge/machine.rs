//! The hedging config and machine.

use crate::ConfigError;
use crate::budget::{AttemptResult, RetryBudget};
use crate::retry::Safety;
use crate::timeout::LatencyWindow;
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};

/// The most hedges one request may send.
const HEDGES_LIMIT: u32 = 10;

/// When a hedge goes out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum HedgeDelay {
    /// A fixed delay after the previous attempt was sent.
    Fixed {
        /// The delay.
        delay: SimDuration,
    },
    /// The given percentile of the latencies of recent winning attempts (e.g. p95: hedge
    /// the slowest 5%), `initial` until `min_samples` were seen.
    Percentile {
        /// Which percentile, (0, 100].
        percentile: f64,
        /// How many recent latencies it is taken over, 1..100000.
        window: u32,
        /// Latencies needed before the percentile is used, 1..=window.
        min_samples: u32,
        /// The delay until then.
        initial: SimDuration,
    },
}

/// A hedging policy. Defaults are Polly's: one hedge after 2s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HedgeConfig {
    /// When a hedge goes out.
    pub delay: HedgeDelay,
    /// Hedges per request, not counting the first attempt, 1..10.
    pub max_hedged_attempts: u32,
}

impl Default for HedgeConfig {
    fn default() -> Self {
        HedgeConfig {
            delay: HedgeDelay::Fixed {
                delay: SimDuration::from_secs(2),
            },
            max_hedged_attempts: 1,
        }
    }
}

impl HedgeConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=HEDGES_LIMIT).contains(&self.max_hedged_attempts) {
            return Err(ConfigError::new(
                "max_hedged_attempts",
                format!(
                    "must be in [1, {HEDGES_LIMIT}] (hedges after the first attempt), got {}",
                    self.max_hedged_attempts
                ),
            ));
        }
        if let HedgeDelay::Percentile {
            percentile,
            window,
            min_samples,
            ..
        } = &self.delay
        {
            if !(percentile.is_finite() && *percentile > 0.0 && *percentile <= 100.0) {
                return Err(ConfigError::new(
                    "delay.percentile",
                    format!("must be in (0, 100], got {percentile}"),
                ));
            }
            if !(1..=100_000).contains(window) {
                return Err(ConfigError::new(
                    "delay.window",
                    format!("must be in [1, 100000], got {window}"),
                ));
            }
            if !(1..=*window).contains(min_samples) {
                return Err(ConfigError::new(
                    "delay.min_samples",
                    format!("must be in [1, window = {window}], got {min_samples}"),
                ));
            }
        }
        Ok(())
    }
}

/// What the caller does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HedgeAction {
    /// Send attempt number `attempt` (0 is the first) now; set the hedge timer to
    /// `hedge_at`, if any.
    Send {
        /// The attempt to send.
        attempt: u32,
        /// When to call [`HedgedRequest::on_timer`] next.
        hedge_at: Option<SimTime>,
    },
    /// Nothing to send; keep (or set) the timer at `hedge_at`, if any.
    Wait {
        /// When to call [`HedgedRequest::on_timer`] next.
        hedge_at: Option<SimTime>,
    },
    /// Attempt `winner` answered first: use its result and cancel the others.
    Done {
        /// The winning attempt.
        winner: u32,
        /// Attempts still in flight, to cancel.
        cancel: Vec<u32>,
    },
    /// Every attempt failed and no hedge may go out: the request fails.
    Failed,
    /// The request had already ended; nothing changes.
    Ended,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    Running {
        in_flight: Vec<u32>,
        /// When each attempt sent so far went out, by attempt number.
        sent_at: Vec<SimTime>,
        hedge_at: Option<SimTime>,
    },
    Won {
        winner: u32,
    },
    Failed,
}

/// A client's hedging policy and the latency window its percentile delay follows.
#[derive(Debug, Clone, PartialEq)]
pub struct Hedger {
    config: HedgeConfig,
    window: LatencyWindow,
}

/// The per-request state of a hedged request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HedgedRequest {
    phase: Phase,
    started: SimTime,
    hedging_stopped: bool,
}

impl Hedger {
    /// From a config; fails with its first invalid field.
    pub fn new(config: HedgeConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let capacity = match &config.delay {
            HedgeDelay::Fixed { .. } => 1,
            HedgeDelay::Percentile { window, .. } => *window as usize,
        };
        Ok(Hedger {
            config,
            window: LatencyWindow::new(capacity),
        })
    }

    /// Records the latency of a winning attempt (for the percentile delay).
    pub fn observe(&mut self, latency: SimDuration) {
        self.window.observe(latency);
    }

    /// The current hedging delay.
    pub fn delay(&self) -> SimDuration {
        match &self.config.delay {
            HedgeDelay::Fixed { delay } => *delay,
            HedgeDelay::Percentile {
                percentile,
                min_samples,
                initial,
                ..
            } => {
                if self.window.seen() < u64::from(*min_samples) {
                    *initial
                } else {
                    self.window.percentile(*percentile).unwrap_or(*initial)
                }
            }
        }
    }

    /// A request starts: send attempt 0 now. Tells the budget about the request. An
    /// [`Safety::Unsafe`] operation is never hedged: a hedge runs it twice by design.
    pub fn begin(
        &self,
        now: SimTime,
        safety: Safety,
        budget: &mut RetryBudget,
    ) -> (HedgedRequest, HedgeAction) {
        budget.on_request(now);
        let hedge_at = (safety != Safety::Unsafe).then(|| now.saturating_add(self.delay()));
        let request = HedgedRequest {
            phase: Phase::Running {
                in_flight: vec![0],
                sent_at: vec![now],
                hedge_at,
            },
            started: now,
            hedging_stopped: hedge_at.is_none(),
        };
        (
            request,
            HedgeAction::Send {
                attempt: 0,
                hedge_at,
            },
        )
    }

    fn attempts_max(&self) -> u32 {
        1 + self.config.max_hedged_attempts
    }
}

impl HedgedRequest {
    /// When the request started.
    pub fn started(&self) -> SimTime {
        self.started
    }

    /// Attempts sent so far.
    pub fn sent(&self) -> u32 {
        match &self.phase {
            Phase::Running { sent_at, .. } => sent_at.len() as u32,
            Phase::Won { .. } | Phase::Failed => 0,
        }
    }

    /// The winning attempt, once there is one.
    pub fn winner(&self) -> Option<u32> {
        match self.phase {
            Phase::Won { winner } => Some(winner),
            _ => None,
        }
    }

    /// Tries to send the next hedge now.
    fn hedge(&mut self, now: SimTime, hedger: &Hedger, budget: &mut RetryBudget) -> Option<u32> {
        let Phase::Running {
            in_flight,
            sent_at,
            hedge_at,
        } = &mut self.phase
        else {
            return None;
        };
        let sent = sent_at.len() as u32;
        if self.hedging_stopped || sent >= hedger.attempts_max() {
            *hedge_at = None;
            return None;
        }
        if budget.try_retry(now).is_err() {
            self.hedging_stopped = true;
            *hedge_at = None;
            return None;
        }
        let attempt = sent;
        sent_at.push(now);
        in_flight.push(attempt);
        *hedge_at = (sent + 1 < hedger.attempts_max()).then(|| now.saturating_add(hedger.delay()));
        Some(attempt)
    }

    fn hedge_at(&self) -> Option<SimTime> {
        match &self.phase {
            Phase::Running { hedge_at, .. } => *hedge_at,
            _ => None,
        }
    }

    /// The hedge timer fired.
    pub fn on_timer(
        &mut self,
        now: SimTime,
        hedger: &Hedger,
        budget: &mut RetryBudget,
    ) -> HedgeAction {
        let Phase::Running { hedge_at, .. } = &self.phase else {
            return HedgeAction::Ended;
        };
        // A timer from before the last hedge (or after a refusal) is stale.
        let due = matches!(hedge_at, Some(at) if *at <= now);
        let action = if due {
            match self.hedge(now, hedger, budget) {
                Some(attempt) => HedgeAction::Send {
                    attempt,
                    hedge_at: self.hedge_at(),
                },
                None => HedgeAction::Wait { hedge_at: None },
            }
        } else {
            HedgeAction::Wait {
                hedge_at: self.hedge_at(),
            }
        };
        self.check(hedger);
        action
    }

    /// Attempt `attempt` answered: `ok` for success.
    pub fn on_response(
        &mut self,
        now: SimTime,
        attempt: u32,
        ok: bool,
        hedger: &mut Hedger,
        budget: &mut RetryBudget,
    ) -> HedgeAction {
        let Phase::Running {
            in_flight, sent_at, ..
        } = &mut self.phase
        else {
            return HedgeAction::Ended;
        };
        let Some(position) = in_flight.iter().position(|a| *a == attempt) else {
            // Not in flight: already cancelled or never sent; ignore it.
            return HedgeAction::Wait {
                hedge_at: self.hedge_at(),
            };
        };
        in_flight.remove(position);
        let result = if ok {
            AttemptResult::Success
        } else {
            AttemptResult::RetryableFailure
        };
        budget.on_attempt_end(now, result, attempt > 0);
        let action = if ok {
            let cancel = core::mem::take(in_flight);
            // A cancelled loser ends too; it says nothing about the dependency's health.
            for loser in &cancel {
                budget.on_attempt_end(now, AttemptResult::OtherFailure, *loser > 0);
            }
            budget.on_request_end(now);
            // The winning attempt's own latency, not the request's: a hedge that wins fast
            // after a long delay says the dependency answers fast, which is what the delay
            // is compared with (time since the previous attempt went out).
            hedger.observe(now.saturating_duration_since(sent_at[attempt as usize]));
            self.phase = Phase::Won { winner: attempt };
            HedgeAction::Done {
                winner: attempt,
                cancel,
            }
        } else if !in_flight.is_empty() {
            HedgeAction::Wait {
                hedge_at: self.hedge_at(),
            }
        } else {
            match self.hedge(now, hedger, budget) {
                Some(attempt) => HedgeAction::Send {
                    attempt,
                    hedge_at: self.hedge_at(),
                },
                None => {
                    budget.on_request_end(now);
                    self.phase = Phase::Failed;
                    HedgeAction::Failed
                }
            }
        };
        self.check(hedger);
        action
    }

    fn check(&self, hedger: &Hedger) {
        if let Phase::Running {
            in_flight, sent_at, ..
        } = &self.phase
        {
            let sent = sent_at.len() as u32;
            assert!(sent <= hedger.attempts_max(), "sent {sent} attempts");
            assert!(
                in_flight.iter().all(|a| *a < sent),
                "unknown attempt in flight"
            );
            assert!(in_flight.len() as u32 <= sent);
        }
    }
}
