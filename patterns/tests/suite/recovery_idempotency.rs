//! The idempotency-key store and single-flight coalescing: work runs once per key.

use patterns::coalesce::{CoalesceConfig, CoalesceRejection, Coalescer, Join};
use patterns::idempotency::{Begin, IdempotencyConfig, IdempotencyStore, InFlightPolicy};
use proptest::prelude::*;
use sim_core::{SimDuration, SimTime};

const MS: SimDuration = SimDuration::from_millis(1);

/// A server with a store: `begin` each (time, key, fingerprint) request; requests told to
/// execute finish `work` later with the result `"done <key>"`. Returns what each request
/// got, and how many times the work ran.
fn check(
    config: IdempotencyConfig,
    requests: &[(u64, u32, u64)],
    work: SimDuration,
) -> (Vec<Begin<String>>, u32) {
    let mut store: IdempotencyStore<u32, String> = IdempotencyStore::new(config).unwrap();
    let mut running: Vec<(SimTime, u32)> = Vec::new();
    let mut answers = Vec::new();
    let mut executions = 0;
    for &(at_ms, key, fingerprint) in requests {
        let now = SimTime::from_millis(at_ms);
        running.sort();
        while running.first().is_some_and(|(t, _)| *t <= now) {
            let (t, k) = running.remove(0);
            store.complete(t, &k, format!("done {k}"));
        }
        let b = store.begin(now, &key, fingerprint);
        if b == Begin::Execute {
            executions += 1;
            running.push((now + work, key));
        }
        answers.push(b);
    }
    (answers, executions)
}

#[test]
fn a_retry_with_the_same_key_replays_and_runs_nothing() {
    let (answers, executions) = check(
        IdempotencyConfig::default(),
        &[(0, 1, 42), (100, 1, 42), (200, 1, 42)],
        MS * 10,
    );
    assert_eq!(executions, 1);
    assert_eq!(answers[0], Begin::Execute);
    for a in &answers[1..] {
        assert_eq!(
            *a,
            Begin::Replay {
                result: "done 1".to_string()
            }
        );
    }
}

#[test]
fn the_same_key_with_another_request_is_rejected() {
    let (answers, executions) = check(
        IdempotencyConfig::default(),
        &[(0, 1, 42), (5, 1, 43), (100, 1, 43)],
        MS * 10,
    );
    assert_eq!(executions, 1);
    let mismatch = Begin::FingerprintMismatch {
        stored: 42,
        given: 43,
    };
    assert_eq!(answers[1], mismatch, "while in flight");
    assert_eq!(answers[2], mismatch, "after completion");
}

#[test]
fn a_duplicate_in_flight_gets_a_conflict_or_waits_by_config() {
    let requests = [(0, 1, 42), (5, 1, 42)];
    let (answers, _) = check(IdempotencyConfig::default(), &requests, MS * 10);
    assert_eq!(
        answers[1],
        Begin::Conflict {
            since: SimTime::ZERO
        }
    );
    let waiting = IdempotencyConfig {
        in_flight: InFlightPolicy::Wait,
        ..IdempotencyConfig::default()
    };
    let (answers, executions) = check(waiting.clone(), &requests, MS * 10);
    assert!(matches!(answers[1], Begin::Wait { .. }));
    assert_eq!(executions, 1);
    // The waiter is handed the result when the work completes.
    let mut store: IdempotencyStore<u32, String> = IdempotencyStore::new(waiting).unwrap();
    assert_eq!(store.begin(SimTime::ZERO, &1, 42), Begin::Execute);
    let Begin::Wait { waiter } = store.begin(SimTime::from_millis(1), &1, 42) else {
        panic!("expected to wait");
    };
    assert_eq!(
        store.complete(SimTime::from_millis(2), &1, "r".into()),
        vec![waiter]
    );
}

#[test]
fn keys_expire_after_the_ttl_and_aborts_let_a_retry_run() {
    let config = IdempotencyConfig {
        ttl: SimDuration::from_secs(1),
        ..IdempotencyConfig::default()
    };
    let (answers, executions) = check(
        config.clone(),
        &[(0, 7, 1), (1009, 7, 1), (1010, 7, 1)],
        MS * 10,
    );
    assert_eq!(executions, 2, "{answers:?}");
    assert!(matches!(answers[1], Begin::Replay { .. }));
    assert_eq!(answers[2], Begin::Execute);
    let mut store: IdempotencyStore<u32, u8> = IdempotencyStore::new(config).unwrap();
    assert_eq!(store.begin(SimTime::ZERO, &1, 1), Begin::Execute);
    store.abort(SimTime::from_millis(1), &1);
    assert_eq!(store.begin(SimTime::from_millis(2), &1, 1), Begin::Execute);
}

#[test]
fn a_full_store_refuses_new_keys_instead_of_forgetting_live_ones() {
    let config = IdempotencyConfig {
        capacity: 2,
        ttl: SimDuration::from_secs(1),
        ..IdempotencyConfig::default()
    };
    let (answers, _) = check(
        config,
        &[(0, 1, 1), (0, 2, 1), (0, 3, 1), (500, 1, 1), (2000, 3, 1)],
        MS * 10,
    );
    assert_eq!(answers[2], Begin::Full);
    assert!(matches!(answers[3], Begin::Replay { .. }), "key 1 was kept");
    assert_eq!(answers[4], Begin::Execute, "expired keys make room");
}

/// One step of an interleaving: a duplicate request for a key, or the end of a running
/// execution (picked by index), or its abort.
#[derive(Debug, Clone, Copy)]
enum Step {
    Request { key: u32 },
    Finish { pick: usize },
    Abort { pick: usize },
    Advance { ms: u64 },
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        prop_oneof![
            4 => (0u32..3).prop_map(|key| Step::Request { key }),
            2 => any::<usize>().prop_map(|pick| Step::Finish { pick }),
            1 => any::<usize>().prop_map(|pick| Step::Abort { pick }),
            1 => (0u64..2000).prop_map(|ms| Step::Advance { ms }),
        ],
        1..200,
    )
}

/// Proptest settings for this file: failures are kept in `proptest-regressions/`.
fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "proptest-regressions/recovery_idempotency.txt",
            ),
        )),
        ..proptest::test_runner::Config::default()
    }
}

proptest! {
    #![proptest_config(proptest_config(256))]

    #[test]
    fn concurrent_duplicates_never_both_execute(
        steps in steps(),
        wait in any::<bool>(),
    ) {
        let config = IdempotencyConfig {
            ttl: SimDuration::from_secs(1),
            in_flight: if wait { InFlightPolicy::Wait } else { InFlightPolicy::Conflict },
            ..IdempotencyConfig::default()
        };
        let mut store: IdempotencyStore<u32, u64> = IdempotencyStore::new(config).unwrap();
        let mut now = SimTime::ZERO;
        // Executions in progress, and for each key when its last result was stored.
        let mut running: Vec<u32> = Vec::new();
        let mut done_at: [Option<SimTime>; 3] = [None; 3];
        for step in steps {
            match step {
                Step::Request { key } => match store.begin(now, &key, u64::from(key)) {
                    Begin::Execute => {
                        prop_assert!(!running.contains(&key), "key {} executes twice at once", key);
                        let fresh = done_at[key as usize].is_some_and(|t| now < t + SimDuration::from_secs(1));
                        prop_assert!(!fresh, "key {} executes again within its ttl", key);
                        running.push(key);
                    }
                    Begin::Replay { result } => {
                        prop_assert_eq!(result, u64::from(key) * 10);
                        prop_assert!(!running.contains(&key));
                    }
                    Begin::Conflict { .. } | Begin::Wait { .. } => {
                        prop_assert!(running.contains(&key));
                    }
                    other => prop_assert!(false, "unexpected {:?}", other),
                },
                Step::Finish { pick } if !running.is_empty() => {
                    let key = running.remove(pick % running.len());
                    store.complete(now, &key, u64::from(key) * 10);
                    done_at[key as usize] = Some(now);
                }
                Step::Abort { pick } if !running.is_empty() => {
                    let key = running.remove(pick % running.len());
                    store.abort(now, &key);
                }
                Step::Advance { ms } => now += MS * ms,
                Step::Finish { .. } | Step::Abort { .. } => {}
            }
        }
    }

    #[test]
    fn single_flight_has_one_leader_per_key_at_a_time(
        steps in steps(),
    ) {
        let mut coalescer: Coalescer<u32> = Coalescer::new(CoalesceConfig::default()).unwrap();
        let mut leading: Vec<u32> = Vec::new();
        let mut followers: [u32; 3] = [0; 3];
        for step in steps {
            match step {
                Step::Request { key } => match coalescer.join(SimTime::ZERO, &key) {
                    Join::Lead => {
                        prop_assert!(!leading.contains(&key));
                        leading.push(key);
                    }
                    Join::Follow { .. } => {
                        prop_assert!(leading.contains(&key));
                        followers[key as usize] += 1;
                    }
                    Join::Reject { reason } => prop_assert!(false, "rejected: {:?}", reason),
                },
                Step::Finish { pick } | Step::Abort { pick } if !leading.is_empty() => {
                    let key = leading.remove(pick % leading.len());
                    let waiters = coalescer.complete(SimTime::ZERO, &key);
                    prop_assert_eq!(waiters.len() as u32, followers[key as usize]);
                    followers[key as usize] = 0;
                }
                _ => {}
            }
        }
    }
}

#[test]
fn coalescing_is_bounded() {
    let mut c: Coalescer<&str> = Coalescer::new(CoalesceConfig {
        max_keys: 1,
        max_waiters: 1,
    })
    .unwrap();
    let now = SimTime::ZERO;
    assert_eq!(c.join(now, &"a"), Join::Lead);
    assert!(matches!(c.join(now, &"a"), Join::Follow { .. }));
    assert_eq!(
        c.join(now, &"a"),
        Join::Reject {
            reason: CoalesceRejection::TooManyWaiters
        }
    );
    assert_eq!(
        c.join(now, &"b"),
        Join::Reject {
            reason: CoalesceRejection::TooManyKeys
        }
    );
    assert_eq!(c.complete(now, &"a").len(), 1);
    assert_eq!(c.join(now, &"b"), Join::Lead);
}
