//! Rate limiters: decisions a user can see, through one `check` helper.

use patterns::limiter::{
    BucketConfig, Composite, CompositeConfig, Cost, FixedWindow, FixedWindowConfig, Gcra, Keyed,
    KeyedConfig, LeakyQueue, LeakyQueueConfig, Limiter, LimiterConfig, RateDecision, RateLimiter,
    RateOutcome, RateRejection, Shadow, SlidingCounter, SlidingLog, TokenBucket, WhenFull,
    WindowConfig,
};
use sim_core::{Rate, SimDuration, SimTime};

fn ms(n: u64) -> SimTime {
    SimTime::from_millis(n)
}

fn cost(n: u64) -> Cost {
    Cost::new(n).unwrap()
}

/// One line per request: `t=<ms> <admit|reject|hopeless> rem=<n> retry=<ms|-> reset=<ms>`.
fn line(t: SimTime, d: &RateDecision) -> String {
    let verdict = match d.outcome {
        RateOutcome::Admit => "admit",
        RateOutcome::Reject(RateRejection::LimitExceeded) => "reject",
        RateOutcome::Reject(RateRejection::CostAboveCapacity { .. }) => "hopeless",
        RateOutcome::Reject(RateRejection::TooManyKeys { .. }) => "full",
    };
    let retry = d
        .retry_after
        .map_or("-".to_string(), |r| format!("{}", r.as_millis_f64()));
    let mut s = format!(
        "t={} {verdict} rem={} retry={retry} reset={}",
        t.as_nanos() / 1_000_000,
        d.remaining,
        d.reset_at.as_nanos() as f64 / 1e6
    );
    if !d.delay.is_zero() {
        s.push_str(&format!(" delay={}", d.delay.as_millis_f64()));
    }
    s
}

/// Runs `(ms, cost)` requests through `limiter` and compares the trace with `expected`.
fn check(mut limiter: impl RateLimiter, requests: &[(u64, u64)], expected: &[&str]) {
    let trace: Vec<String> = requests
        .iter()
        .map(|&(t, c)| line(ms(t), &limiter.acquire(ms(t), cost(c))))
        .collect();
    assert_eq!(trace, expected, "\ntrace:\n{}", trace.join("\n"));
}

fn window(limit: u64, window_ms: u64) -> WindowConfig {
    WindowConfig {
        limit,
        window: SimDuration::from_millis(window_ms),
    }
}

fn bucket(per_second: f64, burst: u64) -> BucketConfig {
    BucketConfig {
        rate: Rate::per_second(per_second),
        burst,
    }
}

#[test]
fn fixed_window_admits_twice_the_limit_across_a_boundary() {
    check(
        FixedWindow::new(&window(2, 1000).into()).unwrap(),
        &[
            (990, 1),
            (995, 1),
            (999, 1),
            (1000, 1),
            (1001, 1),
            (1002, 1),
        ],
        &[
            "t=990 admit rem=1 retry=- reset=1000",
            "t=995 admit rem=0 retry=- reset=1000",
            "t=999 reject rem=0 retry=1 reset=1000",
            "t=1000 admit rem=1 retry=- reset=2000",
            "t=1001 admit rem=0 retry=- reset=2000",
            "t=1002 reject rem=0 retry=998 reset=2000",
        ],
    );
}

#[test]
fn sliding_log_counts_the_last_window_exactly() {
    check(
        SlidingLog::new(&window(2, 1000)).unwrap(),
        &[
            (990, 1),
            (995, 1),
            (1000, 1),
            (1990, 1),
            (1995, 2),
            (2995, 2),
        ],
        &[
            "t=990 admit rem=1 retry=- reset=1990",
            "t=995 admit rem=0 retry=- reset=1995",
            "t=1000 reject rem=0 retry=990 reset=1995",
            "t=1990 admit rem=0 retry=- reset=2990",
            "t=1995 reject rem=1 retry=995 reset=2990",
            "t=2995 admit rem=0 retry=- reset=3995",
        ],
    );
}

#[test]
fn sliding_counter_weights_the_previous_window() {
    // 10 in window 0; at 1250 the previous counts 10 × 0.75 = 7.5, so 2 fit, and a third fits
    // once the previous counts 7 (at 1300); at 1500 it counts 5.
    let mut requests = vec![(100, 10)];
    requests.extend([(1250, 2), (1250, 1), (1500, 3)]);
    check(
        SlidingCounter::new(&window(10, 1000)).unwrap(),
        &requests,
        &[
            "t=100 admit rem=0 retry=- reset=2000",
            "t=1250 admit rem=0 retry=- reset=3000",
            "t=1250 reject rem=0 retry=50 reset=3000",
            "t=1500 admit rem=0 retry=- reset=3000",
        ],
    );
}

#[test]
fn token_bucket_reports_headers() {
    // 10/s: one token per 100ms, burst 3.
    check(
        TokenBucket::new(&bucket(10.0, 3)).unwrap(),
        &[(0, 1), (0, 2), (0, 1), (50, 1), (100, 1), (1000, 4)],
        &[
            "t=0 admit rem=2 retry=- reset=100",
            "t=0 admit rem=0 retry=- reset=300",
            "t=0 reject rem=0 retry=100 reset=300",
            "t=50 reject rem=0 retry=50 reset=300",
            "t=100 admit rem=0 retry=- reset=400",
            "t=1000 hopeless rem=3 retry=- reset=1000",
        ],
    );
}

#[test]
fn gcra_reports_the_same_headers_as_the_token_bucket() {
    check(
        Gcra::new(&bucket(10.0, 3)).unwrap(),
        &[(0, 1), (0, 2), (0, 1), (50, 1), (100, 1), (1000, 4)],
        &[
            "t=0 admit rem=2 retry=- reset=100",
            "t=0 admit rem=0 retry=- reset=300",
            "t=0 reject rem=0 retry=100 reset=300",
            "t=50 reject rem=0 retry=50 reset=300",
            "t=100 admit rem=0 retry=- reset=400",
            "t=1000 hopeless rem=3 retry=- reset=1000",
        ],
    );
}

#[test]
fn leaky_queue_delays_instead_of_refusing_until_full() {
    check(
        LeakyQueue::new(&LeakyQueueConfig {
            rate: Rate::per_second(10.0),
            queue_capacity: 3,
        })
        .unwrap(),
        &[(0, 1), (0, 1), (0, 1), (0, 1), (150, 1)],
        &[
            "t=0 admit rem=2 retry=- reset=100",
            "t=0 admit rem=1 retry=- reset=200 delay=100",
            "t=0 admit rem=0 retry=- reset=300 delay=200",
            "t=0 reject rem=0 retry=100 reset=300",
            "t=150 admit rem=0 retry=- reset=400 delay=150",
        ],
    );
}

#[test]
fn cost_zero_is_an_argument_error_naming_the_field() {
    let e = Cost::new(0).unwrap_err();
    assert_eq!(e.field, "cost");
    assert!(e.to_string().starts_with("cost: must be at least 1, got 0"));
}

#[test]
fn time_going_backwards_earns_no_credit_and_does_not_panic() {
    let mut b = TokenBucket::new(&bucket(10.0, 1)).unwrap();
    assert!(b.acquire(ms(10_000), Cost::ONE).allowed());
    let d = b.acquire(ms(0), Cost::ONE);
    assert!(!d.allowed());
    assert_eq!(d.retry_after, Some(SimDuration::from_millis(100)));
    check(
        FixedWindow::new(&window(1, 1000).into()).unwrap(),
        &[(5000, 1), (100, 1), (5999, 1), (6000, 1)],
        &[
            "t=5000 admit rem=0 retry=- reset=6000",
            "t=100 reject rem=0 retry=1000 reset=6000",
            "t=5999 reject rem=0 retry=1 reset=6000",
            "t=6000 admit rem=0 retry=- reset=7000",
        ],
    );
}

#[test]
fn composite_refusal_charges_no_layer() {
    let config = CompositeConfig {
        layers: vec![
            LimiterConfig::TokenBucket(bucket(1.0, 5)),
            LimiterConfig::FixedWindow(window(2, 1000).into()),
        ],
    };
    // The window refuses the third request; the bucket keeps the two tokens it was not charged.
    check(
        Composite::new(&config).unwrap(),
        &[(0, 1), (0, 1), (0, 1), (0, 1), (1000, 2), (1000, 2)],
        &[
            "t=0 admit rem=1 retry=- reset=1000",
            "t=0 admit rem=0 retry=- reset=2000",
            "t=0 reject rem=0 retry=1000 reset=1000",
            "t=0 reject rem=0 retry=1000 reset=1000",
            "t=1000 admit rem=0 retry=- reset=4000",
            "t=1000 reject rem=0 retry=1000 reset=2000",
        ],
    );
    let e = Composite::new(&CompositeConfig {
        layers: vec![
            LimiterConfig::default(),
            LimiterConfig::Gcra(bucket(0.0, 1)),
        ],
    })
    .unwrap_err();
    assert_eq!(e.field, "layers[1].rate");
}

#[test]
fn shadow_mode_allows_and_records() {
    let mut s = Shadow::new(FixedWindow::new(&window(1, 1000).into()).unwrap());
    let (enforced, observed) = s.acquire_observed(ms(0), Cost::ONE);
    assert!(enforced.allowed() && observed.allowed());
    let (enforced, observed) = s.acquire_observed(ms(1), Cost::ONE);
    assert!(enforced.allowed());
    assert_eq!(
        observed.outcome,
        RateOutcome::Reject(RateRejection::LimitExceeded)
    );
    assert!(s.acquire(ms(2), Cost::ONE).allowed());
    assert_eq!((s.stats().decisions, s.stats().would_reject), (3, 2));
}

fn keyed(max_keys: usize, when_full: WhenFull) -> Keyed<&'static str> {
    Keyed::new(&KeyedConfig {
        limiter: LimiterConfig::FixedWindow(window(1, 1000).into()),
        max_keys,
        idle_timeout: SimDuration::from_millis(500),
        when_full,
    })
    .unwrap()
}

#[test]
fn keyed_registry_forgets_idle_keys_only_at_rest() {
    let mut k = keyed(10, WhenFull::RejectNewKeys);
    assert!(k.acquire(ms(0), &"a", Cost::ONE).allowed());
    assert!(!k.acquire(ms(600), &"a", Cost::ONE).allowed());
    // Idle for 500ms by 1100, but its window only ended at 1000 and the refusal at 600 counts
    // as use: forgotten once both have passed.
    assert!(k.acquire(ms(1099), &"b", Cost::ONE).allowed());
    assert!(k.contains(&"a"));
    assert!(k.acquire(ms(1100), &"c", Cost::ONE).allowed());
    assert!(!k.contains(&"a"));
    assert_eq!((k.len(), k.forgotten()), (2, 1));
}

#[test]
fn keyed_registry_caps_its_keys() {
    let mut k = keyed(2, WhenFull::RejectNewKeys);
    assert!(k.acquire(ms(0), &"a", Cost::ONE).allowed());
    assert!(k.acquire(ms(0), &"b", Cost::ONE).allowed());
    let peeked = k.peek(ms(1), &"c", Cost::ONE);
    let d = k.acquire(ms(1), &"c", Cost::ONE);
    assert_eq!(peeked, d);
    assert_eq!(
        d.outcome,
        RateOutcome::Reject(RateRejection::TooManyKeys { max_keys: 2 })
    );
    assert_eq!(k.len(), 2);

    let mut k = keyed(2, WhenFull::EvictSoonest);
    assert!(k.acquire(ms(0), &"a", Cost::ONE).allowed());
    assert!(k.acquire(ms(1), &"b", Cost::ONE).allowed());
    assert!(k.acquire(ms(2), &"c", Cost::ONE).allowed());
    assert!(!k.contains(&"a") && k.contains(&"b") && k.contains(&"c"));
    // Evicted early, "a" starts afresh: the cost of capping memory, documented on WhenFull.
    assert!(k.acquire(ms(3), &"a", Cost::ONE).allowed());
}

#[test]
fn configs_read_from_ron_and_reject_unknown_fields() {
    let c: LimiterConfig = ron::from_str(r#"(kind: "token_bucket", rate: "100/s", burst: 20)"#)
        .expect("token bucket config");
    assert_eq!(c, LimiterConfig::TokenBucket(bucket(100.0, 20)));
    let c: LimiterConfig = ron::from_str(r#"(kind: "sliding_log", limit: 5, window: "1s")"#)
        .expect("sliding log config");
    assert!(Limiter::new(&c).is_ok());
    let e = ron::from_str::<LimiterConfig>(r#"(kind: "gcra", rate: "1/s", burst: 2, brust: 3)"#)
        .unwrap_err();
    assert!(e.to_string().contains("brust"), "{e}");
}

#[test]
fn invalid_configs_name_their_field() {
    let cases: Vec<(LimiterConfig, &str)> = vec![
        (LimiterConfig::FixedWindow(window(0, 1000).into()), "limit"),
        (LimiterConfig::SlidingCounter(window(1, 0)), "window"),
        (LimiterConfig::SlidingLog(window(2_000_000, 1000)), "limit"),
        (LimiterConfig::TokenBucket(bucket(0.0, 1)), "rate"),
        (LimiterConfig::TokenBucket(bucket(3e9, 1)), "rate"),
        (LimiterConfig::Gcra(bucket(1.0, 0)), "burst"),
        (LimiterConfig::LeakyMeter(bucket(1e-9, u64::MAX)), "burst"),
        (
            LimiterConfig::LeakyQueue(LeakyQueueConfig {
                rate: Rate::per_second(1.0),
                queue_capacity: 0,
            }),
            "queue_capacity",
        ),
    ];
    for (config, field) in cases {
        let e = config.validate().unwrap_err();
        assert_eq!(e.field, field, "{config:?}: {e}");
        assert!(!e.reason.ends_with('.'), "{e}");
    }
    let e = KeyedConfig {
        max_keys: 0,
        ..KeyedConfig::default()
    }
    .validate()
    .unwrap_err();
    assert_eq!(e.field, "max_keys");
}

/// resilience4j's `AtomicRateLimiter` (a fixed window with a `timeoutDuration`), its tests
/// translated: `(nanos, units)` requests, the wait each is admitted with, `None` if refused.
fn waits(limit: u64, window_ns: u64, wait_ns: u64, requests: &[(u64, u64)]) -> Vec<Option<u64>> {
    let mut l = FixedWindow::new(&FixedWindowConfig {
        limit,
        window: SimDuration::from_nanos(window_ns),
        wait_max: SimDuration::from_nanos(wait_ns),
    })
    .unwrap();
    requests
        .iter()
        .map(|&(t, c)| {
            let d = l.acquire(SimTime::from_nanos(t), cost(c));
            d.allowed().then_some(d.delay.as_nanos())
        })
        .collect()
}

/// `reservePermissionsUpfront`: 3 per 10ms, a 12ms timeout, nine requests 1ns apart at the
/// start of a period: three now, three wait for the next period, three are refused.
#[test]
fn fixed_window_with_a_wait_reserves_the_next_periods_as_resilience4j() {
    let cycle = 10_000_000;
    let requests: Vec<(u64, u64)> = (0..9).map(|i| (cycle + i + 1, 1)).collect();
    assert_eq!(
        waits(3, cycle, 12_000_000, &requests),
        [
            Some(0),
            Some(0),
            Some(0),
            Some(cycle - 4),
            Some(cycle - 5),
            Some(cycle - 6),
            None,
            None,
            None
        ]
    );
}

/// `reserveFewThenSkipCyclesBeforeRefreshNonBlocking` and `rejectedByTimeoutNonBlocking`: one
/// per 250ms; with a 250ms timeout the second request waits a whole period and the third is
/// refused; periods skipped later give back one permission, not more; with no timeout the
/// second is refused and told to come back at the next period.
#[test]
fn fixed_window_reservations_refresh_and_refusals_as_resilience4j() {
    let cycle = 250_000_000;
    let seen = waits(
        1,
        cycle,
        cycle,
        &[
            (cycle, 1),
            (cycle, 1),
            (cycle, 1),
            (6 * cycle + 10, 1),
            (6 * cycle + 10, 1),
        ],
    );
    assert_eq!(
        seen,
        [Some(0), Some(cycle), None, Some(0), Some(cycle - 10)]
    );
    let mut plain = FixedWindow::new(&FixedWindowConfig {
        limit: 1,
        window: SimDuration::from_nanos(cycle),
        wait_max: SimDuration::ZERO,
    })
    .unwrap();
    assert!(plain.acquire(SimTime::from_nanos(cycle), cost(1)).allowed());
    let refused = plain.acquire(SimTime::from_nanos(2 * cycle - 1), cost(1));
    assert_eq!(refused.retry_after, Some(SimDuration::from_nanos(1)));
}
