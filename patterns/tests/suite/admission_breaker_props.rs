//! Circuit breaker state-machine properties, and the closed-state judge against a naive model.

use patterns::breaker::{
    Breaker, BreakerConfig, BreakerDecision, BreakerRejection, Cause, HalfOpenPolicy, Permit,
    SlidingWindowType, StateAfterWait, StateKind, is_legal_edge,
};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use sim_core::{SimDuration, SimTime};

#[derive(Debug, Clone, Copy)]
enum Op {
    Call,
    /// A call at the first instant an open breaker lets one through (`early`: one nanosecond
    /// before), if the breaker is open.
    CallAtOpenEnd {
        early: bool,
    },
    Report {
        permit: usize,
        failed: bool,
    },
    Ignore {
        permit: usize,
    },
    ForceOpen,
    ForceClosed,
    Disable,
    Reset,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => Just(Op::Call),
        2 => any::<bool>().prop_map(|early| Op::CallAtOpenEnd { early }),
        8 => (any::<usize>(), any::<bool>()).prop_map(|(permit, failed)| Op::Report { permit, failed }),
        1 => any::<usize>().prop_map(|permit| Op::Ignore { permit }),
        1 => prop_oneof![Just(Op::ForceOpen), Just(Op::ForceClosed), Just(Op::Disable), Just(Op::Reset)],
    ]
}

fn ms(n: u64) -> SimDuration {
    SimDuration::from_millis(n)
}

fn config() -> impl Strategy<Value = BreakerConfig> {
    let policy = prop_oneof![
        (1u32..5).prop_map(|n| HalfOpenPolicy::PermittedCalls {
            permitted_number_of_calls_in_half_open_state: n
        }),
        Just(HalfOpenPolicy::SingleProbe),
        (1u32..5, 1u32..5).prop_map(|(a, b)| HalfOpenPolicy::SuccessThreshold {
            permitted_calls: a.max(b),
            success_threshold: a.min(b),
        }),
        (1u64..4000).prop_map(|r| HalfOpenPolicy::Ramp {
            ramp_duration: ms(r)
        }),
    ];
    (
        (
            1u32..=100,
            1u32..=100,
            1u64..3000,
            any::<bool>(),
            1u32..8,
            1u32..8,
        ),
        (
            proptest::option::of(1u32..4),
            1u64..3000,
            1.0f64..3.0,
            any::<bool>(),
            policy,
            (1u64..5000, any::<bool>()),
        ),
    )
        .prop_map(
            |(
                (failure, slow, slow_ms, time_based, size, minimum),
                (consecutive, wait, multiplier, automatic, half_open, (max_wait, close_after)),
            )| BreakerConfig {
                failure_rate_threshold: f64::from(failure),
                slow_call_rate_threshold: f64::from(slow),
                slow_call_duration_threshold: ms(slow_ms),
                sliding_window_type: if time_based {
                    SlidingWindowType::TimeBased
                } else {
                    SlidingWindowType::CountBased
                },
                sliding_window_size: size,
                minimum_number_of_calls: minimum,
                consecutive_failure_threshold: consecutive,
                wait_duration_in_open_state: ms(wait),
                wait_duration_in_open_state_multiplier: multiplier,
                wait_duration_in_open_state_max: ms(wait * 3),
                automatic_transition_from_open_to_half_open_enabled: automatic,
                half_open,
                max_wait_duration_in_half_open_state: ms(max_wait),
                transition_to_state_after_wait_duration: if close_after {
                    StateAfterWait::Closed
                } else {
                    StateAfterWait::Open
                },
            },
        )
}

/// The first instant an open state waiting until `until` admits a call: strictly after the
/// wait, or at its end with automatic transition (resilience4j's `isAfter` and scheduler).
fn open_exit(config: &BreakerConfig, until: SimTime) -> SimTime {
    if config.automatic_transition_from_open_to_half_open_enabled {
        until
    } else {
        until.saturating_add(SimDuration::from_nanos(1))
    }
}

/// Permits of the current half-open state, as the policy states them (none for a ramp).
fn permits(config: &BreakerConfig) -> Option<u32> {
    match config.half_open {
        HalfOpenPolicy::PermittedCalls {
            permitted_number_of_calls_in_half_open_state: n,
        } => Some(n),
        HalfOpenPolicy::SingleProbe => Some(1),
        HalfOpenPolicy::SuccessThreshold {
            permitted_calls, ..
        } => Some(permitted_calls),
        HalfOpenPolicy::Ramp { .. } => None,
    }
}

/// What became of an admitted call in the state-machine test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    InFlight,
    Reported,
    Ignored,
}

/// The permit still in flight that `pick` chooses, if any is: half the time one of the three
/// newest (so that calls admitted half-open report while the state lasts), else any of them
/// (so that stale reports from earlier states come too).
fn in_flight(permits: &[(Option<Permit>, usize, Fate)], pick: usize) -> Option<usize> {
    let open: Vec<usize> = (0..permits.len())
        .filter(|&i| permits[i].2 == Fate::InFlight)
        .collect();
    let n = open.len();
    if n == 0 {
        return None;
    }
    let k = pick / 2;
    Some(if pick.is_multiple_of(2) {
        open[n - 1 - k % n.min(3)]
    } else {
        open[k % n]
    })
}

/// Drives `steps` and checks the state-machine properties after every step.
fn check(config: BreakerConfig, steps: &[(u64, Op)]) -> Result<(), TestCaseError> {
    let mut breaker = Breaker::new(&config).expect("generated configs are valid");
    let mut now = SimTime::ZERO;
    let mut state = StateKind::Closed;
    let mut transitions = 0usize;
    let mut last_at = SimTime::ZERO;
    // (permit until it is reported, transitions seen when admitted, what became of it)
    let mut permits_out: Vec<(Option<Permit>, usize, Fate)> = Vec::new();
    for &(gap, op) in steps {
        now += ms(gap);
        let open_exit = breaker.open_until().map(|until| open_exit(&config, until));
        if let (Op::CallAtOpenEnd { early }, Some(exit)) = (op, open_exit) {
            let at = exit.saturating_sub(SimDuration::from_nanos(u64::from(early)));
            now = now.max(at);
        }
        match op {
            Op::Call | Op::CallAtOpenEnd { .. } => {
                // With automatic transition an idle breaker may have cycled through half-open
                // and opened again by `now`; the first exit is then a later one.
                let exit = open_exit
                    .filter(|_| !config.automatic_transition_from_open_to_half_open_enabled);
                let d = breaker.try_acquire(now);
                if let Some(exit) = exit {
                    prop_assert!(
                        !(d.allowed() && now < exit),
                        "admitted at {} while open until {}",
                        now,
                        exit
                    );
                    // Every half-open policy admits its first call, so the wait's end admits.
                    prop_assert!(
                        d.allowed() || now < exit,
                        "refused at {} although the open wait ended before {}",
                        now,
                        exit
                    );
                }
                match d {
                    BreakerDecision::Admit(p) => {
                        permits_out.push((Some(p), transitions, Fate::InFlight))
                    }
                    BreakerDecision::Reject {
                        reason: BreakerRejection::Open,
                        retry_at,
                    } => {
                        prop_assert!(
                            retry_at.is_some_and(|r| r > now),
                            "open without a future retry"
                        );
                    }
                    BreakerDecision::Reject { .. } => {}
                }
            }
            // Each permit is reported once, as the contract asks; reports from states that
            // have ended (stale permits) come from calls admitted before a transition.
            Op::Report { permit, failed } if in_flight(&permits_out, permit).is_some() => {
                let i = in_flight(&permits_out, permit).expect("checked");
                let p = permits_out[i]
                    .0
                    .take()
                    .expect("a call in flight holds its permit");
                permits_out[i].2 = Fate::Reported;
                if failed {
                    breaker.on_failure(now, p)
                } else {
                    breaker.on_success(now, p)
                }
            }
            Op::Ignore { permit } if in_flight(&permits_out, permit).is_some() => {
                let i = in_flight(&permits_out, permit).expect("checked");
                permits_out[i].2 = Fate::Ignored;
                let p = permits_out[i]
                    .0
                    .take()
                    .expect("a call in flight holds its permit");
                breaker.on_ignored(now, p);
            }
            Op::Report { .. } | Op::Ignore { .. } => breaker.advance(now),
            Op::ForceOpen => breaker.force_open(now),
            Op::ForceClosed => breaker.force_closed(now),
            Op::Disable => breaker.disable(now),
            Op::Reset => breaker.reset(now),
        }
        let new = breaker.take_transitions();
        // An admitted call belongs to the state that admitted it, after any transitions the
        // call itself triggered.
        if let (Op::Call | Op::CallAtOpenEnd { .. }, Some(last)) = (op, permits_out.last_mut())
            && last.1 == transitions
        {
            last.1 += new.len();
        }
        for t in &new {
            prop_assert_eq!(t.from, state, "transition chain broken: {:?}", t);
            prop_assert!(
                t.cause == Cause::Operator || is_legal_edge(t.from, t.to),
                "illegal edge {:?}",
                t
            );
            prop_assert!(
                t.at >= last_at && t.at <= now,
                "transition time out of order: {:?}",
                t
            );
            last_at = t.at;
            state = t.to;
        }
        transitions += new.len();
        prop_assert_eq!(state, breaker.state());
        if state == StateKind::HalfOpen {
            // resilience4j's permits count the calls a half-open state admits, not the calls
            // in flight: one that reported still used its permit. Only `on_ignored` on a call
            // in flight gives its permit back.
            let half_open_admitted = permits_out
                .iter()
                .filter(|(_, epoch, fate)| *epoch == transitions && *fate != Fate::Ignored)
                .count() as u32;
            if let Some(limit) = permits(&config) {
                prop_assert!(
                    half_open_admitted <= limit,
                    "half-open admitted {} calls, permits {}",
                    half_open_admitted,
                    limit
                );
            }
        }
    }
    // No wedge: whatever happened, once every wait has passed a call gets through (unless an
    // operator holds the breaker open). An idle breaker with automatic transition cycles
    // between open and half-open, so the call may first have to wait for the open phase it
    // lands in to end; the refusal says when.
    let mut later = now
        + config.max_wait_duration_in_half_open_state
        + config.wait_duration_in_open_state_max
        + SimDuration::from_secs(5);
    let mut d = breaker.try_acquire(later);
    if let BreakerDecision::Reject {
        reason: BreakerRejection::Open,
        retry_at: Some(retry_at),
    } = d
        && config.automatic_transition_from_open_to_half_open_enabled
    {
        prop_assert!(retry_at > later);
        later = retry_at;
        d = breaker.try_acquire(later);
    }
    if breaker.state() != StateKind::ForcedOpen {
        prop_assert!(d.allowed(), "wedged in {:?}: {:?}", breaker.state(), d);
    }
    Ok(())
}

/// The closed-state judge, recomputed from every outcome since the last close:
/// (report time, failed, slow) in time order.
fn naive_trips(config: &BreakerConfig, outcomes: &[(SimTime, bool, bool)]) -> bool {
    let run = outcomes.iter().rev().take_while(|o| o.1).count() as u32;
    if config
        .consecutive_failure_threshold
        .is_some_and(|n| run >= n)
    {
        return true;
    }
    let size = config.sliding_window_size as usize;
    let (window, minimum): (Vec<_>, usize) = match config.sliding_window_type {
        SlidingWindowType::CountBased => (
            outcomes[outcomes.len().saturating_sub(size)..].to_vec(),
            config
                .minimum_number_of_calls
                .min(config.sliding_window_size) as usize,
        ),
        SlidingWindowType::TimeBased => {
            // The calls of the last `size` whole seconds, the current one included.
            let second = |t: SimTime| t.as_nanos() / 1_000_000_000;
            let now = second(outcomes.last().expect("one outcome").0);
            (
                outcomes
                    .iter()
                    .filter(|o| second(o.0) + size as u64 > now)
                    .copied()
                    .collect(),
                config.minimum_number_of_calls as usize,
            )
        }
    };
    if window.len() < minimum {
        return false;
    }
    let rate = |k: usize| 100.0 * k as f64 / window.len() as f64;
    rate(window.iter().filter(|o| o.1).count()) >= config.failure_rate_threshold
        || rate(window.iter().filter(|o| o.2).count()) >= config.slow_call_rate_threshold
}

proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/admission_breaker_props.txt",
        ))),
        // A half-open state with several calls admitted and some reported takes a trip, a
        // wait and the right calls; 1024 cases reach it reliably in a fraction of a second.
        cases: 1024,
        ..ProptestConfig::default()
    })]

    #[test]
    fn breaker_state_machine_holds_its_properties(
        config in config(),
        steps in proptest::collection::vec((0u64..2500, op()), 1..200),
    ) {
        check(config, &steps)?;
    }

    #[test]
    fn closed_state_judge_matches_the_naive_recount(
        config in config(),
        outcomes in proptest::collection::vec((any::<bool>(), 0u64..4000), 1..120),
    ) {
        let mut breaker = Breaker::new(&config).unwrap();
        let mut seen = Vec::new();
        let mut now = SimTime::ZERO;
        for (failed, duration_ms) in outcomes {
            let BreakerDecision::Admit(p) = breaker.try_acquire(now) else {
                prop_assert!(false, "closed breaker refused");
                unreachable!()
            };
            now += ms(duration_ms);
            if failed { breaker.on_failure(now, p) } else { breaker.on_success(now, p) }
            seen.push((now, failed, ms(duration_ms) > config.slow_call_duration_threshold));
            let tripped = naive_trips(&config, &seen);
            prop_assert_eq!(breaker.state() == StateKind::Open, tripped, "after {:?}", seen);
            if tripped { break; }
        }
    }

    #[test]
    fn arbitrary_breaker_configs_are_refused_with_a_field_or_never_panic(
        failure in prop_oneof![Just(f64::NAN), -1.0f64..200.0, Just(100.0)],
        size in prop_oneof![Just(0u32), 1u32..10, Just(u32::MAX)],
        minimum in prop_oneof![Just(0u32), 1u32..10],
        wait in prop_oneof![Just(0u64), 1u64..u64::MAX],
        max_wait in prop_oneof![Just(0u64), 1u64..u64::MAX],
        multiplier in prop_oneof![Just(f64::INFINITY), 0.0f64..200.0],
        time_based in any::<bool>(),
        automatic in any::<bool>(),
        steps in proptest::collection::vec((prop_oneof![0u64..5000, any::<u64>()], op()), 0..60),
    ) {
        let config = BreakerConfig {
            failure_rate_threshold: failure,
            sliding_window_size: size,
            minimum_number_of_calls: minimum,
            sliding_window_type: if time_based { SlidingWindowType::TimeBased } else { SlidingWindowType::CountBased },
            wait_duration_in_open_state: SimDuration::from_nanos(wait),
            wait_duration_in_open_state_max: SimDuration::from_nanos(wait.saturating_mul(2)),
            wait_duration_in_open_state_multiplier: multiplier,
            max_wait_duration_in_half_open_state: SimDuration::from_nanos(max_wait),
            consecutive_failure_threshold: Some(2),
            automatic_transition_from_open_to_half_open_enabled: automatic,
            ..BreakerConfig::default()
        };
        match Breaker::new(&config) {
            Err(e) => {
                prop_assert!(!e.field.is_empty());
                prop_assert!(!e.reason.starts_with(char::is_uppercase) && !e.reason.ends_with('.'), "{}", e);
            }
            Ok(mut b) => {
                let mut permits = Vec::new();
                let mut now = SimTime::ZERO;
                for (gap, op) in steps {
                    now = now.saturating_add(SimDuration::from_nanos(gap));
                    match op {
                        Op::Call => if let BreakerDecision::Admit(p) = b.try_acquire(now) { permits.push(p) },
                        Op::Report { permit, failed } if !permits.is_empty() => {
                            // A report consumes its permit; any of the outstanding ones may go.
                            let p = permits.swap_remove(permit % permits.len());
                            if failed { b.on_failure(now, p) } else { b.on_success(now, p) }
                        }
                        _ => b.advance(now),
                    }
                }
            }
        }
    }
}
