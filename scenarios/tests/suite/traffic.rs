//! Request classes and tenants through what a report shows: the priority shedder serves the
//! critical class in full while there is capacity for it, a per-tenant limit keeps a flood
//! from the quiet tenants, shadow mode counts exactly what enforcement refuses, and the
//! attributes (tenant, retry safety) travel to every hop.

use crate::support;

use scenarios::Report;
use support::{
    class_failures, class_report, client_report, run_library, run_library_with, run_text_at,
    service_report,
};

/// Critical requests at half the capacity, sheddable ones at twice it: the shedder refuses no
/// critical request and serves every one, on every seed, and sheds the sheddable.
#[test]
fn the_priority_shedder_serves_the_critical_class_in_full_while_it_fits() {
    let text = r#"Scenario(
        name: "t",
        duration: "20s",
        clients: { "c": (
            load: Open(rate: Constant("2500/s")),
            call: (target: "api", timeout: "1s"),
            classes: [
                (name: "critical", share: 1, priority: CriticalPlus),
                (name: "batch", share: 4, priority: Sheddable),
            ],
        ) },
        services: { "api": (
            workers: 10,
            queue: (capacity: 100),
            work: Exponential(mean: "10ms"),
            admission: [Priority(shed_thresholds_percent: [80, 90, 100, 300])],
        ) },
    )"#;
    for seed in 1..=3 {
        let r = run_text_at(text, seed);
        let critical = class_report(&r, "c", "critical");
        let batch = class_report(&r, "c", "batch");
        // 500/s of critical demand against a capacity of 1000/s.
        assert!(critical.traffic.offered > 9_000, "{critical:?}");
        assert_eq!(critical.traffic.failures, 0, "seed {seed}: {critical:?}");
        let in_flight = critical.traffic.offered - critical.traffic.successes;
        assert!(in_flight <= 10, "seed {seed}: {in_flight} still in flight");
        // The batch class gets what is left, about half the capacity, and is shed otherwise.
        let served = batch.traffic.successes as f64 / 20.0;
        assert!((250.0..500.0).contains(&served), "seed {seed}: {served}/s");
        assert_eq!(class_failures(batch, "shed"), batch.traffic.failures);
        assert!(batch.traffic.failures > 20_000, "{batch:?}");
    }
}

/// The criticality-shedding library scenario against its variant without the shedder: the
/// critical class loses a third of its requests to the full queue.
#[test]
fn without_the_shedder_the_critical_class_is_refused_like_the_others() {
    let shed = run_library("criticality-shedding");
    let plain = run_library_with("criticality-shedding", Some("fifo"), &[], None);
    let ratio = |r: &Report, k: &str| class_report(r, "users", k).traffic.success_ratio.unwrap();
    assert!(ratio(&shed, "checkout") > 0.999);
    assert!(ratio(&plain, "checkout") < 0.7);
    assert!(shed.passed() && plain.passed());
}

/// A flood from one tenant under per-tenant limits: the quiet tenants' goodput is what it is
/// without the flood, within sampling error; under one global limit it collapses.
#[test]
fn a_per_tenant_limit_keeps_the_flood_from_the_quiet_tenants() {
    let scenario = |flood: &str, admission: &str| {
        format!(
            r#"Scenario(
            name: "t",
            duration: "20s",
            clients: {{
                "quiet": (
                    load: Open(rate: Constant("200/s")),
                    call: (target: "api", timeout: "1s"),
                    classes: [(name: "q", share: 1, tenants: (keys: 8, first: 1))],
                ),
                "flood": (
                    load: Open(rate: Constant("{flood}")),
                    call: (target: "api", timeout: "1s"),
                    classes: [(name: "f", share: 1, tenants: (keys: 1))],
                ),
            }},
            services: {{ "api": (workers: 40, work: Exponential(mean: "10ms"), admission: [{admission}]) }},
        )"#
        )
    };
    let tenant = r#"RateLimit(limiter: (kind: "token_bucket", rate: "40/s", burst: 40), key: Tenant),
        RateLimit(limiter: (kind: "token_bucket", rate: "400/s", burst: 100))"#;
    let global = r#"RateLimit(limiter: (kind: "token_bucket", rate: "400/s", burst: 100))"#;
    for seed in 1..=3 {
        let calm = run_text_at(&scenario("0/s", tenant), seed);
        let flooded = run_text_at(&scenario("3000/s", tenant), seed);
        let starved = run_text_at(&scenario("3000/s", global), seed);
        let quiet = |r: &Report| class_report(r, "quiet", "q").traffic.clone();
        let (c, f, s) = (quiet(&calm), quiet(&flooded), quiet(&starved));
        // The same arrivals (the quiet client's streams do not depend on the flood)...
        assert_eq!(c.offered, f.offered);
        // ...and the same goodput within sampling error: 3 standard errors of a ratio near 1
        // over ~4,000 requests is below 0.5%.
        let (rc, rf) = (c.success_ratio.unwrap(), f.success_ratio.unwrap());
        assert!((rc - rf).abs() < 0.005, "seed {seed}: {rc} vs {rf}");
        assert!(rf > 0.99, "seed {seed}: {rf}");
        // The flood itself gets its own tenant's limit: the burst of 40, then one token every
        // 25ms; the 800th refill falls at 20s, the end of the run, so 839 exactly.
        let flood = class_report(&flooded, "flood", "f");
        let admitted = flood.traffic.offered - class_failures(flood, "rate_limited");
        assert_eq!(admitted, 40 + 40 * 20 - 1, "seed {seed}");
        // One global limit shares the refusals out: the quiet tenants lose most requests.
        assert!(s.success_ratio.unwrap() < 0.3, "seed {seed}: {s:?}");
        // Each quiet tenant is reported on its own.
        let tenants = &class_report(&flooded, "quiet", "q").tenants;
        assert_eq!(tenants.len(), 8);
        assert!(
            tenants
                .iter()
                .all(|t| t.traffic.success_ratio.unwrap() > 0.98)
        );
    }
}

/// Shadow mode refuses nothing and counts what it would have refused; open loop without
/// retries, its refusals do not change the load, so the count equals the enforcing limiter's
/// refusals on the same seed, exactly.
#[test]
fn shadow_mode_counts_exactly_what_enforcement_refuses() {
    let scenario = |shadow: bool| {
        format!(
            r#"Scenario(
            name: "t",
            duration: "10s",
            clients: {{ "c": (
                load: Open(rate: Steps([(at: "0s", rate: "300/s"), (at: "3s", rate: "900/s"), (at: "6s", rate: "200/s")])),
                call: (target: "api", timeout: "1s"),
                classes: [
                    (name: "small", share: 3, tenants: (keys: 20, popularity: Zipf(exponent: 1.2))),
                    (name: "large", share: 1, cost: 3, tenants: (keys: 20, popularity: Zipf(exponent: 1.2))),
                ],
            ) }},
            services: {{ "api": (
                workers: 100,
                queue: (capacity: 10000),
                work: Constant(value: "1ms"),
                admission: [
                    RateLimit(limiter: (kind: "token_bucket", rate: "30/s", burst: 20), key: Tenant, shadow: {shadow}),
                    RateLimit(limiter: (kind: "gcra", rate: "500/s", burst: 50), shadow: {shadow}),
                ],
            ) }},
        )"#
        )
    };
    for seed in 1..=3 {
        let shadow = run_text_at(&scenario(true), seed);
        let enforced = run_text_at(&scenario(false), seed);
        let api = |r: &Report| service_report(r, "api").clone();
        let (s, e) = (api(&shadow), api(&enforced));
        assert!(s.failed_by_reason.is_empty(), "shadow refuses nothing");
        assert_eq!(s.ok, s.arrivals);
        let refused = e.failed_by_reason["rate_limited"];
        assert!(refused > 1_000, "seed {seed}: {refused}");
        // The two shadow layers count separately: a request both would refuse counts twice,
        // so compare with one layer at a time.
        let one = |shadow: bool, layer: usize| {
            let text = scenario(shadow);
            let lines: Vec<&str> = text.lines().collect();
            let keep: Vec<&str> = lines
                .iter()
                .enumerate()
                .filter(|(i, l)| {
                    !(l.contains("RateLimit(") && {
                        let first = lines.iter().position(|l| l.contains("RateLimit(")).unwrap();
                        *i != first + layer
                    })
                })
                .map(|(_, l)| *l)
                .collect();
            run_text_at(&keep.join("\n"), seed)
        };
        for layer in 0..2 {
            let s = one(true, layer);
            let e = one(false, layer);
            let refused = service_report(&e, "api").failed_by_reason["rate_limited"];
            assert_eq!(
                service_report(&s, "api").shadow_refusals,
                refused,
                "seed {seed}, layer {layer}"
            );
            assert!(refused > 100, "seed {seed}, layer {layer}: {refused}");
            // The costly class is refused more often than its share.
            let large = class_failures(class_report(&e, "c", "large"), "rate_limited") as f64;
            let small = class_failures(class_report(&e, "c", "small"), "rate_limited") as f64;
            assert!(large > small / 3.0, "seed {seed}, layer {layer}");
        }
    }
}

/// A service's downstream call carries the tenant and retry safety of the request it serves:
/// a per-tenant limit two hops away sees five tenants, and a class that may not be retried
/// is not retried at the second hop either.
#[test]
fn attributes_travel_with_the_request_through_every_hop() {
    let text = |retry: bool| {
        format!(
            r#"Scenario(
            name: "t",
            duration: "10s",
            clients: {{ "c": (
                load: Open(rate: Constant("200/s")),
                call: (target: "front", timeout: "1s"),
                classes: [(name: "a", share: 1, retry: {retry}, tenants: (keys: 5, first: 100))],
            ) }},
            services: {{
                "front": (workers: 50, work: Constant(value: "1ms"),
                    calls: [(target: "back", stack: [Retry((max_attempts: 3, backoff: (strategy: Exponential(delay_initial: "1ms", multiplier: 2.0, delay_max: "4ms"), jitter: None)))])]),
                "back": (workers: 50, work: Constant(value: "1ms"),
                    admission: [RateLimit(limiter: (kind: "token_bucket", rate: "10/s", burst: 10), key: Tenant)]),
            }},
        )"#
        )
    };
    let r = run_text_at(&text(true), 1);
    let back = service_report(&r, "back");
    // Five tenants of 10/s and a burst of 10 each over 10s (the last refill of each falls at
    // the end of the run); one tenant would admit 109.
    let admitted = back.arrivals - back.failed_by_reason["rate_limited"];
    assert_eq!(admitted, 5 * (10 + 10 * 10 - 1));
    let call = r.calls.iter().find(|c| c.caller == "front").unwrap();
    assert!(call.counts.retries > 1_000);
    let r = run_text_at(&text(false), 1);
    let call = r.calls.iter().find(|c| c.caller == "front").unwrap();
    assert_eq!(call.counts.retries, 0);
    assert_eq!(call.counts.attempts, call.counts.calls);
}

/// A client without classes reports none, and a Zipf over 10,000 keys reports the ten most
/// popular keys and the others in one line.
#[test]
fn many_tenants_are_reported_as_the_most_popular_and_the_others() {
    let text = r#"Scenario(
        name: "t",
        duration: "5s",
        clients: {
            "plain": (load: Open(rate: Constant("100/s")), call: (target: "api")),
            "zipf": (
                load: Open(rate: Constant("1000/s")),
                call: (target: "api"),
                classes: [(name: "all", share: 1, tenants: (keys: 10000, popularity: Zipf(exponent: 1.0)))],
            ),
        },
        services: { "api": (workers: 50, work: Constant(value: "1ms")) },
    )"#;
    let r = run_text_at(text, 1);
    assert!(client_report(&r, "plain").classes.is_empty());
    let all = class_report(&r, "zipf", "all");
    assert_eq!(all.tenants.len(), 11);
    let others = &all.tenants[10];
    assert_eq!((others.tenant.as_str(), others.keys), ("others", 9_990));
    let sum: u64 = all.tenants.iter().map(|t| t.traffic.offered).sum();
    assert_eq!(sum, all.traffic.offered);
    // Key 0 has weight 1 / H(10000) ≈ 10.2%.
    let top = all.tenants[0].traffic.offered as f64 / all.traffic.offered as f64;
    assert!((top - 0.102).abs() < 0.015, "{top}");
    let json = serde_json::to_value(&r).unwrap();
    assert!(json["clients"][0].get("classes").is_none());
    assert_eq!(
        json["clients"][1]["classes"][0]["tenants"][10]["keys"],
        9_990
    );
}
