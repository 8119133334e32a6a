//! Queue disciplines and tenant caps through what a report shows: the `Priority` queue serves
//! the critical class at its full demand while it fits in the capacity and evicts the
//! sheddable; RFC 8289's CoDel drops on its control law, about (t / 2·interval)² requests in
//! t seconds of dropping; a `TenantBulkhead` holds a flood to what its slots serve (Little's
//! law) and `max_keys` caps the tenants in flight; a class's cost is what a call's `Limiter`
//! layer charges.

use crate::support;

use scenarios::report::ClassReport;
use support::{class_failures, class_report, run_text_at, service_report};

/// Critical requests at half the capacity, sheddable ones at twice it, through a queue of
/// `discipline` with no admission control.
fn overload(discipline: &str) -> String {
    format!(
        r#"Scenario(
        name: "t",
        duration: "20s",
        clients: {{ "c": (
            load: Open(rate: Constant("2500/s")),
            call: (target: "api", timeout: "1s"),
            classes: [
                (name: "critical", share: 1, priority: CriticalPlus),
                (name: "batch", share: 4, priority: Sheddable),
            ],
        ) }},
        services: {{ "api": (
            workers: 10,
            queue: (capacity: 100, discipline: {discipline}),
            work: Exponential(mean: "10ms"),
            on_abandoned: Cancel,
        ) }},
    )"#
    )
}

#[test]
fn the_priority_queue_serves_the_critical_class_at_its_full_demand() {
    for seed in 1..=3 {
        let r = run_text_at(&overload("Priority"), seed);
        let critical = class_report(&r, "c", "critical");
        let batch = class_report(&r, "c", "batch");
        // 500/s of critical demand against a capacity of 1000/s: every one served.
        assert!(critical.traffic.offered > 9_000, "{critical:?}");
        assert_eq!(critical.traffic.failures, 0, "seed {seed}: {critical:?}");
        let in_flight = critical.traffic.offered - critical.traffic.successes;
        assert!(in_flight <= 10, "seed {seed}: {in_flight} still in flight");
        // A critical request waits only for a worker: never behind a batch request.
        let p99 = critical.traffic.latency_ms.as_ref().unwrap().p99;
        assert!(p99 < 100.0, "seed {seed}: critical p99 {p99}ms");
        // The batch class takes every loss: evicted or refused at the full queue, and served
        // with what is left, about half the capacity.
        assert_eq!(
            batch.traffic.failures,
            class_failures(batch, "queue_full") + class_failures(batch, "timeout"),
            "seed {seed}: {batch:?}"
        );
        assert!(
            class_failures(batch, "queue_full") > 25_000,
            "seed {seed}: {batch:?}"
        );
        let served = batch.traffic.successes as f64 / 20.0;
        assert!((400.0..520.0).contains(&served), "seed {seed}: {served}/s");
    }
}

#[test]
fn a_fifo_queue_refuses_the_critical_class_like_the_others() {
    let r = run_text_at(&overload("Fifo"), 1);
    let critical = class_report(&r, "c", "critical");
    let batch = class_report(&r, "c", "batch");
    // The full queue refuses arrivals whatever their class: both lose about three in five.
    let ratio = |c: &ClassReport| c.traffic.success_ratio.unwrap();
    assert!(ratio(critical) < 0.5, "{critical:?}");
    assert!((ratio(critical) - ratio(batch)).abs() < 0.02);
    let p99 = critical.traffic.latency_ms.as_ref().unwrap().p99;
    assert!(p99 > 100.0, "critical p99 {p99}ms behind a full FIFO queue");
}

/// RFC 8289's control law puts the k-th drop of a dropping period interval/√k after the one
/// before, so n drops take about 2·interval·√n: in t seconds of dropping, (t / 2·interval)²
/// drops. An open loop 50% over capacity keeps CoDel dropping from about 100ms after the
/// overload starts until its queue drains after it ends.
#[test]
fn rfc_codel_drops_on_its_control_law() {
    let text = r#"Scenario(
        name: "t",
        duration: "40s",
        clients: { "c": (
            load: Open(rate: Steps([(at: "0s", rate: "1000/s"), (at: "5s", rate: "3000/s"), (at: "25s", rate: "0/s")])),
            call: (target: "api", timeout: "100s"),
        ) },
        services: { "api": (
            workers: 20,
            queue: (capacity: None, discipline: CoDelRfc(target: "5ms", interval: "100ms")),
            work: Exponential(mean: "10ms"),
        ) },
    )"#;
    let r = run_text_at(text, 1);
    let api = service_report(&r, "api");
    let shed = api.failed_by_reason["shed"] as f64;
    // Dropping starts about an interval after the overload does (5.1s) and lasts until the
    // queue drains after 25s: its length then (its maximum) leaves at the 2,000/s the workers
    // serve plus the drop rate the law has reached, t / (2·interval²) after t seconds.
    let queue_max = api.queue_depth_replica_max as f64;
    let interval = 0.1;
    let drop_rate = 19.9 / (2.0 * interval * interval);
    let dropping_s = 19.9 + queue_max / (2000.0 + drop_rate);
    let expected = (dropping_s / (2.0 * interval)).powi(2);
    assert!(
        (0.95 * expected..1.05 * expected).contains(&shed),
        "{shed} drops, expected about {expected:.0} (queue max {queue_max})"
    );
    // The excess is 2,000 requests a second for 20s: the law drops a third of it, and the
    // queue stands thousands deep.
    assert!(shed < 0.4 * 40_000.0, "{shed}");
    assert!(queue_max > 5_000.0, "{queue_max}");
}

/// A flood from tenant 0 and ten steady tenants at two replicas with a bulkhead of `cap` per
/// tenant, and `extra` more settings for the api.
fn tenants(cap: &str, extra: &str) -> String {
    format!(
        r#"Scenario(
        name: "t",
        duration: "20s",
        clients: {{
            "steady": (
                load: Open(rate: Constant("200/s")),
                call: (target: "api", timeout: "1s"),
                classes: [(name: "steady", share: 1, tenants: (keys: 10, first: 1))],
            ),
            "noisy": (
                load: Open(rate: Constant("5000/s")),
                call: (target: "api", timeout: "1s"),
                classes: [(name: "flood", share: 1, tenants: (keys: 1, first: 0))],
            ),
        }},
        services: {{ "api": (
            replicas: 2,
            workers: 10,
            work: Exponential(mean: "10ms"),
            admission: [TenantBulkhead({cap})],
            {extra}
        ) }},
    )"#
    )
}

#[test]
fn a_tenant_bulkhead_holds_a_flood_to_what_its_slots_serve() {
    for seed in 1..=3 {
        let r = run_text_at(&tenants("max_concurrent: 4", ""), seed);
        let flood = class_report(&r, "noisy", "flood");
        let steady = class_report(&r, "steady", "steady");
        // Little's law: 4 slots per replica, each held 10ms on average (no wait: the flood
        // holds at most 4 of 10 workers), serve at most 2 × 4 / 10ms = 800 requests a second.
        let served = flood.traffic.successes as f64 / 20.0;
        assert!((700.0..=820.0).contains(&served), "seed {seed}: {served}/s");
        assert_eq!(
            flood.traffic.failures,
            class_failures(flood, "concurrency_limited"),
            "seed {seed}: {flood:?}"
        );
        // The steady tenants need 2 workers in all and have 12 left: nothing refused.
        assert_eq!(steady.traffic.failures, 0, "seed {seed}: {steady:?}");
        assert!(steady.tenants.iter().all(|t| t.traffic.failures == 0));
    }
    // Without the bulkhead, the flood takes every worker and the queue: the steady tenants
    // lose most of their requests too.
    let text = tenants("max_concurrent: 4", "")
        .replace("admission: [TenantBulkhead(max_concurrent: 4)],", "");
    let r = run_text_at(&text, 1);
    let steady = class_report(&r, "steady", "steady");
    assert!(steady.traffic.success_ratio.unwrap() < 0.6, "{steady:?}");
}

#[test]
fn max_keys_caps_the_tenants_in_flight() {
    // Without the flood, ten tenants at 200/s hold about two requests in flight in all: a
    // cap of one key in flight per replica refuses a good share, two keys refuse far fewer.
    let refusals = |max_keys: u32| {
        let text = tenants(&format!("max_concurrent: 100, max_keys: {max_keys}"), "")
            .replace(r#"Constant("5000/s")"#, r#"Constant("0/s")"#);
        let r = run_text_at(&text, 1);
        class_failures(class_report(&r, "steady", "steady"), "concurrency_limited")
    };
    let (one, two, ten) = (refusals(1), refusals(2), refusals(10));
    assert!(one > 500, "{one}");
    assert!(two < one / 2, "{two} against {one}");
    assert_eq!(ten, 0);
}

#[test]
fn a_call_limiter_charges_each_request_its_class_cost() {
    // The client's own token bucket earns 100 tokens a second (10 at once); requests of cost 1
    // and of cost 4 arrive at 200/s each. Over 20s the bucket gives out at most
    // 100 × 20 + 10 tokens, and under saturation nearly all of them.
    let text = r#"Scenario(
        name: "t",
        duration: "20s",
        clients: { "c": (
            load: Open(rate: Constant("400/s")),
            call: (target: "api", stack: [Limiter((kind: "token_bucket", rate: "100/s", burst: 10))]),
            classes: [
                (name: "cheap", share: 1, cost: 1),
                (name: "dear", share: 1, cost: 4),
            ],
        ) },
        services: { "api": (workers: 100, work: Constant(value: "1ms")) },
    )"#;
    let r = run_text_at(text, 1);
    let (cheap, dear) = (
        class_report(&r, "c", "cheap"),
        class_report(&r, "c", "dear"),
    );
    let tokens = cheap.traffic.successes + 4 * dear.traffic.successes;
    assert!((1_950..=2_010).contains(&tokens), "{tokens} tokens");
    // A dear request needs four tokens at once: the cheap ones, which need one, get more.
    assert!(cheap.traffic.successes > dear.traffic.successes);
    assert_eq!(
        dear.traffic.failures,
        class_failures(dear, "client_limited"),
        "{dear:?}"
    );
}
