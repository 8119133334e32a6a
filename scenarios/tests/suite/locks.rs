//! Row locks (`StoreOp::Locked`) against optimistic concurrency, through the figures a user
//! reads: the store's commits, conflicts and locks, the client's attempts and makespan.

use crate::support;

use scenarios::format::load::parse;
use scenarios::report::{LockReport, StoreReport};
use scenarios::{Report, RunOptions, run};
use support::{run_file_text, run_library_with};

/// `occ-contention` (its `variant`, or the file) at `seed`.
fn occ(variant: Option<&str>, seed: u64) -> Report {
    run_library_with("occ-contention", variant, &[], Some(seed))
}

fn store(r: &Report) -> &StoreReport {
    r.services[0].store.as_ref().expect("the db has a store")
}

fn locks(r: &Report) -> &LockReport {
    store(r).locks.as_ref().expect("a locking store")
}

#[test]
fn locks_waste_no_work_but_serialize_the_writers() {
    for seed in 1..=10 {
        let optimistic = occ(None, seed);
        let locked = occ(Some("locked"), seed);
        assert!(locked.passed(), "seed {seed}: {:?}", locked.expectations);
        // Under the lock every writer commits on its first attempt: no conflict, no retry.
        let st = store(&locked);
        assert_eq!((st.commits, st.conflicts), (20, 0), "seed {seed}");
        assert_eq!(locked.summary.attempts, 20, "seed {seed}");
        assert_eq!(locks(&locked).acquired, 20);
        // Optimistic writers conflict and try again.
        assert!(store(&optimistic).conflicts > 0, "seed {seed}");
        assert!(optimistic.summary.attempts > locked.summary.attempts);
        // The lock runs the 20 writes (20ms each, on average) one after the other: the last
        // one ends after about 20 × 20ms, and the k-th waited for the k − 1 before it, so
        // the waits add up to 20ms × (0 + 1 + … + 19) = 3.8s.
        let makespan = locked.clients[0].makespan_ms.unwrap();
        assert!(
            (360.0..=480.0).contains(&makespan),
            "seed {seed}: makespan {makespan}ms"
        );
        let wait = locks(&locked).wait_s;
        assert!((3.2..=4.4).contains(&wait), "seed {seed}: waits {wait}s");
        assert_eq!(
            locks(&locked).waits,
            19,
            "seed {seed}: all but the first waited"
        );
    }
}

/// 20 one-shot writers, no retries, a constant `work` under a lock of `op`.
fn writers(op: &str) -> Report {
    let text = format!(
        r#"Scenario(
    name: "locks",
    duration: "10s",
    clients: {{ "w": (load: OneShot(users: 20), call: (target: "db")) }},
    services: {{ "db": (workers: 100, work: Constant(value: "30ms"), latency: Constant(value: "0s"), store: (op: {op})) }},
)"#
    );
    run_file_text("locks.ron", &text, &RunOptions::default())
}

#[test]
fn a_wait_beyond_the_lock_wait_timeout_fails_with_lock_timeout() {
    // The holder works 0–30ms; the k-th waiter would get the lock at 30k ms, so with a
    // 100ms timeout the first three waiters get it and the other sixteen time out.
    let r = writers(r#"Locked(wait_timeout: "100ms")"#);
    assert_eq!(r.summary.successes, 4);
    assert_eq!(r.summary.failures_by_reason.get("lock_timeout"), Some(&16));
    let l = locks(&r);
    assert_eq!(
        (l.acquired, l.waits, l.timeouts, l.queue_full),
        (4, 19, 16, 0)
    );
    assert_eq!(l.queue_max_seen, 19);
    assert_eq!(store(&r).commits, 4);
}

#[test]
fn a_full_lock_queue_fails_at_once() {
    // Two may wait: the holder and two waiters commit, the seventeen others fail at once.
    let r = writers(r#"Locked(wait_timeout: "1s", queue_max: 2)"#);
    assert_eq!(r.summary.successes, 3);
    let l = locks(&r);
    assert_eq!((l.timeouts, l.queue_full, l.queue_max_seen), (17, 17, 2));
    assert_eq!(r.summary.failures_by_reason.get("lock_timeout"), Some(&17));
    // The three writes ran one after the other.
    let makespan = r.clients[0].makespan_ms.unwrap();
    assert!((90.0..91.0).contains(&makespan), "{makespan}ms");
}

#[test]
fn a_crash_gives_the_locks_of_its_jobs_back() {
    // The db crashes while a writer holds the lock and others wait: they are lost with the
    // replica, and the writers that retry after the restart take the lock in turn.
    let text = r#"Scenario(
    name: "locks",
    duration: "10s",
    clients: { "w": (load: OneShot(users: 10), call: (target: "db", timeout: "2s", stack: [Retry(max_attempts: 3, backoff: (strategy: Constant(delay: "100ms"), jitter: None))])) },
    services: { "db": (workers: 100, work: Constant(value: "30ms"), latency: Constant(value: "0s"), store: (op: Locked())) },
    faults: [(at: "45ms", duration: "10ms", kind: Crash(service: "db"))],
)"#;
    let s = parse("locks.ron", text).unwrap();
    let r = run(&s, "locks.ron", &RunOptions::default()).unwrap().report;
    assert_eq!(
        r.summary.successes, 10,
        "{:?}",
        r.summary.failures_by_reason
    );
    assert_eq!(store(&r).commits, 10);
    assert!(r.summary.attempts > 10);
}
