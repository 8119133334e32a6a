//! The retry-budget machine.

use super::config::{
    BudgetConfig, ConcurrencyBudgetConfig, RetryBreakerConfig, ThrottlingConfig, TpsConfig,
    WindowBudgetConfig,
};
use super::ring::SlotRing;
use crate::ConfigError;
use sim_core::SimTime;
use std::fmt;

/// One million: ratios and tokens are kept in parts per million so that no float rounding
/// decides whether a retry happens.
const MICRO: i64 = 1_000_000;

/// How an attempt ended, as far as a budget cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptResult {
    /// The attempt succeeded (or failed in a way that says the dependency is healthy).
    Success,
    /// The attempt failed in a way the retry policy would retry (timeout, 5xx, ...).
    RetryableFailure,
    /// The attempt failed for a reason that says nothing about the dependency's health
    /// (a 404, a bad request): budgets ignore it.
    OtherFailure,
}

/// A retry or hedge refused by the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetExhausted;

impl fmt::Display for BudgetExhausted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("retry budget exhausted")
    }
}

/// The state of one budget.
#[derive(Debug, Clone, PartialEq)]
enum State {
    Unlimited,
    Throttling {
        tokens_max_micro: i64,
        ratio_micro: i64,
        tokens_micro: i64,
    },
    Window {
        budget_ppm: i64,
        min_retries: i64,
        // counters: [requests, retries]
        ring: SlotRing,
    },
    Concurrency {
        budget_ppm: u64,
        min_retry_concurrency: u64,
        active_requests: u64,
        active_retries: u64,
    },
    Tps {
        deposit_micro: i64,
        reserve_micro: i64,
        // counter 0: deposits minus withdrawals in micro-retries
        ring: SlotRing,
    },
    RetryBreaker {
        threshold_ppm: i64,
        minimum: i64,
        // counters: [ended attempts, failed attempts]
        ring: SlotRing,
    },
}

/// A client's retry budget; see the [module docs](super) for the five kinds.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryBudget {
    state: State,
    retries_granted: u64,
    retries_refused: u64,
}

fn ppm(percent: f64) -> i64 {
    libm::round(percent * 10_000.0) as i64
}

impl RetryBudget {
    /// A budget from its config; fails with the config's first invalid field.
    pub fn new(config: &BudgetConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let state = match config {
            BudgetConfig::Throttling(ThrottlingConfig {
                max_tokens,
                token_ratio,
            }) => {
                // gRPC keeps three decimals of the ratio and ignores the rest.
                let ratio_milli = libm::floor(token_ratio * 1000.0 + 1e-9) as i64;
                State::Throttling {
                    tokens_max_micro: i64::from(*max_tokens) * MICRO,
                    ratio_micro: ratio_milli * 1000,
                    tokens_micro: i64::from(*max_tokens) * MICRO,
                }
            }
            BudgetConfig::Window(WindowBudgetConfig {
                budget_percent,
                window,
                min_retries_per_window,
            }) => State::Window {
                budget_ppm: ppm(*budget_percent),
                min_retries: i64::from(*min_retries_per_window),
                ring: SlotRing::new(*window),
            },
            BudgetConfig::Concurrency(ConcurrencyBudgetConfig {
                budget_percent,
                min_retry_concurrency,
            }) => State::Concurrency {
                budget_ppm: ppm(*budget_percent) as u64,
                min_retry_concurrency: u64::from(*min_retry_concurrency),
                active_requests: 0,
                active_retries: 0,
            },
            BudgetConfig::Tps(TpsConfig {
                ttl,
                min_per_sec,
                retry_ratio,
            }) => {
                // reserve = min_per_sec · ttl retries, in micro-retries: nanos / 1000.
                let reserve = u128::from(*min_per_sec) * u128::from(ttl.as_nanos()) / 1000;
                State::Tps {
                    deposit_micro: libm::round(retry_ratio * MICRO as f64) as i64,
                    reserve_micro: i64::try_from(reserve).unwrap_or(i64::MAX / 4),
                    ring: SlotRing::new(*ttl),
                }
            }
            BudgetConfig::RetryBreaker(RetryBreakerConfig {
                failure_rate_threshold,
                window,
                minimum_number_of_calls,
            }) => State::RetryBreaker {
                threshold_ppm: ppm(*failure_rate_threshold),
                minimum: i64::from(*minimum_number_of_calls),
                ring: SlotRing::new(*window),
            },
        };
        Ok(RetryBudget {
            state,
            retries_granted: 0,
            retries_refused: 0,
        })
    }

    /// A budget that never refuses (what "no budget" means to the retry policy).
    pub fn unlimited() -> Self {
        RetryBudget {
            state: State::Unlimited,
            retries_granted: 0,
            retries_refused: 0,
        }
    }

    /// A logical request starts (its first attempt is about to be sent).
    pub fn on_request(&mut self, now: SimTime) {
        match &mut self.state {
            State::Window { ring, .. } => ring.add(now, 0, 1),
            State::Concurrency {
                active_requests, ..
            } => *active_requests += 1,
            State::Tps {
                ring,
                deposit_micro,
                ..
            } => ring.add(now, 0, *deposit_micro),
            State::Unlimited | State::Throttling { .. } | State::RetryBreaker { .. } => {}
        }
        self.check();
    }

    /// An attempt ended; `was_retry` says whether it was a retry or hedge granted by
    /// [`RetryBudget::try_retry`].
    pub fn on_attempt_end(&mut self, now: SimTime, result: AttemptResult, was_retry: bool) {
        match &mut self.state {
            State::Throttling {
                tokens_max_micro,
                ratio_micro,
                tokens_micro,
            } => match result {
                AttemptResult::Success => {
                    *tokens_micro = (*tokens_micro + *ratio_micro).min(*tokens_max_micro);
                }
                AttemptResult::RetryableFailure => *tokens_micro = (*tokens_micro - MICRO).max(0),
                AttemptResult::OtherFailure => {}
            },
            State::Concurrency { active_retries, .. } => {
                if was_retry {
                    // A retry that ends without having been granted is the caller's bug, but
                    // it must not make the count wrap.
                    *active_retries = active_retries.saturating_sub(1);
                }
            }
            State::RetryBreaker { ring, .. } => match result {
                AttemptResult::Success => ring.add(now, 0, 1),
                AttemptResult::RetryableFailure => {
                    ring.add(now, 0, 1);
                    ring.add(now, 1, 1);
                }
                AttemptResult::OtherFailure => {}
            },
            State::Unlimited | State::Window { .. } | State::Tps { .. } => {}
        }
        self.check();
    }

    /// A logical request ended (success, or the policy gave up).
    pub fn on_request_end(&mut self, _now: SimTime) {
        if let State::Concurrency {
            active_requests, ..
        } = &mut self.state
        {
            *active_requests = active_requests.saturating_sub(1);
        }
        self.check();
    }

    /// Asks for one retry (or hedge) now; on `Ok` the budget is spent.
    pub fn try_retry(&mut self, now: SimTime) -> Result<(), BudgetExhausted> {
        let allowed = match &mut self.state {
            State::Unlimited => true,
            State::Throttling {
                tokens_max_micro,
                tokens_micro,
                ..
            } => 2 * *tokens_micro > *tokens_max_micro,
            State::Window {
                budget_ppm,
                min_retries,
                ring,
            } => {
                let [requests, retries] = ring.sums(now);
                let ok = (retries + 1) * MICRO <= *budget_ppm * requests + *min_retries * MICRO;
                if ok {
                    ring.add(now, 1, 1);
                }
                ok
            }
            State::Concurrency {
                budget_ppm,
                min_retry_concurrency,
                active_requests,
                active_retries,
            } => {
                let by_percent = *budget_ppm * *active_requests / MICRO as u64;
                let ok = *active_retries < by_percent.max(*min_retry_concurrency);
                if ok {
                    *active_retries += 1;
                }
                ok
            }
            State::Tps {
                reserve_micro,
                ring,
                ..
            } => {
                let [balance, _] = ring.sums(now);
                let ok = *reserve_micro + balance >= MICRO;
                if ok {
                    ring.add(now, 0, -MICRO);
                }
                ok
            }
            State::RetryBreaker {
                threshold_ppm,
                minimum,
                ring,
            } => {
                // Brooker's breaker refuses while the ratio is strictly above the threshold;
                // the failure being retried is already in the window.
                let [attempts, failures] = ring.sums(now);
                attempts < *minimum || failures * MICRO <= *threshold_ppm * attempts
            }
        };
        if allowed {
            self.retries_granted += 1;
        } else {
            self.retries_refused += 1;
        }
        self.check();
        if allowed {
            Ok(())
        } else {
            Err(BudgetExhausted)
        }
    }

    /// Retries granted since the budget was built.
    pub fn retries_granted(&self) -> u64 {
        self.retries_granted
    }

    /// Retries refused since the budget was built.
    pub fn retries_refused(&self) -> u64 {
        self.retries_refused
    }

    /// The gRPC token count in thousandths, for reports; `None` for other budgets.
    pub fn tokens_milli(&self) -> Option<u64> {
        match &self.state {
            State::Throttling { tokens_micro, .. } => Some((*tokens_micro / 1000) as u64),
            _ => None,
        }
    }

    /// Concurrent retries in flight, for the Envoy budget; `None` for other budgets.
    pub fn active_retries(&self) -> Option<u64> {
        match &self.state {
            State::Concurrency { active_retries, .. } => Some(*active_retries),
            _ => None,
        }
    }

    fn check(&self) {
        match &self.state {
            State::Throttling {
                tokens_max_micro,
                tokens_micro,
                ..
            } => assert!(
                (0..=*tokens_max_micro).contains(tokens_micro),
                "throttling tokens {tokens_micro} outside [0, {tokens_max_micro}] (micro)"
            ),
            State::RetryBreaker { ring, .. } => {
                for [attempts, failures] in ring.counters() {
                    assert!(
                        (0..=attempts).contains(&failures),
                        "retry breaker slot with {failures} failures of {attempts} attempts"
                    );
                }
            }
            _ => {}
        }
    }
}
