//! protoc-gen-validate's ranges on the Envoy fields export writes, which `proto_schema.py`
//! does not read into `envoy.json` (it reads only the rules that make a field required): each
//! rule written here from its annotation, the proto file and line named (the vendored
//! schema's commit; the README lists them). Envoy refuses a configuration that breaks one at
//! load, as it refuses an unknown field.

use super::values::camel;
use serde_json::{Map, Value};

/// A range, as protoc-gen-validate writes it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Range {
    /// `duration = {gt {}}`: more than zero.
    DurationPositive,
    /// `uint32 = {lte: N}`.
    AtMost(f64),
    /// `uint32 = {gte: N}`.
    AtLeast(f64),
    /// `double = {gte: A lte: B}`.
    Within(f64, f64),
}

/// (message, field, range, where the annotation is in data-plane-api).
const RULES: &[(&str, &str, Range, &str)] = &[
    (
        "envoy.config.cluster.v3.Cluster",
        "connect_timeout",
        Range::DurationPositive,
        "envoy/config/cluster/v3/cluster.proto:883",
    ),
    (
        "envoy.config.cluster.v3.OutlierDetection",
        "interval",
        Range::DurationPositive,
        "envoy/config/cluster/v3/outlier_detection.proto:37",
    ),
    (
        "envoy.config.cluster.v3.OutlierDetection",
        "base_ejection_time",
        Range::DurationPositive,
        "envoy/config/cluster/v3/outlier_detection.proto:43",
    ),
    (
        "envoy.config.cluster.v3.OutlierDetection",
        "max_ejection_percent",
        Range::AtMost(100.0),
        "envoy/config/cluster/v3/outlier_detection.proto:47",
    ),
    (
        "envoy.type.v3.Percent",
        "value",
        Range::Within(0.0, 100.0),
        "envoy/type/v3/percent.proto:21",
    ),
    (
        "envoy.config.route.v3.RetryPolicy.RetryBackOff",
        "base_interval",
        Range::DurationPositive,
        "envoy/config/route/v3/route_components.proto:1615",
    ),
    (
        "envoy.config.route.v3.RetryPolicy.RetryBackOff",
        "max_interval",
        Range::DurationPositive,
        "envoy/config/route/v3/route_components.proto:1624",
    ),
    (
        "envoy.config.route.v3.RetryPolicy.RateLimitedRetryBackOff",
        "max_interval",
        Range::DurationPositive,
        "envoy/config/route/v3/route_components.proto:1695",
    ),
    (
        "envoy.config.route.v3.HedgePolicy",
        "initial_requests",
        Range::AtLeast(1.0),
        "envoy/config/route/v3/route_components.proto:1801",
    ),
    (
        "envoy.config.core.v3.HealthCheck",
        "timeout",
        Range::DurationPositive,
        "envoy/config/core/v3/health_check.proto:271",
    ),
    (
        "envoy.config.core.v3.HealthCheck",
        "interval",
        Range::DurationPositive,
        "envoy/config/core/v3/health_check.proto:277",
    ),
    (
        "envoy.config.core.v3.SocketAddress",
        "port_value",
        Range::AtMost(65535.0),
        "envoy/config/core/v3/address.proto:80",
    ),
];

/// The messages [`RULES`] names, for the test that each is in the schema's extract.
pub(super) fn messages() -> impl Iterator<Item = (&'static str, &'static str)> {
    RULES.iter().map(|(m, f, _, _)| (*m, *f))
}

/// The fields of the message `message`, `o`, out of their range: each field's key as written
/// and what is wrong.
pub(super) fn out_of_range(message: &str, o: &Map<String, Value>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (_, field, range, source) in RULES.iter().filter(|r| r.0 == message) {
        let Some((key, value)) = o
            .get_key_value(*field)
            .or_else(|| o.get_key_value(&camel(field)))
        else {
            continue;
        };
        let ok = match range {
            Range::DurationPositive => value.as_str().and_then(duration_ns).is_none_or(|ns| ns > 0),
            Range::AtMost(max) => number(value).is_none_or(|n| n <= *max),
            Range::AtLeast(min) => number(value).is_none_or(|n| n >= *min),
            Range::Within(min, max) => number(value).is_none_or(|n| (*min..=*max).contains(&n)),
        };
        if !ok {
            let what = match range {
                Range::DurationPositive => "must be more than 0s".to_string(),
                Range::AtMost(max) => format!("must be at most {max}"),
                Range::AtLeast(min) => format!("must be at least {min}"),
                Range::Within(min, max) => format!("must be within [{min}, {max}]"),
            };
            out.push((
                key.clone(),
                format!("{value}: {what} (protoc-gen-validate, {source})"),
            ));
        }
    }
    out
}

/// A number, written as one or as text (protobuf JSON's integers may be strings).
fn number(v: &Value) -> Option<f64> {
    v.as_f64().or_else(|| v.as_str()?.parse().ok())
}

/// A `google.protobuf.Duration` in JSON (`"1.5s"`), in nanoseconds (its sign aside: a
/// negative one is refused as not more than 0).
fn duration_ns(t: &str) -> Option<i128> {
    let t = t.strip_suffix('s')?;
    let (sign, t) = match t.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, t),
    };
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    let whole: i128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let frac: i128 = format!("{frac:0<9}").get(..9)?.parse().ok()?;
    Some(sign * (whole * 1_000_000_000 + frac))
}
