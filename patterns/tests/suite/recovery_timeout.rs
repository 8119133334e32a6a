//! Timeouts and deadlines: propagation down a call chain, and the adaptive timeout.

use patterns::timeout::{
    AdaptiveTimeout, AdaptiveTimeoutConfig, Deadline, LatencyWindow, Propagation, SkipReason,
    TimeoutConfig, Timeouts,
};
use proptest::prelude::*;
use sim_core::{SimDuration, SimTime};

const MS: SimDuration = SimDuration::from_millis(1);

/// Hands a deadline down a chain of callees, each with its own timeout and reserve, each
/// starting `hop` after its caller; returns what each level got.
fn check(
    start: SimTime,
    root: Option<Deadline>,
    levels: &[(SimDuration, SimDuration)],
    hop: SimDuration,
) -> Vec<Propagation> {
    let mut now = start;
    let mut parent = root;
    let mut out = Vec::new();
    for (timeout, reserve) in levels {
        let t = Timeouts::new(TimeoutConfig {
            attempt_timeout: *timeout,
            deadline_reserve: *reserve,
        })
        .expect("valid timeouts");
        let p = t.propagate(now, parent);
        out.push(p);
        match p {
            Propagation::Call {
                timeout: got,
                deadline,
            } => {
                assert!(
                    got <= *timeout,
                    "a callee never gets more than its own timeout"
                );
                assert_eq!(deadline, Deadline::after(now, got));
                if let Some(parent) = parent {
                    assert!(
                        deadline <= parent,
                        "child {deadline:?} after parent {parent:?}"
                    );
                    assert!(
                        deadline.at().saturating_add(*reserve) <= parent.at(),
                        "the reserve is kept"
                    );
                }
                parent = Some(deadline);
            }
            Propagation::Skip { .. } => break,
        }
        now = now.saturating_add(hop);
    }
    out
}

#[test]
fn a_callee_gets_its_own_timeout_or_what_is_left_minus_the_reserve() {
    let got = check(
        SimTime::ZERO,
        Some(Deadline(SimTime::from_millis(500))),
        &[
            (MS * 1000, MS * 50),
            (MS * 100, MS * 10),
            (MS * 200, MS * 60),
        ],
        MS * 20,
    );
    assert_eq!(
        got,
        vec![
            // min(1s, 500ms - 50ms)
            Propagation::Call {
                timeout: MS * 450,
                deadline: Deadline(SimTime::from_millis(450)),
            },
            // own 100ms is shorter than 430ms - 10ms
            Propagation::Call {
                timeout: MS * 100,
                deadline: Deadline(SimTime::from_millis(120)),
            },
            // at 40ms: 80ms left, minus 60ms reserve
            Propagation::Call {
                timeout: MS * 20,
                deadline: Deadline(SimTime::from_millis(60)),
            },
        ]
    );
}

#[test]
fn no_call_is_made_without_time_beyond_the_reserve() {
    let got = check(
        SimTime::from_millis(100),
        Some(Deadline(SimTime::from_millis(130))),
        &[(MS * 1000, MS * 30)],
        MS,
    );
    assert_eq!(
        got,
        vec![Propagation::Skip {
            reason: SkipReason::ReserveExhausted {
                remaining: MS * 30,
                reserve: MS * 30
            }
        }]
    );
    let got = check(
        SimTime::from_millis(200),
        Some(Deadline(SimTime::from_millis(130))),
        &[(MS * 1000, MS)],
        MS,
    );
    assert_eq!(
        got,
        vec![Propagation::Skip {
            reason: SkipReason::DeadlineExpired
        }]
    );
    // Without a parent deadline, the callee's own timeout rules.
    let got = check(SimTime::ZERO, None, &[(MS * 300, MS * 30)], MS);
    assert!(matches!(got[0], Propagation::Call { timeout, .. } if timeout == MS * 300));
}

/// Proptest settings for this file: failures are kept in `proptest-regressions/`.
fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "proptest-regressions/recovery_timeout.txt",
            ),
        )),
        ..proptest::test_runner::Config::default()
    }
}

proptest! {
    #![proptest_config(proptest_config(256))]

    #[test]
    fn no_child_deadline_exceeds_its_parents(
        start in 0u64..1_000_000_000_000,
        root in proptest::option::of(0u64..2_000_000_000_000),
        levels in prop::collection::vec((1u64..5_000_000_000, 0u64..500_000_000), 1..8),
        hop in 0u64..100_000_000,
    ) {
        // A reserve of 1000 timeouts or more is refused as a unit mistake (see
        // `TimeoutConfig::validate`): keep each generated reserve below that.
        let levels: Vec<(SimDuration, SimDuration)> = levels
            .into_iter()
            .map(|(t, r)| (SimDuration::from_nanos(t), SimDuration::from_nanos(r % (t * 1000))))
            .collect();
        check(
            SimTime::from_nanos(start),
            root.map(|r| Deadline(SimTime::from_nanos(r))),
            &levels,
            SimDuration::from_nanos(hop),
        );
    }

    #[test]
    fn latency_window_percentile_matches_sorting_the_last_values(
        values in prop::collection::vec(0u64..1_000_000, 1..400),
        capacity in 1usize..64,
        percentile in 0.1f64..=100.0,
    ) {
        let mut w = LatencyWindow::new(capacity);
        for (i, v) in values.iter().enumerate() {
            w.observe(SimDuration::from_nanos(*v));
            let from = (i + 1).saturating_sub(capacity);
            let mut last: Vec<u64> = values[from..=i].to_vec();
            last.sort_unstable();
            let rank = (percentile / 100.0 * last.len() as f64).ceil() as usize;
            let expected = last[rank.clamp(1, last.len()) - 1];
            prop_assert_eq!(w.percentile(percentile), Some(SimDuration::from_nanos(expected)));
        }
    }

    #[test]
    fn adaptive_timeout_stays_within_floor_and_ceiling(
        values in prop::collection::vec(0u64..100_000_000_000, 1..300),
    ) {
        let config = AdaptiveTimeoutConfig::default();
        let mut t = AdaptiveTimeout::new(config.clone()).unwrap();
        for v in values {
            t.observe(SimDuration::from_nanos(v));
            prop_assert!(config.floor <= t.timeout() && t.timeout() <= config.ceiling);
        }
    }
}

#[test]
fn adaptive_timeout_follows_the_percentile_after_warming_up() {
    let config = AdaptiveTimeoutConfig {
        percentile: 90.0,
        multiplier: 2.0,
        window: 100,
        min_samples: 10,
        ..AdaptiveTimeoutConfig::default()
    };
    let mut t = AdaptiveTimeout::new(config).unwrap();
    for ms in 1..=9 {
        t.observe(MS * ms * 10);
        assert_eq!(t.timeout(), SimDuration::from_secs(1), "still warming up");
    }
    t.observe(MS * 100);
    // Ten values 10..100ms: p90 is 90ms, times 2.
    assert_eq!(t.timeout(), MS * 180);
    // A slow dependency drives it up to the ceiling, a fast one down to the floor.
    for _ in 0..100 {
        t.observe(SimDuration::from_secs(60));
    }
    assert_eq!(t.timeout(), SimDuration::from_secs(10));
    for _ in 0..100 {
        t.observe(SimDuration::from_micros(10));
    }
    assert_eq!(t.timeout(), MS * 10);
}

#[test]
fn invalid_timeouts_name_the_field() {
    let err = Timeouts::new(TimeoutConfig {
        attempt_timeout: SimDuration::ZERO,
        ..TimeoutConfig::default()
    })
    .unwrap_err();
    assert_eq!(err.field, "attempt_timeout");
    for (text, field) in [
        ("(percentile: 0)", "percentile"),
        ("(floor: \"2s\", ceiling: \"1s\")", "ceiling"),
        ("(initial: \"1ms\")", "initial"),
        ("(window: 10, min_samples: 11)", "min_samples"),
    ] {
        let config: AdaptiveTimeoutConfig = ron::from_str(text).unwrap();
        assert_eq!(
            AdaptiveTimeout::new(config).unwrap_err().field,
            field,
            "{text}"
        );
    }
    assert!(ron::from_str::<TimeoutConfig>("(timeout: \"1s\")").is_err());
}
