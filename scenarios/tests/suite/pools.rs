//! Connection pools: a call's pool per calling replica and a service's `max_connections`,
//! through the figures a user reads (the report's pool and connections sections).

use crate::support;

use scenarios::cli::library::find;
use scenarios::format::limits::RunLimits;
use scenarios::format::overrides::{Overrides, parse_overridden};
use scenarios::{RunOptions, run};
use support::{call_report, run_text_at, service_report};

/// An api of `replicas` replicas calling a db through a pool of `size`, at `rate`, with the
/// db's work `work` and its `max_connections` (a RON option).
fn scenario(replicas: u32, size: u32, rate: u32, work: &str, extra: &str) -> String {
    format!(
        r#"Scenario(
    name: "pools",
    duration: "20s",
    clients: {{ "web": (load: Open(rate: Constant("{rate}/s")), call: (target: "api", timeout: "10s")) }},
    services: {{
        "api": (
            replicas: {replicas},
            workers: 64,
            queue: (capacity: None),
            work: Constant(value: "0s"),
            calls: [(target: "db", pool: (size: {size}, {extra}))],
        ),
        "db": (workers: 1000, work: {work}, latency: Constant(value: "0s")),
    }},
)"#
    )
}

#[test]
fn a_pool_of_one_connection_serializes_a_replica() {
    // One connection and a constant 10ms of work: the replica's db calls run one after the
    // other, so at most 1/w = 100 per second succeed, whatever the offered 300/s.
    let text = scenario(
        1,
        1,
        300,
        r#"Constant(value: "10ms")"#,
        r#"checkout_timeout: "100s""#,
    );
    let r = run_text_at(&text, 1);
    let db = service_report(&r, "db");
    let bound = 20.0 / 0.010;
    assert!(db.ok as f64 <= bound, "{} > {bound}", db.ok);
    assert!(db.ok as f64 >= 0.99 * bound, "{} well under {bound}", db.ok);
    let pool = call_report(&r, "services.api.calls[0]")
        .pool
        .as_ref()
        .unwrap();
    assert_eq!(
        (pool.opened, pool.connections_open_max, pool.pool_held_max),
        (1, 1, 1)
    );
    // Nearly every checkout after the first waited for the one connection.
    assert!(pool.waits as f64 > 0.6 * pool.checkouts as f64);
}

#[test]
fn open_connections_never_exceed_the_pool_or_the_database() {
    // 8 replicas × pools of 6 (48) against a db that accepts 16, over many seeds.
    for seed in 1..=10 {
        let text = scenario(
            8,
            6,
            800,
            r#"Exponential(mean: "20ms")"#,
            r#"checkout_timeout: "1s""#,
        )
        .replace(
            "latency: Constant",
            "max_connections: 16, latency: Constant",
        );
        let r = run_text_at(&text, seed);
        let db = service_report(&r, "db").connections.as_ref().unwrap();
        let pool = call_report(&r, "services.api.calls[0]")
            .pool
            .as_ref()
            .unwrap();
        assert_eq!(db.max_connections, Some(16));
        assert!(db.open_max <= 16, "seed {seed}: {} open", db.open_max);
        assert!(
            pool.pool_held_max <= 6,
            "seed {seed}: {}",
            pool.pool_held_max
        );
        assert!(db.refused > 0, "seed {seed}: the pools want more than 16");
        assert_eq!(pool.refused_opens, db.refused);
        // Every refusal is a fast failure of a waiting attempt, or found no one waiting.
        let refused = r.services[0]
            .failed_by_reason
            .get("dependency")
            .copied()
            .unwrap_or(0);
        assert!(refused <= db.refused, "seed {seed}");
        for p in &r.series {
            let open = p.services[1].connections_open_max.unwrap();
            assert!(open <= 16, "seed {seed}: {open} open at {}s", p.t_s);
        }
    }
}

#[test]
fn a_wait_longer_than_the_checkout_timeout_fails_with_pool_timeout() {
    // 2 connections, 50ms of work each: 40/s at most, offered 100/s; a checkout waits at
    // most 20ms.
    let text = scenario(
        1,
        2,
        100,
        r#"Constant(value: "50ms")"#,
        r#"checkout_timeout: "20ms""#,
    );
    let r = run_text_at(&text, 3);
    let pool = call_report(&r, "services.api.calls[0]")
        .pool
        .as_ref()
        .unwrap();
    assert!(
        pool.checkout_timeouts > 500,
        "{} timeouts",
        pool.checkout_timeouts
    );
    // The waits that got a connection got it within the timeout.
    assert!(pool.wait_ms_p99.unwrap() <= 20.0);
    // Each timeout fails its call (no retries), and the api's request with it.
    let api = service_report(&r, "api");
    let failed = api.failed_by_reason.get("dependency").copied().unwrap_or(0);
    assert_eq!(failed, pool.checkout_timeouts);
    // The db never works more than the two connections allow.
    assert!(service_report(&r, "db").ok as f64 <= 20.0 / 0.050 * 2.0);
}

#[test]
fn idle_connections_close_after_their_idle_timeout() {
    // A burst in the first second, then nothing: the pool's connections are idle from about
    // 1s on and close 2s later.
    let text = scenario(
        2,
        5,
        200,
        r#"Exponential(mean: "20ms")"#,
        r#"idle_timeout: "2s""#,
    )
    .replace(
        r#"Open(rate: Constant("200/s"))"#,
        r#"Open(rate: Steps([(at: "0s", rate: "200/s"), (at: "1s", rate: "0/s")]))"#,
    );
    let r = run_text_at(&text, 1);
    let pool = call_report(&r, "services.api.calls[0]")
        .pool
        .as_ref()
        .unwrap();
    assert!(pool.opened >= 2);
    assert_eq!(pool.closed_idle, pool.opened, "every connection closed");
    let open_at = |t: f64| {
        r.series.iter().find(|p| p.t_s == t).unwrap().calls[1]
            .connections_open_max
            .unwrap()
    };
    assert!(open_at(0.0) >= 2);
    assert_eq!(open_at(5.0), 0);
}

#[test]
fn a_smaller_pool_avoids_the_refusals_of_pool_exhaustion() {
    let entry = find("pool-exhaustion").unwrap();
    let overrides = Overrides {
        variant: Some("sized".to_string()),
        sets: Vec::new(),
    };
    let scenario =
        parse_overridden(entry.name, entry.text, &RunLimits::default(), &overrides).unwrap();
    let r = run(&scenario, entry.name, &RunOptions::default())
        .unwrap()
        .report;
    assert!(r.passed(), "{:?}", r.expectations);
    let db = service_report(&r, "db").connections.as_ref().unwrap();
    let pool = call_report(&r, "services.api.calls[0]")
        .pool
        .as_ref()
        .unwrap();
    assert_eq!((db.refused, pool.refused_opens), (0, 0));
    assert_eq!((db.open_max, pool.pool_held_max), (20, 5));
    assert_eq!(r.summary.failures, 0);
    // The bursts wait for a connection instead, briefly.
    assert!(pool.waits > 0);
    assert!(pool.wait_ms_p99.unwrap() < 250.0);
}
