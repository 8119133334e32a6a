//! Brooker's retry circuit breaker: against his published behaviour (as many retries as
//! without it below the threshold, none above it, first attempts never refused) and against
//! a naive reference model that keeps every ended attempt with its time.

use crate::recovery_budget::{MS, Totals, check, proptest_config, slot};
use patterns::budget::{AttemptResult, BudgetConfig, RetryBreakerConfig, RetryBudget};
use proptest::prelude::*;
use sim_core::{SimDuration, SimTime};

/// Retries per request of the driver in `recovery_budget` (100 requests a second for 60s, up
/// to 4 attempts) at a failure ratio, with and without a budget.
fn retries_per_request(budget: Option<BudgetConfig>, failure_ratio: f64) -> (f64, Totals) {
    let (totals, _) = check(
        budget,
        4,
        failure_ratio,
        MS * 10,
        MS * 5,
        SimDuration::from_secs(60),
    );
    let retries = (totals.attempts - totals.requests) as f64 / totals.requests as f64;
    (retries, totals)
}

fn breaker() -> Option<BudgetConfig> {
    Some(BudgetConfig::RetryBreaker(RetryBreakerConfig::default()))
}

/// Brooker's graph: below the threshold (10%) the breaker "behaves like N retries", above it
/// "like no retries".
#[test]
fn retries_stop_above_the_threshold_and_are_unchanged_below_it() {
    for failure_percent in [0u32, 2, 5, 7, 13, 20, 30, 50, 100] {
        let ratio = f64::from(failure_percent) / 100.0;
        let (plain, plain_totals) = retries_per_request(None, ratio);
        let (with, totals) = retries_per_request(breaker(), ratio);
        eprintln!("{failure_percent:>3}%: retries per request {plain:.4} plain, {with:.4} breaker");
        // First attempts are never refused: every request was sent.
        assert_eq!(totals.requests, plain_totals.requests);
        if failure_percent < 10 {
            // N retries: the same per request, within the draws' noise (the two runs see
            // different outcomes once a retry shifts the stream).
            assert!(
                (with - plain).abs() <= 0.1 * plain + 0.002,
                "{failure_percent}%: {with} with the breaker, {plain} without"
            );
        } else {
            // No retries, but for the ten attempts before the ratio is judged.
            assert!(plain > 0.1, "{failure_percent}%: {plain}");
            assert!(
                with * totals.requests as f64 <= 10.0,
                "{failure_percent}%: {with} retries per request with the breaker"
            );
        }
    }
}

#[test]
fn below_the_threshold_nothing_is_refused_so_the_run_is_the_plain_one() {
    // With a minimum of 100 attempts the first few failures cannot trip it: at 5% the window's
    // ratio stays under 10%, the breaker refuses nothing, and every draw is the plain run's.
    let config = RetryBreakerConfig {
        minimum_number_of_calls: 100,
        ..RetryBreakerConfig::default()
    };
    let (totals, policy) = check(
        Some(BudgetConfig::RetryBreaker(config)),
        4,
        0.05,
        MS * 10,
        MS * 5,
        SimDuration::from_secs(60),
    );
    let (plain, _) = check(None, 4, 0.05, MS * 10, MS * 5, SimDuration::from_secs(60));
    assert_eq!(policy.budget().retries_refused(), 0);
    assert_eq!(totals, plain);
}

#[test]
fn the_ratio_is_judged_on_the_window_and_recovers_when_failures_leave_it() {
    let mut budget = RetryBudget::new(&BudgetConfig::RetryBreaker(RetryBreakerConfig {
        failure_rate_threshold: 10.0,
        window: SimDuration::from_secs(10),
        minimum_number_of_calls: 10,
    }))
    .unwrap();
    let at = SimTime::from_secs;
    // Nine failures: under the minimum, retries are allowed.
    for _ in 0..9 {
        budget.on_attempt_end(at(0), AttemptResult::RetryableFailure, false);
    }
    assert!(budget.try_retry(at(0)).is_ok());
    // 9 failures in 90 ended attempts: exactly 10%, not above it.
    for _ in 0..81 {
        budget.on_attempt_end(at(1), AttemptResult::Success, false);
    }
    assert!(budget.try_retry(at(1)).is_ok());
    // One more: 10 in 91, above: refused.
    budget.on_attempt_end(at(1), AttemptResult::RetryableFailure, false);
    assert!(budget.try_retry(at(1)).is_err());
    // Failures that say nothing about the dependency are not counted.
    for _ in 0..50 {
        budget.on_attempt_end(at(2), AttemptResult::OtherFailure, false);
    }
    assert!(budget.try_retry(at(2)).is_err());
    // The slot of second 0 leaves the window (slots of 1s): 1 failure in 82 attempts.
    assert!(budget.try_retry(at(10)).is_ok());
    assert_eq!((budget.retries_granted(), budget.retries_refused()), (3, 2));
}

#[test]
fn invalid_breakers_name_the_field() {
    let cases = [
        (
            "RetryBreaker((failure_rate_threshold: 0))",
            "RetryBreaker.failure_rate_threshold",
        ),
        (
            "RetryBreaker((failure_rate_threshold: 101))",
            "RetryBreaker.failure_rate_threshold",
        ),
        ("RetryBreaker((window: \"1ms\"))", "RetryBreaker.window"),
        (
            "RetryBreaker((minimum_number_of_calls: 0))",
            "RetryBreaker.minimum_number_of_calls",
        ),
    ];
    for (text, field) in cases {
        let config: BudgetConfig = ron::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let err = RetryBudget::new(&config).unwrap_err();
        assert_eq!(err.field, field, "{text}: {err}");
    }
    let err =
        RetryBudget::new(&ron::from_str("RetryBreaker((failure_rate_threshold: 0))").unwrap())
            .unwrap_err();
    assert!(err.to_string().contains("max_attempts: 1"), "{err}");
}

/// What the breaker is told, in the model-based test.
#[derive(Debug, Clone, Copy)]
enum Op {
    Request,
    Retry,
    Success,
    Failure,
    Other,
}

fn ops() -> impl Strategy<Value = Vec<(u64, Op)>> {
    prop::collection::vec(
        (
            0u64..800,
            prop_oneof![
                1 => Just(Op::Request),
                3 => Just(Op::Retry),
                3 => Just(Op::Success),
                2 => Just(Op::Failure),
                1 => Just(Op::Other),
            ],
        ),
        1..300,
    )
}

proptest! {
    #![proptest_config(proptest_config(256))]

    #[test]
    fn retry_breaker_matches_a_list_of_ended_attempts(
        steps in ops(),
        threshold_tenths in 1u64..=1000,
        minimum in 1u32..30,
        window_ms in 100u64..20_000,
    ) {
        let config = RetryBreakerConfig {
            failure_rate_threshold: threshold_tenths as f64 / 10.0,
            window: SimDuration::from_millis(window_ms),
            minimum_number_of_calls: minimum,
        };
        let mut budget = RetryBudget::new(&BudgetConfig::RetryBreaker(config)).unwrap();
        // The reference: every success and retryable failure with its time, counted when its
        // slot is one of the last ten.
        let mut ended: Vec<(u64, bool)> = Vec::new();
        let mut t = 0;
        for (dt, op) in steps {
            t += dt;
            let now = SimTime::from_millis(t);
            match op {
                Op::Request => budget.on_request(now),
                Op::Retry => {
                    let window: Vec<bool> = ended
                        .iter()
                        .filter(|(x, _)| slot(t, window_ms) - slot(*x, window_ms) < 10)
                        .map(|(_, failed)| *failed)
                        .collect();
                    let n = window.len() as u64;
                    let failed = window.iter().filter(|f| **f).count() as u64;
                    // failed / n ≤ threshold / 100, with the threshold in tenths of a percent.
                    let expected = n < u64::from(minimum) || 1000 * failed <= threshold_tenths * n;
                    prop_assert_eq!(
                        budget.try_retry(now).is_ok(), expected,
                        "t={} ended={} failed={}", t, n, failed
                    );
                }
                Op::Success => {
                    budget.on_attempt_end(now, AttemptResult::Success, true);
                    ended.push((t, false));
                }
                Op::Failure => {
                    budget.on_attempt_end(now, AttemptResult::RetryableFailure, false);
                    ended.push((t, true));
                }
                Op::Other => budget.on_attempt_end(now, AttemptResult::OtherFailure, true),
            }
        }
    }
}
