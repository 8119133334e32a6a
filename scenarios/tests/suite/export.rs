//! `resim export`: a call's stack written back as Envoy, Istio, resilience4j or gRPC
//! configuration, the inverse of `resim import`.
//!
//! Round trips, one property per format: a configuration generated within the fields and
//! ranges the importer takes is imported, the call exported to the same format, and the export
//! imported again; the call (timeout, deadline, stack) and its target's settings (balancer,
//! outlier ejection, health check) are the same both times. Where the format is canonical (a
//! gRPC service config), the exported document's fields are also the generated ones.
//!
//! Snapshots (`export__<format>_<fixture>`): each import fixture, imported and exported to its
//! own format, with the mapping table; an Envoy route exported to resilience4j, which lists
//! what resilience4j cannot say; and bad input, one line each with exit code 2.

use crate::support;

use proptest::prelude::*;
use scenarios::Scenario;
use scenarios::export::{self, TargetFormat};
use scenarios::format::limits::RunLimits;
use scenarios::format::load::parse;
use scenarios::import::{self, Input};
use serde_json::{Value, json};
use std::path::PathBuf;
use support::{resim_in, workspace_root};

const FIXTURES: &str = "scenarios/tests/import";
const CALL: &str = "services.app.calls[0]";

/// `object[key] = value` when there is a value; a generated field left out stays out.
fn put(object: &mut Value, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        object[key] = value;
    }
}

/// `text` (the file `file`) imported as a new scenario.
fn imported(file: &str, text: &str) -> Scenario {
    let input = Input {
        file: file.to_string(),
        text: text.to_string(),
    };
    let out = import::import(&[input], None, &Default::default(), &RunLimits::default())
        .unwrap_or_else(|e| panic!("import {file}: {e}\n{text}"));
    parse("imported.ron", &out.text).expect("an import loads")
}

/// The call `services.app.calls[0]` and the settings of the service it calls, as RON.
fn call_and_target(s: &Scenario) -> (String, String) {
    let call = &s.services["app"].calls[0];
    let service = &s.services[&call.target];
    let call = ron::to_string(&(&call.target, call.timeout, call.deadline, &call.stack))
        .expect("a call serializes");
    let target = ron::to_string(&(&service.balancer, &service.outlier, &service.health_check))
        .expect("a service serializes");
    (call, target)
}

/// Imports `text`, exports its first call to `format`, imports the export: both scenarios'
/// calls and targets, and the exported text.
fn round_trip(
    format: TargetFormat,
    file: &str,
    text: &str,
) -> ((String, String), (String, String), String) {
    let first = imported(file, text);
    let out = export::export(&first, "imported.ron", CALL, format, None)
        .unwrap_or_else(|e| panic!("export to {}: {e}\nfrom:\n{text}", format.name()));
    let again_file = match format {
        TargetFormat::Grpc => "exported.json",
        _ => "exported.yaml",
    };
    let second = imported(again_file, &out.text);
    (call_and_target(&first), call_and_target(&second), out.text)
}

fn check_round_trip(
    format: TargetFormat,
    file: &str,
    doc: &Value,
) -> Result<String, TestCaseError> {
    let text = serde_json::to_string_pretty(doc).expect("a document serializes");
    let (first, second, exported) = round_trip(format, file, &text);
    prop_assert_eq!(
        &first,
        &second,
        "generated:\n{}\nexported:\n{}",
        text,
        exported
    );
    Ok(exported)
}

/// A protobuf duration of `millis` in protobuf's canonical JSON form (`"1.250s"`, `"2s"`).
fn proto(millis: u64) -> String {
    if millis.is_multiple_of(1000) {
        format!("{}s", millis / 1000)
    } else {
        format!("{}.{:03}s", millis / 1000, millis % 1000)
    }
}

/// A Go duration of `millis`, in the unit a person would write.
fn go(millis: u64) -> String {
    if millis.is_multiple_of(1000) {
        format!("{}s", millis / 1000)
    } else {
        format!("{millis}ms")
    }
}

/// Whether two JSON values are the same, numbers by value (`2` is `2.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn maybe<T: std::fmt::Debug + Clone + 'static>(
    s: impl Strategy<Value = T> + 'static,
) -> BoxedStrategy<Option<T>> {
    prop::option::of(s).boxed()
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 64,
        ..ProptestConfig::default()
    }
}

// ---- gRPC ----

const GRPC_CODES: [&str; 8] = [
    "UNAVAILABLE",
    "INTERNAL",
    "UNKNOWN",
    "DATA_LOSS",
    "UNIMPLEMENTED",
    "DEADLINE_EXCEEDED",
    "RESOURCE_EXHAUSTED",
    "ABORTED",
];

/// What the exported codes stand for: the import's outcome of each code.
fn grpc_outcome(code: &str) -> &'static str {
    match code {
        "UNAVAILABLE" => "503+connection",
        "INTERNAL" | "UNKNOWN" | "DATA_LOSS" => "500",
        "UNIMPLEMENTED" => "501",
        "DEADLINE_EXCEEDED" => "504",
        "RESOURCE_EXHAUSTED" => "429",
        _ => "409",
    }
}

fn grpc_retry() -> impl Strategy<Value = Value> {
    (
        2u32..=5,
        1u64..=2000,
        0u64..=20_000,
        (4u32..=40).prop_map(|q| f64::from(q) / 4.0),
        prop::sample::subsequence(GRPC_CODES.to_vec(), 1..=4),
    )
        .prop_map(|(attempts, initial, extra, multiplier, codes)| {
            json!({
                "maxAttempts": attempts,
                "initialBackoff": proto(initial),
                "maxBackoff": proto(initial + extra),
                "backoffMultiplier": multiplier,
                "retryableStatusCodes": codes,
            })
        })
}

pub(crate) fn grpc_config() -> impl Strategy<Value = Value> {
    let hedging = (2u32..=5, 0u64..=2000)
        .prop_map(|(a, d)| json!({ "maxAttempts": a, "hedgingDelay": proto(d) }));
    let policy = prop_oneof![
        grpc_retry().prop_map(|r| ("retryPolicy", r)),
        hedging.prop_map(|h| ("hedgingPolicy", h)),
        Just(("", Value::Null)),
    ];
    let throttling = maybe(
        (1u32..=1000, 1u32..=1000)
            .prop_map(|(t, r)| json!({ "maxTokens": t, "tokenRatio": f64::from(r) / 100.0 })),
    );
    (maybe(1u64..=60_000), policy, throttling)
        // A methodConfig that sets nothing has nothing to export (a test of its own below).
        .prop_filter("a timeout or a policy", |(t, (k, _), _)| {
            t.is_some() || !k.is_empty()
        })
        .prop_map(|(timeout, (k, p), throttling)| {
            let mut method = json!({ "name": [{ "service": "shop.Cart" }] });
            put(&mut method, "timeout", timeout.map(|t| json!(proto(t))));
            if !k.is_empty() {
                method[k] = p;
            }
            let mut root = json!({ "methodConfig": [method] });
            if let Some(t) = throttling {
                root["retryThrottling"] = t;
            }
            root
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn grpc_round_trip_gives_the_same_values_and_fields(doc in grpc_config()) {
        let exported = check_round_trip(TargetFormat::Grpc, "service-config.json", &doc)?;
        let out: Value = serde_json::from_str(&exported).expect("the export is JSON");
        let (method, written) = (&doc["methodConfig"][0], &out["methodConfig"][0]);
        prop_assert_eq!(&method["timeout"], &written["timeout"]);
        prop_assert_eq!(&method["hedgingPolicy"], &written["hedgingPolicy"]);
        let retry = &method["retryPolicy"];
        if !retry.is_null() {
            let back = &written["retryPolicy"];
            for k in ["maxAttempts", "initialBackoff", "maxBackoff", "backoffMultiplier"] {
                prop_assert!(same(&retry[k], &back[k]), "{}: {} then {}", k, retry[k], back[k]);
            }
            let outcomes = |codes: &Value| {
                let mut o: Vec<&str> = codes.as_array().into_iter().flatten()
                    .filter_map(Value::as_str).map(grpc_outcome).collect();
                o.sort_unstable();
                o.dedup();
                o
            };
            prop_assert_eq!(outcomes(&retry["retryableStatusCodes"]), outcomes(&back["retryableStatusCodes"]));
            let (t, u) = (&doc["retryThrottling"], &out["retryThrottling"]);
            prop_assert!(same(&t["maxTokens"], &u["maxTokens"]) && same(&t["tokenRatio"], &u["tokenRatio"]), "{} then {}", t, u);
        }
    }
}

// ---- Envoy ----

const ENVOY_CONDITIONS: [&str; 9] = [
    "5xx",
    "gateway-error",
    "reset",
    "connect-failure",
    "refused-stream",
    "retriable-4xx",
    "retriable-status-codes",
    "envoy-ratelimited",
    "reset-before-request",
];

fn envoy_retry_policy() -> impl Strategy<Value = Value> {
    (
        (
            prop::sample::subsequence(ENVOY_CONDITIONS.to_vec(), 0..=4),
            prop::sample::subsequence(vec![429u16, 500, 502, 503, 504, 507], 0..=3),
        ),
        maybe(0u32..=12),
        maybe(1u64..=5000),
        maybe((1u64..=1000, maybe(0u64..=10_000))),
        maybe(maybe(1u64..=600_000)),
    )
        .prop_map(|((on, codes), retries, per_try, backoff, rate_limited)| {
            let mut p = json!({ "retry_on": on.join(",") });
            if on.contains(&"retriable-status-codes") {
                p["retriable_status_codes"] = json!(codes);
            }
            put(&mut p, "num_retries", retries.map(|n| json!(n)));
            put(&mut p, "per_try_timeout", per_try.map(|t| json!(proto(t))));
            if let Some((base, max)) = backoff {
                p["retry_back_off"] = json!({ "base_interval": proto(base) });
                if let Some(extra) = max {
                    p["retry_back_off"]["max_interval"] = json!(proto(base + extra));
                }
            }
            if let Some(max) = rate_limited {
                let mut r =
                    json!({ "reset_headers": [{ "name": "Retry-After", "format": "SECONDS" }] });
                put(&mut r, "max_interval", max.map(|m| json!(proto(m))));
                p["rate_limited_retry_back_off"] = r;
            }
            p
        })
}

fn envoy_cluster() -> impl Strategy<Value = Value> {
    let thresholds = (
        maybe(1u32..=100_000),
        maybe(1u32..=100_000),
        maybe(1u32..=100_000),
        maybe(0u32..=100),
        maybe((maybe(1u32..=100), maybe(0u32..=50))),
    );
    (
        maybe(prop::sample::select(vec![
            "ROUND_ROBIN",
            "RANDOM",
            "LEAST_REQUEST",
        ])),
        maybe((maybe(1u32..=20), maybe(1u64..=120_000), maybe(1u32..=100))),
        maybe((1u64..=30_000, 1u64..=10_000, 1u32..=10, 1u32..=10)),
        maybe(thresholds),
        any::<bool>(),
    )
        .prop_map(|(lb, outlier, health, limits, http2)| {
            let mut c = json!({ "name": "api", "connect_timeout": "0.25s" });
            put(&mut c, "lb_policy", lb.map(|p| json!(p)));
            if let Some((n, ejection, percent)) = outlier {
                let mut o = json!({});
                put(&mut o, "consecutive_5xx", n.map(|n| json!(n)));
                put(
                    &mut o,
                    "base_ejection_time",
                    ejection.map(|e| json!(proto(e))),
                );
                put(&mut o, "max_ejection_percent", percent.map(|p| json!(p)));
                c["outlier_detection"] = o;
            }
            if let Some((interval, timeout, unhealthy, healthy)) = health {
                c["health_checks"] = json!([{
                    "interval": proto(interval), "timeout": proto(timeout),
                    "unhealthy_threshold": unhealthy, "healthy_threshold": healthy,
                    "http_health_check": { "path": "/healthz" },
                }]);
            }
            if let Some((requests, connections, pending, retries, budget)) = limits {
                let mut t = json!({ "priority": "DEFAULT" });
                for (k, v) in [
                    ("max_requests", requests),
                    ("max_connections", connections),
                    ("max_pending_requests", pending),
                    ("max_retries", retries),
                ] {
                    if let Some(v) = v {
                        t[k] = json!(v);
                    }
                }
                if let Some((percent, min)) = budget {
                    let mut b = json!({});
                    put(
                        &mut b,
                        "budget_percent",
                        percent.map(|p| json!({ "value": f64::from(p) / 2.0 })),
                    );
                    put(&mut b, "min_retry_concurrency", min.map(|m| json!(m)));
                    t["retry_budget"] = b;
                }
                c["circuit_breakers"] = json!({ "thresholds": [t] });
            }
            if http2 {
                c["http2_protocol_options"] = json!({});
            }
            c
        })
}

pub(crate) fn envoy_config() -> impl Strategy<Value = Value> {
    let route = (
        maybe(prop_oneof![Just(0u64), 1u64..=60_000]),
        maybe(envoy_retry_policy()),
        any::<bool>(),
    );
    (envoy_cluster(), maybe(route)).prop_map(|(cluster, route)| {
        let mut root = json!({ "clusters": [cluster] });
        if let Some((timeout, retry, hedge)) = route {
            let mut action = json!({ "cluster": "api" });
            put(&mut action, "timeout", timeout.map(|t| json!(proto(t))));
            if let Some(r) = retry {
                action["retry_policy"] = r;
            }
            if hedge {
                action["hedge_policy"] = json!({ "hedge_on_per_try_timeout": true });
            }
            root["virtual_hosts"] = json!([{ "name": "backend", "domains": ["*"], "routes": [{ "match": { "prefix": "/" }, "route": action }] }]);
        }
        root
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn envoy_round_trip_gives_the_same_values(doc in envoy_config()) {
        check_round_trip(TargetFormat::Envoy, "envoy.json", &doc)?;
    }
}

// ---- Istio ----

const ISTIO_CONDITIONS: [&str; 14] = [
    "5xx",
    "gateway-error",
    "reset",
    "connect-failure",
    "refused-stream",
    "retriable-4xx",
    "envoy-ratelimited",
    "unavailable",
    "internal",
    "deadline-exceeded",
    "resource-exhausted",
    "503",
    "429",
    "409",
];

fn istio_rule() -> impl Strategy<Value = Value> {
    (
        maybe(prop::sample::select(vec![
            "ROUND_ROBIN",
            "RANDOM",
            "LEAST_REQUEST",
            "LEAST_CONN",
        ])),
        (
            maybe(1u32..=100_000),
            maybe(1u32..=100_000),
            maybe(1u32..=100_000),
            maybe(1u32..=100),
        ),
        maybe((maybe(1u32..=20), maybe(1u64..=120_000), maybe(1u32..=100))),
        maybe((maybe(0u32..=100), maybe(0u32..=50))),
    )
        .prop_map(|(lb, (connections, requests, pending, retries), outlier, budget)| {
            let mut policy = json!({});
            put(
                &mut policy,
                "loadBalancer",
                lb.map(|p| json!({ "simple": p })),
            );
            let mut pool = json!({});
            put(
                &mut pool,
                "tcp",
                connections.map(|c| json!({ "maxConnections": c })),
            );
            let mut http = json!({});
            for (k, v) in [
                ("http2MaxRequests", requests),
                ("http1MaxPendingRequests", pending),
                ("maxRetries", retries),
            ] {
                if let Some(v) = v {
                    http[k] = json!(v);
                }
            }
            if http != json!({}) {
                pool["http"] = http;
            }
            if pool != json!({}) {
                policy["connectionPool"] = pool;
            }
            if let Some((n, ejection, percent)) = outlier {
                let mut o = json!({});
                put(&mut o, "consecutive5xxErrors", n.map(|n| json!(n)));
                put(&mut o, "baseEjectionTime", ejection.map(|e| json!(go(e))));
                put(&mut o, "maxEjectionPercent", percent.map(|p| json!(p)));
                policy["outlierDetection"] = o;
            }
            if let Some((percent, min)) = budget {
                let mut b = json!({});
                put(&mut b, "percent", percent.map(|p| json!(p)));
                put(&mut b, "minRetryConcurrency", min.map(|m| json!(m)));
                policy["retryBudget"] = b;
            }
            json!({
                "apiVersion": "networking.istio.io/v1",
                "kind": "DestinationRule",
                "metadata": { "name": "reviews" },
                "spec": { "host": "reviews.default.svc.cluster.local", "trafficPolicy": policy },
            })
        })
}

fn istio_route() -> impl Strategy<Value = Value> {
    let retries = (
        maybe(0u32..=6),
        maybe(1u64..=5000),
        maybe(prop::sample::subsequence(ISTIO_CONDITIONS.to_vec(), 1..=4)),
        maybe(1u64..=1000),
    );
    (maybe(1u64..=60_000), maybe(retries)).prop_map(|(timeout, retries)| {
        let mut http = json!({ "route": [{ "destination": { "host": "reviews.default.svc.cluster.local" } }] });
        put(&mut http, "timeout", timeout.map(|t| json!(go(t))));
        if let Some((attempts, per_try, on, backoff)) = retries {
            let mut r = json!({});
            if let Some(a) = attempts { r["attempts"] = json!(a); }
            if let Some(t) = per_try { r["perTryTimeout"] = json!(go(t)); }
            if let Some(on) = on { r["retryOn"] = json!(on.join(",")); }
            if let Some(b) = backoff { r["backoff"] = json!(go(b)); }
            http["retries"] = r;
        }
        json!({
            "apiVersion": "networking.istio.io/v1",
            "kind": "VirtualService",
            "metadata": { "name": "reviews" },
            "spec": { "hosts": ["reviews.default.svc.cluster.local"], "http": [http] },
        })
    })
}

pub(crate) fn istio_config() -> impl Strategy<Value = Value> {
    (maybe(istio_rule()), istio_route()).prop_map(|(rule, route)| {
        json!({ "apiVersion": "v1", "kind": "List", "items": rule.into_iter().chain([route]).collect::<Vec<_>>() })
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn istio_round_trip_gives_the_same_values(doc in istio_config()) {
        check_round_trip(TargetFormat::Istio, "istio.json", &doc)?;
    }
}

// ---- resilience4j ----

fn r4j_retry() -> impl Strategy<Value = Value> {
    (
        maybe(1u32..=10),
        maybe(1u64..=5000),
        maybe((
            (4u32..=20).prop_map(|q| f64::from(q) / 4.0),
            maybe(0u64..=60_000),
        )),
        maybe((1u32..=9).prop_map(|f| f64::from(f) / 10.0)),
        proptest::bool::ANY,
    )
        .prop_map(|(attempts, wait, exponential, randomized, refusals)| {
            let mut r = json!({});
            put(&mut r, "maxAttempts", attempts.map(|a| json!(a)));
            if refusals {
                // Not retrying what resilience4j's own gates refuse.
                r["ignoreExceptions"] = json!([
                    "io.github.resilience4j.bulkhead.BulkheadFullException",
                    "io.github.resilience4j.circuitbreaker.CallNotPermittedException",
                    "io.github.resilience4j.ratelimiter.RequestNotPermitted",
                ]);
            }
            if let Some(w) = wait {
                r["waitDuration"] = json!(format!("{w}ms"));
                if let Some((m, max)) = exponential {
                    r["enableExponentialBackoff"] = json!(true);
                    r["exponentialBackoffMultiplier"] = json!(m);
                    put(
                        &mut r,
                        "exponentialMaxWaitDuration",
                        max.map(|extra| json!(format!("{}ms", w + extra))),
                    );
                }
                if let Some(f) = randomized {
                    r["enableRandomizedWait"] = json!(true);
                    r["randomizedWaitFactor"] = json!(f);
                }
            }
            r
        })
}

fn r4j_breaker() -> impl Strategy<Value = Value> {
    (
        (
            maybe(1u32..=100),
            maybe(1u32..=100),
            maybe(1u64..=10_000),
            maybe(any::<bool>()),
        ),
        (
            maybe(1u32..=100),
            maybe(1u32..=100),
            maybe(1u64..=120_000),
            maybe(1u32..=20),
        ),
        (
            maybe(any::<bool>()),
            maybe(1u64..=120_000),
            maybe(any::<bool>()),
        ),
    )
        .prop_map(
            |(
                (failure, slow, slow_duration, time_based),
                (size, minimum, open, permitted),
                (automatic, half_open_wait, closed),
            )| {
                let mut b = json!({});
                put(&mut b, "failureRateThreshold", failure.map(|x| json!(x)));
                put(&mut b, "slowCallRateThreshold", slow.map(|x| json!(x)));
                put(
                    &mut b,
                    "slowCallDurationThreshold",
                    slow_duration.map(|x| json!(format!("{x}ms"))),
                );
                put(
                    &mut b,
                    "slidingWindowType",
                    time_based.map(|t| json!(if t { "TIME_BASED" } else { "COUNT_BASED" })),
                );
                put(&mut b, "slidingWindowSize", size.map(|x| json!(x)));
                put(&mut b, "minimumNumberOfCalls", minimum.map(|x| json!(x)));
                put(
                    &mut b,
                    "waitDurationInOpenState",
                    open.map(|x| json!(format!("{x}ms"))),
                );
                put(
                    &mut b,
                    "permittedNumberOfCallsInHalfOpenState",
                    permitted.map(|x| json!(x)),
                );
                put(
                    &mut b,
                    "automaticTransitionFromOpenToHalfOpenEnabled",
                    automatic.map(|x| json!(x)),
                );
                put(
                    &mut b,
                    "maxWaitDurationInHalfOpenState",
                    half_open_wait.map(|x| json!(format!("{x}ms"))),
                );
                if let Some(c) = closed {
                    b["transitionToStateAfterWaitDuration"] =
                        json!(if c { "CLOSED" } else { "OPEN" });
                }
                b
            },
        )
}

pub(crate) fn r4j_config() -> impl Strategy<Value = Value> {
    let limiter = (1u32..=500, 1u64..=10_000, 0u64..=5000).prop_map(|(l, p, w)| json!({ "limitForPeriod": l, "limitRefreshPeriod": format!("{p}ms"), "timeoutDuration": format!("{w}ms") }));
    let bulkhead = prop_oneof![
        (1u32..=500, 0u64..=5000).prop_map(|(c, w)| (
            "bulkhead",
            json!({ "maxConcurrentCalls": c, "maxWaitDuration": format!("{w}ms") })
        )),
        (1u32..=100, 0u32..=1000).prop_map(|(c, q)| (
            "thread-pool-bulkhead",
            json!({ "coreThreadPoolSize": c, "maxThreadPoolSize": c, "queueCapacity": q })
        )),
    ];
    (
        maybe(r4j_retry()),
        maybe(r4j_breaker()),
        maybe(limiter),
        maybe(1u64..=30_000),
        maybe(bulkhead),
    )
        .prop_filter("an instance needs one module", |m| {
            m.0.is_some() || m.1.is_some() || m.2.is_some() || m.3.is_some() || m.4.is_some()
        })
        .prop_map(|(retry, breaker, limiter, timeout, bulkhead)| {
            let mut top = json!({});
            let instance = |v: Value| json!({ "instances": { "inventory": v } });
            if let Some(r) = retry {
                top["retry"] = instance(r);
            }
            if let Some(b) = breaker {
                top["circuitbreaker"] = instance(b);
            }
            if let Some(l) = limiter {
                top["ratelimiter"] = instance(l);
            }
            if let Some(t) = timeout {
                top["timelimiter"] = instance(json!({ "timeoutDuration": format!("{t}ms") }));
            }
            if let Some((k, b)) = bulkhead {
                top[k] = instance(b);
            }
            json!({ "resilience4j": top })
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn resilience4j_round_trip_gives_the_same_values(doc in r4j_config()) {
        check_round_trip(TargetFormat::Resilience4j, "application.json", &doc)?;
    }
}

// ---- the fixtures, and bad input ----

/// `resim ARGS` from the workspace root.
fn resim(args: &[&str]) -> support::Resim {
    resim_in(&workspace_root(), args)
}

/// A file of this test's own under the target directory.
fn scratch(name: &str) -> PathBuf {
    let dir = workspace_root().join("target/test-export");
    std::fs::create_dir_all(&dir).expect("the scratch directory is made");
    dir.join(name)
}

/// `resim import FIXTURE`, then `resim export` of its first call to `to`: the export's
/// stdout and stderr as one snapshot named `name`.
fn check_fixture(format: &str, fixture: &str, to: &str, name: &str) {
    let path = format!("{FIXTURES}/{format}/{fixture}");
    let imported = resim(&["import", &path]);
    assert_eq!(imported.code, 0, "resim import {path}: {}", imported.stderr);
    let file = scratch(&format!("{name}.ron"));
    std::fs::write(&file, &imported.stdout).expect("the import is written");
    let file = file.to_str().expect("a UTF-8 path");
    let out = resim(&["export", file, "--call", CALL, "--to", to]);
    assert_eq!(out.code, 0, "resim export {path}: {}", out.stderr);
    let snapshot = format!("{}\n---- stderr ----\n{}", out.stdout, out.stderr);
    insta::with_settings!({ description => format!("resim import {path} > {name}.ron; resim export {name}.ron --call {CALL} --to {to}") }, {
        insta::assert_snapshot!(name, snapshot);
    });
}

/// The fixtures of `format` that import, each exported to `format`.
fn check_format(format: &str) {
    let dir = workspace_root().join(FIXTURES).join(format);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("the fixtures are there")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no fixtures in {}", dir.display());
    for fixture in names {
        let name = format!("{format}_{}", fixture.replace(['.', '-'], "_"));
        check_fixture(format, &fixture, format, &name);
    }
}

#[test]
fn envoy_fixtures_exported_to_envoy() {
    check_format("envoy");
}

#[test]
fn istio_fixtures_exported_to_istio() {
    check_format("istio");
}

#[test]
fn resilience4j_fixtures_exported_to_resilience4j() {
    check_format("resilience4j");
}

#[test]
fn grpc_fixtures_exported_to_grpc() {
    check_format("grpc");
}

/// What a format cannot say is listed: an Envoy route's retry budget, jittered back-off and
/// circuit breakers have no place, or another meaning, in resilience4j.
#[test]
fn envoy_route_exported_to_resilience4j_lists_what_it_cannot_say() {
    check_fixture(
        "envoy",
        "route-retry.yaml",
        "resilience4j",
        "envoy_route_retry_to_resilience4j",
    );
}

/// A resilience4j retry without exception lists retries what its bulkhead and breaker
/// refuse; Envoy and Istio never retry their circuit breakers' overflow, so exported there the
/// difference is listed (with how to run what the mesh does), and off it is not. The demo's
/// `retryExceptions` leave the refusals out (the import says so), so the test sets the
/// switch on, as a retry without the lists has it.
#[test]
fn retrying_local_rejections_has_no_counterpart_in_the_mesh() {
    for (to, name) in [
        ("envoy", "resilience4j_demo_to_envoy"),
        ("istio", "resilience4j_demo_to_istio"),
    ] {
        let path = format!("{FIXTURES}/resilience4j/demo.yml");
        let imported = resim(&["import", &path]);
        assert_eq!(imported.code, 0, "{}", imported.stderr);
        let file = scratch(&format!("{name}.ron"));
        std::fs::write(&file, &imported.stdout).expect("the import is written");
        let out = resim(&[
            "export",
            file.to_str().unwrap(),
            "--call",
            CALL,
            "--to",
            to,
            "--set",
            &format!("{CALL}.stack[0].retry_on_local_rejection=true"),
        ]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(
            out.stderr.contains("retry_on_local_rejection = true: no counterpart: Envoy never retries a request its circuit breakers refused"),
            "{to}: {}",
            out.stderr
        );
        // Set off, it is what the mesh does, and nothing is listed.
        let off = resim(&[
            "export",
            file.to_str().unwrap(),
            "--call",
            CALL,
            "--to",
            to,
            "--set",
            &format!("{CALL}.stack[0].retry_on_local_rejection=false"),
        ]);
        assert_eq!(off.code, 0, "{}", off.stderr);
        assert!(
            !off.stderr.contains("retry_on_local_rejection"),
            "{}",
            off.stderr
        );
    }
}

/// A retry breaker has no counterpart in any format: each export lists it with its own reason.
#[test]
fn a_retry_breaker_is_listed_with_why_each_format_has_none() {
    let call = "clients.breaker-30.call";
    for (to, reason) in [
        ("envoy", "never stops retries on a failure ratio"),
        ("istio", "none stops retries on a failure ratio"),
        ("grpc", "not on a failure ratio over a window"),
        ("resilience4j", "refuses first attempts too"),
    ] {
        let file = "book/src/scenarios/retry-breaker.ron";
        let out = resim(&["export", file, "--call", call, "--to", to]);
        assert_eq!(out.code, 0, "{to}: {}", out.stderr);
        let line = out
            .stderr
            .lines()
            .find(|l| l.contains(&format!("{call}.stack[0].budget")))
            .unwrap_or_else(|| panic!("{to}: the budget is not listed: {}", out.stderr));
        assert!(
            line.contains("RetryBreaker") && line.contains(reason),
            "{to}: {line}"
        );
    }
}

/// Bad input: one message each (the place, what was expected), exit code 2.
#[test]
fn bad_input_gets_a_clear_error_and_exit_code_2() {
    let shedder = scratch("shedder.ron");
    std::fs::write(
        &shedder,
        r#"Scenario(
    name: "shedder",
    duration: "10s",
    clients: { "users": (load: Open(rate: Constant("10/s")), call: (target: "api", stack: [Fallback(use_cache: true, cache_age_max: "1s", use_static: false)])) },
    services: { "api": (workers: 2, work: Exponential(mean: "1ms")) },
)"#,
    )
    .expect("the scenario is written");
    // Relative to the workspace root, where `resim` runs, so the snapshot is the same anywhere.
    let shedder = "target/test-export/shedder.ron";
    let library = "scenarios/library/retry-storm.ron";
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "an unknown call",
            vec![
                "export",
                library,
                "--call",
                "services.nope.calls[0]",
                "--to",
                "envoy",
            ],
        ),
        (
            "a call with nothing to export",
            vec![
                "export",
                shedder,
                "--call",
                "clients.users.call",
                "--to",
                "grpc",
            ],
        ),
        (
            "an unknown format",
            vec![
                "export",
                library,
                "--call",
                "clients.users.call",
                "--to",
                "linkerd",
            ],
        ),
        (
            "a service name with a space",
            vec![
                "export",
                library,
                "--call",
                "clients.users.call",
                "--to",
                "grpc",
                "--service",
                "a b",
            ],
        ),
        (
            "a missing scenario",
            vec![
                "export",
                "no-such.ron",
                "--call",
                "clients.users.call",
                "--to",
                "grpc",
            ],
        ),
    ];
    let mut snapshot = String::new();
    for (what, args) in cases {
        let out = resim(&args);
        assert_eq!(out.code, 2, "{what}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{what}: nothing on stdout");
        snapshot.push_str(&format!(
            "## {what}: resim {}\n{}\n",
            args.join(" "),
            out.stderr
        ));
    }
    insta::assert_snapshot!("malformed", snapshot);
}

/// The book's round trip imports `book/src/export/retry-storm-budget.istio.yaml`: it is what
/// `resim export` writes today.
#[test]
fn the_book_round_trip_file_is_what_export_writes() {
    let file = "book/src/export/retry-storm-budget.istio.yaml";
    let out = resim(&[
        "export",
        "retry-storm-budget",
        "--call",
        "clients.users.call",
        "--to",
        "istio",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let committed = std::fs::read_to_string(workspace_root().join(file)).expect("the book's file");
    assert_eq!(
        committed, out.stdout,
        "{file} drifted: rewrite it with `resim export retry-storm-budget --call clients.users.call --to istio --out {file}`"
    );
}

// ---- export that is safe to apply (issue 38, item 4) ----

/// `text` (the file `file`) imported, its first call exported to `format` as `service`.
fn exported(file: &str, text: &str, format: TargetFormat, service: Option<&str>) -> String {
    let scenario = imported(file, text);
    export::export(&scenario, "imported.ron", CALL, format, service)
        .unwrap_or_else(|e| panic!("{e}"))
        .text
}

/// A VirtualService's retries without `retryOn` retry Istio's default conditions (lost
/// connections, refused streams, `unavailable`, `cancelled` and 503). Written back, the
/// export leaves `retryOn` unset so the same default applies, where it used to write
/// `connect-failure,503`, which drops refused streams and gRPC's `unavailable`.
#[test]
fn istio_default_retries_are_exported_as_the_default() {
    let text = r#"
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: { name: reviews }
spec:
  hosts: [reviews]
  http:
  - route: [{ destination: { host: reviews } }]
    retries: { attempts: 3 }
"#;
    let out = exported("vs.yaml", text, TargetFormat::Istio, None);
    assert!(!out.contains("retryOn"), "{out}");
    assert!(out.contains("attempts: 3"), "{out}");
    // And the same retry, imported from the export, is the default's again.
    let (first, second, _) = round_trip(TargetFormat::Istio, "vs.yaml", text);
    assert_eq!(first, second);
}

/// An Envoy cluster is complete: how its endpoints are found, its connect timeout, and
/// endpoints, a placeholder address that resolves nowhere (`.invalid`), each said so in the
/// table. It used to be a cluster Envoy refuses (no `connect_timeout` in static resources, no
/// endpoints).
#[test]
fn an_envoy_cluster_is_complete_with_placeholders_said_so() {
    let text = r#"{ "clusters": [{ "name": "db", "connect_timeout": "0.25s", "outlier_detection": { "consecutive_5xx": 3 } }] }"#;
    let scenario = imported("envoy.json", text);
    let out = export::export(&scenario, "imported.ron", CALL, TargetFormat::Envoy, None)
        .unwrap_or_else(|e| panic!("{e}"));
    let doc: Value = serde_saphyr::from_str(&out.text).expect("YAML");
    let cluster = &doc["resources"][0];
    assert_eq!(cluster["type"], "STRICT_DNS", "{}", out.text);
    assert_eq!(cluster["connect_timeout"], "5s");
    let address = cluster
        .pointer(
            "/load_assignment/endpoints/0/lb_endpoints/0/endpoint/address/socket_address/address",
        )
        .and_then(Value::as_str)
        .expect("an endpoint");
    assert!(address.ends_with(".invalid"), "{address}");
    assert!(
        out.table.contains("placeholders, 3 values"),
        "{}",
        out.table
    );
    assert!(out.table.contains(address), "{}", out.table);
}

/// A resilience4j breaker that sets one property is exported with that property alone: the
/// others are resilience4j's defaults, left unset (the table says so). It used to write every
/// property, settings the original did not have.
#[test]
fn resilience4j_defaults_are_not_added() {
    let text = r#"{ "resilience4j": { "circuitbreaker": { "instances": { "inventory": { "failureRateThreshold": 40 } } } } }"#;
    let out = exported("application.json", text, TargetFormat::Resilience4j, None);
    let doc: Value = serde_saphyr::from_str(&out).expect("YAML");
    let instance = &doc["resilience4j"]["circuitbreaker"]["instances"]["inventory"];
    assert_eq!(instance, &json!({ "failureRateThreshold": 40 }), "{out}");
}

/// `--service HOST/SUBSET` writes a subset of its host (the DestinationRule's `subsets` entry
/// and the route's `destination.subset`), not a host named after the subset.
#[test]
fn an_istio_subset_is_written_as_a_subset_of_its_host() {
    let path = workspace_root().join(FIXTURES).join("istio/list.json");
    let text = std::fs::read_to_string(path).expect("the fixture");
    let out = exported("list.json", &text, TargetFormat::Istio, Some("ratings/v1"));
    let docs: Vec<Value> = out
        .split("---\n")
        .map(|d| serde_saphyr::from_str(d).expect("YAML"))
        .collect();
    assert_eq!(docs[0]["spec"]["host"], "ratings", "{out}");
    assert_eq!(docs[0]["spec"]["subsets"][0]["name"], "v1", "{out}");
    assert!(
        docs[0]["spec"]["subsets"][0]["trafficPolicy"].is_object(),
        "{out}"
    );
    assert_eq!(
        docs[1]["spec"]["http"][0]["route"][0]["destination"],
        json!({ "host": "ratings", "subset": "v1" })
    );
}

/// `--service SERVICE/METHOD` scopes the gRPC methodConfig to the method.
#[test]
fn a_grpc_method_scope_is_kept() {
    let text = r#"{ "methodConfig": [{ "name": [{ "service": "shop.Cart" }], "timeout": "2s" }] }"#;
    let out = exported("sc.json", text, TargetFormat::Grpc, Some("shop.Cart/Get"));
    let doc: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        doc["methodConfig"][0]["name"],
        json!([{ "service": "shop.Cart", "method": "Get" }])
    );
}

/// `--against`: a gRPC service config whose methodConfig names a method, hedges and throttles
/// retries is written back as it was when the scenario changed nothing (the method scope and
/// `retryThrottling`, which a plain export cannot know, kept), and with the timeout changed,
/// only the timeout changes.
#[test]
fn a_grpc_config_written_back_keeps_its_method_scope_and_throttling() {
    let original = r#"{
  "methodConfig": [{
    "name": [{ "service": "shop.Cart", "method": "Get" }],
    "timeout": "2s",
    "hedgingPolicy": { "maxAttempts": 3, "hedgingDelay": "0.1s" }
  }],
  "retryThrottling": { "maxTokens": 10, "tokenRatio": 0.1 }
}
"#;
    let (text, scenario) = {
        let input = Input {
            file: "sc.json".into(),
            text: original.into(),
        };
        let out = import::import(&[input], None, &Default::default(), &RunLimits::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let s = parse("imported.ron", &out.text).expect("loads");
        (out.text, s)
    };
    let against = export::Against {
        originals: vec![Input {
            file: "sc.json".into(),
            text: original.into(),
        }],
        scenario: Input {
            file: "imported.ron".into(),
            text,
        },
    };
    let export = |s: &Scenario| {
        export::export_against(
            s,
            "imported.ron",
            CALL,
            TargetFormat::Grpc,
            Some("shop.Cart"),
            &against,
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let same = export(&scenario);
    assert_eq!(same.text, original, "{}", same.table);
    assert!(same.diff.is_empty());
    let mut changed = scenario.clone();
    changed.services.get_mut("app").unwrap().calls[0].deadline =
        Some(sim_core::SimDuration::from_secs(3));
    let out = export(&changed);
    assert_eq!(
        out.text,
        original.replace("\"2s\"", "\"3s\""),
        "{}",
        out.table
    );
    assert!(
        out.diff.contains("-    \"timeout\": \"2s\","),
        "{}",
        out.diff
    );
    assert!(
        out.diff.contains("+    \"timeout\": \"3s\","),
        "{}",
        out.diff
    );
}

/// `--call services.NAME` exports every call of the service at once: an Envoy front proxy's
/// twelve routes are twelve clusters and twelve route configurations in one document.
#[test]
fn a_whole_service_exports_at_once() {
    let path = workspace_root().join("scenarios/tests/import-corpus/front-proxy/envoy.yaml");
    let text = std::fs::read_to_string(path).expect("the corpus file");
    let scenario = imported("envoy.yaml", &text);
    let out = export::export(
        &scenario,
        "imported.ron",
        "services.front-proxy",
        TargetFormat::Envoy,
        None,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let doc: Value = serde_saphyr::from_str(&out.text).expect("YAML");
    let resources = doc["resources"].as_array().expect("resources");
    let calls = scenario.services["front-proxy"].calls.len();
    assert_eq!(calls, 12);
    assert_eq!(resources.len(), 2 * calls, "{}", out.text);
    assert!(
        out.table
            .contains("resim export: services.front-proxy.calls[11] (envoy)")
    );
}
