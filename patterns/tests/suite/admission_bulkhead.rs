//! Bulkhead: admission, fair waiting, timeouts, figures; unit tests and properties.

use patterns::bulkhead::{
    Bulkhead, BulkheadConfig, BulkheadDecision, BulkheadPermit, BulkheadRejection,
};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use sim_core::{SimDuration, SimTime};

#[derive(Debug, Clone, Copy)]
enum Op {
    /// A call arrives.
    Arrive,
    /// The n-th running call (modulo) ends.
    Finish(usize),
    /// The n-th waiting call (modulo) is cancelled.
    Cancel(usize),
    /// Time passes; expire waiters.
    Expire,
}

/// Drives a bulkhead with `(ms gap, op)` steps; returns one line per event, and checks the
/// invariants a user relies on: the cap, the queue bound, arrival order of grants, no grant
/// after a deadline, and every call accounted for.
fn check(config: &BulkheadConfig, steps: &[(u64, Op)]) -> Vec<String> {
    let mut b: Bulkhead<u32> = Bulkhead::new(config).unwrap();
    let mut now = SimTime::ZERO;
    let mut running: Vec<(u32, BulkheadPermit)> = Vec::new();
    let mut waiting: Vec<(u32, SimTime)> = Vec::new();
    let mut granted_order: Vec<u32> = Vec::new();
    let (mut next_id, mut cancelled) = (0u32, 0u64);
    let (mut at_once, mut waited, mut rejected, mut timed_out_total) = (0u64, 0u64, 0u64, 0u64);
    let mut log = Vec::new();
    for &(gap, op) in steps {
        now += SimDuration::from_millis(gap);
        let mut timed_out = Vec::new();
        match op {
            Op::Arrive => {
                let id = next_id;
                next_id += 1;
                match b.try_acquire(now, id) {
                    BulkheadDecision::Admit(p) => {
                        log.push(format!("{}ms #{id} admit", now.as_nanos() / 1_000_000));
                        running.push((id, p));
                        at_once += 1;
                    }
                    BulkheadDecision::Wait { deadline } => {
                        log.push(format!("{}ms #{id} wait", now.as_nanos() / 1_000_000));
                        waiting.push((id, deadline));
                        waited += 1;
                    }
                    BulkheadDecision::Reject(r) => {
                        log.push(format!(
                            "{}ms #{id} reject {r:?}",
                            now.as_nanos() / 1_000_000
                        ));
                        rejected += 1;
                    }
                }
            }
            Op::Finish(i) if !running.is_empty() => {
                let (_, permit) = running.remove(i % running.len());
                let (granted, expired) = b.release(now, permit);
                timed_out = expired;
                if let Some(g) = granted {
                    let (_, deadline) = waiting.remove(
                        waiting
                            .iter()
                            .position(|w| w.0 == g.id)
                            .expect("granted a waiter"),
                    );
                    assert!(now < deadline, "granted after its deadline");
                    log.push(format!(
                        "{}ms #{} granted after {}ms",
                        now.as_nanos() / 1_000_000,
                        g.id,
                        g.waited.as_millis()
                    ));
                    granted_order.push(g.id);
                    running.push((g.id, g.permit));
                }
            }
            Op::Cancel(i) if !waiting.is_empty() => {
                let (id, _) = waiting.remove(i % waiting.len());
                assert!(b.cancel(now, &id));
                cancelled += 1;
            }
            _ => timed_out = b.expire(now),
        }
        timed_out_total += timed_out.len() as u64;
        for (id, _) in &timed_out {
            let (_, deadline) = waiting.remove(waiting.iter().position(|w| w.0 == *id).unwrap());
            assert!(now >= deadline, "timed out before its deadline");
            log.push(format!("{}ms #{id} timed out", now.as_nanos() / 1_000_000));
        }
        let s = b.stats();
        assert!(s.active <= config.max_concurrent_calls);
        assert!(s.waiting <= config.queue_capacity);
        assert_eq!(
            (s.active as usize, s.waiting as usize),
            (running.len(), waiting.len())
        );
        // Every call is accounted for, and the figures agree with what the caller saw.
        let granted = granted_order.len() as u64;
        assert_eq!(u64::from(next_id), at_once + waited + rejected);
        assert_eq!(
            waited,
            granted + timed_out_total + cancelled + waiting.len() as u64
        );
        assert_eq!(
            (s.admitted, s.rejected, s.timed_out),
            (at_once + granted, rejected, timed_out_total)
        );
    }
    assert!(
        granted_order.is_sorted(),
        "grants out of arrival order: {granted_order:?}"
    );
    log
}

fn config(max: u32, wait_ms: u64, queue: u32) -> BulkheadConfig {
    BulkheadConfig {
        max_concurrent_calls: max,
        max_wait_duration: SimDuration::from_millis(wait_ms),
        queue_capacity: queue,
    }
}

#[test]
fn admits_up_to_the_cap_then_refuses_without_a_wait() {
    let log = check(
        &config(2, 0, 10),
        &[
            (0, Op::Arrive),
            (0, Op::Arrive),
            (0, Op::Arrive),
            (5, Op::Finish(0)),
            (0, Op::Arrive),
        ],
    );
    assert_eq!(
        log,
        [
            "0ms #0 admit",
            "0ms #1 admit",
            "0ms #2 reject Full { active: 2 }",
            "5ms #3 admit"
        ]
    );
}

#[test]
fn waiters_are_served_in_arrival_order_until_their_deadline() {
    let log = check(
        &config(1, 100, 2),
        &[
            (0, Op::Arrive),
            (0, Op::Arrive),
            (10, Op::Arrive),
            (10, Op::Arrive),
            (30, Op::Finish(0)),
            (75, Op::Finish(0)),
            (0, Op::Arrive),
        ],
    );
    assert_eq!(
        log,
        [
            "0ms #0 admit",
            "0ms #1 wait",
            "10ms #2 wait",
            "20ms #3 reject QueueFull { waiting: 2 }",
            "50ms #1 granted after 50ms",
            "125ms #2 timed out",
            "125ms #4 admit",
        ]
    );
}

#[test]
fn figures_and_config_errors() {
    let mut b: Bulkhead<u8> = Bulkhead::new(&config(1, 10, 1)).unwrap();
    let BulkheadDecision::Admit(_p) = b.try_acquire(SimTime::ZERO, 0) else {
        panic!()
    };
    assert_eq!(
        b.try_acquire(SimTime::ZERO, 1),
        BulkheadDecision::Wait {
            deadline: SimTime::from_millis(10)
        }
    );
    assert_eq!(
        b.try_acquire(SimTime::ZERO, 2),
        BulkheadDecision::Reject(BulkheadRejection::QueueFull { waiting: 1 })
    );
    let s = b.stats();
    assert_eq!((s.active, s.waiting, s.admitted, s.rejected), (1, 1, 1, 1));
    let e = config(2_000_000, 0, 0).validate().unwrap_err();
    assert_eq!(
        e.to_string(),
        "max_concurrent_calls: must be at most 1000000, got 2000000"
    );
    let d = BulkheadConfig::default();
    assert_eq!(
        (d.max_concurrent_calls, d.max_wait_duration),
        (25, SimDuration::ZERO)
    );
}

/// resilience4j `SemaphoreBulkheadTest.testZeroMaxConcurrentCalls`
/// (resilience4j-bulkhead/src/test/java/io/github/resilience4j/bulkhead/internal/SemaphoreBulkheadTest.java,
/// and `BulkheadConfig.Builder.maxConcurrentCalls`, which accepts any value >= 0): a bulkhead
/// of zero calls is valid and refuses every call, a kill switch. With a wait allowed, calls
/// wait their full time and then time out, as a semaphore with no permits makes them.
#[test]
fn zero_max_concurrent_calls() {
    let log = check(&config(0, 0, 10), &[(0, Op::Arrive), (5, Op::Arrive)]);
    assert_eq!(
        log,
        [
            "0ms #0 reject Full { active: 0 }",
            "5ms #1 reject Full { active: 0 }"
        ]
    );
    let log = check(
        &config(0, 10, 10),
        &[(0, Op::Arrive), (5, Op::Expire), (5, Op::Expire)],
    );
    assert_eq!(log, ["0ms #0 wait", "10ms #0 timed out"]);
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Arrive),
        3 => any::<usize>().prop_map(Op::Finish),
        1 => any::<usize>().prop_map(Op::Cancel),
        1 => Just(Op::Expire),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/admission_bulkhead.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn bulkhead_keeps_its_bounds_and_fair_order(
        max in 0u32..5, wait in 0u64..200, queue in 0u32..5,
        steps in proptest::collection::vec((0u64..60, op()), 1..200),
    ) {
        check(&config(max, wait, queue), &steps);
    }

    #[test]
    fn bulkhead_configs_are_refused_with_a_field_or_never_panic(
        max in prop_oneof![Just(0u32), 1u32..4, Just(u32::MAX)],
        queue in prop_oneof![0u32..4, Just(u32::MAX)],
        wait in prop_oneof![Just(0u64), 1u64..1_000_000_000, Just(u64::MAX)],
        calls in proptest::collection::vec((any::<u64>(), 0u8..3), 0..50),
    ) {
        let config = BulkheadConfig {
            max_concurrent_calls: max,
            max_wait_duration: SimDuration::from_nanos(wait),
            queue_capacity: queue,
        };
        match Bulkhead::<u64>::new(&config) {
            Err(e) => prop_assert!(["max_concurrent_calls", "queue_capacity"].contains(&e.field.as_str()), "{}", e),
            Ok(mut b) => {
                let mut permits = Vec::new();
                for &(t, op) in &calls {
                    let now = SimTime::from_nanos(t);
                    match op {
                        0 => if let BulkheadDecision::Admit(p) = b.try_acquire(now, t) { permits.push(p) },
                        1 => if let Some(p) = permits.pop() {
                            let (granted, _) = b.release(now, p);
                            permits.extend(granted.map(|g| g.permit));
                        },
                        _ => { let _ = b.expire(now); }
                    }
                }
            }
        }
    }
}
