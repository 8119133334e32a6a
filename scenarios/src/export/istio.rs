//! A call as an Istio `DestinationRule` (the connection pool, outlier detection and load
//! balancer of the host) and `VirtualService` (one HTTP route to the host: its timeout and
//! retries), two YAML documents. The inverse of the import's `istio` module, which reads them
//! through the Envoy settings pilot makes of them: the connection pool is Envoy's circuit
//! breakers (a per-attempt `Bulkhead`, `maxRetries` a `Concurrency` budget of no percentage,
//! the traffic policy's `retryBudget` one with a percentage), the route's `timeout` the call's
//! deadline, `perTryTimeout` its timeout.

use super::envoy::{LOCAL_REJECTION, conditions};
use super::sheet::{Sheet, ron};
use super::text::{Document, unit_duration};
use super::{Target, leave_layer, leave_retry_extras, leave_service};
use crate::format::schema::{Balancer, Layer};
use patterns::backoff::{Jitter, Strategy};
use patterns::budget::BudgetConfig;
use patterns::bulkhead::{BULKHEAD_SIZE_MAX, BulkheadConfig};
use patterns::retry::RetryConfig;
use serde_json::{Map, Value, json};
use sim_core::SimDuration;

const RULE: &str = "DestinationRule.spec.trafficPolicy";
const ROUTE: &str = "VirtualService.spec.http[0]";
const HOUR: SimDuration = SimDuration::from_secs(3600);

fn go(d: SimDuration) -> Value {
    unit_duration(d, false)
}

/// The DestinationRule and the VirtualService of `t`, as YAML.
pub fn write(t: &Target, sheet: &mut Sheet) -> Document {
    sheet.name(
        format!("{}.target", t.path),
        "DestinationRule.spec.host, VirtualService.spec.hosts[0]",
        &t.name,
    );
    // `host/subset` (as `--service` and the import name a subset) is a subset of its host.
    let (host, subset) = match t.name.split_once('/') {
        Some((h, s)) => (h, Some(s)),
        None => (t.name.as_str(), None),
    };
    let mut policy = Map::new();
    let mut http = Map::new();
    let destination = match subset {
        Some(s) => json!({ "host": host, "subset": s }),
        None => json!({ "host": host }),
    };
    http.insert("route".into(), json!([{ "destination": destination }]));
    service(t, sheet, &mut policy);
    if let Some(d) = t.call.deadline {
        http.insert("timeout".into(), go(d));
        sheet.put(
            format!("{}.deadline", t.path),
            format!("{ROUTE}.timeout"),
            d,
        );
    }
    let mut pool = Pool::default();
    stack(t, sheet, &mut http, &mut pool);
    if let Some(b) = pool.retry_budget.take() {
        policy.insert("retryBudget".into(), b);
    }
    if let Some(p) = pool.value() {
        policy.insert("connectionPool".into(), p);
    }
    let spec = match subset {
        None => json!({ "host": host, "trafficPolicy": Value::Object(policy) }),
        Some(s) => {
            sheet.placeholder(
                "DestinationRule.spec.subsets[0].labels",
                format!("version: {s}"),
                "the labels that select the subset's pods (bookinfo's convention); use your deployment's",
            );
            json!({ "host": host, "subsets": [{
                "name": s,
                "labels": { "version": s },
                "trafficPolicy": Value::Object(policy),
            }] })
        }
    };
    let rule = json!({
        "apiVersion": "networking.istio.io/v1",
        "kind": "DestinationRule",
        "metadata": { "name": host },
        "spec": spec,
    });
    let virtual_service = json!({
        "apiVersion": "networking.istio.io/v1",
        "kind": "VirtualService",
        "metadata": { "name": host },
        "spec": { "hosts": [host], "http": [Value::Object(http)] },
    });
    Document::Yaml(vec![rule, virtual_service])
}

/// The connection pool's settings, as they are found.
#[derive(Default)]
struct Pool {
    tcp: Map<String, Value>,
    http: Map<String, Value>,
    /// The traffic policy's `retryBudget`, beside the pool.
    retry_budget: Option<Value>,
}

impl Pool {
    fn value(self) -> Option<Value> {
        let mut pool = Map::new();
        if !self.tcp.is_empty() {
            pool.insert("tcp".into(), Value::Object(self.tcp));
        }
        if !self.http.is_empty() {
            pool.insert("http".into(), Value::Object(self.http));
        }
        (!pool.is_empty()).then_some(Value::Object(pool))
    }
}

/// The called service's balancer and outlier detection, as the rule's traffic policy.
fn service(t: &Target, sheet: &mut Sheet, policy: &mut Map<String, Value>) {
    let s = t.service;
    let at = |k: &str| format!("{}.{k}", t.service_path);
    let mut written = vec!["outlier"];
    let simple = match s.balancer {
        Balancer::RoundRobin => Some("ROUND_ROBIN"),
        Balancer::Random => Some("RANDOM"),
        Balancer::PowerOfTwo => Some("LEAST_REQUEST"),
        Balancer::LeastOutstanding => None,
    };
    written.push("balancer");
    match simple {
        Some(p) => {
            policy.insert("loadBalancer".into(), json!({ "simple": p }));
            sheet.put(at("balancer"), format!("{RULE}.loadBalancer.simple"), p);
        }
        None => sheet.leave(at("balancer"), "LeastOutstanding", "Istio's LEAST_REQUEST compares two random hosts (PowerOfTwo), not all of them; Istio's default, LEAST_REQUEST, applies"),
    }
    if let Some(o) = &s.outlier {
        let field = |k: &str| format!("{RULE}.outlierDetection.{k}");
        let mut detection = json!({
            "consecutive5xxErrors": o.consecutive_failures,
            "baseEjectionTime": go(o.ejection),
        });
        sheet.put(
            at("outlier.consecutive_failures"),
            field("consecutive5xxErrors"),
            o.consecutive_failures,
        );
        sheet.put(
            at("outlier.ejection"),
            field("baseEjectionTime"),
            o.ejection,
        );
        if o.max_ejection_percent.fract() == 0.0 && o.max_ejection_percent >= 1.0 {
            detection["maxEjectionPercent"] = json!(o.max_ejection_percent as u32);
            sheet.put(
                at("outlier.max_ejection_percent"),
                field("maxEjectionPercent"),
                o.max_ejection_percent,
            );
        } else {
            sheet.leave(at("outlier.max_ejection_percent"), o.max_ejection_percent, "Istio's maxEjectionPercent is a whole number, and 0 is its unset: Istio's 10 applies");
        }
        policy.insert("outlierDetection".into(), detection);
    }
    leave_service(t, sheet, &written, "Istio");
}

/// The stack: the retry on the route, the bulkhead and the retry budget in the pool.
fn stack(t: &Target, sheet: &mut Sheet, http: &mut Map<String, Value>, pool: &mut Pool) {
    let retry_at = t.retry_index();
    let mut bulkhead_done = false;
    for (i, layer) in t.call.stack.iter().enumerate() {
        match layer {
            Layer::Retry(r) if Some(i) == retry_at => {
                http.insert("retries".into(), retry(t, i, r, sheet, pool));
            }
            Layer::Bulkhead(b) if !bulkhead_done && retry_at.is_none_or(|r| i > r) => {
                bulkhead(t, i, b, sheet, pool);
                bulkhead_done = true;
            }
            other => leave_layer(t, i, sheet, unwritten(other)),
        }
    }
    if retry_at.is_none() {
        // Without `retries`, Istio retries twice by default: say that this call does not.
        http.insert("retries".into(), json!({ "attempts": 0 }));
        sheet.put(
            format!("{}.stack", t.path),
            format!("{ROUTE}.retries.attempts"),
            "0 (no Retry: Istio's default retries off)",
        );
        if let Some(d) = t.call.timeout {
            sheet.leave(format!("{}.timeout", t.path), d, "Istio's perTryTimeout belongs to retries, and the call has no Retry: give the call a deadline (the route's timeout)");
        }
    }
}

/// Why a layer is not written: Istio has no counterpart, or one of its kind is written.
fn unwritten(layer: &Layer) -> &'static str {
    match layer {
        Layer::Bulkhead(_) => {
            "Istio's connection pool limits attempts in flight from the sidecar: one bulkhead after the Retry is written"
        }
        Layer::Retry(_) => "a route has one retry policy: the first Retry is written",
        Layer::Hedge(_) => "no counterpart: Istio's VirtualService does not hedge",
        Layer::Breaker(_) => {
            "no counterpart: Istio's connection pool limits requests in flight (the Bulkhead); the nearest to a resilience4j breaker is outlier detection, the service's `outlier`"
        }
        Layer::Limiter(_) => {
            "no counterpart in a DestinationRule or VirtualService (Istio rate limits with an EnvoyFilter on the receiving side)"
        }
        Layer::Fallback(_) => "no counterpart: a fallback is the application's code",
        Layer::AdaptiveTimeout(_) => "no counterpart: Istio's perTryTimeout is fixed",
        _ => "no counterpart in a DestinationRule or VirtualService",
    }
}

/// A `Retry` as the route's `retries`; its budget into the pool.
fn retry(t: &Target, i: usize, r: &RetryConfig, sheet: &mut Sheet, pool: &mut Pool) -> Value {
    let at = |k: &str| format!("{}.{k}", t.layer(i));
    let field = |k: &str| format!("{ROUTE}.retries.{k}");
    let mut retries = Map::new();
    let attempts = r.max_attempts.saturating_sub(1);
    retries.insert("attempts".into(), json!(attempts));
    sheet.put(
        at("max_attempts"),
        field("attempts"),
        format!("{attempts} (retries after the first attempt)"),
    );
    if let Some(d) = t.call.timeout {
        retries.insert("perTryTimeout".into(), go(d));
        sheet.put(format!("{}.timeout", t.path), field("perTryTimeout"), d);
    }
    let on = conditions(r);
    if t.retries_local_rejections(i, r) {
        sheet.leave(at("retry_on_local_rejection"), true, LOCAL_REJECTION);
    }
    for (k, value, reason) in &on.left {
        sheet.leave(at(k), value, reason.clone());
    }
    let mut words: Vec<String> = on
        .names
        .iter()
        .filter(|n| **n != "retriable-status-codes")
        .map(|n| n.to_string())
        .collect();
    words.extend(on.codes.iter().map(u16::to_string));
    if istio_default(r) {
        // Written out, the default's words would lose its 503 (pilot adds it only when
        // retryOn is unset): left unset, Istio's own default applies, which these outcomes are.
        sheet.put(
            at("retry_on_*"),
            field("retryOn"),
            format!("unset: Istio's default ({RETRY_ON_DEFAULT}, with 503), exactly what this retry retries"),
        );
    } else {
        retries.insert("retryOn".into(), json!(words.join(",")));
        sheet.put(at("retry_on_*"), field("retryOn"), words.join(","));
    }
    match (&r.backoff.strategy, &r.backoff.jitter) {
        (Strategy::Exponential { delay_initial, multiplier, delay_max }, Jitter::Full)
            if *multiplier == 2.0 && *delay_max == delay_initial.saturating_mul(10) && !delay_initial.is_zero() =>
        {
            retries.insert("backoff".into(), go(*delay_initial));
            sheet.put(at("backoff.strategy.delay_initial"), field("backoff"), delay_initial);
        }
        _ => sheet.leave(at("backoff"), ron(&r.backoff), "Istio's back-off is Envoy's: from `backoff` doubling to ten times it, fully jittered (Exponential(multiplier: 2.0, delay_max: 10 × delay_initial), jitter: Full); Istio's default (25ms) applies"),
    }
    retry_budget(&at, r, sheet, pool);
    if r.retry_after_max == RetryConfig::default().retry_after_max {
        sheet.leave(at("retry_after_max"), r.retry_after_max, "resim's default, not written: Istio's sidecar ignores a Retry-After, where resim waits for one up to this long");
    } else {
        sheet.leave(
            at("retry_after_max"),
            r.retry_after_max,
            "no counterpart: Istio's sidecar ignores a Retry-After",
        );
    }
    leave_retry_extras(t, i, r, sheet, true);
    Value::Object(retries)
}

/// A retry's budget, into the DestinationRule's pool where Istio has a counterpart.
fn retry_budget(at: &dyn Fn(&str) -> String, r: &RetryConfig, sheet: &mut Sheet, pool: &mut Pool) {
    match &r.budget {
        Some(budget @ BudgetConfig::Concurrency(b)) if b.min_retry_concurrency == 0 => sheet.leave(at("budget"), ron(budget), "Istio reads 0 as unset in maxRetries (no limit) and in retryBudget.minRetryConcurrency (3): a budget with no floor has no counterpart"),
        Some(BudgetConfig::Concurrency(b)) if b.budget_percent == 0.0 => {
            pool.http.insert("maxRetries".into(), json!(b.min_retry_concurrency));
            sheet.put(at("budget.min_retry_concurrency"), format!("{RULE}.connectionPool.http.maxRetries"), b.min_retry_concurrency);
        }
        Some(BudgetConfig::Concurrency(b)) => {
            pool.retry_budget = Some(json!({ "percent": b.budget_percent, "minRetryConcurrency": b.min_retry_concurrency }));
            sheet.put(at("budget.budget_percent"), format!("{RULE}.retryBudget.percent"), b.budget_percent);
            sheet.put(at("budget.min_retry_concurrency"), format!("{RULE}.retryBudget.minRetryConcurrency"), b.min_retry_concurrency);
        }
        Some(b @ BudgetConfig::RetryBreaker(_)) => sheet.leave(at("budget"), ron(b), "no counterpart: Istio's outlierDetection ejects failing hosts and its maxRetries and retryBudget bound retries in flight; none stops retries on a failure ratio"),
        Some(other) => sheet.leave(at("budget"), ron(other), "Istio's retry limits are maxRetries and retryBudget, both on retries in flight at once (Concurrency); this budget has no counterpart"),
        None => {}
    }
}

/// Istio's default `retryOn` (with `retriable_status_codes` 503).
const RETRY_ON_DEFAULT: &str =
    "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes";

/// Whether `r` retries exactly what Istio's default `retryOn` means in resim's outcomes: lost
/// connections and 503, nothing else.
fn istio_default(r: &RetryConfig) -> bool {
    let mut statuses = r.retry_on_status.clone();
    statuses.sort_unstable();
    statuses.dedup();
    statuses == [503]
        && r.retry_on_connection_error
        && !r.retry_on_timeout
        && !r.retry_on_throttled
        && !r.retry_on_conflict
}

/// A per-attempt `Bulkhead` as the connection pool: `maxConnections` and `http2MaxRequests`
/// both (over HTTP/1.1 the lower binds), `http1MaxPendingRequests` its queue.
fn bulkhead(t: &Target, i: usize, b: &BulkheadConfig, sheet: &mut Sheet, pool: &mut Pool) {
    let at = |k: &str| format!("{}.{k}", t.layer(i));
    pool.tcp
        .insert("maxConnections".into(), json!(b.max_concurrent_calls));
    pool.http
        .insert("http2MaxRequests".into(), json!(b.max_concurrent_calls));
    sheet.put(
        at("max_concurrent_calls"),
        format!("{RULE}.connectionPool.tcp.maxConnections, .http.http2MaxRequests"),
        b.max_concurrent_calls,
    );
    match b.queue_capacity {
        BULKHEAD_SIZE_MAX => sheet.put(at("queue_capacity"), format!("{RULE}.connectionPool.http.http1MaxPendingRequests"), "unset (Istio's unbounded, resim's largest)"),
        0 => sheet.leave(at("queue_capacity"), 0, "Istio reads http1MaxPendingRequests 0 as unset (no bound): a pool that queues nothing has no counterpart"),
        q => {
            pool.http.insert("http1MaxPendingRequests".into(), json!(q));
            sheet.put(at("queue_capacity"), format!("{RULE}.connectionPool.http.http1MaxPendingRequests"), q);
        }
    }
    let waits = t.call.deadline.unwrap_or(HOUR);
    if b.max_wait_duration != waits {
        sheet.leave(at("max_wait_duration"), b.max_wait_duration, format!("a pending request waits in the sidecar until the route's timeout ends it ({waits} here)"));
    }
}
