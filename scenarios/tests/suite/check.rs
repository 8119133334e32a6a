//! `resim check`: malformed scenario files give one line with the file, the location and the
//! fix, and no input makes the parser panic.

use crate::support;

use proptest::prelude::*;
use scenarios::ScenarioError;
use scenarios::format::load::{load, parse};
use support::{Resim, resim};

const BASE: &str = r#"// a valid scenario that each case below breaks in one place
Scenario(
    name: "base",
    duration: "10s",
    clients: {
        "web": (
            load: Open(rate: Constant("100/s")),
            call: (target: "api", timeout: "1s", stack: [Retry((max_attempts: 3, backoff: (jitter: Full)))]),
        ),
    },
    services: {
        "api": (
            workers: 4,
            queue: (capacity: 50, discipline: Fifo),
            work: Exponential(mean: "10ms"),
            calls: [(target: "db")],
        ),
        "db": (workers: 2, work: Constant(value: "5ms")),
    },
    faults: [(at: "2s", duration: "1s", kind: Slowdown(service: "db", factor: 3.0))],
    expectations: [GoodputAtLeast(client: "web", after: "5s", min_ratio: 0.9)],
)
"#;

/// The one-line error for `BASE` with `from` replaced by `to` (which must occur in it).
fn check(from: &str, to: &str) -> String {
    assert!(
        BASE.contains(from),
        "the case must change the base: {from:?}"
    );
    let text = BASE.replacen(from, to, 1);
    match parse("bad.ron", &text) {
        Ok(_) => panic!("expected an error after replacing {from:?} with {to:?}"),
        Err(e) => located(&e, "bad.ron"),
    }
}

/// The one-line error of a file under `tests/malformed/`, read as `resim check` reads it.
fn check_file(name: &str) -> String {
    let path = format!("tests/malformed/{name}");
    match load(&path) {
        Ok(_) => panic!("expected an error for {path}"),
        Err(e) => located(&e, &path),
    }
}

/// The error as one line, after checking that it says where: `file:line:column: ` or
/// `file: field.path: `.
fn located(e: &ScenarioError, file: &str) -> String {
    let line = e.to_string();
    assert!(!line.contains('\n'), "one line: {line}");
    match e {
        ScenarioError::Syntax {
            line: l, column, ..
        } => {
            assert!(*l >= 1 && *column >= 1, "{line}");
            assert!(
                line.starts_with(&format!("{file}:{l}:{column}: ")),
                "{line}"
            );
        }
        ScenarioError::Invalid { error, .. } => {
            assert!(!error.field.is_empty(), "{line}");
            assert!(
                line.starts_with(&format!("{file}: {}: ", error.field)),
                "{line}"
            );
        }
        ScenarioError::Variant {
            line: l, column, ..
        } => {
            assert!(*l >= 1 && *column >= 1, "{line}");
            assert!(
                line.starts_with(&format!("{file}:{l}:{column}: variants.")),
                "{line}"
            );
        }
        ScenarioError::Read { .. }
        | ScenarioError::Override { .. }
        | ScenarioError::Cancelled { .. } => {
            panic!("not a problem of the text: {line}")
        }
    }
    line
}

/// `depth` mixtures, each inside the previous one.
fn nested_mixture(depth: usize) -> String {
    let mut dist = "Constant(value: \"1ms\")".to_string();
    for _ in 0..depth {
        dist = format!(
            "Mixture(components: [(weight: 1, dist: {dist}), (weight: 1, dist: Constant(value: \"2ms\"))])"
        );
    }
    dist
}

/// A client calling the first of `n` services, each calling the next; with `cycle`, the
/// last calls the first.
fn chain(n: usize, cycle: bool) -> String {
    let services: Vec<String> = (0..n)
        .map(|i| {
            let next = if i + 1 < n {
                format!(", calls: [(target: \"s{:05}\")]", i + 1)
            } else if cycle {
                ", calls: [(target: \"s00000\")]".to_string()
            } else {
                String::new()
            };
            format!("\"s{i:05}\": (workers: 4, work: Constant(value: \"1ms\"){next})")
        })
        .collect();
    format!(
        "Scenario(name: \"chain\", duration: \"10s\", clients: {{ \"c\": (load: Open(rate: Constant(\"10/s\")), call: (target: \"s00000\")) }}, services: {{ {} }})",
        services.join(",\n")
    )
}

#[test]
fn the_base_scenario_is_valid() {
    let s = parse("base.ron", BASE).unwrap();
    assert_eq!(s.services.len(), 2);
}

#[test]
fn malformed_files_get_one_line_with_location_and_fix() {
    let cases: &[(&str, &str, &str)] = &[
        ("typo in a field name", "workers: 4,", "wokers: 4,"),
        (
            "unknown field",
            "workers: 4,",
            "workers: 4, colour: \"red\",",
        ),
        ("wrong type", "workers: 4,", "workers: \"four\","),
        (
            "missing field",
            "\"db\": (workers: 2, work: Constant(value: \"5ms\"))",
            "\"db\": (workers: 2)",
        ),
        ("syntax: missing comma", "workers: 4,", "workers: 4"),
        (
            "unit-less duration",
            "duration: \"10s\"",
            "duration: \"10\"",
        ),
        ("negative duration", "timeout: \"1s\"", "timeout: \"-1s\""),
        ("duration as a number", "timeout: \"1s\"", "timeout: 1"),
        (
            "rate without unit",
            "Constant(\"100/s\")",
            "Constant(\"100\")",
        ),
        ("unknown variant", "Exponential(mean", "Exponentia(mean"),
        ("unknown jitter", "jitter: Full", "jitter: Fully"),
        (
            "unknown service in a call",
            "calls: [(target: \"db\")]",
            "calls: [(target: \"dbx\")]",
        ),
        (
            "unknown client target",
            "call: (target: \"api\"",
            "call: (target: \"apj\"",
        ),
        (
            "cycle in the call graph",
            "(workers: 2, work: Constant(value: \"5ms\"))",
            "(workers: 2, work: Constant(value: \"5ms\"), calls: [(target: \"api\")])",
        ),
        ("zero workers", "workers: 4,", "workers: 0,"),
        ("zero queue capacity", "capacity: 50", "capacity: 0"),
        (
            "impossible ratio",
            "Slowdown(service: \"db\", factor: 3.0)",
            "ErrorRate(service: \"db\", error_ratio: 1.5)",
        ),
        (
            "impossible expectation ratio",
            "min_ratio: 0.9",
            "min_ratio: 90",
        ),
        (
            "fault aimed at nothing",
            "Slowdown(service: \"db\"",
            "Slowdown(service: \"cache\"",
        ),
        ("fault after the run", "at: \"2s\"", "at: \"20s\""),
        (
            "cache flush without a cache",
            "Slowdown(service: \"db\", factor: 3.0)",
            "CacheFlush(service: \"db\")",
        ),
        (
            "expectation on an unknown client",
            "client: \"web\"",
            "client: \"mobile\"",
        ),
        (
            "impossible distribution",
            "Exponential(mean: \"10ms\")",
            "LogNormal(median: \"40ms\", p99: \"20ms\")",
        ),
        ("zero retry attempts", "max_attempts: 3", "max_attempts: 0"),
        (
            "breaker threshold above 100%",
            "stack: [Retry((max_attempts: 3, backoff: (jitter: Full)))]",
            "stack: [Breaker((failure_rate_threshold: 150))]",
        ),
        (
            "codel interval not above target",
            "discipline: Fifo",
            "discipline: CoDel(target: \"100ms\", interval: \"5ms\")",
        ),
        (
            "steps out of order",
            "Constant(\"100/s\")",
            "Steps([(at: \"5s\", rate: \"1/s\"), (at: \"1s\", rate: \"2/s\")])",
        ),
        (
            "bucket longer than the run",
            "duration: \"10s\",",
            "duration: \"10s\", bucket: \"1m\",",
        ),
        ("unclosed string", "name: \"base\"", "name: \"base"),
        (
            "run length as a bare number",
            "duration: \"10s\"",
            "duration: 60",
        ),
        (
            "rate as a bare number",
            "Constant(\"100/s\")",
            "Constant(100)",
        ),
        (
            "ejection beyond the clock",
            "workers: 4,",
            "workers: 4, outlier: (ejection: \"1000000y\"),",
        ),
        (
            "rate beyond the clock",
            "Constant(\"100/s\")",
            "Constant(\"1e308/ns\")",
        ),
        (
            "service given twice",
            "\"db\": (workers: 2,",
            "\"api\": (workers: 2,",
        ),
        (
            "client given twice",
            "clients: {",
            "clients: { \"web\": (load: Open(rate: Constant(\"1/s\")), call: (target: \"db\")),",
        ),
        (
            "a name that ends with a period",
            "\"db\": (workers: 2,",
            "\"db.\": (workers: 2,",
        ),
        (
            "dots for a field name",
            "    name: \"base\",",
            "    ...: \"base\",",
        ),
        (
            "field given twice",
            "workers: 4,",
            "workers: 4, workers: 5,",
        ),
        (
            "number for a structure",
            "queue: (capacity: 50, discipline: Fifo)",
            "queue: 50",
        ),
        ("enum name in quotes", "jitter: Full", "jitter: \"Full\""),
        ("number for an enum", "discipline: Fifo", "discipline: 3"),
        (
            "number for a layer",
            "Retry((max_attempts: 3, backoff: (jitter: Full)))",
            "Retry(3)",
        ),
        (
            "typo in a single-parenthesis layer",
            "Retry((max_attempts: 3, backoff: (jitter: Full)))",
            "Retry(max_attemps: 3)",
        ),
        ("string for a number", "factor: 3.0", "factor: \"3.0\""),
        (
            "name without quotes",
            "call: (target: \"api\"",
            "call: (target: api",
        ),
        (
            "buckets beyond the memory budget",
            "duration: \"10s\"",
            "duration: \"100y\"",
        ),
        (
            "users beyond the memory budget",
            "load: Open(rate: Constant(\"100/s\"))",
            "load: Closed(users: 4294967295, think: Constant(value: \"1s\"))",
        ),
        (
            "breaker windows beyond the budget",
            "calls: [(target: \"db\")],",
            "calls: [(target: \"db\", stack: [Breaker((sliding_window_size: 1000000))])], replicas: 10000,",
        ),
        (
            "rate beyond the rate limit",
            "Constant(\"100/s\")",
            "Constant(\"2000000/s\")",
        ),
        (
            "expectation window inside a bucket",
            "after: \"5s\", min_ratio",
            "after: \"5.2s\", until: \"5.8s\", min_ratio",
        ),
        (
            "load spike beyond the rate limit",
            "Slowdown(service: \"db\", factor: 3.0)",
            "LoadSpike(client: \"web\", factor: 1e6)",
        ),
        (
            "verdict without a trigger that ends",
            "duration: \"1s\", kind: Slowdown(service: \"db\", factor: 3.0))],\n    expectations: [GoodputAtLeast(client: \"web\", after: \"5s\", min_ratio: 0.9)]",
            "kind: Slowdown(service: \"db\", factor: 3.0))],\n    expectations: [Metastable()]",
        ),
        (
            "verdict on an unknown client",
            "GoodputAtLeast(client: \"web\", after: \"5s\", min_ratio: 0.9)",
            "Recovers(client: \"mobile\", within: \"5s\")",
        ),
        (
            "verdict threshold above 1",
            "    expectations: [",
            "    verdict: (healthy_ratio: 1.5),\n    expectations: [",
        ),
        (
            "classes whose shares sum to 0",
            "call: (target: \"api\", timeout: \"1s\", stack: [Retry((max_attempts: 3, backoff: (jitter: Full)))]),",
            "call: (target: \"api\", timeout: \"1s\", stack: [Retry((max_attempts: 3, backoff: (jitter: Full)))]), classes: [(name: \"a\", share: 0), (name: \"b\", share: 0)],",
        ),
        (
            "tenants over zero keys",
            "call: (target: \"api\", timeout: \"1s\", stack: [Retry((max_attempts: 3, backoff: (jitter: Full)))]),",
            "call: (target: \"api\", timeout: \"1s\", stack: [Retry((max_attempts: 3, backoff: (jitter: Full)))]), classes: [(name: \"a\", share: 1, tenants: (keys: 0))],",
        ),
        (
            "priority level out of range",
            "call: (target: \"api\", timeout: \"1s\", stack: [Retry((max_attempts: 3, backoff: (jitter: Full)))]),",
            "call: (target: \"api\", timeout: \"1s\", stack: [Retry((max_attempts: 3, backoff: (jitter: Full)))]), classes: [(name: \"a\", share: 1, priority: Level(64))],",
        ),
        (
            "class cost of zero",
            "call: (target: \"api\", timeout: \"1s\", stack: [Retry((max_attempts: 3, backoff: (jitter: Full)))]),",
            "call: (target: \"api\", timeout: \"1s\", stack: [Retry((max_attempts: 3, backoff: (jitter: Full)))]), classes: [(name: \"a\", share: 1, cost: 0)],",
        ),
        (
            "class declared twice",
            "call: (target: \"api\", timeout: \"1s\", stack: [Retry((max_attempts: 3, backoff: (jitter: Full)))]),",
            "call: (target: \"api\", timeout: \"1s\", stack: [Retry((max_attempts: 3, backoff: (jitter: Full)))]), classes: [(name: \"a\", share: 1), (name: \"a\", share: 2)],",
        ),
        (
            "unknown class in an expectation",
            "GoodputAtLeast(client: \"web\", after: \"5s\", min_ratio: 0.9)",
            "ClassGoodputAtLeast(client: \"web\", class: \"gold\", min_ratio: 0.9)",
        ),
        (
            "unknown criticality",
            "call: (target: \"api\", timeout: \"1s\", stack: [Retry((max_attempts: 3, backoff: (jitter: Full)))]),",
            "call: (target: \"api\", timeout: \"1s\", stack: [Retry((max_attempts: 3, backoff: (jitter: Full)))]), classes: [(name: \"a\", share: 1, priority: Critical_Plus)],",
        ),
        (
            "priority shedder thresholds decrease",
            "workers: 2, work",
            "workers: 2, admission: [Priority(shed_thresholds_percent: [90, 80])], work",
        ),
        (
            "tenant rate limit without keys",
            "workers: 2, work",
            "workers: 2, admission: [RateLimit(limiter: (kind: \"token_bucket\", rate: \"10/s\", burst: 10), key: Tenant, max_keys: 0)], work",
        ),
        (
            "tenant keys beyond the cap",
            "call: (target: \"api\", timeout: \"1s\", stack: [Retry((max_attempts: 3, backoff: (jitter: Full)))]),",
            "call: (target: \"api\", timeout: \"1s\", stack: [Retry((max_attempts: 3, backoff: (jitter: Full)))]), classes: [(name: \"a\", share: 1, tenants: (keys: 2000000, popularity: Zipf(exponent: 1.0)))],",
        ),
        (
            "lease larger than the bucket",
            "work: Exponential(mean: \"10ms\"),",
            "work: Exponential(mean: \"10ms\"), admission: [Distributed(limiter: (kind: \"token_bucket\", rate: \"100/s\", burst: 20), state: Lease(store: \"db\", batch: 50))],",
        ),
        (
            "limiter store that is not a service",
            "work: Exponential(mean: \"10ms\"),",
            "work: Exponential(mean: \"10ms\"), admission: [Distributed(limiter: (kind: \"token_bucket\", rate: \"100/s\", burst: 20), state: Central(store: \"redis\"))],",
        ),
        (
            "limiter store that is its own service",
            "work: Exponential(mean: \"10ms\"),",
            "work: Exponential(mean: \"10ms\"), admission: [Distributed(limiter: (kind: \"token_bucket\", rate: \"100/s\", burst: 20), state: Central(store: \"api\"))],",
        ),
        (
            "clock skew without replica clocks",
            "work: Exponential(mean: \"10ms\"),",
            "work: Exponential(mean: \"10ms\"), admission: [Distributed(limiter: (kind: \"token_bucket\", rate: \"100/s\", burst: 20), state: Central(store: \"db\", skew: Constant(value: \"5ms\")))],",
        ),
        (
            "store timeout on a local limiter",
            "work: Exponential(mean: \"10ms\"),",
            "work: Exponential(mean: \"10ms\"), admission: [Distributed(limiter: (kind: \"token_bucket\", rate: \"100/s\", burst: 20), timeout: \"10ms\")],",
        ),
        (
            "fan-out to zero leaves",
            "calls: [(target: \"db\")],",
            "calls: [(target: \"db\", fan_out: (n: 0))],",
        ),
        (
            "fan-out quorum above n",
            "calls: [(target: \"db\")],",
            "calls: [(target: \"db\", fan_out: (n: 10, quorum: 11))],",
        ),
        (
            "one-shot population of no one",
            "Open(rate: Constant(\"100/s\"))",
            "OneShot(users: 0)",
        ),
        (
            "store of no rows",
            "\"db\": (workers: 2,",
            "\"db\": (store: (rows: 0), workers: 2,",
        ),
        (
            "store with a negative Zipf skew",
            "\"db\": (workers: 2,",
            "\"db\": (store: (rows: 10, key: Zipf(exponent: -1.0)), workers: 2,",
        ),
        (
            "xfetch without a ttl",
            "calls: [(target: \"db\")],",
            "calls: [(target: \"db\")], cache: (hit_ratio: 0.9, xfetch: (beta: 1.0)),",
        ),
        (
            "cache ttl keys beyond the budget",
            "calls: [(target: \"db\")],",
            "calls: [(target: \"db\")], replicas: 10000, cache: (hit_ratio: 0.9, keys: 100000000, ttl: \"10s\"),",
        ),
        (
            "xfetch beta of zero",
            "calls: [(target: \"db\")],",
            "calls: [(target: \"db\")], cache: (hit_ratio: 0.9, ttl: \"10s\", xfetch: (beta: 0.0)),",
        ),
        (
            "store op misspelled",
            "\"db\": (workers: 2,",
            "\"db\": (store: (op: OccUpdated), workers: 2,",
        ),
        (
            "cells not dividing the replicas",
            "\"db\": (workers: 2,",
            "\"db\": (replicas: 8, isolation: Cells(count: 3), workers: 2,",
        ),
        (
            "more cells than replicas",
            "\"db\": (workers: 2,",
            "\"db\": (replicas: 2, isolation: Cells(count: 4), workers: 2,",
        ),
        (
            "zero cells",
            "\"db\": (workers: 2,",
            "\"db\": (replicas: 2, isolation: Cells(count: 0), workers: 2,",
        ),
        (
            "shard larger than the replicas",
            "\"db\": (workers: 2,",
            "\"db\": (replicas: 8, isolation: ShuffleSharding(shard_size: 9), workers: 2,",
        ),
        (
            "shard of no replica",
            "\"db\": (workers: 2,",
            "\"db\": (replicas: 8, isolation: ShuffleSharding(shard_size: 0), workers: 2,",
        ),
        (
            "isolation misspelled",
            "\"db\": (workers: 2,",
            "\"db\": (replicas: 8, isolation: ShuffleShard(shard_size: 2), workers: 2,",
        ),
        (
            "poison of an unknown service",
            "Slowdown(service: \"db\", factor: 3.0)",
            "Poison(service: \"dbs\", tenant: 0)",
        ),
        (
            "poison of a tenant no one sends",
            "Slowdown(service: \"db\", factor: 3.0)",
            "Poison(service: \"db\", tenant: 7)",
        ),
        (
            "blast radius of a plain service",
            "GoodputAtLeast(client: \"web\", after: \"5s\", min_ratio: 0.9)",
            "BlastRadiusAtMost(service: \"db\", max_ratio: 0.1)",
        ),
        (
            "autoscale min above max",
            "\"db\": (workers: 2,",
            "\"db\": (autoscale: (min_replicas: 4, max_replicas: 2, metric: Utilisation(target_ratio: 0.6)), workers: 2,",
        ),
        (
            "autoscale target outside (0, 1]",
            "\"db\": (workers: 2,",
            "\"db\": (autoscale: (min_replicas: 1, max_replicas: 4, metric: Utilisation(target_ratio: 1.5)), workers: 2,",
        ),
        (
            "autoscale period of zero",
            "\"db\": (workers: 2,",
            "\"db\": (autoscale: (min_replicas: 1, max_replicas: 4, metric: QueueDepth(per_replica: 5.0), period: \"0s\"), workers: 2,",
        ),
        (
            "autoscale starts outside min/max",
            "\"db\": (workers: 2,",
            "\"db\": (replicas: 8, autoscale: (min_replicas: 1, max_replicas: 4, metric: Utilisation(target_ratio: 0.6)), workers: 2,",
        ),
        (
            "cold start factor below 1",
            "\"db\": (workers: 2,",
            "\"db\": (cold_start: (factor: 0.5, warmup: \"10s\"), workers: 2,",
        ),
        (
            "deploy batch above the replicas",
            "(at: \"2s\", duration: \"1s\", kind: Slowdown(service: \"db\", factor: 3.0))",
            "(at: \"2s\", kind: Deploy(service: \"db\", batch: 2, downtime: \"5s\"))",
        ),
        (
            "deploy with a duration",
            "duration: \"1s\", kind: Slowdown(service: \"db\", factor: 3.0)",
            "duration: \"1s\", kind: Deploy(service: \"db\", batch: 1, downtime: \"5s\")",
        ),
        (
            "rfc codel interval below target",
            "discipline: Fifo",
            "discipline: CoDelRfc(target: \"50ms\", interval: \"10ms\")",
        ),
        (
            "rfc codel interval above 1h",
            "discipline: Fifo",
            "discipline: CoDelRfc(interval: \"2h\")",
        ),
        (
            "tenant bulkhead of zero",
            "workers: 2, work",
            "workers: 2, admission: [TenantBulkhead(max_concurrent: 0)], work",
        ),
        (
            "tenant bulkhead max_keys of zero",
            "workers: 2, work",
            "workers: 2, admission: [TenantBulkhead(max_concurrent: 4, max_keys: 0)], work",
        ),
        (
            "two tenant bulkheads",
            "workers: 2, work",
            "workers: 2, admission: [TenantBulkhead(max_concurrent: 4), TenantBulkhead(max_concurrent: 8)], work",
        ),
        (
            "pause without a duration",
            "(at: \"2s\", duration: \"1s\", kind: Slowdown(service: \"db\", factor: 3.0))",
            "(at: \"2s\", kind: Pause(service: \"db\"))",
        ),
        (
            "pause every shorter than it",
            "kind: Slowdown(service: \"db\", factor: 3.0)",
            "kind: Pause(service: \"db\", every: Some(\"500ms\"))",
        ),
        (
            "pause of more replicas than exist",
            "kind: Slowdown(service: \"db\", factor: 3.0)",
            "kind: Pause(service: \"db\", replicas: Some(3))",
        ),
        (
            "zones of zero",
            "\"db\": (workers: 2,",
            "\"db\": (zones: Some(0), workers: 2,",
        ),
        (
            "zones above the replicas",
            "\"db\": (workers: 2,",
            "\"db\": (replicas: 2, zones: Some(3), workers: 2,",
        ),
        (
            "zone failure out of range",
            "\"db\": (workers: 2, work: Constant(value: \"5ms\")),\n    },\n    faults: [(at: \"2s\", duration: \"1s\", kind: Slowdown(service: \"db\", factor: 3.0))],",
            "\"db\": (replicas: 3, zones: Some(3), workers: 2, work: Constant(value: \"5ms\")),\n    },\n    faults: [(at: \"2s\", duration: \"1s\", kind: ZoneFailure(zone: 3))],",
        ),
        (
            "zone failure without zoned services",
            "kind: Slowdown(service: \"db\", factor: 3.0)",
            "kind: ZoneFailure(zone: 0)",
        ),
        (
            "client zone without zoned services",
            "call: (target: \"api\", timeout: \"1s\",",
            "zone: Some(0), call: (target: \"api\", timeout: \"1s\",",
        ),
        (
            "liveness threshold of zero",
            "\"db\": (workers: 2,",
            "\"db\": (liveness: Some((failure_threshold: 0)), workers: 2,",
        ),
        (
            "liveness timeout of zero",
            "\"db\": (workers: 2,",
            "\"db\": (liveness: Some((timeout: \"0s\")), workers: 2,",
        ),
        (
            "4xx ratio above 1",
            "kind: Slowdown(service: \"db\", factor: 3.0)",
            "kind: ClientErrorRate(service: \"db\", error_ratio: 1.5)",
        ),
        (
            "429 Retry-After of zero",
            "kind: Slowdown(service: \"db\", factor: 3.0)",
            "kind: TooManyRequests(service: \"db\", refused_ratio: 0.5, retry_after: After(\"0s\"))",
        ),
        (
            "429 Retry-After past the run",
            "kind: Slowdown(service: \"db\", factor: 3.0)",
            "kind: TooManyRequests(service: \"db\", refused_ratio: 0.5, retry_after: Until(\"1m\"))",
        ),
        (
            "adaptive timeout beside a timeout",
            "stack: [Retry(",
            "stack: [AdaptiveTimeout(), Retry(",
        ),
        (
            "adaptive timeout floor above ceiling",
            "timeout: \"1s\", stack: [Retry(",
            "stack: [AdaptiveTimeout(floor: \"5s\", ceiling: \"1s\"), Retry(",
        ),
        (
            "pace on a service without a limiter",
            "stack: [Retry(",
            "stack: [Pace(), Retry(",
        ),
        (
            "pace that never holds",
            "stack: [Retry(",
            "stack: [Pace(hold_max: \"0s\"), Retry(",
        ),
        (
            "pool of size 0",
            "calls: [(target: \"db\")]",
            "calls: [(target: \"db\", pool: (size: 0))]",
        ),
        (
            "pool checkout timeout of zero",
            "calls: [(target: \"db\")]",
            "calls: [(target: \"db\", pool: (checkout_timeout: \"0s\"))]",
        ),
        (
            "pool with an unknown field",
            "calls: [(target: \"db\")]",
            "calls: [(target: \"db\", pool: (maximumPoolSize: 10))]",
        ),
        (
            "pool on a client's call",
            "call: (target: \"api\", timeout: \"1s\",",
            "call: (target: \"api\", pool: (size: 4), timeout: \"1s\",",
        ),
        (
            "lock wait timeout of zero",
            "\"db\": (workers: 2,",
            "\"db\": (store: (op: Locked(wait_timeout: \"0s\")), workers: 2,",
        ),
        (
            "lock queue of zero",
            "\"db\": (workers: 2,",
            "\"db\": (store: (op: Locked(queue_max: 0)), workers: 2,",
        ),
        (
            "max_connections of 0",
            "\"db\": (workers: 2,",
            "\"db\": (max_connections: 0, workers: 2,",
        ),
        (
            "histogram without buckets",
            "Exponential(mean: \"10ms\")",
            "Histogram(buckets: [])",
        ),
        (
            "histogram counts that decrease",
            "Exponential(mean: \"10ms\")",
            "Histogram(buckets: [(\"5ms\", 120), (\"10ms\", 300), (\"25ms\", 290)])",
        ),
        (
            "histogram bounds not increasing",
            "Exponential(mean: \"10ms\")",
            "Histogram(buckets: [(\"5ms\", 120), (\"5ms\", 300)])",
        ),
        (
            "histogram +Inf before a bound",
            "Exponential(mean: \"10ms\")",
            "Histogram(buckets: [(\"+Inf\", 120), (\"5ms\", 300)])",
        ),
        (
            "histogram of zero counts",
            "Exponential(mean: \"10ms\")",
            "Histogram(buckets: [(\"5ms\", 0), (\"+Inf\", 0)])",
        ),
        (
            "histogram bound in bare seconds",
            "Exponential(mean: \"10ms\")",
            "Histogram(buckets: [(0.005, 120), (\"+Inf\", 130)])",
        ),
        (
            "percentiles: only one",
            "Exponential(mean: \"10ms\")",
            "Percentiles(p99: \"40ms\")",
        ),
        (
            "percentiles that do not increase",
            "Exponential(mean: \"10ms\")",
            "Percentiles(p50: \"4ms\", p90: \"12ms\", p99: \"10ms\")",
        ),
        (
            "percentiles: unknown name",
            "Exponential(mean: \"10ms\")",
            "Percentiles(p50: \"4ms\", p98: \"30ms\")",
        ),
        (
            "samples: no such file",
            "Exponential(mean: \"10ms\")",
            "Empirical(file: \"tests/malformed/no-such-file.txt\")",
        ),
        (
            "samples: a line that is no duration",
            "Exponential(mean: \"10ms\")",
            "Empirical(file: \"tests/malformed/samples-bad-line.txt\")",
        ),
        (
            "samples: a bare number, no unit",
            "Exponential(mean: \"10ms\")",
            "Empirical(file: \"tests/malformed/samples-bare.txt\")",
        ),
        (
            "samples: unknown unit",
            "Exponential(mean: \"10ms\")",
            "Empirical(file: \"tests/malformed/samples-bare.txt\", unit: \"msec\")",
        ),
        (
            "samples: no such CSV column",
            "Exponential(mean: \"10ms\")",
            "Empirical(file: \"tests/malformed/samples-table.csv\", column: \"latency\")",
        ),
        (
            "samples: a weight that is no number",
            "Exponential(mean: \"10ms\")",
            "Empirical(file: \"tests/malformed/samples-table.csv\", column: \"latency_ms\", unit: \"ms\", weights: \"count\")",
        ),
        (
            "samples: weights of a plain file",
            "Exponential(mean: \"10ms\")",
            "Empirical(file: \"tests/malformed/samples-bare.txt\", weights: \"count\")",
        ),
        (
            "samples: values and a file",
            "Exponential(mean: \"10ms\")",
            "Empirical(values: [\"1ms\"], file: \"tests/malformed/samples-bare.txt\")",
        ),
        (
            "call_mode and stages",
            "calls: [(target: \"db\")],",
            "calls: [(target: \"db\")],\n            call_mode: FanOut, stages: [All([0])],",
        ),
        (
            "call_ratio above 1",
            "calls: [(target: \"db\")],",
            "calls: [(target: \"db\", call_ratio: 1.5)],",
        ),
        (
            "call_ratio of a client's call",
            "call: (target: \"api\",",
            "call: (target: \"api\", call_ratio: 0.5,",
        ),
        (
            "an empty stage",
            "calls: [(target: \"db\")],",
            "calls: [(target: \"db\")], stages: [All([0]), Pick([])],",
        ),
        (
            "a Pick stage without weight",
            "calls: [(target: \"db\")],",
            "calls: [(target: \"db\", weight: 0)], stages: [Pick([0])],",
        ),
        (
            "a stage names no call",
            "calls: [(target: \"db\")],",
            "calls: [(target: \"db\")], stages: [All([0, 1])],",
        ),
        (
            "a call in two stages",
            "calls: [(target: \"db\")],",
            "calls: [(target: \"db\")], stages: [All([0]), All([0])],",
        ),
        (
            "a call in no stage",
            "calls: [(target: \"db\")],",
            "calls: [(target: \"db\"), (target: \"db\")], stages: [All([1])],",
        ),
        (
            "a stage kind misspelt",
            "calls: [(target: \"db\")],",
            "calls: [(target: \"db\")], stages: [Any([0])],",
        ),
    ];
    assert!(cases.len() >= 20);
    let mut all = String::new();
    for (what, from, to) in cases {
        let line = check(from, to);
        all.push_str(&format!("{what:<36} {line}\n"));
    }
    let deep = nested_mixture(18);
    let generated: &[(&str, &str, &str)] =
        &[("nesting too deep", "Exponential(mean: \"10ms\")", &deep)];
    for (what, from, to) in generated {
        let line = check(from, to);
        all.push_str(&format!("{what:<36} {line}\n"));
    }
    let cycle = parse("chain.ron", &chain(25_000, true)).unwrap_err();
    let line = located(&cycle, "chain.ron");
    all.push_str(&format!("{:<36} {line}\n", "cycle through 25000 services"));
    for (what, file) in [
        ("not UTF-8", "not-utf8.ron"),
        ("UTF-16", "utf16.ron"),
        ("a variant's value out of range", "variant-ratio.ron"),
    ] {
        let line = check_file(file);
        all.push_str(&format!("{what:<36} {line}\n"));
    }
    insta::with_settings!({ description => "one line per malformed variant of the base scenario in tests/suite/check.rs" }, {
        insta::assert_snapshot!("malformed_files", all);
    });
}

/// A retry breaker's threshold of 0 would refuse every retry: the error says where, the limits
/// and what to write for no retries.
#[test]
fn a_retry_breaker_at_zero_says_where_and_what_to_write_instead() {
    let e = check(
        "backoff: (jitter: Full)))",
        "backoff: (jitter: Full), budget: RetryBreaker(failure_rate_threshold: 0)))",
    );
    assert!(
        e.starts_with("bad.ron: clients.web.call.stack[0].budget.RetryBreaker.failure_rate_threshold: must be in (0, 100], got 0")
            && e.contains("say max_attempts: 1"),
        "{e}"
    );
}

#[test]
fn pattern_layers_take_one_pair_of_parentheses_or_two() {
    let layers = [
        "Retry(max_attempts: 3, backoff: (jitter: Full), budget: Window(budget_percent: 10, window: \"5s\"))",
        "Breaker(failure_rate_threshold: 20, half_open: (kind: \"single_probe\"))",
        "Bulkhead(max_concurrent_calls: 10, max_wait_duration: \"0s\")",
        "Limiter(kind: \"token_bucket\", rate: \"100/s\", burst: 100)",
        "Hedge(delay: Fixed(delay: \"50ms\"), max_hedged_attempts: 1)",
        "Fallback(use_cache: true, cache_age_max: \"2s\", use_static: false)",
        "Throttle(accepts_multiplier: 2, window: \"10s\", bucket_count: 10)",
    ];
    let doubled = |layer: &str| {
        let (name, rest) = layer.split_once('(').unwrap();
        let rest = rest.replace(
            "Window(budget_percent: 10, window: \"5s\")",
            "Window((budget_percent: 10, window: \"5s\"))",
        );
        format!("{name}(({rest})")
    };
    let stack = "stack: [Retry((max_attempts: 3, backoff: (jitter: Full)))]";
    for layer in layers {
        let one = BASE.replacen(stack, &format!("stack: [{layer}]"), 1);
        let two = BASE.replacen(stack, &format!("stack: [{}]", doubled(layer)), 1);
        let one = parse("single.ron", &one).unwrap_or_else(|e| panic!("{layer}: {e}"));
        let two = parse("double.ron", &two).unwrap_or_else(|e| panic!("{layer}: {e}"));
        assert_eq!(one, two, "{layer}");
        assert_eq!(one.clients["web"].call.stack.len(), 1);
    }

    let admission = "workers: 4,";
    let with =
        |text: &str| BASE.replacen(admission, &format!("workers: 4, admission: [{text}],"), 1);
    let one = parse(
        "single.ron",
        &with("Concurrency(kind: \"aimd\"), Limiter(kind: \"gcra\", rate: \"100/s\", burst: 100)"),
    )
    .unwrap();
    let two = parse(
        "double.ron",
        &with(
            "Concurrency((kind: \"aimd\")), Limiter((kind: \"gcra\", rate: \"100/s\", burst: 100))",
        ),
    )
    .unwrap();
    assert_eq!(one, two);
}

#[test]
fn a_layer_or_controller_left_to_its_documented_defaults_parses_with_them() {
    use patterns::shedder::{AdaptiveThrottleConfig, PidConfig};
    use scenarios::format::schema::{Admission, Layer};
    let stack = "stack: [Retry((max_attempts: 3, backoff: (jitter: Full)))]";
    for layer in [
        "Throttle()",
        "Throttle(())",
        "Throttle(accepts_multiplier: 3)",
    ] {
        let text = BASE.replacen(stack, &format!("stack: [{layer}]"), 1);
        let s = parse("throttle.ron", &text).unwrap_or_else(|e| panic!("{layer}: {e}"));
        let expected = AdaptiveThrottleConfig {
            accepts_multiplier: if layer.contains('3') { 3.0 } else { 2.0 },
            ..AdaptiveThrottleConfig::default()
        };
        assert_eq!(
            s.clients["web"].call.stack,
            [Layer::Throttle(expected)],
            "{layer}"
        );
    }
    let admission = "workers: 4,";
    for pid in [
        "Pid()",
        "Pid(interval: \"50ms\")",
        "Pid(controller: (setpoint: 10))",
    ] {
        let text = BASE.replacen(admission, &format!("workers: 4, admission: [{pid}],"), 1);
        let s = parse("pid.ron", &text).unwrap_or_else(|e| panic!("{pid}: {e}"));
        let Admission::Pid { controller, .. } = &s.services["api"].admission[0] else {
            panic!("{pid}: {:?}", s.services["api"].admission)
        };
        let setpoint = if pid.contains("setpoint") { 10.0 } else { 20.0 };
        assert_eq!(
            *controller,
            PidConfig {
                setpoint,
                ..PidConfig::default()
            },
            "{pid}"
        );
    }
}

#[test]
fn a_call_chain_of_25000_services_is_checked_without_recursion() {
    let s = parse("chain.ron", &chain(25_000, false)).unwrap();
    assert_eq!(s.services.len(), 25_000);
}

#[test]
fn nesting_up_to_the_limit_parses_runs_and_replays() {
    let text = BASE.replacen("Exponential(mean: \"10ms\")", &nested_mixture(17), 1);
    let s = parse("deep.ron", &text).unwrap();
    let options = scenarios::RunOptions {
        max_events: Some(20_000),
        ..scenarios::RunOptions::default()
    };
    let a = scenarios::run(&s, "deep.ron", &options).unwrap();
    let b = scenarios::run(&s, "deep.ron", &options).unwrap();
    assert_eq!(a.report.digest, b.report.digest);
}

#[test]
fn the_readme_shows_what_a_run_over_the_memory_budget_prints() {
    let entry = scenarios::cli::library::find("metastable-retry").unwrap();
    let s = parse(entry.name, entry.text).unwrap();
    let options = scenarios::RunOptions {
        bucket: Some("1ns".parse().unwrap()),
        ..scenarios::RunOptions::default()
    };
    let e = scenarios::run(&s, entry.name, &options).unwrap_err();
    let line = located(&e, entry.name);
    let readme = std::fs::read_to_string("../README.md").unwrap();
    assert!(readme.contains(&format!("\n{line}\n")), "{line}");
}

#[test]
fn raised_limits_let_a_scenario_through_and_stay_with_it() {
    use scenarios::format::limits::RunLimits;
    let text = BASE.replacen("duration: \"10s\"", "duration: \"100y\"", 1);
    assert!(parse("big.ron", &text).is_err());
    let limits = RunLimits {
        memory_max: 64 << 40,
        ..RunLimits::default()
    };
    let s = scenarios::format::load::parse_with("big.ron", &text, &limits).unwrap();
    assert_eq!(s.limits, limits);
    // A run's overrides are validated against the same limits.
    let options = scenarios::RunOptions {
        bucket: Some("1ns".parse().unwrap()),
        ..scenarios::RunOptions::default()
    };
    let e = scenarios::run(&s, "big.ron", &options)
        .unwrap_err()
        .to_string();
    assert!(e.contains("more than the memory budget of 64 TiB"), "{e}");
}

#[test]
fn scenarios_built_in_rust_are_held_to_the_same_clock() {
    use scenarios::format::schema::Outlier;
    use sim_core::SimDuration;
    let mut s = parse("base.ron", BASE).unwrap();
    s.services.get_mut("api").unwrap().outlier = Some(Outlier {
        consecutive_failures: 1,
        ejection: SimDuration::from_secs(10_000_000_000),
        max_ejection_percent: 100.0,
    });
    let e = scenarios::format::validate::validate(&s)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "services.api.outlier.ejection: must be at most 100 years (\"100y\"), got 10000000000s"
    );
}

#[test]
fn the_command_line_raises_the_limits() {
    let dir = std::env::temp_dir().join(format!("resim-check-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    };
    let long = write(
        "long.ron",
        BASE.replacen("duration: \"10s\"", "duration: \"100y\"", 1),
    );
    let Resim {
        code, stderr: err, ..
    } = resim(&["check", &long]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("raise the budget with --max-memory"), "{err}");
    let Resim {
        code,
        stdout: out,
        stderr: err,
    } = resim(&["check", &long, "--max-memory", "64TiB"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(": ok ("), "{out}");

    let fast = write(
        "fast.ron",
        BASE.replacen("Constant(\"100/s\")", "Constant(\"2000000/s\")", 1),
    );
    assert_eq!(resim(&["check", &fast]).code, 2);
    assert_eq!(resim(&["check", &fast, "--max-rate", "2000000/s"]).code, 0);

    // A value the flag cannot take is bad input too.
    let Resim {
        code, stderr: err, ..
    } = resim(&["check", &long, "--max-memory", "lots"]);
    assert_eq!(code, 2, "{err}");

    let Resim {
        code, stderr: err, ..
    } = resim(&["run", "metastable-retry", "--bucket", "1ns"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("metastable-retry: bucket: "), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn resim_check_reads_files_that_are_not_utf8_and_says_where() {
    let Resim {
        code, stderr: err, ..
    } = resim(&["check", "tests/malformed/not-utf8.ron"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        "tests/malformed/not-utf8.ron:4:24: the file is not UTF-8 text (byte 0xe9 here); save it as UTF-8"
    );
}

#[test]
fn an_empty_file_says_where() {
    let e = parse("empty.ron", "").unwrap_err().to_string();
    assert!(e.starts_with("empty.ron:1:1: "), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Cutting, duplicating or replacing a piece of a valid file never panics.
    #[test]
    fn mutated_files_never_panic(at in 0usize..BASE.len(), len in 0usize..40, insert in "[ -~]{0,12}") {
        let mut chars: Vec<char> = BASE.chars().collect();
        let at = at.min(chars.len());
        let end = (at + len).min(chars.len());
        chars.splice(at..end, insert.chars());
        let text: String = chars.into_iter().collect();
        if let Err(e) = parse("m.ron", &text) {
            prop_assert!(!e.to_string().contains('\n'));
        }
    }

    /// Arbitrary text never panics.
    #[test]
    fn garbage_never_panics(text in "\\PC{0,200}") {
        let _ = parse("g.ron", &text);
    }
}

#[test]
fn every_client_and_service_has_a_name_and_a_network_node_of_its_own() {
    // Found by the fuzz harness: an empty name passed validation and the run panicked.
    let file = "tests/fuzz-found/empty-client-name.ron";
    let e = load(file).expect_err("an empty name is refused");
    assert_eq!(
        located(&e, file),
        format!(
            "{file}: clients: a name is empty (\"\"); give each of the clients a name, e.g. \"users\""
        )
    );
    assert_eq!(
        check("\"db\": (workers: 2", "\"\": (workers: 2"),
        "bad.ron: services: a name is empty (\"\"); give each of the services a name, e.g. \"api\""
    );
    // A client that shares its name with a service is the node `clients.NAME`; a client
    // already called that would share the node.
    assert_eq!(
        check(
            "\"web\": (",
            "\"clients.db\": (load: Open(rate: Constant(\"1/s\")), call: (target: \"db\")),\n        \"db\": ("
        ),
        "bad.ron: clients.db: its network node would be called \"clients.db\", like that of clients.\"clients.db\"; rename one of them"
    );
}

#[test]
fn a_variant_path_without_a_value_is_refused_with_its_place() {
    // Found by the fuzz harness in a mutated library file: `"path": ,` in a variant made the
    // reading of the variants panic.
    let file = "tests/fuzz-found/variant-value-missing.ron";
    let e = load(file).expect_err("a path without a value is refused");
    assert_eq!(
        located(&e, file),
        format!(
            "{file}:47:13: a path needs a value after its colon; write variants as {{ \"name\": {{ \"path\": value, … }}, … }}"
        )
    );
}

/// `BASE` with `n` variants, each about 340 bytes: a change of workers, of the stack and of
/// the expectations.
fn with_variants(n: usize) -> String {
    let variants: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"        "v{i}": {{
            "services.api.workers": {},
            "clients.web.call.stack[0]": Retry(max_attempts: {}, backoff: (jitter: Full)),
            "expectations": [
                GoodputAtLeast(client: "web", after: "{}s", min_ratio: 0.{}),
                P99AtMost(client: "web", max: "{}ms"),
            ],
        }},
"#,
                1 + i % 64,
                1 + i % 5,
                1 + i % 9,
                10 + i % 89,
                100 + i
            )
        })
        .collect();
    let text = BASE.replacen(
        "    expectations: [",
        &format!(
            "    variants: {{\n{}    }},\n    expectations: [",
            variants.concat()
        ),
        1,
    );
    assert!(text.len() > n * 300, "{}", text.len());
    text
}

#[test]
fn checking_a_file_costs_its_size_once_and_one_scenario_per_variant() {
    use scenarios::format::read::{Work, work};
    let cost = |text: &str| -> Work {
        let before = work();
        let s = parse("variants.ron", text).unwrap_or_else(|e| panic!("{e}"));
        let after = work();
        assert_eq!(s.variants.len(), text.matches("\"v").count());
        Work {
            bytes_lexed: after.bytes_lexed - before.bytes_lexed,
            bytes_parsed: after.bytes_parsed - before.bytes_parsed,
            validations: after.validations - before.validations,
        }
    };
    let text = with_variants(1000);
    let w = cost(&text);
    let file = text.len() as u64;
    let base = BASE.len() as u64;
    println!("{} bytes, 1000 variants: {w:?}", text.len());
    // The file and each of its variants are validated once.
    assert_eq!(w.validations, 1001, "{w:?}");
    // Each byte of the file is lexed once.
    assert!(w.bytes_lexed <= file, "{w:?} for a file of {file} bytes");
    // RON parses the file without its variants once, and each variant's scenario once: the
    // base and that variant's own bytes, not the other variants'.
    let variant_max = 400;
    assert!(
        w.bytes_parsed <= 1001 * (base + variant_max),
        "{w:?} for a base of {base} bytes"
    );
    // Twice the variants, twice the work.
    let half = cost(&with_variants(500));
    println!("500 variants: {half:?}");
    for (all, half) in [
        (w.bytes_lexed, half.bytes_lexed),
        (w.bytes_parsed, half.bytes_parsed),
    ] {
        assert!(
            all <= 2 * half + half / 50,
            "{w:?} against {half:?} for half the variants"
        );
    }
}
