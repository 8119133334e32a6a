//! Retry budgets: bounded amplification when everything fails, nothing spent when nothing
//! fails, and each budget against a naive reference model.

use patterns::backoff::{BackoffConfig, Jitter, Strategy as Growth};
use patterns::budget::{
    AttemptResult, BudgetConfig, ConcurrencyBudgetConfig, RetryBreakerConfig, RetryBudget,
    ThrottlingConfig, TpsConfig, WindowBudgetConfig,
};
use patterns::retry::{Failure, RetryConfig, RetryDecision, RetryPolicy, Safety};
use proptest::prelude::*;
use sim_core::sample::bernoulli;
use sim_core::{Seed, SimDuration, SimTime};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What a run of the real retry policy produced.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Totals {
    pub(crate) requests: u64,
    pub(crate) attempts: u64,
    pub(crate) successes: u64,
}

impl Totals {
    fn amplification(&self) -> f64 {
        self.attempts as f64 / self.requests as f64
    }
}

/// Drives the real policy: one request every `interarrival` for `duration`, each attempt
/// takes `attempt_time` and fails with probability `failure_ratio`; retries wait 10ms.
pub(crate) fn check(
    budget: Option<BudgetConfig>,
    max_attempts: u32,
    failure_ratio: f64,
    interarrival: SimDuration,
    attempt_time: SimDuration,
    duration: SimDuration,
) -> (Totals, RetryPolicy) {
    let mut policy = RetryPolicy::new(RetryConfig {
        max_attempts,
        backoff: BackoffConfig {
            strategy: Growth::Constant {
                delay: SimDuration::from_millis(10),
            },
            jitter: Jitter::None,
        },
        budget,
        ..RetryConfig::default()
    })
    .expect("valid policy");
    let mut rng = Seed(11).stream("budget/outcomes");
    let mut totals = Totals::default();
    let mut requests = Vec::new();
    // (time an attempt ends, request index)
    let mut ends: BinaryHeap<Reverse<(SimTime, usize)>> = BinaryHeap::new();
    let end = SimTime::ZERO + duration;
    let mut next_arrival = SimTime::ZERO;
    loop {
        let next_end = ends.peek().map(|Reverse((t, _))| *t);
        let arrival_first = next_end.is_none_or(|t| next_arrival < t);
        if arrival_first && next_arrival < end {
            let now = next_arrival;
            let request = policy.begin(now, None, Safety::Idempotent);
            requests.push(request);
            totals.requests += 1;
            totals.attempts += 1;
            ends.push(Reverse((now + attempt_time, requests.len() - 1)));
            next_arrival = now + interarrival;
            continue;
        }
        let Some(Reverse((now, i))) = ends.pop() else {
            break;
        };
        if bernoulli(&mut rng, failure_ratio) {
            let failure = Failure::Status {
                code: 503,
                retry_after: None,
            };
            if let RetryDecision::Retry { after, .. } =
                policy.on_failure(now, &mut requests[i], failure, &mut rng)
            {
                totals.attempts += 1;
                ends.push(Reverse((now + after + attempt_time, i)));
            }
        } else {
            policy.on_success(now, &mut requests[i]);
            totals.successes += 1;
        }
    }
    (totals, policy)
}

pub(crate) const MS: SimDuration = SimDuration::from_millis(1);

#[test]
fn window_budget_bounds_amplification_when_everything_fails() {
    let config = WindowBudgetConfig::default(); // 10%, 10s, 3 retries per window
    let duration = SimDuration::from_secs(200);
    let (totals, _) = check(
        Some(BudgetConfig::Window(config.clone())),
        4,
        1.0,
        MS * 10,
        MS * 5,
        duration,
    );
    // The sliding window covers at least 9 of its 10 slots, so every 9s may hold
    // 10% of its requests plus the 3-retry floor.
    let spans = (duration.as_nanos()).div_ceil(config.window.as_nanos() * 9 / 10) as f64;
    let bound = 1.0 + 0.10 + 3.0 * spans / totals.requests as f64;
    let amplification = totals.amplification();
    eprintln!("{totals:?}: amplification {amplification:.4}, bound {bound:.4}");
    assert!(
        amplification <= bound,
        "{totals:?}: {amplification} > {bound}"
    );
    // The budget is used, not merely respected by refusing everything.
    assert!(amplification >= 1.09, "{totals:?}: {amplification}");
}

#[test]
fn tps_budget_bounds_amplification_when_everything_fails() {
    let config = TpsConfig {
        ttl: SimDuration::from_secs(10),
        min_per_sec: 1,
        retry_ratio: 0.2,
    };
    let duration = SimDuration::from_secs(200);
    let (totals, _) = check(
        Some(BudgetConfig::Tps(config)),
        4,
        1.0,
        MS * 10,
        MS * 5,
        duration,
    );
    let spans = duration.as_nanos().div_ceil(9_000_000_000) as f64;
    let bound = 1.0 + 0.2 + 10.0 * spans / totals.requests as f64;
    let amplification = totals.amplification();
    eprintln!("{totals:?}: amplification {amplification:.4}, bound {bound:.4}");
    assert!(
        amplification <= bound,
        "{totals:?}: {amplification} > {bound}"
    );
    assert!(amplification >= 1.19, "{totals:?}: {amplification}");
}

#[test]
fn throttling_stops_retrying_after_half_the_tokens() {
    let (totals, policy) = check(
        Some(BudgetConfig::Throttling(ThrottlingConfig::default())),
        4,
        1.0,
        MS * 10,
        MS * 5,
        SimDuration::from_secs(100),
    );
    // Starting from 10 tokens, failures take one each; retries stop at 5 = max/2, so at
    // most 5 retries happen in the whole run.
    let retries = totals.attempts - totals.requests;
    assert!(retries <= 5, "{totals:?}");
    assert!(retries >= 4, "{totals:?}");
    assert_eq!(policy.budget().tokens_milli(), Some(0));
}

#[test]
fn no_budget_retries_every_failure_up_to_max_attempts() {
    let (totals, _) = check(None, 4, 1.0, MS * 10, MS * 5, SimDuration::from_secs(10));
    assert_eq!(totals.attempts, 4 * totals.requests);
}

#[test]
fn nothing_is_spent_when_nothing_fails() {
    let budgets = [
        BudgetConfig::Throttling(ThrottlingConfig::default()),
        BudgetConfig::Window(WindowBudgetConfig::default()),
        BudgetConfig::Concurrency(ConcurrencyBudgetConfig::default()),
        BudgetConfig::Tps(TpsConfig::default()),
        BudgetConfig::RetryBreaker(RetryBreakerConfig::default()),
    ];
    for budget in budgets {
        let (totals, mut policy) = check(
            Some(budget.clone()),
            4,
            0.0,
            MS * 10,
            MS * 5,
            SimDuration::from_secs(30),
        );
        assert_eq!(totals.attempts, totals.requests, "{budget:?}");
        assert_eq!(totals.successes, totals.requests, "{budget:?}");
        let b = policy.budget_mut();
        assert_eq!(b.retries_granted(), 0, "{budget:?}");
        if let Some(tokens) = b.tokens_milli() {
            assert_eq!(tokens, 10_000, "{budget:?}");
        }
        // And the budget is still there for the first failure.
        assert!(b.try_retry(SimTime::from_secs(30)).is_ok(), "{budget:?}");
    }
}

#[test]
fn tps_ratio_of_six_tenths_allows_six_tenths_of_a_retry_per_request() {
    // tower turns 0.6 into a withdrawal of (1 / 0.6) as isize = 1 per deposit of 1, i.e.
    // one retry per request; the budget here keeps the ratio exact.
    let mut budget = RetryBudget::new(&BudgetConfig::Tps(TpsConfig {
        ttl: SimDuration::from_secs(1),
        min_per_sec: 0,
        retry_ratio: 0.6,
    }))
    .unwrap();
    let now = SimTime::from_millis(5);
    for _ in 0..100 {
        budget.on_request(now);
    }
    let granted = (0..100).filter(|_| budget.try_retry(now).is_ok()).count();
    assert_eq!(granted, 60);
}

#[test]
fn envoy_budget_bounds_concurrent_retries() {
    let mut budget = RetryBudget::new(&BudgetConfig::Concurrency(
        ConcurrencyBudgetConfig::default(),
    ))
    .unwrap();
    let now = SimTime::ZERO;
    // 10 active requests: 20% is 2, below the floor of 3.
    for _ in 0..10 {
        budget.on_request(now);
    }
    let granted = (0..10).filter(|_| budget.try_retry(now).is_ok()).count();
    assert_eq!(granted, 3);
    // 100 active requests: 20% is 20.
    for _ in 0..90 {
        budget.on_request(now);
    }
    let granted = (0..40).filter(|_| budget.try_retry(now).is_ok()).count();
    assert_eq!(granted, 17);
    // A retry that ends frees its slot.
    budget.on_attempt_end(now, AttemptResult::RetryableFailure, true);
    assert_eq!(budget.active_retries(), Some(19));
    assert!(budget.try_retry(now).is_ok());
}

#[test]
fn invalid_budgets_name_the_field() {
    let cases = [
        (
            "Throttling((max_tokens: 0, token_ratio: 0.1))",
            "Throttling.max_tokens",
        ),
        (
            "Throttling((max_tokens: 10, token_ratio: 0))",
            "Throttling.token_ratio",
        ),
        ("Window((budget_percent: 120))", "Window.budget_percent"),
        ("Window((window: \"1ms\"))", "Window.window"),
        (
            "Concurrency((budget_percent: -1))",
            "Concurrency.budget_percent",
        ),
        ("Tps((ttl: \"90s\"))", "Tps.ttl"),
        ("Tps((retry_ratio: 2000))", "Tps.retry_ratio"),
    ];
    for (text, field) in cases {
        let config: BudgetConfig = ron::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let err = RetryBudget::new(&config).unwrap_err();
        assert_eq!(err.field, field, "{text}: {err}");
    }
    assert!(ron::from_str::<BudgetConfig>("Window((budget_pct: 10))").is_err());
}

/// What a budget is told, in the model-based tests.
#[derive(Debug, Clone, Copy)]
enum Op {
    Request,
    Retry,
    Success,
    Failure,
}

fn ops() -> impl Strategy<Value = Vec<(u64, Op)>> {
    prop::collection::vec(
        (
            0u64..1500,
            prop_oneof![
                3 => Just(Op::Request),
                3 => Just(Op::Retry),
                1 => Just(Op::Success),
                1 => Just(Op::Failure),
            ],
        ),
        1..300,
    )
}

/// The slot of a time, as the windowed budgets cut a window into ten slots.
pub(crate) fn slot(t: u64, window_ms: u64) -> u64 {
    t * 1_000_000 / (window_ms * 1_000_000 / 10)
}

/// Proptest settings for this file: failures are kept in `proptest-regressions/`.
pub(crate) fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "proptest-regressions/recovery_budget.txt",
            ),
        )),
        ..proptest::test_runner::Config::default()
    }
}

proptest! {
    #![proptest_config(proptest_config(64))]

    #[test]
    fn amplification_stays_within_the_window_budget_at_any_failure_ratio(
        failure_percent in 0u32..=100,
        budget_percent in 0u32..=50,
        max_attempts in 1u32..6,
    ) {
        let config = WindowBudgetConfig {
            budget_percent: f64::from(budget_percent),
            window: SimDuration::from_secs(10),
            min_retries_per_window: 2,
        };
        let duration = SimDuration::from_secs(40);
        let (totals, _) = check(
            Some(BudgetConfig::Window(config)),
            max_attempts,
            f64::from(failure_percent) / 100.0,
            MS * 10,
            MS * 5,
            duration,
        );
        // In integers, so that a run that meets the bound exactly is not failed by rounding:
        // 100 · retries ≤ budget_percent · requests + 100 · 2 · spans.
        let spans = duration.as_nanos().div_ceil(9_000_000_000);
        let retries = totals.attempts - totals.requests;
        prop_assert!(
            100 * retries <= u64::from(budget_percent) * totals.requests + 200 * spans,
            "{:?}", totals
        );
        if failure_percent == 0 {
            prop_assert_eq!(totals.attempts, totals.requests);
        }
    }
}

proptest! {
    #![proptest_config(proptest_config(256))]

    #[test]
    fn window_budget_matches_a_list_of_timestamps(
        steps in ops(),
        percent in 0u32..=100,
        min_retries in 0u32..5,
        window_ms in 100u64..20_000,
    ) {
        let config = WindowBudgetConfig {
            budget_percent: f64::from(percent),
            window: SimDuration::from_millis(window_ms),
            min_retries_per_window: min_retries,
        };
        let mut budget = RetryBudget::new(&BudgetConfig::Window(config)).unwrap();
        // The reference: every request and granted retry with its time, counted when its
        // slot is one of the last ten.
        let mut requests: Vec<u64> = Vec::new();
        let mut retries: Vec<u64> = Vec::new();
        let mut t = 0;
        for (dt, op) in steps {
            t += dt;
            let now = SimTime::from_millis(t);
            let in_window = |x: &&u64| slot(t, window_ms) - slot(**x, window_ms) < 10;
            match op {
                Op::Request => {
                    budget.on_request(now);
                    requests.push(t);
                }
                Op::Retry => {
                    let n = requests.iter().filter(in_window).count() as u64;
                    let r = retries.iter().filter(in_window).count() as u64;
                    let expected = 100 * (r + 1) <= u64::from(percent) * n + 100 * u64::from(min_retries);
                    prop_assert_eq!(budget.try_retry(now).is_ok(), expected, "t={} n={} r={}", t, n, r);
                    if expected {
                        retries.push(t);
                    }
                }
                Op::Success => budget.on_attempt_end(now, AttemptResult::Success, false),
                Op::Failure => budget.on_attempt_end(now, AttemptResult::RetryableFailure, true),
            }
        }
    }

    #[test]
    fn tps_budget_matches_a_list_of_deposits(
        steps in ops(),
        ratio_thousandths in 0u64..3000,
        min_per_sec in 0u32..4,
        ttl_s in 1u64..=60,
    ) {
        let config = TpsConfig {
            ttl: SimDuration::from_secs(ttl_s),
            min_per_sec,
            retry_ratio: ratio_thousandths as f64 / 1000.0,
        };
        let mut budget = RetryBudget::new(&BudgetConfig::Tps(config)).unwrap();
        // The reference keeps (time, thousandths of a retry): deposits positive, withdrawals
        // negative; the reserve is min_per_sec · ttl retries.
        let mut entries: Vec<(u64, i64)> = Vec::new();
        let reserve = i64::from(min_per_sec) * ttl_s as i64 * 1000;
        let mut t = 0;
        for (dt, op) in steps {
            t += dt;
            let now = SimTime::from_millis(t);
            let window_ms = ttl_s * 1000;
            match op {
                Op::Request => {
                    budget.on_request(now);
                    entries.push((t, ratio_thousandths as i64));
                }
                Op::Retry => {
                    let balance: i64 = entries
                        .iter()
                        .filter(|(x, _)| slot(t, window_ms) - slot(*x, window_ms) < 10)
                        .map(|(_, a)| a)
                        .sum();
                    let expected = reserve + balance >= 1000;
                    prop_assert_eq!(budget.try_retry(now).is_ok(), expected, "t={} balance={}", t, balance);
                    if expected {
                        entries.push((t, -1000));
                    }
                }
                Op::Success | Op::Failure => {}
            }
        }
    }

    #[test]
    fn throttling_matches_a_token_counter(
        steps in ops(),
        max_tokens in 1u32..20,
        ratio_thousandths in 1u64..2000,
    ) {
        let config = ThrottlingConfig {
            max_tokens,
            token_ratio: ratio_thousandths as f64 / 1000.0,
        };
        let mut budget = RetryBudget::new(&BudgetConfig::Throttling(config)).unwrap();
        let max = i64::from(max_tokens) * 1000;
        let mut tokens = max;
        let mut t = 0;
        for (dt, op) in steps {
            t += dt;
            let now = SimTime::from_millis(t);
            match op {
                Op::Request => budget.on_request(now),
                Op::Retry => {
                    let expected = 2 * tokens > max;
                    prop_assert_eq!(budget.try_retry(now).is_ok(), expected, "tokens={}", tokens);
                }
                Op::Success => {
                    tokens = (tokens + ratio_thousandths as i64).min(max);
                    budget.on_attempt_end(now, AttemptResult::Success, false);
                }
                Op::Failure => {
                    tokens = (tokens - 1000).max(0);
                    budget.on_attempt_end(now, AttemptResult::RetryableFailure, false);
                }
            }
            prop_assert_eq!(budget.tokens_milli(), Some(tokens as u64));
        }
    }

    #[test]
    fn envoy_budget_matches_two_counters(
        steps in ops(),
        percent in 0u32..=100,
        min_concurrency in 0u32..5,
    ) {
        let config = ConcurrencyBudgetConfig {
            budget_percent: f64::from(percent),
            min_retry_concurrency: min_concurrency,
        };
        let mut budget = RetryBudget::new(&BudgetConfig::Concurrency(config)).unwrap();
        let (mut requests, mut retries) = (0u64, 0u64);
        let now = SimTime::ZERO;
        // Here Success ends a request and Failure ends a retry.
        for (_, op) in steps {
            match op {
                Op::Request => {
                    budget.on_request(now);
                    requests += 1;
                }
                Op::Retry => {
                    let limit = (u64::from(percent) * requests / 100).max(u64::from(min_concurrency));
                    let expected = retries < limit;
                    prop_assert_eq!(budget.try_retry(now).is_ok(), expected);
                    if expected {
                        retries += 1;
                    }
                }
                Op::Success if requests > 0 => {
                    budget.on_request_end(now);
                    requests -= 1;
                }
                Op::Failure if retries > 0 => {
                    budget.on_attempt_end(now, AttemptResult::RetryableFailure, true);
                    retries -= 1;
                }
                Op::Success | Op::Failure => {}
            }
            prop_assert_eq!(budget.active_retries(), Some(retries));
        }
    }
}

/// grpc-java `ServiceConfigUtil.getThrottlePolicy` only asks `tokenRatio > 0` (no bound by
/// `maxTokens`), and `RetriableStream.Throttle.onSuccess` caps the count at `maxTokens`
/// (grpc/grpc-java, core/src/main/java/io/grpc/internal/). So a ratio above `max_tokens` is
/// valid: one success refills the whole bucket.
#[test]
fn get_throttle_policy_accepts_a_token_ratio_above_max_tokens() {
    let config = BudgetConfig::Throttling(ThrottlingConfig {
        max_tokens: 2,
        token_ratio: 5.0,
    });
    let mut budget = RetryBudget::new(&config).unwrap();
    let now = SimTime::ZERO;
    budget.on_attempt_end(now, AttemptResult::RetryableFailure, false);
    budget.on_attempt_end(now, AttemptResult::RetryableFailure, false);
    assert_eq!(budget.tokens_milli(), Some(0));
    assert!(budget.try_retry(now).is_err());
    budget.on_attempt_end(now, AttemptResult::Success, false);
    assert_eq!(budget.tokens_milli(), Some(2000));
    assert!(budget.try_retry(now).is_ok());
}
