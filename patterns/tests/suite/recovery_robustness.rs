//! The recovery patterns on arbitrary input: every config is refused with a named field or
//! builds a machine that no call sequence panics, whatever the values (zero, NaN, the end of
//! time) and whatever the clock does (jumps, goes back).

use patterns::ConfigError;
use patterns::backoff::{Backoff, BackoffConfig, Jitter, Strategy as Growth};
use patterns::budget::{
    AttemptResult, BudgetConfig, ConcurrencyBudgetConfig, RetryBreakerConfig, RetryBudget,
    ThrottlingConfig, TpsConfig, WindowBudgetConfig,
};
use patterns::coalesce::{CoalesceConfig, Coalescer};
use patterns::fallback::{Fallback, FallbackConfig, PrimaryFailure};
use patterns::hedge::{HedgeAction, HedgeConfig, HedgeDelay, Hedger};
use patterns::idempotency::{IdempotencyConfig, IdempotencyStore, InFlightPolicy};
use patterns::retry::Safety;
use patterns::timeout::{
    AdaptiveTimeout, AdaptiveTimeoutConfig, Deadline, Propagation, TimeoutConfig, Timeouts,
};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use sim_core::{Seed, SimDuration, SimTime};

/// Nanoseconds: small, ordinary, and the very end of time.
fn nanos() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => 0u64..10_000_000_000,
        1 => Just(0u64),
        1 => Just(u64::MAX),
        1 => any::<u64>(),
    ]
}

/// Floats users could write, and the ones they should not.
fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => -10.0f64..200.0,
        1 => Just(0.0),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::MAX),
    ]
}

fn duration() -> impl Strategy<Value = SimDuration> {
    nanos().prop_map(SimDuration::from_nanos)
}

/// Call times: mostly forward, sometimes anywhere (back in time, or at its end).
fn times() -> impl Strategy<Value = Vec<SimTime>> {
    proptest::collection::vec(nanos(), 1..60).prop_map(|v| {
        v.into_iter()
            .scan(0u64, |t, n| {
                *t = if n % 4 == 0 {
                    n
                } else {
                    t.saturating_add(n % 1_000_000_000)
                };
                Some(SimTime::from_nanos(*t))
            })
            .collect()
    })
}

/// A refusal names a field and reads as the style asks: lowercase, no trailing period.
fn refused(e: &ConfigError, fields: &[&str]) -> Result<(), TestCaseError> {
    prop_assert!(
        fields.iter().any(|f| e.field.ends_with(f)),
        "unexpected field in {}",
        e
    );
    prop_assert!(
        !e.reason.starts_with(char::is_uppercase) && !e.reason.ends_with('.'),
        "{}",
        e
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/recovery_robustness.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn backoff_configs_are_refused_with_a_field_or_never_panic(
        kind in 0usize..3, jitter in 0usize..5,
        a in duration(), b in duration(), c in duration(), k in float(),
        retries in 0usize..200,
    ) {
        let strategy = match kind {
            0 => Growth::Constant { delay: a },
            1 => Growth::Linear { delay_initial: a, step: b, delay_max: c },
            _ => Growth::Exponential { delay_initial: a, multiplier: k, delay_max: c },
        };
        let jitter = [
            Jitter::None,
            Jitter::Full,
            Jitter::Equal,
            Jitter::Decorrelated,
            Jitter::Proportional { spread_percent: k },
        ][jitter].clone();
        match Backoff::new(BackoffConfig { strategy, jitter }) {
            Err(e) => refused(&e, &["delay", "delay_initial", "step", "delay_max", "multiplier", "jitter", "spread_percent"])?,
            Ok(backoff) => {
                let mut state = backoff.start();
                let mut rng = Seed(1).stream("backoff");
                for _ in 0..retries {
                    let _ = backoff.next(&mut state, &mut rng);
                }
            }
        }
    }

    #[test]
    fn budget_configs_are_refused_with_a_field_or_never_panic(
        kind in 0usize..5, x in float(), n in prop_oneof![Just(0u32), 1u32..2000, Just(u32::MAX)],
        span in duration(),
        at in times(), ops in proptest::collection::vec(0u8..6, 60),
    ) {
        let config = match kind {
            0 => BudgetConfig::Throttling(ThrottlingConfig { max_tokens: n, token_ratio: x }),
            1 => BudgetConfig::Window(WindowBudgetConfig { budget_percent: x, window: span, min_retries_per_window: n }),
            2 => BudgetConfig::Concurrency(ConcurrencyBudgetConfig { budget_percent: x, min_retry_concurrency: n }),
            3 => BudgetConfig::Tps(TpsConfig { ttl: span, min_per_sec: n, retry_ratio: x }),
            _ => BudgetConfig::RetryBreaker(RetryBreakerConfig { failure_rate_threshold: x, window: span, minimum_number_of_calls: n }),
        };
        match RetryBudget::new(&config) {
            Err(e) => refused(&e, &["max_tokens", "token_ratio", "budget_percent", "window", "ttl", "retry_ratio", "failure_rate_threshold", "minimum_number_of_calls"])?,
            Ok(mut budget) => {
                for (now, op) in at.into_iter().zip(ops) {
                    match op {
                        0 => budget.on_request(now),
                        1 => { let _ = budget.try_retry(now); }
                        2 => budget.on_attempt_end(now, AttemptResult::Success, false),
                        3 => budget.on_attempt_end(now, AttemptResult::RetryableFailure, true),
                        4 => budget.on_attempt_end(now, AttemptResult::OtherFailure, true),
                        _ => budget.on_request_end(now),
                    }
                }
            }
        }
    }

    #[test]
    fn timeouts_are_refused_with_a_field_or_never_hand_down_a_later_deadline(
        attempt in duration(), reserve in duration(), own in duration(),
        now in nanos(), parent in proptest::option::of(nanos()),
    ) {
        match Timeouts::new(TimeoutConfig { attempt_timeout: attempt, deadline_reserve: reserve }) {
            Err(e) => refused(&e, &["attempt_timeout", "deadline_reserve"])?,
            Ok(t) => {
                let now = SimTime::from_nanos(now);
                let parent = parent.map(|p| Deadline(SimTime::from_nanos(p)));
                for p in [t.propagate(now, parent), t.propagate_with(now, parent, own)] {
                    if let (Propagation::Call { deadline, .. }, Some(parent)) = (p, parent) {
                        prop_assert!(deadline <= parent);
                    }
                }
            }
        }
    }

    #[test]
    fn adaptive_timeouts_are_refused_with_a_field_or_stay_in_bounds(
        percentile in prop_oneof![1 => float(), 3 => 1.0f64..=100.0],
        multiplier in prop_oneof![1 => float(), 3 => 1.0f64..=100.0],
        three in [duration(), duration(), duration()], ordered in proptest::bool::weighted(0.8),
        window in prop_oneof![1 => Just(0u32), 4 => 1u32..50, 1 => Just(u32::MAX)],
        min_samples in prop_oneof![1 => Just(0u32), 4 => 1u32..10],
        latencies in proptest::collection::vec(duration(), 0..80),
    ) {
        // Mostly floor ≤ initial ≤ ceiling, so that the machine gets to run.
        let mut three = three;
        if ordered {
            three.sort();
            three.swap(1, 2);
        }
        let [floor, ceiling, initial] = three;
        let config = AdaptiveTimeoutConfig { percentile, multiplier, floor, ceiling, initial, window, min_samples };
        match AdaptiveTimeout::new(config.clone()) {
            Err(e) => refused(&e, &["percentile", "multiplier", "floor", "ceiling", "initial", "window", "min_samples"])?,
            Ok(mut t) => for l in latencies {
                t.observe(l);
                prop_assert!(config.floor <= t.timeout() && t.timeout() <= config.ceiling);
            },
        }
    }

    #[test]
    fn hedging_configs_are_refused_with_a_field_or_never_panic(
        fixed in any::<bool>(), delay in duration(), percentile in float(),
        window in prop_oneof![Just(0u32), 1u32..50, Just(u32::MAX)],
        min_samples in prop_oneof![Just(0u32), 1u32..50], hedges in prop_oneof![0u32..12, Just(u32::MAX)],
        at in times(), events in proptest::collection::vec((0u8..3, 0u32..12, any::<bool>()), 60),
    ) {
        let config = HedgeConfig {
            delay: if fixed {
                HedgeDelay::Fixed { delay }
            } else {
                HedgeDelay::Percentile { percentile, window, min_samples, initial: delay }
            },
            max_hedged_attempts: hedges,
        };
        match Hedger::new(config) {
            Err(e) => refused(&e, &["max_hedged_attempts", "percentile", "window", "min_samples"])?,
            Ok(mut hedger) => {
                let mut budget = RetryBudget::unlimited();
                let mut request = None;
                for (now, (event, attempt, ok)) in at.into_iter().zip(events) {
                    match (event, request.as_mut()) {
                        (0, _) | (_, None) => {
                            request = Some(hedger.begin(now, Safety::Idempotent, &mut budget).0);
                        }
                        (1, Some(r)) => { let _ = r.on_timer(now, &hedger, &mut budget); }
                        (_, Some(r)) => {
                            if let HedgeAction::Send { attempt, .. } = r.on_response(now, attempt, ok, &mut hedger, &mut budget) {
                                prop_assert!(attempt <= hedges);
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn stores_and_chains_are_refused_with_a_field_or_never_panic(
        ttl in duration(), capacity in prop_oneof![Just(0u32), 1u32..4], waiters in prop_oneof![Just(0u32), 1u32..3],
        wait in any::<bool>(), cache_age_max in duration(), use_cache in any::<bool>(),
        at in times(), calls in proptest::collection::vec((0u8..4, 0u8..5, 0u64..3, proptest::option::of(nanos())), 60),
    ) {
        let idempotency = IdempotencyStore::<u8, u64>::new(IdempotencyConfig {
            ttl,
            in_flight: if wait { InFlightPolicy::Wait } else { InFlightPolicy::Conflict },
            capacity,
            max_waiters: waiters,
        });
        let coalescer = Coalescer::<u8>::new(CoalesceConfig { max_keys: capacity, max_waiters: waiters });
        let fallback = Fallback::new(FallbackConfig { use_cache, cache_age_max, use_static: wait });
        let (mut store, mut coalescer, fallback) = match (idempotency, coalescer, fallback) {
            (Ok(s), Ok(c), Ok(f)) => (s, c, f),
            (s, c, f) => {
                for e in [s.err(), c.err(), f.err()].into_iter().flatten() {
                    refused(&e, &["ttl", "capacity", "max_waiters", "max_keys", "cache_age_max"])?;
                }
                return Ok(());
            }
        };
        for (now, (call, key, fingerprint, cached_at)) in at.into_iter().zip(calls) {
            match call {
                0 => { let _ = store.begin(now, &key, fingerprint); let _ = coalescer.join(now, &key); }
                1 => { let _ = store.complete(now, &key, fingerprint); let _ = coalescer.complete(now, &key); }
                2 => { let _ = store.abort(now, &key); }
                _ => {
                    let primary = if fingerprint == 0 { Ok(()) } else { Err(PrimaryFailure::Timeout) };
                    let r = fallback.decide(now, primary, cached_at.map(SimTime::from_nanos));
                    prop_assert_eq!(r.is_degraded(), primary.is_err());
                }
            }
            prop_assert!(store.len() <= capacity as usize && coalescer.len() <= capacity as usize);
        }
    }
}
