//! Concurrency limits: how each algorithm moves its limit, through one `check` helper.

use patterns::concurrency::{
    AimdConfig, ConcurrencyConfig, ConcurrencyLimiter, EnvoyGradientConfig, Gradient2Config,
    VegasConfig, log10_root,
};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use sim_core::{Seed, SimDuration, SimTime};

/// One sample: the call's RTT in ms, the calls in flight when it started, and whether it was
/// dropped.
type Step = (u64, u32, bool);

/// Feeds samples one after another (each `inflight` calls started together, the last one
/// reporting after `rtt`, the others ignored) and returns the limit after each.
fn check(config: ConcurrencyConfig, steps: &[Step]) -> Vec<u32> {
    let mut limiter = ConcurrencyLimiter::new(&config).unwrap();
    let mut rng = Seed(11).stream("concurrency");
    let mut now = SimTime::ZERO;
    let mut limits = Vec::new();
    for &(rtt_ms, inflight, dropped) in steps {
        let mut tokens = Vec::new();
        for _ in 0..inflight {
            if let Ok(t) = limiter.try_acquire(now) {
                tokens.push(t);
            }
        }
        assert!(limiter.inflight() <= limiter.limit());
        now += SimDuration::from_millis(rtt_ms);
        let last = tokens.pop().expect("at least one call admitted");
        for t in tokens {
            limiter.on_ignored(now, t);
        }
        if dropped {
            limiter.on_dropped(now, last, &mut rng);
        } else {
            limiter.on_success(now, last, &mut rng);
        }
        assert_eq!(limiter.inflight(), 0);
        limits.push(limiter.limit());
    }
    limits
}

#[test]
fn fixed_never_moves_and_refuses_past_its_limit() {
    let mut l = ConcurrencyLimiter::new(&ConcurrencyConfig::Fixed { limit: 2 }).unwrap();
    let _a = l.try_acquire(SimTime::ZERO).unwrap();
    let _b = l.try_acquire(SimTime::ZERO).unwrap();
    let e = l.try_acquire(SimTime::ZERO).unwrap_err();
    assert_eq!((e.limit, e.inflight), (2, 2));
    assert_eq!(
        check(ConcurrencyConfig::Fixed { limit: 5 }, &[(10, 5, true)]),
        [5]
    );
}

#[test]
fn aimd_adds_one_when_busy_and_backs_off_on_drops_and_timeouts() {
    let config = ConcurrencyConfig::Aimd(AimdConfig::default());
    let limits = check(
        config,
        &[
            (10, 10, false), // 10 × 2 ≥ 20: +1
            (10, 10, false), // 20 ≥ 21? no: stays
            (10, 11, false), // +1
            (10, 11, true),  // ⌊22 × 0.9⌋ = 19, floored at min 20
            (10, 20, false),
            (6000, 20, false), // slower than the 5s timeout: a drop
        ],
    );
    assert_eq!(limits, [21, 21, 22, 20, 21, 20]);
}

#[test]
fn vegas_grows_fast_without_queueing_and_shrinks_when_rtt_rises() {
    let config = ConcurrencyConfig::Vegas(VegasConfig::default());
    // First sample sets the no-load RTT; then no queue: + 6 × log10_root each; then RTT
    // doubles: queue ≈ limit / 2 > 6 × log10_root: − log10_root.
    let mut steps = vec![(10, 20, false)];
    steps.extend([(10, 20, false); 3]);
    steps.extend([(20, 30, false); 2]);
    steps.push((20, 30, true));
    let limits = check(config, &steps);
    assert_eq!(limits, [20, 26, 32, 38, 37, 36, 35]);
    // Netflix's own cases for `Log10RootIntFunction`: 0 → 1, 100 → 2, 10000 → 4; and the
    // edges of the old lookup table, which the fixed function continues past 1000.
    assert_eq!(
        [0, 99, 100, 999, 1000, 2500, 10_000].map(log10_root),
        [1, 1, 2, 2, 3, 3, 4]
    );
}

#[test]
fn gradient2_grows_by_the_queue_allowance_and_shrinks_with_latency() {
    let config = ConcurrencyConfig::Gradient2(Gradient2Config::default());
    // Steady 10ms with the limit in use: gradient 1, so limit → 0.8·L + 0.2·(L + 4) = L + 0.8.
    let steady = check(config.clone(), &[(10, 20, false); 5]);
    assert_eq!(steady, [20, 21, 22, 23, 24]);
    // Then 10 samples at 100ms: the short RTT is well above the long average, so the gradient
    // falls to its 0.5 floor and the limit shrinks toward the minimum.
    let mut steps = vec![(10, 20, false); 20];
    steps.extend([(100, 20, false); 10]);
    let limits = check(config, &steps);
    assert!(limits[19] > 30, "{limits:?}");
    assert!(limits[29] < limits[19], "{limits:?}");
    assert!(limits.iter().all(|&l| (20..=200).contains(&l)));
}

#[test]
fn envoy_measures_min_rtt_at_min_concurrency_then_adjusts_per_window() {
    let config = EnvoyGradientConfig {
        min_rtt_calc_request_count: 5,
        ..EnvoyGradientConfig::default()
    };
    let mut l = ConcurrencyLimiter::new(&ConcurrencyConfig::EnvoyGradient(config)).unwrap();
    let mut rng = Seed(1).stream("envoy");
    let ms = SimTime::from_millis;
    assert_eq!(l.limit(), 3);
    // minRTT: 5 samples of 10ms, one at a time.
    for i in 0..5 {
        let t = l.try_acquire(ms(i * 10)).unwrap();
        l.on_success(ms(i * 10 + 10), t, &mut rng);
    }
    // Normal from 50ms at the previous limit (3). A window of 10ms samples: gradient
    // = 12.5 / 10 = 1.25, limit = 3.75 + √3.75 = 5.68 → 5.
    let t = l.try_acquire(ms(60)).unwrap();
    l.on_success(ms(70), t, &mut rng);
    l.advance(ms(150));
    assert_eq!(l.limit(), 5);
    // A window of 50ms samples: gradient floors at 0.5: 2.5 + 1.58 = 4.08 → 4.
    let t = l.try_acquire(ms(160)).unwrap();
    l.on_success(ms(210), t, &mut rng);
    l.advance(ms(260));
    assert_eq!(l.limit(), 4);
}

#[test]
fn configs_name_their_field() {
    let e = ConcurrencyConfig::Aimd(AimdConfig {
        backoff_ratio: 1.0,
        ..AimdConfig::default()
    })
    .validate()
    .unwrap_err();
    assert_eq!(e.to_string(), "backoff_ratio: must be in [0.5, 1), got 1");
    let e = ConcurrencyConfig::Gradient2(Gradient2Config {
        initial_limit: 500,
        ..Gradient2Config::default()
    })
    .validate()
    .unwrap_err();
    assert_eq!(e.field, "initial_limit");
    let c: ConcurrencyConfig =
        ron::from_str(r#"(kind: "vegas", max_limit: 50)"#).expect("vegas config");
    assert_eq!(
        c,
        ConcurrencyConfig::Vegas(VegasConfig {
            max_limit: 50,
            ..VegasConfig::default()
        })
    );
}

fn any_config() -> impl Strategy<Value = ConcurrencyConfig> {
    prop_oneof![
        (0u32..5).prop_map(|limit| ConcurrencyConfig::Fixed { limit }),
        (0u32..40, 0u32..40, 0u32..60, 0.3f64..1.1).prop_map(|(a, b, c, r)| {
            ConcurrencyConfig::Aimd(AimdConfig {
                initial_limit: b,
                min_limit: a,
                max_limit: c,
                backoff_ratio: r,
                ..AimdConfig::default()
            })
        }),
        (0u32..40, 0u32..2000, 0.0f64..1.5, 0u32..40).prop_map(|(i, m, s, p)| {
            ConcurrencyConfig::Vegas(VegasConfig {
                initial_limit: i,
                max_limit: m,
                smoothing_ratio: s,
                probe_multiplier: p,
            })
        }),
        (0u32..40, 0u32..40, 0u32..300, 0.0f64..1.5, 0u32..5).prop_map(|(a, b, c, s, w)| {
            ConcurrencyConfig::Gradient2(Gradient2Config {
                initial_limit: b,
                min_limit: a,
                max_limit: c,
                smoothing_ratio: s,
                long_window: w,
                ..Gradient2Config::default()
            })
        }),
        (0u32..6, 0u32..20, -10.0f64..120.0).prop_map(|(m, n, p)| {
            ConcurrencyConfig::EnvoyGradient(EnvoyGradientConfig {
                min_concurrency: m,
                min_rtt_calc_request_count: n,
                sample_aggregate_percentile: p,
                ..EnvoyGradientConfig::default()
            })
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/admission_concurrency.txt",
        ))),
        ..ProptestConfig::default()
    })]

    /// Any config is refused with a field or runs any call sequence without panicking, never
    /// admitting past its limit.
    #[test]
    fn limiters_never_admit_past_the_limit(
        config in any_config(),
        ops in proptest::collection::vec((0u64..300_000_000, 0u8..4, any::<usize>()), 1..200),
    ) {
        let mut l = match ConcurrencyLimiter::new(&config) {
            Err(e) => {
                prop_assert!(!e.field.is_empty() && !e.reason.ends_with('.'));
                return Ok(());
            }
            Ok(l) => l,
        };
        let mut rng = Seed(5).stream("ops");
        let mut now = SimTime::ZERO;
        let mut tokens = Vec::new();
        for (gap, op, pick) in ops {
            now += SimDuration::from_nanos(gap);
            match op {
                0 | 1 => {
                    let limit = l.limit();
                    let before = l.inflight();
                    match l.try_acquire(now) {
                        Ok(t) => { prop_assert!(before < l.limit().max(limit)); tokens.push(t) }
                        Err(r) => prop_assert!(r.inflight >= r.limit),
                    }
                }
                _ if !tokens.is_empty() => {
                    let t = tokens.swap_remove(pick % tokens.len());
                    match pick % 3 {
                        0 => l.on_success(now, t, &mut rng),
                        1 => l.on_dropped(now, t, &mut rng),
                        _ => l.on_ignored(now, t),
                    }
                }
                _ => l.advance(now),
            }
            prop_assert_eq!(l.inflight() as usize, tokens.len());
            prop_assert!(l.limit() >= 1);
        }
    }
}
