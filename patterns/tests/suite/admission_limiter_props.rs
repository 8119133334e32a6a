//! Rate limiters against naive reference models, adversarial arrivals, and arbitrary input.

use patterns::limiter::{
    BucketConfig, Composite, CompositeConfig, Cost, FixedWindow, Gcra, Keyed, KeyedConfig,
    LeakyMeter, LeakyQueueConfig, Limiter, LimiterConfig, RateDecision, RateLimiter, RateOutcome,
    RateRejection, SlidingCounter, SlidingLog, TokenBucket, WhenFull, WindowConfig,
};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use sim_core::{Rate, SimDuration, SimTime};

/// A request: nanoseconds since the previous one (may be "negative": time going backwards),
/// and its cost.
#[derive(Debug, Clone, Copy)]
struct Step {
    gap: i64,
    cost: u64,
}

fn steps(gap_max: i64, cost_max: u64, backwards: bool) -> impl Strategy<Value = Vec<Step>> {
    let gap_min = if backwards { -gap_max } else { 0 };
    proptest::collection::vec(
        (
            prop_oneof![3 => 0..=gap_max, 1 => Just(0), 1 => gap_min..=gap_max],
            1..=cost_max,
        )
            .prop_map(|(gap, cost)| Step { gap, cost }),
        1..160,
    )
}

/// The times the steps arrive at, starting from `start`, clamped at zero.
fn times(start: u64, steps: &[Step]) -> Vec<SimTime> {
    let mut t = start as i128;
    steps
        .iter()
        .map(|s| {
            t = (t + s.gap as i128).max(0);
            SimTime::from_nanos(t as u64)
        })
        .collect()
}

/// Runs `steps` through two limiters and hands each pair of decisions to `compare`.
fn check<A: RateLimiter, B: RateLimiter>(
    mut a: A,
    mut b: B,
    steps: &[Step],
    mut compare: impl FnMut(SimTime, &RateDecision, &RateDecision) -> Result<(), TestCaseError>,
) -> Result<(), TestCaseError> {
    for (t, s) in times(0, steps).into_iter().zip(steps) {
        let cost = Cost::new(s.cost).unwrap();
        let peeked = a.peek(t, cost);
        let da = a.acquire(t, cost);
        prop_assert_eq!(peeked, da, "peek and acquire disagree at {}", t);
        // A cost above what the limiter can ever admit is its own rejection, with nothing
        // to wait for; any other refusal says when to come back.
        let expected = if s.cost > da.limit {
            Some(RateOutcome::Reject(RateRejection::CostAboveCapacity {
                cost: s.cost,
                capacity: da.limit,
            }))
        } else if !da.allowed() {
            Some(RateOutcome::Reject(RateRejection::LimitExceeded))
        } else {
            None
        };
        if let Some(outcome) = expected {
            prop_assert_eq!(da.outcome, outcome, "at {}", t);
            prop_assert_eq!(da.retry_after.is_some(), s.cost <= da.limit, "at {}", t);
        }
        let db = b.acquire(t, cost);
        compare(t, &da, &db)?;
    }
    Ok(())
}

/// The naive reference: every admitted request's time and cost, kept forever.
#[derive(Debug, Clone, Default)]
struct Ledger {
    admitted: Vec<(SimTime, u64)>,
    last: SimTime,
}

impl Ledger {
    fn sum(&self, from_exclusive: Option<SimTime>, to_inclusive: SimTime) -> u64 {
        self.admitted
            .iter()
            .filter(|(t, _)| from_exclusive.is_none_or(|f| *t > f) && *t <= to_inclusive)
            .map(|(_, c)| c)
            .sum()
    }
}

/// Sliding log reference: admit if the units of `(now − W, now]` plus the cost fit.
#[derive(Debug, Clone)]
struct NaiveLog {
    ledger: Ledger,
    limit: u64,
    window: u64,
}

impl RateLimiter for NaiveLog {
    fn peek(&self, now: SimTime, cost: Cost) -> RateDecision {
        let now = now.max(self.ledger.last);
        let since = now
            .as_nanos()
            .checked_sub(self.window)
            .map(SimTime::from_nanos);
        let used = self.ledger.sum(since, now);
        let allowed = used + cost.units() <= self.limit;
        // Retry: the first future instant at which an expiry makes room.
        let retry_after = (!allowed && cost.units() <= self.limit).then(|| {
            let mut candidates: Vec<SimTime> = self
                .ledger
                .admitted
                .iter()
                .map(|(t, _)| *t + SimDuration::from_nanos(self.window))
                .filter(|t| *t > now)
                .collect();
            candidates.sort();
            let at = candidates
                .into_iter()
                .find(|&at| {
                    let from = SimTime::from_nanos(at.as_nanos() - self.window);
                    self.ledger.sum(Some(from), at) + cost.units() <= self.limit
                })
                .expect("everything expires");
            at.duration_since(now)
        });
        let remaining = self.limit - used - if allowed { cost.units() } else { 0 };
        RateDecision {
            outcome: if allowed {
                RateOutcome::Admit
            } else {
                RateOutcome::Reject(RateRejection::LimitExceeded)
            },
            limit: self.limit,
            remaining,
            retry_after,
            reset_at: now,
            delay: SimDuration::ZERO,
        }
    }

    fn acquire(&mut self, now: SimTime, cost: Cost) -> RateDecision {
        let d = self.peek(now, cost);
        self.ledger.last = now.max(self.ledger.last);
        if d.allowed() {
            self.ledger.admitted.push((self.ledger.last, cost.units()));
        }
        d
    }

    fn at_rest(&self, _now: SimTime) -> bool {
        false
    }
}

/// Fixed window reference: units per aligned window index, from the ledger.
#[derive(Debug, Clone)]
struct NaiveFixed {
    ledger: Ledger,
    limit: u64,
    window: u64,
}

impl RateLimiter for NaiveFixed {
    fn peek(&self, now: SimTime, cost: Cost) -> RateDecision {
        let now = now.max(self.ledger.last);
        let k = now.as_nanos() / self.window;
        let used: u64 = self
            .ledger
            .admitted
            .iter()
            .filter(|(t, _)| t.as_nanos() / self.window == k)
            .map(|(_, c)| c)
            .sum();
        let allowed = used + cost.units() <= self.limit;
        let mut d = NaiveLog {
            ledger: Ledger::default(),
            limit: self.limit,
            window: self.window,
        }
        .peek(now, cost);
        d.outcome = if allowed {
            RateOutcome::Admit
        } else {
            RateOutcome::Reject(RateRejection::LimitExceeded)
        };
        d.remaining = self.limit - used - if allowed { cost.units() } else { 0 };
        d
    }

    fn acquire(&mut self, now: SimTime, cost: Cost) -> RateDecision {
        let d = self.peek(now, cost);
        self.ledger.last = now.max(self.ledger.last);
        if d.allowed() {
            self.ledger.admitted.push((self.ledger.last, cost.units()));
        }
        d
    }

    fn at_rest(&self, _now: SimTime) -> bool {
        false
    }
}

/// Sliding counter reference: the two window counts recomputed from the ledger.
#[derive(Debug, Clone)]
struct NaiveCounter {
    ledger: Ledger,
    limit: u64,
    window: u64,
}

impl NaiveCounter {
    fn admits(&self, now: SimTime, cost: u64) -> bool {
        let w = self.window;
        let k = now.as_nanos() / w;
        let count = |index: u64| -> u64 {
            self.ledger
                .admitted
                .iter()
                .filter(|(t, _)| t.as_nanos() / w == index)
                .map(|(_, c)| c)
                .sum()
        };
        let previous = if k == 0 { 0 } else { count(k - 1) };
        let current = count(k);
        let elapsed = now.as_nanos() % w;
        u128::from(previous) * u128::from(w - elapsed) + u128::from(current + cost) * u128::from(w)
            <= u128::from(self.limit) * u128::from(w)
    }
}

fn window_config(limit: u64, window: u64) -> WindowConfig {
    WindowConfig {
        limit,
        window: SimDuration::from_nanos(window),
    }
}

fn bucket(per_second: f64, burst: u64) -> BucketConfig {
    BucketConfig {
        rate: Rate::per_second(per_second),
        burst,
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/admission_limiter_props.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn sliding_log_matches_the_timestamp_list(
        limit in 1u64..12, window in 1u64..2_000, steps in steps(400, 3, true),
    ) {
        let config = window_config(limit, window);
        let model = NaiveLog { ledger: Ledger::default(), limit, window };
        check(SlidingLog::new(&config).unwrap(), model, &steps, |t, a, b| {
            prop_assert_eq!(a.allowed(), b.allowed(), "at {}", t);
            prop_assert_eq!(a.remaining, b.remaining, "at {}", t);
            if a.retry_after.is_some() || b.retry_after.is_some() {
                prop_assert_eq!(a.retry_after, b.retry_after, "at {}", t);
            }
            Ok(())
        })?;
    }

    #[test]
    fn fixed_window_matches_the_per_window_count(
        limit in 1u64..12, window in 1u64..2_000, steps in steps(400, 3, true),
    ) {
        let model = NaiveFixed { ledger: Ledger::default(), limit, window };
        check(FixedWindow::new(&window_config(limit, window).into()).unwrap(), model, &steps, |t, a, b| {
            prop_assert_eq!(a.allowed(), b.allowed(), "at {}", t);
            prop_assert_eq!(a.remaining, b.remaining, "at {}", t);
            Ok(())
        })?;
    }

    #[test]
    fn sliding_counter_matches_the_recomputed_counts(
        limit in 1u64..12, window in 1u64..2_000, steps in steps(400, 3, true),
    ) {
        let mut limiter = SlidingCounter::new(&window_config(limit, window)).unwrap();
        let mut model = NaiveCounter { ledger: Ledger::default(), limit, window };
        for (t, s) in times(0, &steps).into_iter().zip(&steps) {
            let now = t.max(model.ledger.last);
            model.ledger.last = now;
            let expected = s.cost <= limit && model.admits(now, s.cost);
            let d = limiter.acquire(t, Cost::new(s.cost).unwrap());
            prop_assert_eq!(d.allowed(), expected, "at {}", t);
            if expected {
                model.ledger.admitted.push((now, s.cost));
            }
            if let Some(retry) = d.retry_after {
                // Nothing fits before the retry time, and the cost fits at it.
                let at = now + retry;
                prop_assert!(model.admits(at, s.cost), "retry at {} does not fit", at);
                prop_assert!(!model.admits(at - SimDuration::from_nanos(1), s.cost));
            }
        }
    }

    #[test]
    fn token_bucket_and_gcra_admit_the_same_sequences(
        per_second in prop_oneof![1.0f64..1_000.0, 1e3f64..1e7],
        burst in 1u64..20,
        steps in steps(5_000_000, 4, true),
    ) {
        let config = bucket(per_second, burst);
        check(TokenBucket::new(&config).unwrap(), Gcra::new(&config).unwrap(), &steps, |t, a, b| {
            prop_assert_eq!(a, b, "at {}", t);
            Ok(())
        })?;
        check(TokenBucket::new(&config).unwrap(), LeakyMeter::new(&config).unwrap(), &steps, |t, a, b| {
            prop_assert_eq!(a, b, "at {}", t);
            Ok(())
        })?;
    }

    /// The classic boundary burst: `limit` just before a boundary and `limit` on it.
    #[test]
    fn fixed_window_admits_twice_the_limit_across_a_boundary_where_the_log_does_not(
        limit in 1u64..50, window in 2u64..1_000_000, boundary in 1u64..100, early in 1u64..1_000_000,
    ) {
        let early = early % (window - 1) + 1; // in [1, window − 1]
        let edge = boundary * window;
        let arrivals: Vec<SimTime> = (0..limit)
            .map(|_| SimTime::from_nanos(edge - early))
            .chain((0..limit).map(|_| SimTime::from_nanos(edge)))
            .collect();
        let mut fixed = FixedWindow::new(&window_config(limit, window).into()).unwrap();
        let mut log = SlidingLog::new(&window_config(limit, window)).unwrap();
        let fixed_admitted = arrivals.iter().filter(|&&t| fixed.acquire(t, Cost::ONE).allowed()).count();
        let log_admitted = arrivals.iter().filter(|&&t| log.acquire(t, Cost::ONE).allowed()).count();
        // All 2 × limit fall within `early + 1 ≤ window` nanoseconds.
        prop_assert_eq!(fixed_admitted as u64, 2 * limit);
        prop_assert_eq!(log_admitted as u64, limit);
    }

    /// Over arbitrary arrivals: the sliding log never exceeds the limit in any span of one
    /// window, the fixed window never exceeds twice it, the sliding counter stays within its
    /// documented bound `limit + previous × elapsed / window`.
    #[test]
    fn window_limiters_stay_within_their_bounds(
        limit in 1u64..10, window in 10u64..1_000, steps in steps(300, 2, false),
    ) {
        let config = window_config(limit, window);
        let arrivals = times(0, &steps);
        let run = |mut l: Limiter| -> Vec<(SimTime, u64)> {
            arrivals.iter().zip(&steps)
                .filter(|&(&t, s)| l.acquire(t, Cost::new(s.cost).unwrap()).allowed())
                .map(|(&t, s)| (t, s.cost))
                .collect()
        };
        let in_span = |admitted: &[(SimTime, u64)], end: SimTime| -> u64 {
            admitted.iter()
                .filter(|(t, _)| *t <= end && t.as_nanos() + window > end.as_nanos())
                .map(|(_, c)| c)
                .sum()
        };
        let log = run(Limiter::SlidingLog(SlidingLog::new(&config).unwrap()));
        for &(t, _) in &log {
            prop_assert!(in_span(&log, t) <= limit, "sliding log over the limit at {}", t);
        }
        let fixed = run(Limiter::FixedWindow(FixedWindow::new(&config.clone().into()).unwrap()));
        for &(t, _) in &fixed {
            prop_assert!(in_span(&fixed, t) <= 2 * limit, "fixed window over 2x at {}", t);
        }
        let counter = run(Limiter::SlidingCounter(SlidingCounter::new(&config).unwrap()));
        for &(t, _) in &counter {
            let k = t.as_nanos() / window;
            let previous: u64 = counter.iter()
                .filter(|(u, _)| k > 0 && u.as_nanos() / window == k - 1)
                .map(|(_, c)| c)
                .sum();
            let elapsed = t.as_nanos() % window;
            prop_assert!(
                u128::from(in_span(&counter, t)) * u128::from(window)
                    <= u128::from(limit) * u128::from(window) + u128::from(previous) * u128::from(elapsed),
                "sliding counter beyond its bound at {}", t
            );
        }
    }

    /// Forgetting idle keys at rest changes no decision: a capped registry with a short idle
    /// timeout decides exactly like a registry that never forgets.
    #[test]
    fn keyed_registry_forgets_without_changing_decisions(
        which in 0usize..7, keys in proptest::collection::vec(0u8..6, 1..160),
        steps in steps(300_000_000, 2, true), idle_ms in 0u64..500,
    ) {
        // Every kind: a key is forgotten at the later of its idle timeout and the `reset_at`
        // its limiter reported, so each kind's `reset_at` must really be the time it is back
        // at rest (the registry asserts it when it forgets a key).
        let limiter = [
            LimiterConfig::TokenBucket(bucket(10.0, 2)),
            LimiterConfig::SlidingLog(window_config(2, 300_000_000)),
            LimiterConfig::SlidingCounter(window_config(3, 200_000_000)),
            LimiterConfig::FixedWindow(window_config(2, 250_000_000).into()),
            LimiterConfig::LeakyMeter(bucket(8.0, 3)),
            LimiterConfig::LeakyQueue(LeakyQueueConfig { rate: Rate::per_second(6.0), queue_capacity: 3 }),
            LimiterConfig::Gcra(bucket(12.0, 2)),
        ][which].clone();
        let mut keyed = Keyed::new(&KeyedConfig {
            limiter: limiter.clone(),
            max_keys: 6,
            idle_timeout: SimDuration::from_millis(idle_ms),
            when_full: WhenFull::RejectNewKeys,
        }).unwrap();
        let mut small: Vec<Keyed<u8>> = [WhenFull::RejectNewKeys, WhenFull::EvictSoonest]
            .into_iter()
            .map(|when_full| {
                Keyed::new(&KeyedConfig {
                    limiter: limiter.clone(),
                    max_keys: 2,
                    idle_timeout: SimDuration::from_millis(idle_ms),
                    when_full,
                })
                .unwrap()
            })
            .collect();
        let mut all: std::collections::BTreeMap<u8, Limiter> = Default::default();
        let mut latest = SimTime::ZERO;
        for ((t, s), key) in times(0, &steps).into_iter().zip(&steps).zip(keys.iter().cycle()) {
            let cost = Cost::new(s.cost).unwrap();
            // The registry's clock is shared by its keys: an early time for a new key still
            // counts as the latest time the registry has seen.
            latest = latest.max(t);
            let t = latest;
            let got = keyed.acquire(t, key, cost);
            // Small registries under churn keep their cap either way.
            for small in &mut small {
                let d = small.acquire(t, key, cost);
                prop_assert!(small.len() <= 2);
                let refused_key = matches!(d.outcome, RateOutcome::Reject(
                    RateRejection::TooManyKeys { .. }));
                prop_assert!(!refused_key || !small.contains(key));
            }
            let want = all.entry(*key).or_insert_with(|| Limiter::new(&limiter).unwrap()).acquire(t, cost);
            prop_assert_eq!(got, want, "key {} at {}", key, t);
        }
    }

    /// A refusal in one layer leaves every layer as it was.
    #[test]
    fn composite_refusals_charge_nothing(
        steps in steps(200_000_000, 3, true), burst in 1u64..6, limit in 1u64..6,
    ) {
        let mut composite = Composite::new(&CompositeConfig {
            layers: vec![
                LimiterConfig::TokenBucket(bucket(20.0, burst)),
                LimiterConfig::SlidingLog(window_config(limit, 1_000_000_000)),
                LimiterConfig::LeakyQueue(LeakyQueueConfig { rate: Rate::per_second(5.0), queue_capacity: 4 }),
            ],
        }).unwrap();
        for (t, s) in times(0, &steps).into_iter().zip(&steps) {
            let cost = Cost::new(s.cost).unwrap();
            let before: Vec<RateDecision> = composite.layers().iter().map(|l| l.peek(t, cost)).collect();
            let d = composite.acquire(t, cost);
            prop_assert_eq!(d.allowed(), before.iter().all(|b| b.allowed()));
            if !d.allowed() {
                let after: Vec<RateDecision> = composite.layers().iter().map(|l| l.peek(t, cost)).collect();
                prop_assert_eq!(before, after, "a refusal charged a layer at {}", t);
            }
        }
    }

    /// Any config either fails with a named field or builds a limiter that never panics, on
    /// any times (backwards, near the end of time) and any costs.
    #[test]
    fn arbitrary_configs_and_calls_never_panic(
        kind in 0usize..7,
        limit in prop_oneof![Just(0u64), 1u64..10, Just(u64::MAX), any::<u64>()],
        span in prop_oneof![Just(0u64), 1u64..10_000, Just(u64::MAX), any::<u64>()],
        per_second in prop_oneof![Just(0.0f64), 1e-12f64..1.0, 1.0f64..1e10, Just(f64::MAX)],
        calls in proptest::collection::vec(
            (prop_oneof![any::<u64>(), 0u64..10_000, Just(u64::MAX)], prop_oneof![1u64..5, any::<u64>().prop_map(|c| c.max(1))]),
            0..40,
        ),
    ) {
        let w = window_config(limit, span);
        let b = bucket(per_second, limit);
        let config = match kind {
            0 => LimiterConfig::FixedWindow(w.into()),
            1 => LimiterConfig::SlidingLog(w),
            2 => LimiterConfig::SlidingCounter(w),
            3 => LimiterConfig::TokenBucket(b),
            4 => LimiterConfig::LeakyMeter(b),
            5 => LimiterConfig::LeakyQueue(LeakyQueueConfig { rate: b.rate, queue_capacity: limit }),
            _ => LimiterConfig::Gcra(b),
        };
        match Limiter::new(&config) {
            Err(e) => {
                prop_assert!(["limit", "window", "rate", "burst", "queue_capacity"].contains(&e.field.as_str()), "{}", e);
                prop_assert!(!e.reason.starts_with(char::is_uppercase) && !e.reason.ends_with('.'), "{}", e);
            }
            Ok(mut l) => {
                for &(t, c) in &calls {
                    let t = SimTime::from_nanos(t);
                    let d = l.acquire(t, Cost::new(c).unwrap());
                    prop_assert!(d.remaining <= d.limit);
                }
            }
        }
        // The same limiter per key, and stacked with itself: refused with the field's path,
        // or no panic, whatever the cap, the idle timeout and the clock.
        let keyed = Keyed::new(&KeyedConfig {
            limiter: config.clone(),
            max_keys: (span % 3) as usize,
            idle_timeout: SimDuration::from_nanos(span),
            when_full: if limit % 2 == 0 { WhenFull::RejectNewKeys } else { WhenFull::EvictSoonest },
        });
        let composite = Composite::new(&CompositeConfig { layers: vec![config; (limit % 18) as usize] });
        match (keyed, composite) {
            (Ok(mut keyed), Ok(mut composite)) => {
                for (i, &(t, c)) in calls.iter().enumerate() {
                    let t = SimTime::from_nanos(t);
                    let cost = Cost::new(c).unwrap();
                    let peeked = keyed.peek(t, &(i % 4), cost);
                    let d = keyed.acquire(t, &(i % 4), cost);
                    prop_assert!(peeked.allowed() || !d.allowed(), "peek refused what acquire admitted");
                    let d = composite.acquire(t, cost);
                    prop_assert!(d.remaining <= d.limit);
                }
            }
            (keyed, composite) => {
                for e in [keyed.err(), composite.err()].into_iter().flatten() {
                    let field = e.field.rsplit('.').next().unwrap_or_default();
                    prop_assert!(["limit", "window", "rate", "burst", "queue_capacity", "max_keys", "layers"].contains(&field), "{}", e);
                }
            }
        }
    }
}
