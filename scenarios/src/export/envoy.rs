//! A call as Envoy v3 xDS resources: a `Cluster` (circuit breakers, outlier detection, health
//! check, load balancing policy) and a `RouteConfiguration` whose one route sends to it (the
//! route timeout, retry policy and hedge policy). The inverse of the import's `envoy` module:
//! the call's `deadline` is the route's `timeout`, its `timeout` the `per_try_timeout`; a
//! `Retry` with Envoy's back-off (exponential from `delay_initial` doubling to `delay_max`,
//! fully jittered) is the `retry_policy`; the per-attempt `Bulkhead` is the circuit breakers.
//! The virtual host's `domains` and the route's `match` are not settings of a call: they are
//! written to match everything (`"*"`, prefix `/`).

use super::sheet::{Sheet, ron};
use super::text::{Document, number, proto_duration};
use super::{Target, leave_layer, leave_retry_extras, leave_service};
use crate::format::schema::{Balancer, HealthCheck, Layer, Outlier};
use patterns::backoff::{Jitter, Strategy};
use patterns::budget::BudgetConfig;
use patterns::bulkhead::BulkheadConfig;
use patterns::hedge::{HedgeConfig, HedgeDelay};
use patterns::retry::RetryConfig;
use serde_json::{Map, Value, json};
use sim_core::SimDuration;

/// The 5xx statuses of HTTP that Envoy's `5xx` retries (the import's list).
const STATUS_5XX: [u16; 11] = [500, 501, 502, 503, 504, 505, 506, 507, 508, 510, 511];

const CLUSTER: &str = "resources[0]";
const ROUTE: &str = "resources[1].virtual_hosts[0].routes[0].route";
const HOUR: SimDuration = SimDuration::from_secs(3600);
/// Envoy's default `connect_timeout`.
const CONNECT_TIMEOUT: &str = "5s";

/// The Cluster and RouteConfiguration of `t`, as YAML.
pub fn write(t: &Target, sheet: &mut Sheet) -> Document {
    let mut cluster = Map::new();
    cluster.insert(
        "@type".into(),
        json!("type.googleapis.com/envoy.config.cluster.v3.Cluster"),
    );
    cluster.insert("name".into(), json!(t.name));
    sheet.name(
        format!("{}.target", t.path),
        format!("{CLUSTER}.name, {ROUTE}.cluster"),
        &t.name,
    );
    endpoints(t, sheet, &mut cluster);
    service(t, sheet, &mut cluster);
    let mut route = Map::new();
    route.insert("cluster".into(), json!(t.name));
    let deadline = t.call.deadline;
    route.insert(
        "timeout".into(),
        proto_duration(deadline.unwrap_or(SimDuration::ZERO)),
    );
    match deadline {
        Some(d) => sheet.put(
            format!("{}.deadline", t.path),
            format!("{ROUTE}.timeout"),
            d,
        ),
        None => sheet.put(
            format!("{}.deadline", t.path),
            format!("{ROUTE}.timeout"),
            "0s (none)",
        ),
    }
    let mut thresholds = Map::new();
    thresholds.insert("priority".into(), json!("DEFAULT"));
    stack(t, sheet, &mut route, &mut thresholds, &mut cluster);
    if thresholds.len() > 1 {
        cluster.insert(
            "circuit_breakers".into(),
            json!({ "thresholds": [Value::Object(thresholds)] }),
        );
    }
    let routes = json!({
        "@type": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
        "name": t.name,
        "virtual_hosts": [{
            "name": t.name,
            "domains": ["*"],
            "routes": [{ "match": { "prefix": "/" }, "route": Value::Object(route) }],
        }],
    });
    Document::Yaml(vec![
        json!({ "resources": [Value::Object(cluster), routes] }),
    ])
}

/// What a cluster needs that a call does not say: how its endpoints are found (`type`), how
/// long a connection may take to open (`connect_timeout`, Envoy's default written out), and
/// the endpoints themselves, a placeholder address (`.invalid` resolves nowhere, RFC 2606).
fn endpoints(t: &Target, sheet: &mut Sheet, cluster: &mut Map<String, Value>) {
    let address = format!("{}.replace-me.invalid", t.name.replace(['/', '_'], "-"));
    cluster.insert("type".into(), json!("STRICT_DNS"));
    cluster.insert("connect_timeout".into(), json!(CONNECT_TIMEOUT));
    cluster.insert(
        "load_assignment".into(),
        json!({
            "cluster_name": t.name,
            "endpoints": [{ "lb_endpoints": [{ "endpoint": { "address": {
                "socket_address": { "address": address, "port_value": 80 },
            } } }] }],
        }),
    );
    sheet.placeholder(
        format!("{CLUSTER}.type"),
        "STRICT_DNS",
        "the endpoints are found by DNS; use EDS or STATIC as your deployment does",
    );
    sheet.placeholder(
        format!("{CLUSTER}.connect_timeout"),
        CONNECT_TIMEOUT,
        "Envoy's default, written out: resim opens no connections",
    );
    sheet.placeholder(
        format!("{CLUSTER}.load_assignment.endpoints[0].lb_endpoints[0]"),
        format!("{address}:80"),
        format!(
            "the address of {} ({} replicas here), a name that resolves nowhere until replaced",
            t.service_path, t.service.replicas
        ),
    );
}

/// The called service's balancer, outlier detection and health check, on the cluster.
fn service(t: &Target, sheet: &mut Sheet, cluster: &mut Map<String, Value>) {
    let s = t.service;
    let at = |k: &str| format!("{}.{k}", t.service_path);
    let mut written = vec!["outlier", "health_check"];
    let policy = match s.balancer {
        Balancer::RoundRobin => Some("ROUND_ROBIN"),
        Balancer::Random => Some("RANDOM"),
        Balancer::PowerOfTwo => Some("LEAST_REQUEST"),
        Balancer::LeastOutstanding => None,
    };
    match policy {
        Some(p) => {
            cluster.insert("lb_policy".into(), json!(p));
            sheet.put(at("balancer"), format!("{CLUSTER}.lb_policy"), p);
            written.push("balancer");
        }
        None => sheet.leave(at("balancer"), "LeastOutstanding", "Envoy's LEAST_REQUEST compares choice_count random hosts (PowerOfTwo with 2), not all of them; the cluster keeps Envoy's ROUND_ROBIN"),
    }
    if let Some(o) = &s.outlier {
        outlier(t, o, sheet, cluster);
    }
    if let Some(h) = &s.health_check {
        health_check(t, h, sheet, cluster);
    }
    leave_service(t, sheet, &written, "Envoy's cluster");
}

/// Outlier ejection as the cluster's `outlier_detection`.
fn outlier(t: &Target, o: &Outlier, sheet: &mut Sheet, cluster: &mut Map<String, Value>) {
    let at = |k: &str| format!("{}.{k}", t.service_path);
    let mut detection = json!({
        "consecutive_5xx": o.consecutive_failures,
        "base_ejection_time": proto_duration(o.ejection),
    });
    sheet.put(
        at("outlier.consecutive_failures"),
        format!("{CLUSTER}.outlier_detection.consecutive_5xx"),
        o.consecutive_failures,
    );
    sheet.put(
        at("outlier.ejection"),
        format!("{CLUSTER}.outlier_detection.base_ejection_time"),
        o.ejection,
    );
    if o.max_ejection_percent.fract() == 0.0 {
        detection["max_ejection_percent"] = json!(o.max_ejection_percent as u32);
        sheet.put(
            at("outlier.max_ejection_percent"),
            format!("{CLUSTER}.outlier_detection.max_ejection_percent"),
            o.max_ejection_percent,
        );
    } else {
        sheet.leave(
            at("outlier.max_ejection_percent"),
            o.max_ejection_percent,
            "Envoy's max_ejection_percent is a whole number; Envoy's 10 applies",
        );
    }
    cluster.insert("outlier_detection".into(), detection);
}

/// The active health check as the cluster's first `health_checks`.
fn health_check(t: &Target, h: &HealthCheck, sheet: &mut Sheet, cluster: &mut Map<String, Value>) {
    let at = |k: &str| format!("{}.{k}", t.service_path);
    let field = |k: &str| format!("{CLUSTER}.health_checks[0].{k}");
    sheet.put(at("health_check.interval"), field("interval"), h.interval);
    sheet.put(at("health_check.timeout"), field("timeout"), h.timeout);
    sheet.put(
        at("health_check.unhealthy_threshold"),
        field("unhealthy_threshold"),
        h.unhealthy_threshold,
    );
    sheet.put(
        at("health_check.healthy_threshold"),
        field("healthy_threshold"),
        h.healthy_threshold,
    );
    // Envoy needs a checker; a resim probe asks nothing, which a TCP connect is closest to.
    cluster.insert(
        "health_checks".into(),
        json!([{
            "interval": proto_duration(h.interval),
            "timeout": proto_duration(h.timeout),
            "unhealthy_threshold": h.unhealthy_threshold,
            "healthy_threshold": h.healthy_threshold,
            "tcp_health_check": {},
        }]),
    );
}

/// The call's stack: the retry and hedge policies on the route, the bulkhead and the retry
/// budget as the circuit breakers' thresholds.
fn stack(
    t: &Target,
    sheet: &mut Sheet,
    route: &mut Map<String, Value>,
    thresholds: &mut Map<String, Value>,
    cluster: &mut Map<String, Value>,
) {
    let retry_at = t.retry_index();
    let mut per_try = t.call.timeout;
    // Hedges are retries in Envoy: their count is the retry's, wherever the Hedge is listed.
    let retries = retry_at.and_then(|r| match &t.call.stack[r] {
        Layer::Retry(r) => Some(r.max_attempts.saturating_sub(1)),
        _ => None,
    });
    let mut bulkhead_done = false;
    for (i, layer) in t.call.stack.iter().enumerate() {
        match layer {
            Layer::Retry(r) if Some(i) == retry_at => {
                let policy = retry(t, i, r, sheet, thresholds);
                route.insert("retry_policy".into(), policy);
            }
            Layer::Bulkhead(b) if !bulkhead_done && retry_at.is_none_or(|r| i > r) => {
                bulkhead(t, i, b, sheet, thresholds, cluster);
                bulkhead_done = true;
            }
            Layer::Hedge(h) => {
                if let Some(delay) = hedge(t, i, h, retries, sheet) {
                    route.insert(
                        "hedge_policy".into(),
                        json!({ "hedge_on_per_try_timeout": true }),
                    );
                    per_try = Some(delay);
                }
            }
            other => leave_layer(t, i, sheet, unwritten(other)),
        }
    }
    if let Some(d) = per_try {
        per_try_timeout(t, d, retries.is_some(), route, sheet);
    }
}

/// Why a layer is not written: Envoy has no counterpart, or one of its kind is written.
fn unwritten(layer: &Layer) -> &'static str {
    match layer {
        Layer::Bulkhead(_) => {
            "Envoy's circuit breakers count attempts in flight to the cluster: one bulkhead after the Retry is written"
        }
        Layer::Retry(_) => "a route has one retry policy: the first Retry is written",
        Layer::Breaker(_) => {
            "no counterpart: Envoy's circuit breakers are limits on requests in flight (the Bulkhead); the nearest to a resilience4j breaker is outlier detection, the service's `outlier`"
        }
        Layer::Limiter(_) => {
            "Envoy's local rate limit filter limits a listener's incoming requests, not a cluster's outgoing calls"
        }
        Layer::Fallback(_) => "no counterpart: a fallback is the application's code",
        Layer::AdaptiveTimeout(_) => "no counterpart: Envoy's per_try_timeout is fixed",
        _ => "no counterpart in Envoy's cluster or route",
    }
}

/// A `Hedge` as `hedge_on_per_try_timeout`: its delay, the per-try timeout, when Envoy can
/// say it (a Retry whose retries are the hedges, no per-attempt timeout of the call's own).
fn hedge(
    t: &Target,
    i: usize,
    h: &HedgeConfig,
    retries: Option<u32>,
    sheet: &mut Sheet,
) -> Option<SimDuration> {
    let reason = match (&h.delay, retries, t.call.timeout) {
        (HedgeDelay::Fixed { delay }, Some(n), None) => {
            let at = |k: &str| format!("{}.{k}", t.layer(i));
            sheet.put(at("delay"), format!("{ROUTE}.retry_policy.per_try_timeout, {ROUTE}.hedge_policy.hedge_on_per_try_timeout"), delay);
            if h.max_hedged_attempts == n.clamp(1, 10) {
                sheet.put(
                    at("max_hedged_attempts"),
                    format!("{ROUTE}.retry_policy.num_retries"),
                    n,
                );
            } else {
                sheet.leave(
                    at("max_hedged_attempts"),
                    h.max_hedged_attempts,
                    format!("Envoy's hedges are its retries: num_retries ({n}) bounds them"),
                );
            }
            return Some(*delay);
        }
        (HedgeDelay::Fixed { .. }, None, _) => {
            "Envoy hedges as retries on a per-try timeout: give the call a Retry before the Hedge"
        }
        (HedgeDelay::Fixed { .. }, Some(_), Some(_)) => {
            "Envoy hedges on the per-try timeout, which is the call's timeout here: the timeout is written, the hedge is not"
        }
        (HedgeDelay::Percentile { .. }, _, _) => {
            "Envoy hedges after the fixed per_try_timeout; a percentile delay has no counterpart"
        }
    };
    leave_layer(t, i, sheet, reason);
    None
}

/// The per-try timeout `d` (the call's timeout, or a hedge's delay) on the retry policy.
fn per_try_timeout(
    t: &Target,
    d: SimDuration,
    retried: bool,
    route: &mut Map<String, Value>,
    sheet: &mut Sheet,
) {
    if !retried {
        sheet.leave(format!("{}.timeout", t.path), d, "Envoy's per_try_timeout belongs to a retry policy, and the call has no Retry: without one, give the call a deadline (the route's timeout)");
        return;
    }
    if let Some(p) = route.get_mut("retry_policy").and_then(Value::as_object_mut) {
        p.insert("per_try_timeout".into(), proto_duration(d));
    }
    if t.call.timeout.is_some() {
        sheet.put(
            format!("{}.timeout", t.path),
            format!("{ROUTE}.retry_policy.per_try_timeout"),
            d,
        );
    }
}

/// A `Retry` as the route's `retry_policy`; its budget into the thresholds.
fn retry(
    t: &Target,
    i: usize,
    r: &RetryConfig,
    sheet: &mut Sheet,
    thresholds: &mut Map<String, Value>,
) -> Value {
    let at = |k: &str| format!("{}.{k}", t.layer(i));
    let field = |k: &str| format!("{ROUTE}.retry_policy.{k}");
    let mut policy = Map::new();
    let retries = r.max_attempts.saturating_sub(1);
    policy.insert("num_retries".into(), json!(retries));
    sheet.put(
        at("max_attempts"),
        field("num_retries"),
        format!("{retries} (retries after the first attempt)"),
    );
    let on = conditions(r);
    if t.retries_local_rejections(i, r) {
        sheet.leave(at("retry_on_local_rejection"), true, LOCAL_REJECTION);
    }
    for (k, value, reason) in &on.left {
        sheet.leave(at(k), value, reason.clone());
    }
    policy.insert("retry_on".into(), json!(on.names.join(",")));
    sheet.put(at("retry_on_*"), field("retry_on"), on.names.join(","));
    if !on.codes.is_empty() {
        policy.insert("retriable_status_codes".into(), json!(on.codes));
        sheet.put(
            at("retry_on_status"),
            field("retriable_status_codes"),
            format!("{:?}", on.codes),
        );
    }
    match envoy_backoff(r) {
        Some((base, max)) => {
            policy.insert("retry_back_off".into(), json!({ "base_interval": proto_duration(base), "max_interval": proto_duration(max) }));
            sheet.put(at("backoff.strategy.delay_initial"), field("retry_back_off.base_interval"), base);
            sheet.put(at("backoff.strategy.delay_max"), field("retry_back_off.max_interval"), max);
        }
        None => sheet.leave(at("backoff"), ron(&r.backoff), "Envoy's back-off is exponential, doubling, fully jittered (Exponential(multiplier: 2.0), jitter: Full); Envoy's default (25ms to 250ms) applies"),
    }
    if r.retry_after_max != RetryConfig::default().retry_after_max {
        policy.insert(
            "rate_limited_retry_back_off".into(),
            json!({
                "reset_headers": [{ "name": "Retry-After", "format": "SECONDS" }],
                "max_interval": proto_duration(r.retry_after_max),
            }),
        );
        sheet.put(
            at("retry_after_max"),
            field("rate_limited_retry_back_off.max_interval"),
            r.retry_after_max,
        );
    } else {
        sheet.leave(at("retry_after_max"), r.retry_after_max, "resim's default, not written: without rate_limited_retry_back_off Envoy ignores a Retry-After, where resim waits for one up to this long");
    }
    budget(t, i, r, sheet, thresholds);
    leave_retry_extras(t, i, r, sheet, true);
    Value::Object(policy)
}

/// The retry's budget as the circuit breakers' `max_retries` or `retry_budget`.
fn budget(
    t: &Target,
    i: usize,
    r: &RetryConfig,
    sheet: &mut Sheet,
    thresholds: &mut Map<String, Value>,
) {
    let at = |k: &str| format!("{}.{k}", t.layer(i));
    match &r.budget {
        Some(BudgetConfig::Concurrency(b)) if b.budget_percent == 0.0 => {
            thresholds.insert("max_retries".into(), json!(b.min_retry_concurrency));
            sheet.put(at("budget.min_retry_concurrency"), format!("{CLUSTER}.circuit_breakers.thresholds[0].max_retries"), b.min_retry_concurrency);
        }
        Some(BudgetConfig::Concurrency(b)) => {
            thresholds.insert("retry_budget".into(), json!({ "budget_percent": { "value": number(b.budget_percent) }, "min_retry_concurrency": b.min_retry_concurrency }));
            sheet.put(at("budget.budget_percent"), format!("{CLUSTER}.circuit_breakers.thresholds[0].retry_budget.budget_percent.value"), b.budget_percent);
            sheet.put(at("budget.min_retry_concurrency"), format!("{CLUSTER}.circuit_breakers.thresholds[0].retry_budget.min_retry_concurrency"), b.min_retry_concurrency);
        }
        Some(b @ BudgetConfig::RetryBreaker(_)) => sheet.leave(at("budget"), ron(b), "no counterpart: Envoy limits retries in flight (max_retries, retry_budget) and ejects failing hosts (outlier_detection), but never stops retries on a failure ratio; Envoy's default max_retries (3) applies"),
        Some(other) => sheet.leave(at("budget"), ron(other), "Envoy's retry limits are retries in flight (max_retries, retry_budget: resim's Concurrency budget); this budget has no counterpart, and Envoy's default max_retries (3) applies"),
        None => sheet.leave(at("budget"), "none", "Envoy always limits retries in flight: its default max_retries (3) applies"),
    }
}

/// Envoy's back-off, `(base_interval, max_interval)`, when the retry's is it.
fn envoy_backoff(r: &RetryConfig) -> Option<(SimDuration, SimDuration)> {
    match (&r.backoff.strategy, &r.backoff.jitter) {
        (
            Strategy::Exponential {
                delay_initial,
                multiplier,
                delay_max,
            },
            Jitter::Full,
        ) if *multiplier == 2.0 && !delay_initial.is_zero() => Some((*delay_initial, *delay_max)),
        _ => None,
    }
}

/// A per-attempt `Bulkhead` as the circuit breakers' thresholds: over HTTP/1.1 (it queues)
/// `max_requests` and `max_connections` both (a connection carries one request) and
/// `max_pending_requests`; with no queue, HTTP/2 (requests wait for no connection).
fn bulkhead(
    t: &Target,
    i: usize,
    b: &BulkheadConfig,
    sheet: &mut Sheet,
    thresholds: &mut Map<String, Value>,
    cluster: &mut Map<String, Value>,
) {
    let at = |k: &str| format!("{}.{k}", t.layer(i));
    let field = |k: &str| format!("{CLUSTER}.circuit_breakers.thresholds[0].{k}");
    thresholds.insert("max_requests".into(), json!(b.max_concurrent_calls));
    if b.queue_capacity == 0 {
        sheet.put(
            at("max_concurrent_calls"),
            field("max_requests"),
            b.max_concurrent_calls,
        );
        sheet.put(
            at("queue_capacity"),
            format!("{CLUSTER}.typed_extension_protocol_options (HTTP/2)"),
            "0: over HTTP/2 requests wait for no connection",
        );
        cluster.insert("typed_extension_protocol_options".into(), json!({
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                "explicit_http_config": { "http2_protocol_options": {} },
            },
        }));
        return;
    }
    thresholds.insert("max_connections".into(), json!(b.max_concurrent_calls));
    thresholds.insert("max_pending_requests".into(), json!(b.queue_capacity));
    sheet.put(
        at("max_concurrent_calls"),
        format!("{}, {}", field("max_requests"), field("max_connections")),
        b.max_concurrent_calls,
    );
    sheet.put(
        at("queue_capacity"),
        field("max_pending_requests"),
        b.queue_capacity,
    );
    let waits = t.call.deadline.unwrap_or(HOUR);
    if b.max_wait_duration != waits {
        sheet.leave(
            at("max_wait_duration"),
            b.max_wait_duration,
            format!(
                "a pending request waits in Envoy until the route's timeout ends it ({waits} here)"
            ),
        );
    }
}

/// What a retry retries, as Envoy's `retry_on` conditions and `retriable_status_codes`, and
/// the settings they cannot say (field, value, reason).
pub(super) struct Conditions {
    pub names: Vec<&'static str>,
    pub codes: Vec<u16>,
    pub left: Vec<(&'static str, String, String)>,
}

/// Why `retry_on_local_rejection: true` is left out of an Envoy or Istio retry.
pub(super) const LOCAL_REJECTION: &str = "no counterpart: Envoy never retries a request its circuit breakers refused (an overflow), and this retry retries what its gates refuse; set retry_on_local_rejection: false to run what Envoy does";

/// The conditions of `r`: `5xx` when it retries every 5xx, timeouts and lost connections;
/// `gateway-error` for 502, 503, 504 and timeouts; other statuses and 429 as retriable status
/// codes; `reset` for timeouts with connection errors, `connect-failure` for connection errors
/// alone; `retriable-4xx` for 409. Each is what the import reads back.
pub(super) fn conditions(r: &RetryConfig) -> Conditions {
    let mut statuses: Vec<u16> = r.retry_on_status.clone();
    let has_all = |s: &[u16], all: &[u16]| all.iter().all(|c| s.contains(c));
    let mut names = Vec::new();
    let (mut timeout, mut connection) = (false, false);
    if has_all(&statuses, &STATUS_5XX) && r.retry_on_timeout && r.retry_on_connection_error {
        names.push("5xx");
        statuses.retain(|c| !STATUS_5XX.contains(c));
        (timeout, connection) = (true, true);
    } else if has_all(&statuses, &[502, 503, 504]) && r.retry_on_timeout {
        names.push("gateway-error");
        statuses.retain(|c| ![502, 503, 504].contains(c));
        timeout = true;
    }
    let mut left = Vec::new();
    if r.retry_on_timeout && !timeout {
        if r.retry_on_connection_error {
            names.push("reset");
            connection = true;
        } else {
            left.push(("retry_on_timeout", "true".to_string(), "Envoy retries a per-try timeout under 5xx, gateway-error or reset, which also retry statuses or lost connections this retry does not".to_string()));
        }
    }
    if r.retry_on_connection_error && !connection {
        names.push("connect-failure");
    }
    if r.retry_on_conflict {
        names.push("retriable-4xx");
    }
    let mut codes = statuses;
    if r.retry_on_throttled {
        codes.push(429);
    }
    if !codes.is_empty() {
        names.push("retriable-status-codes");
    }
    Conditions { names, codes, left }
}
