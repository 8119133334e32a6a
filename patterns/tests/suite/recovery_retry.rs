//! The retry policy as a client sees it: what is retried, when, and how often.

use patterns::backoff::{BackoffConfig, Jitter, Strategy as Growth};
use patterns::retry::{
    Failure, GiveUpReason, RetryConfig, RetryDecision, RetryPolicy, RetryReason, Safety,
};
use sim_core::sample::bernoulli;
use sim_core::{Seed, SimDuration, SimTime};

const MS: SimDuration = SimDuration::from_millis(1);

fn constant_backoff(delay: SimDuration) -> BackoffConfig {
    BackoffConfig {
        strategy: Growth::Constant { delay },
        jitter: Jitter::None,
    }
}

/// Runs one request through `config`: each listed failure happens `attempt_time` after its
/// attempt starts; returns the decisions in order (the request ends at the first give-up).
fn check(
    config: RetryConfig,
    safety: Safety,
    deadline: Option<SimTime>,
    attempt_time: SimDuration,
    failures: &[Failure],
) -> Vec<RetryDecision> {
    let mut policy = RetryPolicy::new(config).expect("valid policy");
    let mut rng = Seed(3).stream("retry");
    let mut now = SimTime::ZERO;
    let mut request = policy.begin(now, deadline, safety);
    let mut decisions = Vec::new();
    for failure in failures {
        now += attempt_time;
        let d = policy.on_failure(now, &mut request, *failure, &mut rng);
        decisions.push(d);
        match d {
            RetryDecision::Retry { after, attempt, .. } => {
                assert_eq!(request.attempt(), Some(attempt));
                now += after;
            }
            RetryDecision::GiveUp { .. } => {
                assert_eq!(request.outcome(), Some(false));
                break;
            }
        }
    }
    decisions
}

fn status(code: u16) -> Failure {
    Failure::Status {
        code,
        retry_after: None,
    }
}

fn gave_up(d: &[RetryDecision]) -> Option<GiveUpReason> {
    match d.last() {
        Some(RetryDecision::GiveUp { reason }) => Some(*reason),
        _ => None,
    }
}

#[test]
fn max_attempts_counts_the_first_attempt() {
    let d = check(
        RetryConfig::default(),
        Safety::Idempotent,
        None,
        MS,
        &[Failure::Timeout; 5],
    );
    assert_eq!(d.len(), 3);
    assert!(matches!(d[0], RetryDecision::Retry { attempt: 2, .. }));
    assert!(matches!(d[1], RetryDecision::Retry { attempt: 3, .. }));
    assert_eq!(
        gave_up(&d),
        Some(GiveUpReason::AttemptsExhausted { attempts: 3 })
    );
}

#[test]
fn max_retries_is_the_other_spelling_and_not_both() {
    let a: RetryConfig = ron::from_str("(max_retries: 2)").unwrap();
    let b: RetryConfig = ron::from_str("(max_attempts: 3)").unwrap();
    assert_eq!(a, b);
    assert_eq!(a, RetryConfig::default());
    let err = ron::from_str::<RetryConfig>("(max_attempts: 3, max_retries: 2)").unwrap_err();
    assert!(err.to_string().contains("not both"), "{err}");
    assert!(ron::from_str::<RetryConfig>("(max_atempts: 3)").is_err());
    // What a config serializes to reads back as the same config.
    let text = ron::to_string(&RetryConfig::default()).unwrap();
    assert_eq!(
        ron::from_str::<RetryConfig>(&text).unwrap(),
        RetryConfig::default()
    );
}

#[test]
fn classification_follows_the_documented_table() {
    let config = RetryConfig {
        max_attempts: 2,
        ..RetryConfig::default()
    };
    let cases: [(Failure, bool); 12] = [
        (Failure::Timeout, true),
        (Failure::ConnectionError, true),
        (status(500), true),
        (status(502), true),
        (status(503), true),
        (status(504), true),
        (status(429), true),
        (status(501), false),
        (status(400), false),
        (status(404), false),
        (status(409), false),
        (status(408), false),
    ];
    for (failure, retried) in cases {
        let d = check(config.clone(), Safety::Idempotent, None, MS, &[failure]);
        assert_eq!(
            matches!(d[0], RetryDecision::Retry { .. }),
            retried,
            "{failure:?}: {d:?}"
        );
        if !retried {
            assert_eq!(gave_up(&d), Some(GiveUpReason::NotRetryable { failure }));
        }
    }
}

#[test]
fn local_rejections_are_retried_as_their_status_unless_turned_off() {
    let local = |code| Failure::LocalRejection {
        code,
        retry_after: None,
    };
    // By default (resilience4j retries every exception) a full bulkhead is a 503 and an own
    // rate limiter a 429, retried as those statuses are.
    let d = check(
        RetryConfig::default(),
        Safety::Idempotent,
        None,
        MS,
        &[local(503)],
    );
    assert!(matches!(
        d[0],
        RetryDecision::Retry {
            reason: RetryReason::TransientStatus { code: 503 },
            ..
        }
    ));
    // ... and not when the status itself is not retried.
    let no_503 = RetryConfig {
        retry_on_status: vec![500],
        ..RetryConfig::default()
    };
    let d = check(no_503, Safety::Idempotent, None, MS, &[local(503)]);
    assert_eq!(
        gave_up(&d),
        Some(GiveUpReason::NotRetryable {
            failure: local(503)
        })
    );
    // Envoy never retries an overflow: the same refusal ends the request at once.
    let envoy = RetryConfig {
        retry_on_local_rejection: false,
        ..RetryConfig::default()
    };
    for code in [503, 429] {
        let d = check(envoy.clone(), Safety::Idempotent, None, MS, &[local(code)]);
        assert_eq!(
            gave_up(&d),
            Some(GiveUpReason::NotRetryable {
                failure: local(code)
            })
        );
    }
    // A 503 the server answered is still retried.
    let d = check(envoy, Safety::Idempotent, None, MS, &[status(503)]);
    assert!(matches!(d[0], RetryDecision::Retry { .. }));
}

#[test]
fn only_idempotent_or_keyed_operations_are_retried() {
    for (safety, retried) in [
        (Safety::Idempotent, true),
        (Safety::IdempotencyKey, true),
        (Safety::Unsafe, false),
    ] {
        let d = check(RetryConfig::default(), safety, None, MS, &[status(503)]);
        assert_eq!(
            matches!(d[0], RetryDecision::Retry { .. }),
            retried,
            "{safety:?}"
        );
        if !retried {
            assert_eq!(gave_up(&d), Some(GiveUpReason::NotIdempotent));
        }
    }
}

#[test]
fn retry_after_is_honoured_for_429_and_503_only() {
    let config = RetryConfig {
        backoff: constant_backoff(MS * 100),
        ..RetryConfig::default()
    };
    let asked = SimDuration::from_secs(2);
    for (code, waits) in [(429, asked), (503, asked), (500, MS * 100)] {
        let failure = Failure::Status {
            code,
            retry_after: Some(asked),
        };
        let d = check(config.clone(), Safety::Idempotent, None, MS, &[failure]);
        let RetryDecision::Retry { after, reason, .. } = d[0] else {
            panic!("{code}: {d:?}");
        };
        assert_eq!(after, waits, "{code}");
        if code != 500 {
            assert_eq!(
                reason,
                RetryReason::RetryAfter {
                    code,
                    requested: asked
                }
            );
        }
    }
    // A Retry-After shorter than the backoff does not shorten it.
    let d = check(
        config.clone(),
        Safety::Idempotent,
        None,
        MS,
        &[Failure::Status {
            code: 503,
            retry_after: Some(MS),
        }],
    );
    assert!(matches!(d[0], RetryDecision::Retry { after, .. } if after == MS * 100));
    // One longer than retry_after_max ends the request.
    let d = check(
        config,
        Safety::Idempotent,
        None,
        MS,
        &[Failure::Status {
            code: 429,
            retry_after: Some(SimDuration::from_secs(600)),
        }],
    );
    assert_eq!(
        gave_up(&d),
        Some(GiveUpReason::RetryAfterTooLong {
            requested: SimDuration::from_secs(600)
        })
    );
}

#[test]
fn no_attempt_starts_that_cannot_finish_before_the_deadline() {
    let config = RetryConfig {
        max_attempts: 10,
        backoff: constant_backoff(MS * 100),
        attempt_duration_min: MS * 50,
        ..RetryConfig::default()
    };
    // Attempts take 200ms and wait 100ms between them: they start at 0, 300, 600, 900ms.
    // With a deadline at 1s, a fourth attempt would start at 900ms with 100ms left, which
    // is enough for the 50ms minimum; a fifth would start at 1200ms.
    let deadline = SimTime::from_millis(1000);
    let d = check(
        config,
        Safety::Idempotent,
        Some(deadline),
        MS * 200,
        &[Failure::Timeout; 10],
    );
    assert_eq!(d.len(), 4, "{d:?}");
    assert_eq!(
        gave_up(&d),
        Some(GiveUpReason::DeadlineExceeded {
            start_at: SimTime::from_millis(1200),
            deadline
        })
    );
    // Tighter: the fourth attempt at 900ms would have 100ms, less than a 150ms minimum.
    let config = RetryConfig {
        max_attempts: 10,
        backoff: constant_backoff(MS * 100),
        attempt_duration_min: MS * 150,
        ..RetryConfig::default()
    };
    let d = check(
        config,
        Safety::Idempotent,
        Some(deadline),
        MS * 200,
        &[Failure::Timeout; 10],
    );
    assert_eq!(d.len(), 3, "{d:?}");
}

#[test]
fn an_ended_request_gives_up_without_side_effects() {
    let mut policy = RetryPolicy::new(RetryConfig::default()).unwrap();
    let mut rng = Seed(1).stream("ended");
    let mut request = policy.begin(SimTime::ZERO, None, Safety::Idempotent);
    policy.on_success(SimTime::from_millis(5), &mut request);
    assert_eq!(request.outcome(), Some(true));
    let d = policy.on_failure(
        SimTime::from_millis(6),
        &mut request,
        Failure::Timeout,
        &mut rng,
    );
    assert_eq!(
        d,
        RetryDecision::GiveUp {
            reason: GiveUpReason::Finished
        }
    );
    assert_eq!(request.outcome(), Some(true));
}

#[test]
fn invalid_policies_name_the_field() {
    let cases = [
        ("(max_attempts: 0)", "max_attempts"),
        ("(retry_on_status: [500, 404])", "retry_on_status[1]"),
        (
            "(backoff: (strategy: Exponential(delay_initial: \"1s\", multiplier: 0, delay_max: \"2s\")))",
            "backoff.strategy.multiplier",
        ),
        (
            "(budget: Some(Window((budget_percent: 200))))",
            "budget.Window.budget_percent",
        ),
    ];
    for (text, field) in cases {
        let config: RetryConfig = ron::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let err = RetryPolicy::new(config).unwrap_err();
        assert_eq!(err.field, field, "{text}: {err}");
    }
}

/// Monte Carlo over the real policy: with independent failures of probability `f` and up
/// to `n` retries (no budget, no deadline), attempts per request tend to Σ f^i (i = 0..n)
/// and the success ratio to 1 − f^(n+1).
fn monte_carlo(f: f64, n: u32, requests: u64, seed: u64) -> (f64, f64, f64, f64) {
    let mut policy = RetryPolicy::new(RetryConfig {
        max_attempts: n + 1,
        backoff: constant_backoff(MS),
        ..RetryConfig::default()
    })
    .unwrap();
    let mut rng = Seed(seed).stream("retry/monte-carlo");
    let (mut sum, mut sum_sq, mut successes) = (0.0, 0.0, 0u64);
    let mut now = SimTime::ZERO;
    for _ in 0..requests {
        let mut request = policy.begin(now, None, Safety::Idempotent);
        let mut attempts = 1u32;
        loop {
            now += MS;
            if !bernoulli(&mut rng, f) {
                policy.on_success(now, &mut request);
                successes += 1;
                break;
            }
            match policy.on_failure(now, &mut request, status(503), &mut rng) {
                RetryDecision::Retry { after, .. } => {
                    now += after;
                    attempts += 1;
                }
                RetryDecision::GiveUp { .. } => break,
            }
        }
        sum += f64::from(attempts);
        sum_sq += f64::from(attempts) * f64::from(attempts);
    }
    let count = requests as f64;
    let mean = sum / count;
    let var = (sum_sq / count - mean * mean) * count / (count - 1.0);
    (mean, (var / count).sqrt(), successes as f64 / count, count)
}

#[test]
fn monte_carlo_matches_theory_within_three_standard_errors() {
    // RESIM_SLOW_TESTS=1 runs twenty times as many requests (about a second).
    let requests = if std::env::var_os("RESIM_SLOW_TESTS").is_some() {
        2_000_000
    } else {
        100_000
    };
    for (i, (f, n)) in [(0.1, 2), (0.3, 2), (0.5, 1), (0.5, 4), (0.8, 3), (0.9, 5)]
        .into_iter()
        .enumerate()
    {
        let (mean, mean_se, success, count) = monte_carlo(f, n, requests, 100 + i as u64);
        let expected_attempts: f64 = (0..=n).map(|i| libm::pow(f, f64::from(i))).sum();
        let expected_success = 1.0 - libm::pow(f, f64::from(n + 1));
        let success_se = (expected_success * (1.0 - expected_success) / count).sqrt();
        eprintln!(
            "f={f} n={n}: attempts/request {mean:.5} (theory {expected_attempts:.5}, se {mean_se:.5}); \
             success {success:.5} (theory {expected_success:.5}, se {success_se:.5})"
        );
        assert!(
            (mean - expected_attempts).abs() <= 3.0 * mean_se,
            "f={f} n={n}: {mean} vs {expected_attempts}"
        );
        assert!(
            (success - expected_success).abs() <= 3.0 * success_se,
            "f={f} n={n}: {success} vs {expected_success}"
        );
    }
}

/// A readable trace of the real policy (backoff, jitter, budget) over a few requests.
fn trace(seed: u64) -> String {
    use patterns::budget::{BudgetConfig, WindowBudgetConfig};
    let mut policy = RetryPolicy::new(RetryConfig {
        max_attempts: 4,
        backoff: BackoffConfig {
            strategy: Growth::Exponential {
                delay_initial: MS * 100,
                multiplier: 2.0,
                delay_max: SimDuration::from_secs(1),
            },
            jitter: Jitter::Full,
        },
        budget: Some(BudgetConfig::Window(WindowBudgetConfig {
            budget_percent: 20.0,
            window: SimDuration::from_secs(10),
            min_retries_per_window: 2,
        })),
        ..RetryConfig::default()
    })
    .unwrap();
    let mut rng = Seed(seed).stream("retry/trace");
    let mut text = String::new();
    // (time, request, attempt), processed in time order.
    let mut events: Vec<(SimTime, usize, u32)> = Vec::new();
    let mut requests = Vec::new();
    for i in 0..8 {
        let start = SimTime::from_millis(100 * i as u64);
        requests.push(policy.begin(
            start,
            Some(start + SimDuration::from_secs(2)),
            Safety::Idempotent,
        ));
        events.push((start + MS * 20, i, 1));
    }
    while !events.is_empty() {
        events.sort();
        let (now, i, attempt) = events.remove(0);
        let ms = now.as_nanos() as f64 / 1e6;
        if !bernoulli(&mut rng, 0.6) {
            policy.on_success(now, &mut requests[i]);
            text.push_str(&format!(
                "{ms:>10.3}ms  request {i} attempt {attempt}: ok\n"
            ));
            continue;
        }
        let failure = if bernoulli(&mut rng, 0.2) {
            Failure::Status {
                code: 429,
                retry_after: Some(MS * 500),
            }
        } else {
            status(503)
        };
        let line = match policy.on_failure(now, &mut requests[i], failure, &mut rng) {
            RetryDecision::Retry {
                after,
                attempt: next,
                reason,
            } => {
                events.push((now + after + MS * 20, i, next));
                format!(
                    "retry after {:.3}ms ({reason:?})",
                    after.as_nanos() as f64 / 1e6
                )
            }
            RetryDecision::GiveUp { reason } => format!("give up ({reason:?})"),
        };
        let code = match failure {
            Failure::Status { code, .. } => code,
            _ => 0,
        };
        text.push_str(&format!(
            "{ms:>10.3}ms  request {i} attempt {attempt}: {code}, {line}\n"
        ));
    }
    text
}

#[test]
fn a_trace_of_the_policy_is_pinned() {
    let seed = 7;
    insta::with_settings!({ description => format!("seed {seed}, stream \"retry/trace\"; 8 requests 100ms apart, attempts take 20ms and fail with probability 0.6 (a fifth of failures are 429 with Retry-After 500ms), deadline 2s, exponential 100ms x2 up to 1s with full jitter, window budget 20% + 2") }, {
        insta::assert_snapshot!("retry__trace", trace(seed));
    });
}

/// The documented table, written out naively: the decision for a failure of attempt
/// `attempt` at `now`, with a constant backoff of `delay`.
fn reference_decision(
    config: &RetryConfig,
    safety: Safety,
    deadline: Option<SimTime>,
    delay: SimDuration,
    now: SimTime,
    attempt: u32,
    failure: Failure,
) -> RetryDecision {
    let give_up = |reason| RetryDecision::GiveUp { reason };
    // A local rejection is retried as the status it stands for, or never.
    let seen = match failure {
        Failure::LocalRejection { code, retry_after } if config.retry_on_local_rejection => {
            Failure::Status { code, retry_after }
        }
        other => other,
    };
    let reason = match seen {
        Failure::Timeout if config.retry_on_timeout => RetryReason::Timeout,
        Failure::ConnectionError if config.retry_on_connection_error => {
            RetryReason::ConnectionError
        }
        Failure::Conflict if config.retry_on_conflict => RetryReason::Conflict,
        Failure::Status { code, retry_after }
            if (code == 429 && config.retry_on_throttled)
                || config.retry_on_status.contains(&code) =>
        {
            match retry_after {
                Some(requested) if code == 429 || code == 503 => {
                    RetryReason::RetryAfter { code, requested }
                }
                _ => RetryReason::TransientStatus { code },
            }
        }
        _ => return give_up(GiveUpReason::NotRetryable { failure }),
    };
    if safety == Safety::Unsafe {
        return give_up(GiveUpReason::NotIdempotent);
    }
    if attempt >= config.max_attempts {
        return give_up(GiveUpReason::AttemptsExhausted { attempts: attempt });
    }
    let mut after = delay;
    if let RetryReason::RetryAfter { requested, .. } = reason {
        if requested > config.retry_after_max {
            return give_up(GiveUpReason::RetryAfterTooLong { requested });
        }
        after = after.max(requested);
    }
    if let Some(deadline) = deadline {
        let start_at = now + after;
        if start_at + config.attempt_duration_min > deadline {
            return give_up(GiveUpReason::DeadlineExceeded { start_at, deadline });
        }
    }
    RetryDecision::Retry {
        after,
        attempt: attempt + 1,
        reason,
    }
}

fn any_failure() -> impl proptest::strategy::Strategy<Value = Failure> {
    use proptest::prelude::*;
    prop_oneof![
        Just(Failure::Timeout),
        Just(Failure::ConnectionError),
        Just(Failure::Conflict),
        (
            prop::sample::select(vec![400u16, 404, 408, 409, 429, 500, 501, 502, 503, 504]),
            proptest::option::of(0u64..300_000),
        )
            .prop_map(|(code, ms)| Failure::Status {
                code,
                retry_after: ms.map(|ms| MS * ms),
            }),
        (
            prop::sample::select(vec![429u16, 503]),
            proptest::option::of(0u64..300_000),
        )
            .prop_map(|(code, ms)| Failure::LocalRejection {
                code,
                retry_after: ms.map(|ms| MS * ms),
            }),
    ]
}

/// Proptest settings for this file: failures are kept in `proptest-regressions/`.
fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "proptest-regressions/recovery_retry.txt",
            ),
        )),
        ..proptest::test_runner::Config::default()
    }
}

proptest::proptest! {
    #![proptest_config(proptest_config(256))]

    #[test]
    fn the_policy_follows_the_documented_table(
        failures in proptest::collection::vec(any_failure(), 1..8),
        max_attempts in 1u32..6,
        flags in proptest::array::uniform5(proptest::bool::ANY),
        safety in proptest::sample::select(vec![Safety::Idempotent, Safety::IdempotencyKey, Safety::Unsafe]),
        deadline_ms in proptest::option::of(0u64..20_000),
        delay_ms in 0u64..3000,
        attempt_ms in 1u64..1000,
    ) {
        let config = RetryConfig {
            max_attempts,
            backoff: constant_backoff(MS * delay_ms),
            retry_on_timeout: flags[0],
            retry_on_connection_error: flags[1],
            retry_on_throttled: flags[2],
            retry_on_conflict: flags[3],
            retry_on_local_rejection: flags[4],
            retry_after_max: SimDuration::from_secs(120),
            ..RetryConfig::default()
        };
        let deadline = deadline_ms.map(SimTime::from_millis);
        let got = check(config.clone(), safety, deadline, MS * attempt_ms, &failures);
        let mut now = SimTime::ZERO;
        for (i, (decision, failure)) in got.iter().zip(&failures).enumerate() {
            now += MS * attempt_ms;
            let expected = reference_decision(
                &config, safety, deadline, MS * delay_ms, now, i as u32 + 1, *failure,
            );
            proptest::prop_assert_eq!(*decision, expected);
            if let RetryDecision::Retry { after, .. } = decision {
                now += *after;
            }
        }
    }
}

/// One call on a policy in the robustness test.
#[derive(Debug, Clone)]
enum Call {
    Begin {
        deadline: Option<u64>,
        safety: Safety,
    },
    Failure {
        request: usize,
        failure: Failure,
    },
    Success {
        request: usize,
    },
    Abandon {
        request: usize,
    },
}

fn any_call() -> impl proptest::strategy::Strategy<Value = Call> {
    use proptest::prelude::*;
    let huge = prop_oneof![0u64..10_000_000_000, Just(u64::MAX), Just(u64::MAX - 1)];
    prop_oneof![
        (
            proptest::option::of(huge),
            prop::sample::select(vec![
                Safety::Idempotent,
                Safety::IdempotencyKey,
                Safety::Unsafe
            ]),
        )
            .prop_map(|(deadline, safety)| Call::Begin { deadline, safety }),
        (any::<usize>(), any_failure())
            .prop_map(|(request, failure)| Call::Failure { request, failure }),
        (any::<usize>(), any::<u64>()).prop_map(|(request, ns)| Call::Failure {
            request,
            failure: Failure::Status {
                code: 429,
                retry_after: Some(SimDuration::from_nanos(ns))
            },
        }),
        any::<usize>().prop_map(|request| Call::Success { request }),
        any::<usize>().prop_map(|request| Call::Abandon { request }),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest_config(256))]

    #[test]
    fn no_sequence_of_calls_panics_and_attempts_stay_bounded(
        calls in proptest::collection::vec((any_time(), any_call()), 1..100),
        budget in proptest::sample::select(vec![0usize, 1, 2, 3, 4, 5]),
        jitter in proptest::sample::select(vec![Jitter::None, Jitter::Full, Jitter::Equal, Jitter::Decorrelated, Jitter::Proportional { spread_percent: 100.0 }]),
    ) {
        use patterns::budget::{BudgetConfig, ConcurrencyBudgetConfig, RetryBreakerConfig, ThrottlingConfig, TpsConfig, WindowBudgetConfig};
        let budget = match budget {
            0 => None,
            1 => Some(BudgetConfig::Throttling(ThrottlingConfig::default())),
            2 => Some(BudgetConfig::Window(WindowBudgetConfig::default())),
            3 => Some(BudgetConfig::Concurrency(ConcurrencyBudgetConfig::default())),
            4 => Some(BudgetConfig::Tps(TpsConfig::default())),
            _ => Some(BudgetConfig::RetryBreaker(RetryBreakerConfig::default())),
        };
        let config = RetryConfig {
            max_attempts: 5,
            backoff: BackoffConfig {
                strategy: Growth::Exponential {
                    delay_initial: MS * 10,
                    multiplier: 3.0,
                    delay_max: SimDuration::from_secs(86_400),
                },
                jitter,
            },
            budget,
            ..RetryConfig::default()
        };
        let mut policy = RetryPolicy::new(config).unwrap();
        let mut rng = Seed(9).stream("retry/robust");
        let mut requests = Vec::new();
        for (ns, call) in calls {
            // Time may go back and forth: a caller's bug must not panic the policy.
            let now = SimTime::from_nanos(ns);
            match call {
                Call::Begin { deadline, safety } => {
                    requests.push(policy.begin(now, deadline.map(SimTime::from_nanos), safety));
                }
                Call::Failure { request, failure } if !requests.is_empty() => {
                    let n = requests.len();
                    let r = &mut requests[request % n];
                    if let RetryDecision::Retry { attempt, .. } = policy.on_failure(now, r, failure, &mut rng) {
                        proptest::prop_assert!((2..=5).contains(&attempt));
                    }
                }
                Call::Success { request } if !requests.is_empty() => {
                    let n = requests.len();
                    policy.on_success(now, &mut requests[request % n]);
                }
                Call::Abandon { request } if !requests.is_empty() => {
                    let n = requests.len();
                    policy.abandon(now, &mut requests[request % n]);
                }
                _ => {}
            }
        }
    }
}

fn any_time() -> impl proptest::strategy::Strategy<Value = u64> {
    use proptest::prelude::*;
    prop_oneof![0u64..100_000_000_000, Just(u64::MAX), Just(u64::MAX / 2)]
}
