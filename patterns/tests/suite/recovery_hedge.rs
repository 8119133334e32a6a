//! Hedged requests: when hedges go out, who wins, who is cancelled, and the budget.

use patterns::budget::{BudgetConfig, RetryBudget, ThrottlingConfig, WindowBudgetConfig};
use patterns::hedge::{HedgeAction, HedgeConfig, HedgeDelay, Hedger};
use patterns::retry::Safety;
use proptest::prelude::*;
use sim_core::{SimDuration, SimTime};

const MS: SimDuration = SimDuration::from_millis(1);

/// What happened to one hedged request.
#[derive(Debug, PartialEq)]
struct Outcome {
    /// (attempt, sent at ms)
    sent: Vec<(u32, u64)>,
    /// Winner and when, or `None` if the request failed.
    winner: Option<(u32, u64)>,
    cancelled: Vec<u32>,
}

/// Runs one hedged request: attempt `i` takes `attempts[i].0` ms and succeeds if
/// `attempts[i].1`; checks the machine's promises on the way.
fn check(hedger: &mut Hedger, budget: &mut RetryBudget, attempts: &[(u64, bool)]) -> Outcome {
    check_with(hedger, budget, Safety::Idempotent, attempts)
}

/// As [`check`], for an operation of the given safety.
fn check_with(
    hedger: &mut Hedger,
    budget: &mut RetryBudget,
    safety: Safety,
    attempts: &[(u64, bool)],
) -> Outcome {
    let start = SimTime::from_secs(1);
    let (mut request, first) = hedger.begin(start, safety, budget);
    let mut timer: Option<SimTime> = None;
    // (time the response arrives, attempt)
    let mut pending: Vec<(SimTime, u32)> = Vec::new();
    let mut outcome = Outcome {
        sent: Vec::new(),
        winner: None,
        cancelled: Vec::new(),
    };
    let send = |action: &HedgeAction,
                now: SimTime,
                timer: &mut Option<SimTime>,
                pending: &mut Vec<(SimTime, u32)>,
                outcome: &mut Outcome| {
        match action {
            HedgeAction::Send { attempt, hedge_at } => {
                let (latency, _) = attempts[*attempt as usize];
                pending.push((now + MS * latency, *attempt));
                outcome.sent.push((*attempt, (now - start).as_millis()));
                *timer = *hedge_at;
            }
            HedgeAction::Wait { hedge_at } => *timer = *hedge_at,
            HedgeAction::Done { .. } | HedgeAction::Failed | HedgeAction::Ended => *timer = None,
        }
    };
    send(&first, start, &mut timer, &mut pending, &mut outcome);
    for _ in 0..100 {
        pending.sort();
        let next_response = pending.first().map(|(t, _)| *t);
        let action = match (timer, next_response) {
            (Some(t), r) if r.is_none_or(|r| t < r) => {
                timer = None;
                let a = request.on_timer(t, hedger, budget);
                send(&a, t, &mut timer, &mut pending, &mut outcome);
                a
            }
            (_, Some(t)) => {
                let (_, attempt) = pending.remove(0);
                let ok = attempts[attempt as usize].1;
                let a = request.on_response(t, attempt, ok, hedger, budget);
                send(&a, t, &mut timer, &mut pending, &mut outcome);
                if let HedgeAction::Done { winner, cancel } = &a {
                    assert_eq!(*winner, attempt);
                    let mut in_flight: Vec<u32> = pending.iter().map(|(_, a)| *a).collect();
                    in_flight.sort_unstable();
                    let mut cancel = cancel.clone();
                    cancel.sort_unstable();
                    assert_eq!(
                        cancel, in_flight,
                        "every loser still in flight is cancelled"
                    );
                    outcome.winner = Some((attempt, (t - start).as_millis()));
                    outcome.cancelled = cancel;
                }
                a
            }
            (None, None) => break,
            (Some(_), None) => unreachable!("covered by the first arm"),
        };
        if matches!(action, HedgeAction::Done { .. } | HedgeAction::Failed) {
            break;
        }
    }
    outcome
}

fn fixed(delay_ms: u64, hedges: u32) -> Hedger {
    Hedger::new(HedgeConfig {
        delay: HedgeDelay::Fixed {
            delay: MS * delay_ms,
        },
        max_hedged_attempts: hedges,
    })
    .unwrap()
}

#[test]
fn a_slow_first_attempt_is_hedged_and_loses() {
    let mut budget = RetryBudget::unlimited();
    let got = check(
        &mut fixed(50, 2),
        &mut budget,
        &[(500, true), (30, true), (30, true)],
    );
    assert_eq!(
        got,
        Outcome {
            sent: vec![(0, 0), (1, 50)],
            winner: Some((1, 80)),
            cancelled: vec![0],
        }
    );
    assert_eq!(
        budget.retries_granted(),
        1,
        "the hedge is counted as a retry"
    );
}

#[test]
fn unsafe_operations_are_never_hedged() {
    let mut budget = RetryBudget::unlimited();
    let got = check_with(
        &mut fixed(50, 2),
        &mut budget,
        Safety::Unsafe,
        &[(500, true), (30, true), (30, true)],
    );
    assert_eq!(got.sent, vec![(0, 0)]);
    assert_eq!(got.winner, Some((0, 500)));
    let got = check_with(
        &mut fixed(50, 2),
        &mut budget,
        Safety::IdempotencyKey,
        &[(500, true), (30, true), (30, true)],
    );
    assert_eq!(got.sent, vec![(0, 0), (1, 50)]);
}

#[test]
fn a_fast_first_attempt_sends_no_hedge() {
    let mut budget = RetryBudget::unlimited();
    let got = check(&mut fixed(50, 2), &mut budget, &[(20, true), (30, true)]);
    assert_eq!(got.sent, vec![(0, 0)]);
    assert_eq!(got.winner, Some((0, 20)));
    assert_eq!(budget.retries_granted(), 0);
}

#[test]
fn hedges_stop_at_max_hedged_attempts() {
    let mut budget = RetryBudget::unlimited();
    let got = check(
        &mut fixed(10, 2),
        &mut budget,
        &[(1000, true), (1000, true), (1000, true), (1, true)],
    );
    assert_eq!(got.sent, vec![(0, 0), (1, 10), (2, 20)]);
    assert_eq!(got.winner, Some((0, 1000)));
    assert_eq!(got.cancelled, vec![1, 2]);
}

#[test]
fn a_failure_with_nothing_in_flight_hedges_at_once_then_fails() {
    let mut budget = RetryBudget::unlimited();
    let got = check(&mut fixed(100, 1), &mut budget, &[(5, false), (5, false)]);
    assert_eq!(got.sent, vec![(0, 0), (1, 5)]);
    assert_eq!(got.winner, None);
}

#[test]
fn the_budget_can_refuse_hedges() {
    // A throttling budget with 2 tokens allows retries while tokens > 1: one failure
    // elsewhere leaves 1 token, so no hedge goes out.
    let mut budget = RetryBudget::new(&BudgetConfig::Throttling(ThrottlingConfig {
        max_tokens: 2,
        token_ratio: 0.1,
    }))
    .unwrap();
    budget.on_attempt_end(
        SimTime::ZERO,
        patterns::budget::AttemptResult::RetryableFailure,
        false,
    );
    let got = check(&mut fixed(10, 3), &mut budget, &[(100, true), (1, true)]);
    assert_eq!(got.sent, vec![(0, 0)]);
    assert_eq!(got.winner, Some((0, 100)));
    assert_eq!(budget.retries_refused(), 1);
}

#[test]
fn the_percentile_delay_follows_recent_winners() {
    let mut hedger = Hedger::new(HedgeConfig {
        delay: HedgeDelay::Percentile {
            percentile: 90.0,
            window: 10,
            min_samples: 10,
            initial: MS * 500,
        },
        max_hedged_attempts: 1,
    })
    .unwrap();
    let mut budget = RetryBudget::unlimited();
    assert_eq!(hedger.delay(), MS * 500);
    for latency in 1..=10 {
        check(&mut hedger, &mut budget, &[(latency * 10, true)]);
    }
    assert_eq!(hedger.delay(), MS * 90);
    let got = check(&mut hedger, &mut budget, &[(1000, true), (10, true)]);
    assert_eq!(got.sent, vec![(0, 0), (1, 90)]);
}

#[test]
fn the_percentile_delay_follows_the_winning_attempt_not_the_request() {
    let mut hedger = Hedger::new(HedgeConfig {
        delay: HedgeDelay::Percentile {
            percentile: 100.0,
            window: 1,
            min_samples: 1,
            initial: MS * 100,
        },
        max_hedged_attempts: 1,
    })
    .unwrap();
    let mut budget = RetryBudget::unlimited();
    // The first attempt hangs; the hedge goes out at 100ms and answers 10ms later. The
    // request took 110ms, the attempt that answered 10ms: the delay follows the attempt.
    let got = check(&mut hedger, &mut budget, &[(1000, true), (10, true)]);
    assert_eq!(got.winner, Some((1, 110)));
    assert_eq!(hedger.delay(), MS * 10);
}

#[test]
fn invalid_hedging_names_the_field() {
    for (text, field) in [
        ("(max_hedged_attempts: 0)", "max_hedged_attempts"),
        (
            "(delay: Percentile(percentile: 120, window: 10, min_samples: 1, initial: \"1s\"))",
            "delay.percentile",
        ),
        (
            "(delay: Percentile(percentile: 95, window: 10, min_samples: 11, initial: \"1s\"))",
            "delay.min_samples",
        ),
    ] {
        let config: HedgeConfig = ron::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(Hedger::new(config).unwrap_err().field, field, "{text}");
    }
}

/// Proptest settings for this file: failures are kept in `proptest-regressions/`.
fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "proptest-regressions/recovery_hedge.txt",
            ),
        )),
        ..proptest::test_runner::Config::default()
    }
}

proptest! {
    #![proptest_config(proptest_config(256))]

    #[test]
    fn hedging_keeps_its_promises(
        attempts in prop::collection::vec((1u64..300, any::<bool>()), 11),
        delay in 1u64..200,
        hedges in 1u32..=10,
        budget_percent in 0u32..=100,
        requests in 1usize..5,
    ) {
        let mut hedger = fixed(delay, hedges);
        let mut budget = RetryBudget::new(&BudgetConfig::Window(WindowBudgetConfig {
            budget_percent: f64::from(budget_percent),
            window: SimDuration::from_secs(10),
            min_retries_per_window: 0,
        })).unwrap();
        let mut hedges_sent = 0;
        for _ in 0..requests {
            let got = check(&mut hedger, &mut budget, &attempts);
            let n = got.sent.len();
            prop_assert!(n as u32 <= 1 + hedges);
            hedges_sent += n as u64 - 1;
            // Hedges go out in order, each at most `delay` after the previous one (sooner
            // when every attempt in flight has failed).
            for (i, (a, at)) in got.sent.iter().enumerate() {
                prop_assert_eq!(*a as usize, i);
                if i > 0 {
                    prop_assert!(*at <= got.sent[i - 1].1 + delay);
                }
            }
            match got.winner {
                Some((w, _)) => {
                    prop_assert!(attempts[w as usize].1);
                    prop_assert!(!got.cancelled.contains(&w));
                }
                None => prop_assert!(got.sent.iter().all(|(a, _)| !attempts[*a as usize].1)),
            }
        }
        // Every hedge was granted by the budget, and the budget never granted more than
        // its share: budget_percent of the requests.
        prop_assert_eq!(budget.retries_granted(), hedges_sent);
        prop_assert!(100 * hedges_sent <= u64::from(budget_percent) * requests as u64);
    }
}
