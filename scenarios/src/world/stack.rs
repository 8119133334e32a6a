//! The state machines behind a call's pattern stack and a service's admission control, as the
//! world drives them: circuit breaker, retry budget, bulkhead, rate limiters, PID shedder,
//! backoff with jitter.
//!
//! These are the world's adapters: each takes `now` (and an RNG where it draws) and returns a
//! decision, the shape the `patterns` crate gives every pattern, so that swapping an adapter
//! for the `patterns` implementation changes one constructor and no caller. They are written
//! here because the world needed them before that crate held them; the report records which
//! ones a run used.

use crate::schema::{Backoff, BreakerLayer, Budget, Jitter, LimiterConfig, PidConfig};
use sim_core::sample::unit_f64;
use sim_core::{RngStream, SimDuration, SimTime};

/// A breaker's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls pass; outcomes fill the window.
    Closed,
    /// Calls are rejected until `until`.
    Open {
        /// When probes may pass again.
        until: SimTime,
    },
    /// Up to `half_open_calls` probes pass; all must succeed to close.
    HalfOpen {
        /// Probes let through so far.
        admitted: u32,
        /// Probes that succeeded so far.
        succeeded: u32,
    },
}

impl BreakerState {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open { .. } => "open",
            BreakerState::HalfOpen { .. } => "half_open",
        }
    }
}

/// A count-based circuit breaker (resilience4j semantics: a ring of the last `window_size`
/// outcomes, judged once `minimum_calls` are in it).
#[derive(Debug)]
pub struct Breaker {
    config: BreakerLayer,
    state: BreakerState,
    /// The last outcomes, `true` for a failure.
    ring: Vec<bool>,
    next: usize,
    filled: usize,
    failures: usize,
    /// Transitions as (time, from, to); the first [`TRANSITIONS_KEPT`] are kept.
    pub transitions: Vec<(SimTime, &'static str, &'static str)>,
    /// Transitions in total.
    pub transitions_total: u64,
}

/// How many breaker transitions a report lists (the count is always exact).
pub const TRANSITIONS_KEPT: usize = 64;

impl Breaker {
    /// A closed breaker.
    pub fn new(config: BreakerLayer) -> Self {
        let size = config.window_size as usize;
        Breaker {
            config,
            state: BreakerState::Closed,
            ring: vec![false; size],
            next: 0,
            filled: 0,
            failures: 0,
            transitions: Vec::new(),
            transitions_total: 0,
        }
    }

    /// The current state.
    pub fn state(&self) -> BreakerState {
        self.state
    }

    fn go(&mut self, now: SimTime, to: BreakerState) {
        if self.transitions.len() < TRANSITIONS_KEPT {
            self.transitions.push((now, self.state.name(), to.name()));
        }
        self.transitions_total += 1;
        self.state = to;
        if to == BreakerState::Closed {
            self.filled = 0;
            self.next = 0;
            self.failures = 0;
        }
    }

    /// May a call pass now? A pass while half-open counts as a probe.
    pub fn try_acquire(&mut self, now: SimTime) -> bool {
        if let BreakerState::Open { until } = self.state {
            if now < until {
                return false;
            }
            self.go(
                now,
                BreakerState::HalfOpen {
                    admitted: 0,
                    succeeded: 0,
                },
            );
        }
        match &mut self.state {
            BreakerState::Closed => true,
            BreakerState::HalfOpen { admitted, .. } => {
                if *admitted < self.config.half_open_calls {
                    *admitted += 1;
                    true
                } else {
                    false
                }
            }
            BreakerState::Open { .. } => unreachable!("open was handled above"),
        }
    }

    /// Records the outcome of a call that [`Breaker::try_acquire`] let through.
    pub fn record(&mut self, now: SimTime, success: bool) {
        match self.state {
            BreakerState::Closed => {
                if self.filled == self.ring.len() && !self.ring[self.next] {
                    self.failures -= 1;
                } else if self.filled < self.ring.len() {
                    self.filled += 1;
                }
                self.ring[self.next] = !success;
                if !success {
                    self.failures += 1;
                }
                self.next = (self.next + 1) % self.ring.len();
                let judged = self.filled >= self.config.minimum_calls as usize;
                let rate_percent = 100.0 * self.failures as f64 / self.filled.max(1) as f64;
                if judged && rate_percent >= self.config.failure_rate_percent {
                    self.go(
                        now,
                        BreakerState::Open {
                            until: now + self.config.open_duration,
                        },
                    );
                }
            }
            BreakerState::HalfOpen {
                admitted,
                succeeded,
            } => {
                if !success {
                    self.go(
                        now,
                        BreakerState::Open {
                            until: now + self.config.open_duration,
                        },
                    );
                } else if succeeded + 1 >= self.config.half_open_calls {
                    self.go(now, BreakerState::Closed);
                } else {
                    self.state = BreakerState::HalfOpen {
                        admitted,
                        succeeded: succeeded + 1,
                    };
                }
            }
            // An outcome of a call admitted before the breaker opened says nothing new.
            BreakerState::Open { .. } => {}
        }
    }

    /// Gives back a pass that was never used (a later layer rejected the call), so that a
    /// half-open breaker is not left waiting for a probe that never reports.
    pub fn release(&mut self) {
        if let BreakerState::HalfOpen { admitted, .. } = &mut self.state {
            *admitted = admitted.saturating_sub(1);
        }
    }
}

/// A retry budget over a sliding window of ten slots: a retry is allowed while retries in
/// the window stay within `retry_ratio` × first attempts + `min_per_second` × window.
#[derive(Debug)]
pub struct RetryBudget {
    config: Budget,
    slot_width: SimDuration,
    slot_start: SimTime,
    slot: usize,
    firsts: [u64; 10],
    retries: [u64; 10],
}

impl RetryBudget {
    /// A full budget.
    pub fn new(config: Budget) -> Self {
        let slot_width = SimDuration::from_nanos((config.window.as_nanos() / 10).max(1));
        RetryBudget {
            config,
            slot_width,
            slot_start: SimTime::ZERO,
            slot: 0,
            firsts: [0; 10],
            retries: [0; 10],
        }
    }

    fn roll(&mut self, now: SimTime) {
        // At most ten slots can expire; beyond that the whole window is empty.
        let mut steps = 0;
        while now >= self.slot_start + self.slot_width && steps < 10 {
            self.slot = (self.slot + 1) % 10;
            self.firsts[self.slot] = 0;
            self.retries[self.slot] = 0;
            self.slot_start += self.slot_width;
            steps += 1;
        }
        if now >= self.slot_start + self.slot_width {
            let behind = (now - self.slot_start).as_nanos() / self.slot_width.as_nanos();
            self.slot_start += self.slot_width * behind;
        }
    }

    /// Counts a first attempt (a deposit).
    pub fn deposit(&mut self, now: SimTime) {
        self.roll(now);
        self.firsts[self.slot] += 1;
    }

    /// Takes a retry from the budget, or says no.
    pub fn try_withdraw(&mut self, now: SimTime) -> bool {
        self.roll(now);
        let firsts: u64 = self.firsts.iter().sum();
        let retries: u64 = self.retries.iter().sum();
        let allowed = self.config.retry_ratio * firsts as f64
            + self.config.min_per_second * self.config.window.as_secs_f64();
        if (retries + 1) as f64 <= allowed {
            self.retries[self.slot] += 1;
            true
        } else {
            false
        }
    }
}

/// A rate limiter's state.
#[derive(Debug)]
pub enum Limiter {
    /// Count in the current aligned window.
    FixedWindow {
        /// Requests per window.
        limit: u32,
        /// Window length.
        window: SimDuration,
        /// Index of the current window.
        index: u64,
        /// Admitted in it.
        count: u32,
    },
    /// Counts in the current and the previous aligned window, weighted by overlap.
    SlidingWindow {
        /// Requests per window.
        limit: u32,
        /// Window length.
        window: SimDuration,
        /// Index of the current window.
        index: u64,
        /// Admitted in it.
        count: u32,
        /// Admitted in the one before.
        previous: u32,
    },
    /// Tokens refilled continuously (kept in nanoseconds of credit, so no float state).
    TokenBucket {
        /// Nanoseconds per token.
        interval: u64,
        /// Bucket size in nanoseconds of credit.
        capacity: u64,
        /// Credit at `at`.
        credit: u64,
        /// When `credit` was computed.
        at: SimTime,
    },
    /// Theoretical arrival time.
    Gcra {
        /// Nanoseconds per request.
        interval: u64,
        /// Tolerance: (burst - 1) × interval.
        tolerance: u64,
        /// The theoretical arrival time.
        tat: SimTime,
    },
}

impl Limiter {
    /// A fresh limiter.
    pub fn new(config: &LimiterConfig) -> Self {
        match *config {
            LimiterConfig::FixedWindow { limit, window } => Limiter::FixedWindow {
                limit,
                window,
                index: 0,
                count: 0,
            },
            LimiterConfig::SlidingWindow { limit, window } => Limiter::SlidingWindow {
                limit,
                window,
                index: 0,
                count: 0,
                previous: 0,
            },
            LimiterConfig::TokenBucket { rate, burst } => {
                let interval = rate.interval().as_nanos().max(1);
                let capacity = interval.saturating_mul(u64::from(burst));
                Limiter::TokenBucket {
                    interval,
                    capacity,
                    credit: capacity,
                    at: SimTime::ZERO,
                }
            }
            LimiterConfig::Gcra { rate, burst } => {
                let interval = rate.interval().as_nanos().max(1);
                Limiter::Gcra {
                    interval,
                    tolerance: interval.saturating_mul(u64::from(burst - 1)),
                    tat: SimTime::ZERO,
                }
            }
        }
    }

    /// Admits one request now, or rejects it.
    pub fn try_acquire(&mut self, now: SimTime) -> bool {
        match self {
            Limiter::FixedWindow {
                limit,
                window,
                index,
                count,
            } => {
                let i = now.as_nanos() / window.as_nanos();
                if i != *index {
                    *index = i;
                    *count = 0;
                }
                if *count < *limit {
                    *count += 1;
                    true
                } else {
                    false
                }
            }
            Limiter::SlidingWindow {
                limit,
                window,
                index,
                count,
                previous,
            } => {
                let w = window.as_nanos();
                let i = now.as_nanos() / w;
                if i != *index {
                    *previous = if i == *index + 1 { *count } else { 0 };
                    *index = i;
                    *count = 0;
                }
                let elapsed = (now.as_nanos() - i * w) as f64 / w as f64;
                let estimate = f64::from(*previous) * (1.0 - elapsed) + f64::from(*count);
                if estimate + 1.0 <= f64::from(*limit) {
                    *count += 1;
                    true
                } else {
                    false
                }
            }
            Limiter::TokenBucket {
                interval,
                capacity,
                credit,
                at,
            } => {
                let earned = now.duration_since(*at).as_nanos();
                *credit = credit.saturating_add(earned).min(*capacity);
                *at = now;
                if *credit >= *interval {
                    *credit -= *interval;
                    true
                } else {
                    false
                }
            }
            Limiter::Gcra {
                interval,
                tolerance,
                tat,
            } => {
                let t = (*tat).max(now);
                if t.as_nanos() - now.as_nanos() <= *tolerance {
                    *tat = t + SimDuration::from_nanos(*interval);
                    true
                } else {
                    false
                }
            }
        }
    }
}

/// A PID controller on queueing delay whose output is a drop probability.
#[derive(Debug)]
pub struct Pid {
    config: PidConfig,
    integral: f64,
    last_error: f64,
    /// The current drop probability, in 0–1.
    pub drop_ratio: f64,
}

impl Pid {
    /// A controller that drops nothing yet.
    pub fn new(config: PidConfig) -> Self {
        Pid {
            config,
            integral: 0.0,
            last_error: 0.0,
            drop_ratio: 0.0,
        }
    }

    /// How often [`Pid::update`] should run.
    pub fn interval(&self) -> SimDuration {
        self.config.interval
    }

    /// Feeds the measured queueing delay of the last interval and recomputes the output.
    /// The integral is clamped so the integral term alone stays within 0–1 (anti-windup).
    pub fn update(&mut self, measured: SimDuration) {
        let error = measured.as_secs_f64() - self.config.setpoint.as_secs_f64();
        let dt = self.config.interval.as_secs_f64();
        if self.config.ki > 0.0 {
            self.integral = (self.integral + error * dt).clamp(0.0, 1.0 / self.config.ki);
        }
        let derivative = (error - self.last_error) / dt;
        self.last_error = error;
        let output =
            self.config.kp * error + self.config.ki * self.integral + self.config.kd * derivative;
        self.drop_ratio = output.clamp(0.0, 1.0);
    }
}

/// The delay before retry number `n` (1 for the first retry), with jitter drawn from `rng`.
pub fn backoff_delay(
    backoff: &Backoff,
    jitter: Jitter,
    n: u32,
    rng: &mut RngStream,
) -> SimDuration {
    let d = match backoff {
        Backoff::Constant { delay } => *delay,
        Backoff::Exponential {
            base,
            multiplier,
            max,
        } => {
            let factor = libm::pow(*multiplier, f64::from(n.saturating_sub(1)));
            base.mul_f64(factor).min(*max)
        }
    };
    match jitter {
        Jitter::None => d,
        Jitter::Full => d.mul_f64(unit_f64(rng)),
        Jitter::Equal => d / 2 + (d / 2).mul_f64(unit_f64(rng)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> SimTime {
        SimTime::from_millis(n)
    }

    #[test]
    fn breaker_opens_on_failure_rate_and_closes_after_good_probes() {
        let mut b = Breaker::new(BreakerLayer {
            window_size: 4,
            minimum_calls: 4,
            failure_rate_percent: 50.0,
            open_duration: SimDuration::from_secs(1),
            half_open_calls: 2,
        });
        for (i, ok) in [true, false, true, false].into_iter().enumerate() {
            assert!(b.try_acquire(ms(i as u64)));
            b.record(ms(i as u64), ok);
        }
        assert!(matches!(b.state(), BreakerState::Open { .. }));
        assert!(!b.try_acquire(ms(500)));
        assert!(b.try_acquire(ms(1003)));
        assert!(b.try_acquire(ms(1003)));
        assert!(!b.try_acquire(ms(1003)), "only two probes while half-open");
        b.record(ms(1004), true);
        b.record(ms(1005), true);
        assert_eq!(b.state(), BreakerState::Closed);
        assert_eq!(b.transitions_total, 3);
    }

    #[test]
    fn limiters_admit_their_rate() {
        let rate = "10/s".parse().unwrap();
        for config in [
            LimiterConfig::FixedWindow {
                limit: 10,
                window: SimDuration::from_secs(1),
            },
            LimiterConfig::SlidingWindow {
                limit: 10,
                window: SimDuration::from_secs(1),
            },
            LimiterConfig::TokenBucket { rate, burst: 10 },
            LimiterConfig::Gcra { rate, burst: 10 },
        ] {
            let mut l = Limiter::new(&config);
            // 100 requests per second for 10 seconds, evenly spaced: about 100 pass (the
            // sliding counter, which weighs the previous window, admits a little less).
            let admitted = (0..1000).filter(|i| l.try_acquire(ms(10 * i))).count();
            assert!((90..=115).contains(&admitted), "{config:?}: {admitted}");
        }
    }

    #[test]
    fn budget_caps_retries_at_the_ratio() {
        let mut b = RetryBudget::new(Budget {
            retry_ratio: 0.1,
            min_per_second: 0.0,
            window: SimDuration::from_secs(10),
        });
        let mut granted = 0;
        for i in 0..1000 {
            b.deposit(ms(i));
            if b.try_withdraw(ms(i)) {
                granted += 1;
            }
        }
        assert_eq!(granted, 100);
    }
}
