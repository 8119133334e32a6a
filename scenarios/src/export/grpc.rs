//! A call as a gRPC service config (gRFC A2, A6): one `methodConfig` naming the service, its
//! `timeout` (the call's deadline), a `retryPolicy` or a `hedgingPolicy`, and
//! `retryThrottling` for a `Throttling` budget. The inverse of the import's `grpc` module.

use super::sheet::{Sheet, ron};
use super::text::{Document, number, proto_duration};
use super::{Target, leave_layer, leave_retry_extras, leave_service};
use crate::format::grpc_status::GrpcCode;
use crate::format::schema::Layer;
use patterns::backoff::{Jitter, Strategy};
use patterns::budget::BudgetConfig;
use patterns::hedge::{HedgeConfig, HedgeDelay};
use patterns::retry::RetryConfig;
use serde_json::{Map, Value, json};
use sim_core::SimDuration;

/// gRPC's cap on `maxAttempts`, for retries and hedges alike.
const ATTEMPTS_MAX: u32 = 5;

const METHOD: &str = "methodConfig[0]";

/// The service config of `t`, as JSON.
pub fn write(t: &Target, sheet: &mut Sheet) -> Document {
    let mut method = Map::new();
    // `{}` names every service; the import reads it as `default`.
    // `service/method` (gRPC's own name of a method) scopes the config to the one method.
    let name = match t.name.split_once('/') {
        _ if t.name == "default" => json!({}),
        Some((service, method)) => json!({ "service": service, "method": method }),
        None => json!({ "service": t.name }),
    };
    method.insert("name".into(), json!([name]));
    sheet.name(
        format!("{}.target", t.path),
        format!("{METHOD}.name[0].service"),
        &t.name,
    );
    if let Some(d) = t.call.deadline {
        method.insert("timeout".into(), proto_duration(d));
        sheet.put(
            format!("{}.deadline", t.path),
            format!("{METHOD}.timeout"),
            d,
        );
    }
    if let Some(d) = t.call.timeout {
        sheet.leave(format!("{}.timeout", t.path), d, "no counterpart: gRPC's timeout spans every attempt and hedge (the call's deadline); an attempt has no timeout of its own");
    }
    let mut config = Map::new();
    stack(t, sheet, &mut method, &mut config);
    leave_service(t, sheet, &[], "a gRPC service config");
    let mut root = Map::new();
    root.insert("methodConfig".into(), json!([Value::Object(method)]));
    root.extend(config);
    Document::Json(Value::Object(root))
}

/// The stack: its first Retry or Hedge as the method's policy; what gRPC has no place for
/// is listed.
fn stack(
    t: &Target,
    sheet: &mut Sheet,
    method: &mut Map<String, Value>,
    config: &mut Map<String, Value>,
) {
    let mut policy = false;
    for (i, layer) in t.call.stack.iter().enumerate() {
        let written = match layer {
            Layer::Retry(r) if !policy => retry(t, i, r, sheet, config).map(|p| ("retryPolicy", p)),
            Layer::Hedge(h) if !policy => hedge(t, i, h, sheet).map(|p| ("hedgingPolicy", p)),
            other => {
                leave_layer(t, i, sheet, unwritten(other));
                None
            }
        };
        if let Some((k, p)) = written {
            method.insert(k.into(), p);
            policy = true;
        }
    }
}

/// Why a layer is not written.
fn unwritten(layer: &Layer) -> &'static str {
    match layer {
        Layer::Retry(_) | Layer::Hedge(_) => {
            "a methodConfig has one retryPolicy or one hedgingPolicy, not both (gRFC A6): the first is written"
        }
        Layer::Fallback(_) => "no counterpart: a fallback is the application's code",
        Layer::AdaptiveTimeout(_) => "no counterpart: gRPC's timeout is fixed",
        _ => {
            "no counterpart: a gRPC service config has no breaker, bulkhead, rate limiter or client throttle"
        }
    }
}

/// A `Retry` as a `retryPolicy` (and its `Throttling` budget as `retryThrottling` into
/// `config`), or `None` when gRPC cannot say it.
fn retry(
    t: &Target,
    i: usize,
    r: &RetryConfig,
    sheet: &mut Sheet,
    config: &mut Map<String, Value>,
) -> Option<Value> {
    let at = |k: &str| format!("{}.{k}", t.layer(i));
    let field = |k: &str| format!("{METHOD}.retryPolicy.{k}");
    let (initial, multiplier, max) = match exponential(r) {
        Ok(backoff) => backoff,
        Err(reason) => {
            leave_layer(t, i, sheet, reason);
            return None;
        }
    };
    let codes = codes(t, i, r, sheet);
    if codes.is_empty() {
        leave_layer(
            t,
            i,
            sheet,
            "it retries none of the outcomes gRPC names, and gRPC needs a non-empty retryableStatusCodes",
        );
        return None;
    }
    let attempts = r.max_attempts.min(ATTEMPTS_MAX);
    sheet.put(at("max_attempts"), field("maxAttempts"), attempts);
    if r.max_attempts > ATTEMPTS_MAX {
        sheet.leave(
            at("max_attempts"),
            r.max_attempts,
            "gRPC caps maxAttempts at 5: 5 is written",
        );
    }
    let backoff = format!("{}.backoff.strategy", t.layer(i));
    sheet.put(
        format!("{backoff}.delay_initial"),
        field("initialBackoff"),
        initial,
    );
    sheet.put(
        format!("{backoff}.multiplier"),
        field("backoffMultiplier"),
        multiplier,
    );
    sheet.put(format!("{backoff}.delay_max"), field("maxBackoff"), max);
    if r.backoff.jitter != Jitter::Full {
        sheet.leave(
            at("backoff.jitter"),
            ron(&r.backoff.jitter),
            "gRPC's back-off is always fully jittered: uniform on [0, the capped exponential)",
        );
    }
    throttling(t, i, r, sheet, config);
    leave_retry_extras(t, i, r, sheet, false);
    Some(json!({
        "maxAttempts": attempts,
        "initialBackoff": proto_duration(initial),
        "maxBackoff": proto_duration(max),
        "backoffMultiplier": number(multiplier),
        "retryableStatusCodes": codes,
    }))
}

/// The retry's back-off as gRPC's `(initialBackoff, backoffMultiplier, maxBackoff)`, or why
/// gRPC cannot say the retry.
fn exponential(r: &RetryConfig) -> Result<(SimDuration, f64, SimDuration), &'static str> {
    if r.max_attempts < 2 {
        return Err("max_attempts below 2 retries nothing; gRPC needs maxAttempts of at least 2");
    }
    let backoff = match r.backoff.strategy {
        Strategy::Exponential {
            delay_initial,
            multiplier,
            delay_max,
        } => (delay_initial, multiplier, delay_max),
        Strategy::Constant { delay } => (delay, 1.0, delay),
        Strategy::Linear { .. } => {
            return Err(
                "gRPC's back-off is exponential (a multiplier of 1 is constant); a linear back-off has no counterpart, so no retryPolicy is written",
            );
        }
    };
    if backoff.0.is_zero() {
        return Err(
            "gRPC needs a positive initialBackoff; this back-off starts at 0, so no retryPolicy is written",
        );
    }
    Ok(backoff)
}

/// A `Throttling` budget as `retryThrottling`; another budget is listed.
fn throttling(
    t: &Target,
    i: usize,
    r: &RetryConfig,
    sheet: &mut Sheet,
    config: &mut Map<String, Value>,
) {
    let at = |k: &str| format!("{}.{k}", t.layer(i));
    match &r.budget {
        Some(BudgetConfig::Throttling(b)) => {
            config.insert("retryThrottling".into(), json!({ "maxTokens": b.max_tokens, "tokenRatio": number(b.token_ratio) }));
            sheet.put(at("budget.max_tokens"), "retryThrottling.maxTokens", b.max_tokens);
            sheet.put(at("budget.token_ratio"), "retryThrottling.tokenRatio", b.token_ratio);
        }
        Some(b @ BudgetConfig::RetryBreaker(_)) => sheet.leave(at("budget"), ron(b), "no counterpart: gRPC's retryThrottling stops retries when failures drain a token bucket, not on a failure ratio over a window; Throttling(max_tokens, token_ratio), a budget gRPC has, is the nearest"),
        Some(other) => sheet.leave(at("budget"), ron(other), "gRPC's retry budget is retryThrottling, a token bucket (resim's Throttling); this budget has no counterpart"),
        None => {}
    }
}

/// The status codes a retry retries, as gRPC names them; what gRPC cannot say is listed.
fn codes(t: &Target, i: usize, r: &RetryConfig, sheet: &mut Sheet) -> Vec<&'static str> {
    let at = |k: &str| format!("{}.{k}", t.layer(i));
    let field = format!("{METHOD}.retryPolicy.retryableStatusCodes");
    let mut codes = Vec::new();
    let unavailable = r.retry_on_status.contains(&503);
    if unavailable || r.retry_on_connection_error {
        codes.push(GrpcCode::UNAVAILABLE.name());
        if unavailable != r.retry_on_connection_error {
            let (k, v) = if unavailable {
                ("retry_on_connection_error", "false")
            } else {
                ("retry_on_status", "without 503")
            };
            sheet.leave(
                at(k),
                v,
                "gRPC's UNAVAILABLE is both a 503 and a failed connection: it retries both",
            );
        }
        if r.retry_on_connection_error {
            sheet.put(
                at("retry_on_connection_error"),
                &field,
                GrpcCode::UNAVAILABLE.name(),
            );
        }
    }
    for status in &r.retry_on_status {
        let code = match status {
            503 => GrpcCode::UNAVAILABLE.name(),
            500 => GrpcCode::INTERNAL.name(),
            501 => GrpcCode::UNIMPLEMENTED.name(),
            504 => GrpcCode::DEADLINE_EXCEEDED.name(),
            other => {
                sheet.leave(
                    at("retry_on_status"),
                    other,
                    "no gRPC status code is this status",
                );
                continue;
            }
        };
        if !codes.contains(&code) {
            codes.push(code);
        }
        sheet.put(at("retry_on_status"), &field, format!("{status}: {code}"));
    }
    if r.retry_on_throttled {
        codes.push(GrpcCode::RESOURCE_EXHAUSTED.name());
        sheet.put(
            at("retry_on_throttled"),
            &field,
            GrpcCode::RESOURCE_EXHAUSTED.name(),
        );
    }
    if r.retry_on_conflict {
        codes.push(GrpcCode::ABORTED.name());
        sheet.put(at("retry_on_conflict"), &field, GrpcCode::ABORTED.name());
    }
    if r.retry_on_timeout {
        sheet.leave(
            at("retry_on_timeout"),
            true,
            "no counterpart: gRPC's deadline spans the call, so an attempt never times out alone",
        );
    }
    codes
}

/// A `Hedge` as a `hedgingPolicy`, or `None` when gRPC cannot say it.
fn hedge(t: &Target, i: usize, h: &HedgeConfig, sheet: &mut Sheet) -> Option<Value> {
    let at = |k: &str| format!("{}.{k}", t.layer(i));
    let HedgeDelay::Fixed { delay } = h.delay else {
        leave_layer(
            t,
            i,
            sheet,
            "gRPC's hedgingDelay is fixed; a percentile delay has no counterpart",
        );
        return None;
    };
    let attempts = h.max_hedged_attempts.saturating_add(1).min(ATTEMPTS_MAX);
    sheet.put(
        at("delay"),
        format!("{METHOD}.hedgingPolicy.hedgingDelay"),
        delay,
    );
    sheet.put(
        at("max_hedged_attempts"),
        format!("{METHOD}.hedgingPolicy.maxAttempts"),
        format!("{attempts} (the first attempt and {} hedges)", attempts - 1),
    );
    if h.max_hedged_attempts + 1 > ATTEMPTS_MAX {
        sheet.leave(
            at("max_hedged_attempts"),
            h.max_hedged_attempts,
            "gRPC caps maxAttempts at 5 (4 hedges): 5 is written",
        );
    }
    Some(json!({ "maxAttempts": attempts, "hedgingDelay": proto_duration(delay) }))
}
