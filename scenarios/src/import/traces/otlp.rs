//! OTLP JSON as the OpenTelemetry Collector's file exporter writes it: one
//! `ExportTraceServiceRequest` a line (`resourceSpans[].scopeSpans[].spans[]`), ids in hex,
//! times in Unix nanoseconds as strings or numbers, the kind and status code as numbers or
//! their enum names (the protobuf JSON mapping allows both), `service.name` a resource
//! attribute. Read a line at a time.

use super::{PEER_KEYS, Span, SpanKind, ids_given, says_deadline, span_error};
use crate::import::ImportError;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::io::BufRead;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    #[serde(default)]
    resource_spans: Vec<ResourceSpans>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceSpans {
    #[serde(default)]
    resource: Resource,
    #[serde(default)]
    scope_spans: Vec<ScopeSpans>,
}

#[derive(Deserialize, Default)]
struct Resource {
    #[serde(default)]
    attributes: Vec<KeyValue>,
}

#[derive(Deserialize)]
struct ScopeSpans {
    #[serde(default)]
    spans: Vec<RawSpan>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSpan {
    #[serde(default)]
    trace_id: String,
    #[serde(default)]
    span_id: String,
    #[serde(default)]
    parent_span_id: String,
    #[serde(default)]
    trace_state: String,
    kind: Option<Value>,
    start_time_unix_nano: Option<Value>,
    end_time_unix_nano: Option<Value>,
    #[serde(default)]
    attributes: Vec<KeyValue>,
    #[serde(default)]
    status: Status,
}

#[derive(Deserialize, Default)]
struct Status {
    code: Option<Value>,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
struct KeyValue {
    key: String,
    #[serde(default)]
    value: AnyValue,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct AnyValue {
    string_value: Option<String>,
    /// An int64: a string of digits in protobuf's JSON mapping, a number where written so.
    int_value: Option<Value>,
}

impl AnyValue {
    /// A string or an integer as text (borrowed where it is text already: every attribute
    /// of every span is looked at).
    fn text(&self) -> Option<Cow<'_, str>> {
        match (&self.string_value, &self.int_value) {
            (Some(s), _) | (None, Some(Value::String(s))) => Some(Cow::Borrowed(s)),
            (None, Some(Value::Number(n))) => Some(Cow::Owned(n.to_string())),
            _ => None,
        }
    }
}

fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.string_value.as_deref())
}

/// Reads the spans of `reader` (a file of export requests, a line each) into `sink`.
pub fn read(
    file: &str,
    reader: impl BufRead,
    sink: &mut dyn FnMut(Span),
) -> Result<(), ImportError> {
    for (n, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| ImportError::new(format!("{file}: cannot read: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let request: Request = serde_json::from_str(&line).map_err(|e| {
            ImportError::new(format!(
                "{file}:{}:{}: not an OTLP JSON export request: {e} (the Collector's file exporter writes one `{{\"resourceSpans\": […]}}` a line)",
                n + 1,
                e.column()
            ))
        })?;
        for rs in request.resource_spans {
            let service = attribute(&rs.resource.attributes, "service.name").unwrap_or("");
            for raw in rs.scope_spans.into_iter().flat_map(|ss| ss.spans) {
                sink(span(file, service, raw)?);
            }
        }
    }
    Ok(())
}

/// One span, checked.
fn span(file: &str, service: &str, raw: RawSpan) -> Result<Span, ImportError> {
    let fail =
        |field: &str, what: String| span_error(file, &raw.trace_id, &raw.span_id, field, what);
    ids_given(file, &raw.trace_id, &raw.span_id, "spanId")?;
    if service.is_empty() {
        return Err(fail(
            "resource.attributes[service.name]",
            "missing: the resource of every span needs a `service.name`".into(),
        ));
    }
    let start = nanos(raw.start_time_unix_nano.as_ref()).ok_or_else(|| {
        fail(
            "startTimeUnixNano",
            expected_nanos(raw.start_time_unix_nano.as_ref()),
        )
    })?;
    let end = nanos(raw.end_time_unix_nano.as_ref()).ok_or_else(|| {
        fail(
            "endTimeUnixNano",
            expected_nanos(raw.end_time_unix_nano.as_ref()),
        )
    })?;
    if end < start {
        return Err(fail(
            "endTimeUnixNano",
            format!("{end} is before startTimeUnixNano {start}"),
        ));
    }
    let kind = kind(raw.kind.as_ref()).map_err(|e| fail("kind", e))?;
    let error = match &raw.status.code {
        Some(Value::Number(n)) => n.as_i64() == Some(2),
        Some(Value::String(s)) => s == "STATUS_CODE_ERROR",
        _ => false,
    };
    let deadline = says_deadline("error", &raw.status.message)
        || raw
            .attributes
            .iter()
            .any(|kv| kv.value.text().is_some_and(|v| says_deadline(&kv.key, &v)));
    let peer = PEER_KEYS
        .iter()
        .find_map(|k| attribute(&raw.attributes, k))
        .map(str::to_string);
    Ok(Span {
        parent: (!raw.parent_span_id.is_empty()).then(|| raw.parent_span_id.clone()),
        follows: false,
        service: service.to_string(),
        kind,
        start,
        end,
        error,
        deadline,
        peer,
        sampling: threshold_ratio(&raw.trace_state),
        trace: raw.trace_id,
        id: raw.span_id,
    })
}

/// A span's kind, as OTLP's enum number or name (absent: internal).
fn kind(v: Option<&Value>) -> Result<SpanKind, String> {
    match v {
        None => Ok(SpanKind::Internal),
        Some(Value::Number(n)) => n
            .as_i64()
            .and_then(SpanKind::numbered)
            .ok_or_else(|| format!("expected a span kind 0–5, got {n}")),
        Some(Value::String(s)) => SpanKind::named(s)
            .ok_or_else(|| format!("expected SPAN_KIND_SERVER, SPAN_KIND_CLIENT, …, got {s:?}")),
        Some(v) => Err(format!("expected a span kind, got {v}")),
    }
}

/// Unix nanoseconds as a string of digits or a number.
fn nanos(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

fn expected_nanos(v: Option<&Value>) -> String {
    match v {
        None => "missing: expected Unix nanoseconds (\"1700000000000000000\")".to_string(),
        Some(v) => format!("expected Unix nanoseconds as a string or number, got {v}"),
    }
}

/// The share of traces kept, from the W3C trace state's OpenTelemetry threshold (`ot=th:8`
/// rejects the lower half of the 56-bit randomness: half are kept).
fn threshold_ratio(state: &str) -> Option<f64> {
    let ot = state
        .split(',')
        .find_map(|kv| kv.trim().strip_prefix("ot="))?;
    let th = ot.split(';').find_map(|kv| kv.strip_prefix("th:"))?;
    if th.is_empty() || th.len() > 14 {
        return None;
    }
    let padded = format!("{th:0<14}");
    let rejected = u64::from_str_radix(&padded, 16).ok()?;
    Some(1.0 - rejected as f64 / (1u64 << 56) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_is_read_from_an_integer_attribute_or_the_status_message() {
        let line = |attributes: &str, status: &str| {
            format!(
                r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"api"}}}}]}},"scopeSpans":[{{"spans":[{{"traceId":"ab","spanId":"cd","kind":3,"startTimeUnixNano":"1","endTimeUnixNano":"9","attributes":[{attributes}],"status":{status}}}]}}]}}]}}"#
            )
        };
        let deadline = |text: String| {
            let mut spans = Vec::new();
            read("f.jsonl", text.as_bytes(), &mut |s| spans.push(s)).expect("a span");
            spans[0].deadline
        };
        let int = |key: &str, v: &str| format!(r#"{{"key":"{key}","value":{{"intValue":{v}}}}}"#);
        assert!(deadline(line(&int("rpc.grpc.status_code", "\"4\""), "{}")));
        assert!(deadline(line(
            &int("http.response.status_code", "504"),
            "{}"
        )));
        assert!(deadline(line(
            "",
            r#"{"code":2,"message":"context deadline exceeded"}"#
        )));
        assert!(!deadline(line(
            &int("rpc.grpc.status_code", "\"14\""),
            r#"{"code":2}"#
        )));
    }

    #[test]
    fn a_threshold_says_the_share_kept() {
        assert_eq!(threshold_ratio("ot=th:8"), Some(0.5));
        assert_eq!(threshold_ratio("vendor=x,ot=th:c;rv:abc"), Some(0.25));
        assert_eq!(threshold_ratio("ot=th:0"), Some(1.0));
        assert_eq!(threshold_ratio("other=1"), None);
    }
}
