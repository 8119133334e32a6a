//! Distributed rate limiters and fan-out against what theory says exactly: N local limiters
//! admit N times the limit, an atomic central limiter never exceeds it in any window, a lease
//! of b tokens over-serves by at most b per replica per window, a read-compute-write limiter
//! over-admits more as the store gets slower and the load denser, and the latency of a
//! fan-out to n exponential leaves is the maximum of n exponentials.

use crate::support;

use scenarios::Report;
use scenarios::figures::DistributedFigures;
use support::run_text;

/// The only distributed limiter of a report.
fn limiter(r: &Report) -> &DistributedFigures {
    assert_eq!(r.limiters.len(), 1, "one distributed limiter");
    &r.limiters[0]
}

/// A service `api` of `replicas` replicas behind a limiter of `limit` per second (a fixed
/// window) in `state`, a store 'store' with one-way `latency`, users offering `rate`.
fn limited(replicas: u32, limit: u64, state: &str, latency: &str, rate: &str, seed: u64) -> String {
    format!(
        r#"Scenario(
    name: "limited", duration: "10s", seed: {seed},
    clients: {{ "users": (load: Open(rate: Constant("{rate}")), call: (target: "api", timeout: "1s")) }},
    services: {{
        "api": (replicas: {replicas}, workers: 100, work: Constant(value: "1ms"),
            admission: [Distributed(limiter: (kind: "fixed_window", limit: {limit}, window: "1s"), state: {state})]),
        "store": (workers: 1, queue: (capacity: None), work: Constant(value: "20us"), latency: {latency}),
    }},
)"#
    )
}

#[test]
fn local_limiters_admit_n_times_the_limit_and_a_central_atomic_one_the_limit() {
    let (n, limit) = (4, 100);
    let local = run_text(&limited(
        n,
        limit,
        "Local",
        "Constant(value: \"1ms\")",
        "2000/s",
        1,
    ));
    let l = limiter(&local);
    // Round robin gives each replica 500 arrivals a second: each admits its whole limit in
    // every window.
    assert_eq!(l.charged_by_bucket, vec![u64::from(n) * limit; 10]);
    assert_eq!(l.admitted, 10 * u64::from(n) * limit);
    assert_eq!(l.over_admitted, 10 * u64::from(n - 1) * limit);
    assert_eq!(l.round_trips, 0);
    let central = run_text(&limited(
        n,
        limit,
        "Central(store: \"store\")",
        "Constant(value: \"1ms\")",
        "2000/s",
        1,
    ));
    let c = limiter(&central);
    assert_eq!(c.charged_by_bucket, vec![limit; 10]);
    assert_eq!(c.over_admitted, 0);
    assert_eq!(c.round_trips, c.decisions);
}

#[test]
fn an_atomic_central_limiter_never_exceeds_its_limit_in_any_window() {
    for seed in 1..=3 {
        let r = run_text(&limited(
            8,
            300,
            "Central(store: \"store\", atomic: true)",
            "Exponential(mean: \"2ms\")",
            "3000/s",
            seed,
        ));
        let l = limiter(&r);
        for (i, &charged) in l.charged_by_bucket.iter().enumerate() {
            assert!(charged <= 300, "seed {seed}, window {i}: {charged} > 300");
        }
        assert!(
            l.charged_by_bucket[..9].iter().all(|&c| c == 300),
            "saturated"
        );
        assert_eq!(l.over_admitted, 0);
    }
}

#[test]
fn a_lease_of_b_tokens_over_serves_by_at_most_b_per_replica_per_window() {
    let (n, limit, batch) = (8u64, 800u64, 20u64);
    let mut over_seen = 0;
    // Offered loads just above the limit, where leases taken near the end of a window are
    // spent in the next one.
    for rate in ["820/s", "850/s", "900/s"] {
        let state = format!("Lease(store: \"store\", batch: {batch})");
        let r = run_text(&limited(
            n as u32,
            limit,
            &state,
            "Constant(value: \"2ms\")",
            rate,
            13,
        ));
        let l = limiter(&r);
        for (i, &charged) in l.charged_by_bucket.iter().enumerate() {
            assert!(
                charged <= limit + n * batch,
                "{rate}, window {i}: {charged} > {limit} + {n} x {batch}"
            );
        }
        assert!(l.over_admitted <= n * batch * 10);
        assert!(l.round_trips * 5 < l.decisions, "leases save round-trips");
        over_seen += l.over_admitted;
    }
    assert!(over_seen > 0, "the bound was tested by some over-service");
}

/// Over-admissions of a read-compute-write limiter of 300 a second over 8 replicas.
fn racy(latency_us: u64, rate: u64) -> u64 {
    let latency = format!("Constant(value: \"{latency_us}us\")");
    let rate = format!("{rate}/s");
    let r = run_text(&limited(
        8,
        300,
        "Central(store: \"store\", atomic: false)",
        &latency,
        &rate,
        7,
    ));
    limiter(&r).over_admitted
}

#[test]
fn racy_over_admission_grows_with_store_latency_and_with_load() {
    let by_latency: Vec<u64> = [20, 100, 500].iter().map(|&l| racy(l, 1000)).collect();
    assert!(by_latency.windows(2).all(|w| w[0] < w[1]), "{by_latency:?}");
    let by_rate: Vec<u64> = [500, 1000, 2000].iter().map(|&r| racy(100, r)).collect();
    assert!(by_rate.windows(2).all(|w| w[0] < w[1]), "{by_rate:?}");
    assert!(by_latency[0] > 0, "even a fast store races");
}

#[test]
fn fan_out_latency_is_the_maximum_of_n_exponential_leaves() {
    let n = 50u32;
    let text = format!(
        r#"Scenario(
    name: "fan-out", duration: "400s", seed: 9,
    clients: {{ "users": (load: Open(rate: Constant("20/s")), call: (target: "root")) }},
    services: {{
        "root": (workers: 1000, work: Constant(value: "1ns"), calls: [(target: "leaf", fan_out: (n: {n}))]),
        "leaf": (replicas: {n}, workers: 1000, work: Exponential(mean: "10ms")),
    }},
)"#
    );
    let r = run_text(&text);
    let lat = r.summary.latency_ms.as_ref().expect("successes");
    // P(max <= x) = (1 - e^(-x/m))^n, so the quantile q is -m ln(1 - q^(1/n)).
    let quantile = |q: f64| -10.0 * (1.0 - q.powf(1.0 / f64::from(n))).ln();
    let (p50, p99) = (quantile(0.5), quantile(0.99));
    let (p50_seen, p99_seen) = (lat.p50, lat.p99);
    assert!(
        (p50_seen / p50 - 1.0).abs() < 0.03,
        "p50 {p50_seen} vs {p50}"
    );
    assert!(
        (p99_seen / p99 - 1.0).abs() < 0.08,
        "p99 {p99_seen} vs {p99}"
    );
    // The mean of the maximum is H_n times the mean of one leaf.
    let h: f64 = (1..=n).map(|k| 1.0 / f64::from(k)).sum();
    let mean = lat.mean;
    assert!(
        (mean / (10.0 * h) - 1.0).abs() < 0.03,
        "mean {mean} vs {}",
        10.0 * h
    );
    assert_eq!(
        r.summary.successes,
        r.summary.offered - r.summary.requests_in_flight
    );
}

#[test]
fn a_quorum_completes_before_the_slowest_leaves() {
    let text = |quorum: &str| {
        format!(
            r#"Scenario(
    name: "quorum", duration: "100s", seed: 4,
    clients: {{ "users": (load: Open(rate: Constant("20/s")), call: (target: "root")) }},
    services: {{
        "root": (workers: 1000, work: Constant(value: "1ns"), calls: [(target: "leaf", fan_out: (n: 20{quorum}))]),
        "leaf": (replicas: 20, workers: 1000, work: Exponential(mean: "10ms")),
    }},
)"#
        )
    };
    let all = run_text(&text(""));
    let quorum = run_text(&text(", quorum: 10"));
    let p50 = |r: &Report| r.summary.latency_ms.as_ref().unwrap().p50;
    // The median of the 10th of 20 exponentials is about 0.67 of the mean of one leaf; that
    // of the 20th about 3.5 times it.
    assert!(
        p50(&quorum) < 10.0 && p50(&all) > 30.0,
        "{} {}",
        p50(&quorum),
        p50(&all)
    );
}

#[test]
fn replica_clocks_that_disagree_over_admit_and_the_store_clock_does_not() {
    let skewed = run_text(&limited(
        8,
        100,
        "Central(store: \"store\", clock: Replica, skew: Uniform(low: \"0ms\", high: \"400ms\"))",
        "Constant(value: \"1ms\")",
        "2000/s",
        5,
    ));
    let store = run_text(&limited(
        8,
        100,
        "Central(store: \"store\", clock: Store)",
        "Constant(value: \"1ms\")",
        "2000/s",
        5,
    ));
    // A replica whose clock runs ahead opens the next window early, at the store, for all.
    assert!(limiter(&skewed).over_admitted > 0);
    assert_eq!(limiter(&store).over_admitted, 0);
}
