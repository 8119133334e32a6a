//! [`Breaker`]: the state machine.

use super::config::{BreakerConfig, HalfOpenPolicy, SlidingWindowType, StateAfterWait};
use super::window::{Window, WindowTotals};
use crate::ConfigError;
use sim_core::{SimDuration, SimTime};

/// The most transitions kept in the log before the oldest are dropped (and counted).
pub const TRANSITION_LOG_MAX: usize = 4096;

/// The states, without their fields: what a transition log and a report show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StateKind {
    /// Calls flow; outcomes are recorded and judged.
    Closed,
    /// Calls are refused until the wait is over.
    Open,
    /// A few calls test the dependency.
    HalfOpen,
    /// Refused by an operator until reset.
    ForcedOpen,
    /// Admitted and recorded, never tripped, until reset (resilience4j's metrics-only).
    ForcedClosed,
    /// Admitted, nothing recorded, until reset.
    Disabled,
}

impl StateKind {
    /// The snake_case name that logs and reports use (`half_open`).
    pub fn name(self) -> &'static str {
        match self {
            StateKind::Closed => "closed",
            StateKind::Open => "open",
            StateKind::HalfOpen => "half_open",
            StateKind::ForcedOpen => "forced_open",
            StateKind::ForcedClosed => "forced_closed",
            StateKind::Disabled => "disabled",
        }
    }
}

/// Why a transition happened.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cause {
    /// The failure rate (percent) reached `failure_rate_threshold`.
    FailureRate(f64),
    /// The slow-call rate (percent) reached `slow_call_rate_threshold`.
    SlowCallRate(f64),
    /// `consecutive_failure_threshold` failures in a row.
    ConsecutiveFailures(u32),
    /// The open wait ended.
    OpenWaitElapsed,
    /// The half-open trial passed.
    TrialPassed,
    /// The half-open trial failed.
    TrialFailed,
    /// The half-open state did not decide within `max_wait_duration_in_half_open_state` of
    /// its start (it goes where `transition_to_state_after_wait_duration` says).
    HalfOpenTimedOut,
    /// `force_open`, `force_closed`, `disable` or `reset`.
    Operator,
}

/// One state change, stamped with the time it took effect.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transition {
    /// When.
    pub at: SimTime,
    /// From which state.
    pub from: StateKind,
    /// To which state.
    pub to: StateKind,
    /// Why.
    pub cause: Cause,
}

/// True for the edges the machine may take on its own (operators may go anywhere).
pub fn is_legal_edge(from: StateKind, to: StateKind) -> bool {
    use StateKind::*;
    matches!(
        (from, to),
        (Closed, Open) | (Open, HalfOpen) | (HalfOpen, Closed) | (HalfOpen, Open)
    )
}

/// Proof of admission, handed back with the outcome. It remembers the state epoch it was
/// admitted in, so a late report from an earlier state does not count in a later one.
///
/// It is neither `Copy` nor `Clone`: reporting consumes it, so one call cannot be reported
/// twice (which, in half-open, would free a second permitted call for one real one).
#[derive(Debug, PartialEq, Eq)]
pub struct Permit {
    epoch: u64,
    started_at: SimTime,
}

impl Permit {
    /// When the call was admitted.
    pub fn started_at(&self) -> SimTime {
        self.started_at
    }

    /// The same permit, for a copy of the breaker that issued it: a world cloned mid-run
    /// holds copies of its breakers and of the permits of its calls, each reported to its
    /// own breaker. Reporting both this and the original to one breaker is the double report
    /// the type prevents; that is why this is a named method and not `Clone`.
    pub fn clone_with_machine(&self) -> Permit {
        Permit {
            epoch: self.epoch,
            started_at: self.started_at,
        }
    }
}

/// Why a call was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerRejection {
    /// Open: the dependency is considered down.
    Open,
    /// Half-open and its trial calls are all in flight (or the ramp holds this one back).
    HalfOpenFull,
    /// Forced open by an operator.
    ForcedOpen,
}

/// A breaker's answer.
#[derive(Debug, PartialEq, Eq)]
pub enum BreakerDecision {
    /// Go ahead; report the outcome with this permit.
    Admit(Permit),
    /// Refused.
    Reject {
        /// Why.
        reason: BreakerRejection,
        /// The earliest time a call could be admitted, when known: when open, the first
        /// instant after the wait (the end of the wait itself with automatic transition).
        retry_at: Option<SimTime>,
    },
}

impl BreakerDecision {
    /// True when admitted.
    pub fn allowed(&self) -> bool {
        matches!(self, BreakerDecision::Admit(_))
    }
}

/// The state, with what each state needs.
#[derive(Debug, Clone, PartialEq)]
enum State {
    Closed {
        consecutive_failures: u32,
    },
    Open {
        since: SimTime,
        until: SimTime,
    },
    HalfOpen {
        since: SimTime,
        /// Calls admitted in this half-open state and not released by `on_ignored`.
        admitted: u32,
        /// Calls that reported.
        reported: u32,
        successes: u32,
        failures: u32,
        slow: u32,
        /// Ramp only: accumulated share of a call, in nanoseconds of ramp (a call is admitted
        /// when it reaches the ramp duration).
        credit: u128,
    },
    ForcedOpen,
    ForcedClosed,
    Disabled,
}

impl State {
    fn kind(&self) -> StateKind {
        match self {
            State::Closed { .. } => StateKind::Closed,
            State::Open { .. } => StateKind::Open,
            State::HalfOpen { .. } => StateKind::HalfOpen,
            State::ForcedOpen => StateKind::ForcedOpen,
            State::ForcedClosed => StateKind::ForcedClosed,
            State::Disabled => StateKind::Disabled,
        }
    }

    fn half_open(since: SimTime) -> State {
        State::HalfOpen {
            since,
            admitted: 0,
            reported: 0,
            successes: 0,
            failures: 0,
            slow: 0,
            credit: 0,
        }
    }
}

/// Counts over the breaker's life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BreakerStats {
    /// Calls admitted.
    pub admitted: u64,
    /// Calls refused.
    pub rejected: u64,
    /// Successes reported.
    pub successes: u64,
    /// Failures reported.
    pub failures: u64,
    /// Reports that arrived after the state they were admitted in had ended (not judged).
    pub stale_reports: u64,
    /// Transitions dropped from the full log.
    pub transitions_dropped: u64,
}

/// A circuit breaker: closed → open → half-open → closed or open again.
///
/// Call [`Breaker::try_acquire`] before a call, then exactly one of [`Breaker::on_success`],
/// [`Breaker::on_failure`] or [`Breaker::on_ignored`] with the permit. A call's duration is
/// the time between its admission and its report, so slow calls need no extra argument.
#[derive(Debug, Clone)]
pub struct Breaker {
    config: BreakerConfig,
    state: State,
    window: Window,
    /// Times opened since the last close, for the backing-off open wait.
    opens: u32,
    /// Bumped on every transition (once for a block of skipped idle cycles); permits from
    /// older epochs are stale.
    epoch: u64,
    last: SimTime,
    log: Vec<Transition>,
    stats: BreakerStats,
}

impl Breaker {
    /// A closed breaker; fails if the config does not validate.
    pub fn new(config: &BreakerConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let window = match config.sliding_window_type {
            SlidingWindowType::CountBased => Window::count(config.sliding_window_size),
            SlidingWindowType::TimeBased => Window::time(config.sliding_window_size),
        };
        Ok(Breaker {
            config: config.clone(),
            state: State::Closed {
                consecutive_failures: 0,
            },
            window,
            opens: 0,
            epoch: 0,
            last: SimTime::ZERO,
            log: Vec::new(),
            stats: BreakerStats::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }

    /// The current state (as of the last call; time-driven changes happen on the next call or
    /// [`Breaker::advance`]).
    pub fn state(&self) -> StateKind {
        self.state.kind()
    }

    /// Every transition so far (the newest [`TRANSITION_LOG_MAX`]), oldest first.
    pub fn transitions(&self) -> &[Transition] {
        &self.log
    }

    /// Takes the transitions logged since the last call, for a caller that streams them.
    pub fn take_transitions(&mut self) -> Vec<Transition> {
        std::mem::take(&mut self.log)
    }

    /// Counts so far.
    pub fn stats(&self) -> BreakerStats {
        self.stats
    }

    /// The window totals a closed breaker judges, at `now`.
    pub fn window_totals(&mut self, now: SimTime) -> WindowTotals {
        let now = self.clock(now);
        self.window.totals(now)
    }

    /// When the current open state's wait ends, if open. The breaker leaves open strictly
    /// after this instant, or at it with automatic transition (see [`BreakerDecision`]'s
    /// `retry_at`).
    pub fn open_until(&self) -> Option<SimTime> {
        match self.state {
            State::Open { until, .. } => Some(until),
            _ => None,
        }
    }

    fn clock(&mut self, now: SimTime) -> SimTime {
        self.last = self.last.max(now);
        self.last
    }

    fn transition(&mut self, at: SimTime, to: State, cause: Cause) {
        let from = self.state.kind();
        let to_kind = to.kind();
        assert!(
            cause == Cause::Operator || is_legal_edge(from, to_kind),
            "illegal breaker edge {from:?} -> {to_kind:?}"
        );
        // An operator re-entering the current state starts it afresh (below) but is not a
        // change a reader of the log would want to see: resilience4j publishes no event for
        // it (`StateTransition.isInternalTransition`).
        if from != to_kind {
            if self.log.len() == TRANSITION_LOG_MAX {
                self.log.remove(0);
                self.stats.transitions_dropped += 1;
            }
            self.log.push(Transition {
                at,
                from,
                to: to_kind,
                cause,
            });
        }
        self.epoch += 1;
        match to_kind {
            StateKind::Closed | StateKind::ForcedClosed => {
                self.window.clear();
            }
            _ => {}
        }
        if to_kind == StateKind::Closed {
            self.opens = 0;
        }
        self.state = to;
        self.check_invariants();
    }

    fn check_invariants(&self) {
        match &self.state {
            State::Open { since, until } => {
                assert!(
                    since < until || *until == SimTime::MAX,
                    "open without a wait"
                )
            }
            State::HalfOpen {
                admitted,
                reported,
                successes,
                failures,
                ..
            } => {
                assert!(reported <= admitted, "more reports than half-open calls");
                assert!(
                    successes + failures == *reported,
                    "report counts out of step"
                );
                if let Some(limit) = self.half_open_permits() {
                    assert!(*admitted <= limit, "half-open admitted above its permits");
                }
            }
            _ => {}
        }
    }

    /// The fixed number of half-open permits, if the policy has one.
    fn half_open_permits(&self) -> Option<u32> {
        match self.config.half_open {
            HalfOpenPolicy::PermittedCalls {
                permitted_number_of_calls_in_half_open_state: n,
            } => Some(n),
            HalfOpenPolicy::SingleProbe => Some(1),
            HalfOpenPolicy::SuccessThreshold {
                permitted_calls, ..
            } => Some(permitted_calls),
            HalfOpenPolicy::Ramp { .. } => None,
        }
    }

    /// The open wait of the `opening`-th opening since the last close (counted from 1).
    fn open_wait(&self, opening: u32) -> SimDuration {
        let base = self.config.wait_duration_in_open_state;
        let factor = libm::pow(
            self.config.wait_duration_in_open_state_multiplier,
            f64::from(opening.saturating_sub(1)),
        );
        base.mul_f64(factor)
            .min(self.config.wait_duration_in_open_state_max)
            .max(base)
    }

    fn open(&mut self, at: SimTime, cause: Cause) {
        self.opens = self.opens.saturating_add(1);
        let wait = self.open_wait(self.opens);
        let until = at.saturating_add(wait);
        // At the end of time the wait cannot be represented; stay open for the last instant.
        let until = if until == at { SimTime::MAX } else { until };
        self.transition(at, State::Open { since: at, until }, cause);
    }

    /// Apply the changes that time alone makes (open wait over with automatic transition,
    /// half-open timed out, ramp done). Called by every other method; callable on its own to
    /// stamp transitions promptly. Without automatic transition the open state waits for a call
    /// ([`Breaker::try_acquire`]), as in resilience4j.
    pub fn advance(&mut self, now: SimTime) {
        self.advance_to(now, false);
    }

    /// `advance`, and when `calling`, also the move out of an open state whose wait is over
    /// that only a call makes.
    fn advance_to(&mut self, now: SimTime, calling: bool) {
        let now = self.clock(now);
        // Only open and half-open states change with time; this is every call's path.
        if !matches!(self.state, State::Open { .. } | State::HalfOpen { .. }) {
            return;
        }
        let automatic = self
            .config
            .automatic_transition_from_open_to_half_open_enabled;
        self.skip_idle_cycles(now);
        // Each step is a transition stamped later than the one before and no later than `now`,
        // so the loop ends. After `skip_idle_cycles` it takes a few thousand steps at most, plus
        // one open → half-open → open cycle per opening while an open wait is still backing off.
        let mut previous: Option<SimTime> = None;
        loop {
            let at = match self.state {
                State::Open { until, .. }
                    if (automatic || calling) && now >= open_exit(until, automatic) =>
                {
                    if automatic { until } else { now }
                }
                State::HalfOpen { since, .. } => {
                    let end = match self.config.half_open {
                        // A ramp ends by time alone (a failure opens it at once), so it has
                        // no other deadline.
                        HalfOpenPolicy::Ramp { ramp_duration } => {
                            since.saturating_add(ramp_duration)
                        }
                        _ => since.saturating_add(self.config.max_wait_duration_in_half_open_state),
                    };
                    if now < end {
                        break;
                    }
                    end
                }
                _ => break,
            };
            // Only at the end of representable time can a step not be later than the one
            // before (every wait saturates there); stop rather than cycle at that instant.
            if previous.is_some_and(|p| at <= p) {
                break;
            }
            previous = Some(at);
            match (&self.state, &self.config.half_open) {
                (State::Open { .. }, _) => {
                    self.transition(at, State::half_open(at), Cause::OpenWaitElapsed)
                }
                (_, HalfOpenPolicy::Ramp { .. }) => self.transition(
                    at,
                    State::Closed {
                        consecutive_failures: 0,
                    },
                    Cause::TrialPassed,
                ),
                _ => match self.config.transition_to_state_after_wait_duration {
                    StateAfterWait::Open => self.open(at, Cause::HalfOpenTimedOut),
                    StateAfterWait::Closed => self.transition(
                        at,
                        State::Closed {
                            consecutive_failures: 0,
                        },
                        Cause::HalfOpenTimedOut,
                    ),
                },
            }
        }
    }

    /// With automatic transition and no traffic, resilience4j cycles open → half-open → (max
    /// wait) → open for as long as the silence lasts. Once the open wait has stopped backing off
    /// every cycle is the same, so the cycles whose transitions would all fall out of the log
    /// anyway are skipped in one step and counted as dropped; the newest are left for
    /// `advance_to` to replay, so the state, the log and the counts are what stepping through
    /// every cycle gives, at a cost that does not grow with the length of the silence.
    fn skip_idle_cycles(&mut self, now: SimTime) {
        let State::Open { until, .. } = self.state else {
            return;
        };
        let config = &self.config;
        let cycles_when_idle = config.automatic_transition_from_open_to_half_open_enabled
            && config.transition_to_state_after_wait_duration == StateAfterWait::Open
            && self.half_open_permits().is_some();
        if !cycles_when_idle {
            return;
        }
        let wait = self.open_wait(self.opens.saturating_add(1));
        let wait_is_fixed = config.wait_duration_in_open_state_multiplier == 1.0
            || wait == config.wait_duration_in_open_state_max;
        if !wait_is_fixed {
            return;
        }
        // Cycle j half-opens at until + j·cycle and opens again max_wait later.
        let max_wait = u128::from(config.max_wait_duration_in_half_open_state.as_nanos());
        let cycle = max_wait + u128::from(wait.as_nanos());
        let (until, now) = (u128::from(until.as_nanos()), u128::from(now.as_nanos()));
        if now < until + max_wait {
            return;
        }
        let cycles = (now - until - max_wait) / cycle + 1;
        // Two transitions per cycle: replaying half a log's worth of cycles refills the log.
        let replayed = (TRANSITION_LOG_MAX / 2) as u128;
        if cycles <= replayed {
            return;
        }
        let skipped = cycles - replayed;
        let until = until + skipped * cycle;
        let since = until - u128::from(wait.as_nanos());
        let dropped = (self.log.len() as u128 + 2 * skipped).min(u128::from(u64::MAX)) as u64;
        self.stats.transitions_dropped = self.stats.transitions_dropped.saturating_add(dropped);
        self.log.clear();
        self.opens = self
            .opens
            .saturating_add(u32::try_from(skipped).unwrap_or(u32::MAX));
        self.epoch += 1;
        // Both are at most `now`, which is a u64.
        self.state = State::Open {
            since: SimTime::from_nanos(since as u64),
            until: SimTime::from_nanos(until as u64),
        };
        self.check_invariants();
    }

    /// Ask to make a call at `now`.
    pub fn try_acquire(&mut self, now: SimTime) -> BreakerDecision {
        self.advance_to(now, true);
        let now = self.last;
        let epoch = self.epoch;
        let permit = BreakerDecision::Admit(Permit {
            epoch,
            started_at: now,
        });
        let ramp = match self.config.half_open {
            HalfOpenPolicy::Ramp { ramp_duration } => Some(ramp_duration),
            _ => None,
        };
        let permits = self.half_open_permits();
        let automatic = self
            .config
            .automatic_transition_from_open_to_half_open_enabled;
        let decision = match &mut self.state {
            State::Closed { .. } | State::ForcedClosed | State::Disabled => permit,
            State::Open { until, .. } => BreakerDecision::Reject {
                reason: BreakerRejection::Open,
                retry_at: Some(open_exit(*until, automatic)),
            },
            State::ForcedOpen => BreakerDecision::Reject {
                reason: BreakerRejection::ForcedOpen,
                retry_at: None,
            },
            State::HalfOpen {
                since,
                admitted,
                credit,
                ..
            } => {
                let ok = match (permits, ramp) {
                    (Some(limit), _) => *admitted < limit,
                    (None, Some(ramp)) => {
                        // Each call adds the current share (elapsed / ramp) to a credit and is
                        // admitted when the credit reaches one whole call, so the admitted share
                        // follows the ramp without banking: the credit stays below two calls.
                        // The first call is always admitted as a probe.
                        let ramp = u128::from(ramp.as_nanos());
                        let elapsed = u128::from(now.as_nanos() - since.as_nanos());
                        *credit += elapsed.min(ramp);
                        if *admitted == 0 || *credit >= ramp {
                            *credit = credit.saturating_sub(ramp);
                            true
                        } else {
                            false
                        }
                    }
                    (None, None) => unreachable!("every policy has permits or a ramp"),
                };
                if ok {
                    *admitted += 1;
                    permit
                } else {
                    BreakerDecision::Reject {
                        reason: BreakerRejection::HalfOpenFull,
                        retry_at: None,
                    }
                }
            }
        };
        if decision.allowed() {
            self.stats.admitted += 1;
        } else {
            self.stats.rejected += 1;
        }
        self.check_invariants();
        decision
    }

    /// The admitted call succeeded at `now`.
    pub fn on_success(&mut self, now: SimTime, permit: Permit) {
        self.stats.successes += 1;
        self.report(now, permit, false);
    }

    /// The admitted call failed at `now`.
    pub fn on_failure(&mut self, now: SimTime, permit: Permit) {
        self.stats.failures += 1;
        self.report(now, permit, true);
    }

    /// The admitted call ended without an outcome that should count (cancelled, or an error
    /// the caller classifies as not the dependency's fault): its half-open permit is freed.
    pub fn on_ignored(&mut self, now: SimTime, permit: Permit) {
        self.advance(now);
        if permit.epoch != self.epoch {
            self.stats.stale_reports += 1;
            return;
        }
        if let State::HalfOpen {
            admitted, reported, ..
        } = &mut self.state
        {
            // Only calls still in flight hold a permit.
            if *admitted > *reported {
                *admitted -= 1;
            }
        }
        self.check_invariants();
    }

    fn report(&mut self, now: SimTime, permit: Permit, failed: bool) {
        self.advance(now);
        let now = self.last;
        if permit.epoch != self.epoch {
            self.stats.stale_reports += 1;
            return;
        }
        let slow = now.saturating_duration_since(permit.started_at)
            > self.config.slow_call_duration_threshold;
        match &mut self.state {
            State::Closed {
                consecutive_failures,
            } => {
                *consecutive_failures = if failed {
                    consecutive_failures.saturating_add(1)
                } else {
                    0
                };
                let run = *consecutive_failures;
                self.window.record(now, failed, slow);
                if let Some(cause) = self.trip_cause(now, run) {
                    self.open(now, cause);
                }
            }
            State::ForcedClosed => self.window.record(now, failed, slow),
            State::HalfOpen {
                admitted,
                reported,
                successes,
                failures,
                slow: slow_calls,
                ..
            } => {
                if *reported >= *admitted {
                    // Its permit was already freed with on_ignored; nothing to judge.
                    self.stats.stale_reports += 1;
                    return;
                }
                *reported += 1;
                if failed {
                    *failures += 1;
                } else {
                    *successes += 1;
                }
                if slow {
                    *slow_calls += 1;
                }
                let (reported, successes, failures, slow_calls) =
                    (*reported, *successes, *failures, *slow_calls);
                let verdict = match self.config.half_open {
                    HalfOpenPolicy::PermittedCalls {
                        permitted_number_of_calls_in_half_open_state: n,
                    } => {
                        // resilience4j judges half-open on a count window of the permitted
                        // calls, once min(minimum_number_of_calls, permitted) are in
                        // (`CircuitBreakerMetrics.forHalfOpen`); reports after the verdict
                        // belong to the state it ended and are stale.
                        if reported < n.min(self.config.minimum_number_of_calls) {
                            None
                        } else {
                            let rate = |k: u32| 100.0 * f64::from(k) / f64::from(reported);
                            Some(
                                rate(failures) < self.config.failure_rate_threshold
                                    && rate(slow_calls) < self.config.slow_call_rate_threshold,
                            )
                        }
                    }
                    HalfOpenPolicy::SingleProbe => Some(!failed && !slow),
                    HalfOpenPolicy::SuccessThreshold {
                        success_threshold, ..
                    } => {
                        if failed || slow {
                            Some(false)
                        } else if successes >= success_threshold {
                            Some(true)
                        } else {
                            None
                        }
                    }
                    HalfOpenPolicy::Ramp { .. } => (failed || slow).then_some(false),
                };
                match verdict {
                    Some(true) => self.transition(
                        now,
                        State::Closed {
                            consecutive_failures: 0,
                        },
                        Cause::TrialPassed,
                    ),
                    Some(false) => self.open(now, Cause::TrialFailed),
                    None => self.check_invariants(),
                }
            }
            State::Open { .. } | State::ForcedOpen | State::Disabled => {}
        }
    }

    fn trip_cause(&mut self, now: SimTime, run: u32) -> Option<Cause> {
        if let Some(n) = self.config.consecutive_failure_threshold
            && run >= n
        {
            return Some(Cause::ConsecutiveFailures(run));
        }
        let totals = self.window.totals(now);
        let minimum = match self.config.sliding_window_type {
            SlidingWindowType::CountBased => self
                .config
                .minimum_number_of_calls
                .min(self.config.sliding_window_size),
            SlidingWindowType::TimeBased => self.config.minimum_number_of_calls,
        };
        if totals.calls < u64::from(minimum) {
            return None;
        }
        let rate = |k: u64| 100.0 * k as f64 / totals.calls as f64;
        let failure_rate = rate(totals.failures);
        if failure_rate >= self.config.failure_rate_threshold {
            return Some(Cause::FailureRate(failure_rate));
        }
        let slow_rate = rate(totals.slow);
        if slow_rate >= self.config.slow_call_rate_threshold {
            return Some(Cause::SlowCallRate(slow_rate));
        }
        None
    }

    /// Operator: refuse every call until [`Breaker::reset`].
    pub fn force_open(&mut self, now: SimTime) {
        let now = self.clock(now);
        self.transition(now, State::ForcedOpen, Cause::Operator);
    }

    /// Operator: admit every call and record outcomes, never trip, until [`Breaker::reset`].
    pub fn force_closed(&mut self, now: SimTime) {
        let now = self.clock(now);
        self.transition(now, State::ForcedClosed, Cause::Operator);
    }

    /// Operator: admit every call, record nothing, until [`Breaker::reset`].
    pub fn disable(&mut self, now: SimTime) {
        let now = self.clock(now);
        self.transition(now, State::Disabled, Cause::Operator);
    }

    /// Operator: back to closed with an empty window.
    pub fn reset(&mut self, now: SimTime) {
        let now = self.clock(now);
        self.opens = 0;
        self.transition(
            now,
            State::Closed {
                consecutive_failures: 0,
            },
            Cause::Operator,
        );
    }

    /// The deadline by which a half-open state that has not decided leaves, if it has one (a
    /// ramp ends by its own clock instead).
    pub fn half_open_deadline(&self) -> Option<SimTime> {
        match self.state {
            State::HalfOpen { since, .. } if self.half_open_permits().is_some() => {
                Some(since.saturating_add(self.config.max_wait_duration_in_half_open_state))
            }
            _ => None,
        }
    }

    /// How long the breaker has been open, if it is.
    pub fn open_for(&self, now: SimTime) -> Option<SimDuration> {
        match self.state {
            State::Open { since, .. } => Some(now.max(self.last).saturating_duration_since(since)),
            _ => None,
        }
    }
}

/// The first instant an open state that waits until `until` lets a call through: resilience4j
/// leaves open strictly after the wait (`clock.instant().isAfter(retryAfterWaitDuration)`),
/// unless its scheduler moves it at the end of the wait (automatic transition).
fn open_exit(until: SimTime, automatic: bool) -> SimTime {
    if automatic {
        until
    } else {
        until.saturating_add(SimDuration::from_nanos(1))
    }
}
