//! Backoff and jitter: every delay within its formula's bounds, the cap respected, and the
//! first delays of each strategy pinned at a fixed seed.

use patterns::backoff::{Backoff, BackoffConfig, Jitter, Strategy as Growth};
use proptest::prelude::*;
use sim_core::{Seed, SimDuration};

/// The strategy's value for retry `n`, computed naively (the reference for the machine).
fn reference_value(strategy: &Growth, n: u32) -> SimDuration {
    match strategy {
        Growth::Constant { delay } => *delay,
        Growth::Linear {
            delay_initial,
            step,
            delay_max,
        } => {
            let nanos = delay_initial.as_nanos() as u128 + step.as_nanos() as u128 * n as u128;
            SimDuration::from_nanos(nanos.min(delay_max.as_nanos() as u128) as u64)
        }
        Growth::Exponential {
            delay_initial,
            multiplier,
            delay_max,
        } => {
            let mut v = delay_initial.as_nanos() as f64;
            for _ in 0..n {
                v *= multiplier;
                if v >= delay_max.as_nanos() as f64 {
                    return *delay_max;
                }
            }
            SimDuration::from_nanos_f64(v).min(*delay_max)
        }
    }
}

/// Draws `count` delays at `seed` and checks each against its formula's bounds; returns them.
fn check(config: &BackoffConfig, seed: u64, count: u32) -> Vec<SimDuration> {
    let backoff = Backoff::new(config.clone()).expect("valid config");
    let mut state = backoff.start();
    let mut rng = Seed(seed).stream("backoff");
    let cap = config.strategy.delay_cap();
    let base = config.strategy.delay_base();
    let mut previous = base;
    let mut delays = Vec::new();
    for n in 0..count {
        let v = reference_value(&config.strategy, n);
        // The exponential reference multiplies step by step, the machine uses pow: allow the
        // last nanosecond of rounding between the two, never above the cap.
        let slack = SimDuration::from_nanos(2);
        assert!(v <= cap, "reference value above cap");
        let unjittered = backoff.delay_unjittered(n);
        assert!(
            unjittered <= cap,
            "strategy value {unjittered} above cap {cap}"
        );
        assert!(
            unjittered.as_nanos().abs_diff(v.as_nanos()) <= slack.as_nanos(),
            "retry {n}: strategy value {unjittered}, reference {v}"
        );
        let d = backoff.next(&mut state, &mut rng);
        let (low, high) = match &config.jitter {
            Jitter::None => (unjittered, unjittered),
            Jitter::Full => (SimDuration::ZERO, unjittered),
            Jitter::Equal => (unjittered / 2, unjittered),
            Jitter::Decorrelated => (base, previous.saturating_mul(3).max(base).min(cap)),
            Jitter::Proportional { spread_percent } => {
                let s = spread_percent / 100.0;
                (unjittered.mul_f64(1.0 - s), unjittered.mul_f64(1.0 + s))
            }
        };
        assert!(
            low <= d && d <= high,
            "{config:?} retry {n}: delay {d} outside [{low}, {high}]"
        );
        if !matches!(config.jitter, Jitter::Proportional { .. }) {
            assert!(d <= cap, "{config:?} retry {n}: delay {d} above cap {cap}");
        }
        previous = d;
        delays.push(d);
    }
    delays
}

fn strategies() -> Vec<Growth> {
    vec![
        Growth::Constant {
            delay: SimDuration::from_millis(200),
        },
        Growth::Linear {
            delay_initial: SimDuration::from_millis(100),
            step: SimDuration::from_millis(150),
            delay_max: SimDuration::from_secs(1),
        },
        Growth::Exponential {
            delay_initial: SimDuration::from_secs(1),
            multiplier: 1.6,
            delay_max: SimDuration::from_secs(120),
        },
        Growth::Exponential {
            delay_initial: SimDuration::from_millis(100),
            multiplier: 2.0,
            delay_max: SimDuration::from_secs(5),
        },
    ]
}

fn jitters() -> Vec<Jitter> {
    vec![
        Jitter::None,
        Jitter::Full,
        Jitter::Equal,
        Jitter::Decorrelated,
        Jitter::Proportional {
            spread_percent: 20.0,
        },
    ]
}

fn label(strategy: &Growth) -> String {
    match strategy {
        Growth::Constant { delay } => format!("constant {delay}"),
        Growth::Linear {
            delay_initial,
            step,
            delay_max,
        } => format!("linear {delay_initial}+{step}<={delay_max}"),
        Growth::Exponential {
            delay_initial,
            multiplier,
            delay_max,
        } => format!("exp {delay_initial}*{multiplier}<={delay_max}"),
    }
}

fn jitter_label(jitter: &Jitter) -> String {
    match jitter {
        Jitter::None => "none".into(),
        Jitter::Full => "full".into(),
        Jitter::Equal => "equal".into(),
        Jitter::Decorrelated => "decorrelated".into(),
        Jitter::Proportional { spread_percent } => format!("prop {spread_percent}%"),
    }
}

#[test]
fn first_ten_delays_of_each_strategy_are_pinned() {
    let seed = 7;
    let mut text = format!("seed {seed}, stream \"backoff\"; delays in ms, rounded to 1µs\n");
    for strategy in strategies() {
        for jitter in jitters() {
            let config = BackoffConfig {
                strategy: strategy.clone(),
                jitter: jitter.clone(),
            };
            let delays = check(&config, seed, 10);
            let cells: Vec<String> = delays
                .iter()
                .map(|d| format!("{:>10.3}", d.as_nanos() as f64 / 1e6))
                .collect();
            text.push_str(&format!(
                "{:<28}{:<14}{}\n",
                label(&strategy),
                jitter_label(&jitter),
                cells.join("")
            ));
        }
    }
    insta::with_settings!({ description => format!("seed {seed}, stream \"backoff\"") }, {
        insta::assert_snapshot!("backoff__first_delays", text);
    });
}

#[test]
fn defaults_are_grpc_connection_backoff() {
    let config = BackoffConfig::default();
    assert_eq!(
        config.strategy,
        Growth::Exponential {
            delay_initial: SimDuration::from_secs(1),
            multiplier: 1.6,
            delay_max: SimDuration::from_secs(120),
        }
    );
    assert_eq!(
        config.jitter,
        Jitter::Proportional {
            spread_percent: 20.0
        }
    );
    let parsed: BackoffConfig = ron::from_str(
        "(strategy: Exponential(delay_initial: \"1s\", multiplier: 1.6, delay_max: \"120s\"), \
         jitter: Proportional(spread_percent: 20))",
    )
    .unwrap();
    assert_eq!(parsed, config);
}

#[test]
fn invalid_configs_name_the_field() {
    let cases = [
        (
            "(strategy: Exponential(delay_initial: \"1s\", multiplier: 0.5, delay_max: \"10s\"))",
            "strategy.multiplier",
        ),
        (
            "(strategy: Linear(delay_initial: \"2s\", step: \"1s\", delay_max: \"1s\"))",
            "strategy.delay_max",
        ),
        (
            "(jitter: Proportional(spread_percent: 150))",
            "jitter.spread_percent",
        ),
        ("(strategy: Constant(delay: \"2d\"))", "strategy.delay"),
    ];
    for (text, field) in cases {
        let config: BackoffConfig = ron::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let err = Backoff::new(config).unwrap_err();
        assert_eq!(err.field, field, "{text}: {err}");
    }
    assert!(ron::from_str::<BackoffConfig>("(jiter: Full)").is_err());
}

fn any_strategy() -> impl Strategy<Value = Growth> {
    prop_oneof![
        (0u64..10_000_000_000).prop_map(|d| Growth::Constant {
            delay: SimDuration::from_nanos(d)
        }),
        (
            0u64..1_000_000_000,
            0u64..2_000_000_000,
            0u64..60_000_000_000
        )
            .prop_map(|(i, s, m)| {
                Growth::Linear {
                    delay_initial: SimDuration::from_nanos(i),
                    step: SimDuration::from_nanos(s),
                    delay_max: SimDuration::from_nanos(i.max(m)),
                }
            }),
        (0u64..2_000_000_000, 1.0f64..10.0, 0u64..3_600_000_000_000).prop_map(|(i, k, m)| {
            Growth::Exponential {
                delay_initial: SimDuration::from_nanos(i),
                multiplier: k,
                delay_max: SimDuration::from_nanos(i.max(m)),
            }
        }),
    ]
}

fn any_jitter() -> impl Strategy<Value = Jitter> {
    prop_oneof![
        Just(Jitter::None),
        Just(Jitter::Full),
        Just(Jitter::Equal),
        Just(Jitter::Decorrelated),
        (0.0f64..=100.0).prop_map(|s| Jitter::Proportional { spread_percent: s }),
    ]
}

/// Proptest settings for this file: failures are kept in `proptest-regressions/`.
fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "proptest-regressions/recovery_backoff.txt",
            ),
        )),
        ..proptest::test_runner::Config::default()
    }
}

proptest! {
    #![proptest_config(proptest_config(256))]

    #[test]
    fn every_delay_stays_within_its_formula(
        strategy in any_strategy(),
        jitter in any_jitter(),
        seed in any::<u64>(),
    ) {
        let config = BackoffConfig { strategy, jitter };
        // Decorrelated jitter from a zero base is rejected by validation, as it should be.
        prop_assume!(config.validate().is_ok());
        check(&config, seed, 40);
    }

    #[test]
    fn exponential_never_exceeds_its_cap_even_after_many_retries(
        initial in 1u64..1_000_000_000,
        multiplier in 1.0f64..100.0,
        cap in 1u64..86_400_000_000_000,
        n in 0u32..u32::MAX,
    ) {
        let cap = SimDuration::from_nanos(initial.max(cap));
        let backoff = Backoff::new(BackoffConfig {
            strategy: Growth::Exponential {
                delay_initial: SimDuration::from_nanos(initial),
                multiplier,
                delay_max: cap,
            },
            jitter: Jitter::None,
        }).unwrap();
        prop_assert!(backoff.delay_unjittered(n) <= cap);
    }
}
