//! OTLP JSON: one `ExportTraceServiceRequest` per line, as the OpenTelemetry Collector's file
//! exporter writes it (`resourceSpans` → `scopeSpans` → `spans`), in the protobuf JSON mapping
//! OTLP specifies: ids as lowercase hex (not base64), 64-bit integers as decimal strings,
//! enums as numbers, field names in lowerCamelCase. A line holds one request's spans, a
//! resource per service replica (`service.name`, `service.instance.id`).
//!
//! The document is serialized from borrowed structs: a span costs its own bytes and a few
//! small strings, not a tree of maps.

use super::{Attribute, Kind, Span, Trace, Value, hex};
use serde::Serialize;
use std::io::{self, Write};

/// The instrumentation scope of every span.
const SCOPE: &str = "resim";

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Request<'a> {
    resource_spans: Vec<ResourceSpans<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResourceSpans<'a> {
    resource: Resource,
    scope_spans: [ScopeSpans<'a>; 1],
}

#[derive(Serialize)]
struct Resource {
    attributes: Vec<KeyValue<'static>>,
}

#[derive(Serialize)]
struct ScopeSpans<'a> {
    scope: Scope,
    spans: Vec<OtlpSpan<'a>>,
}

#[derive(Serialize)]
struct Scope {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OtlpSpan<'a> {
    trace_id: &'a str,
    span_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_span_id: Option<String>,
    name: &'a str,
    kind: u8,
    start_time_unix_nano: String,
    end_time_unix_nano: String,
    attributes: Vec<KeyValue<'a>>,
    events: Vec<OtlpEvent<'a>>,
    status: Status<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OtlpEvent<'a> {
    time_unix_nano: String,
    name: &'a str,
    attributes: Vec<KeyValue<'a>>,
}

#[derive(Serialize)]
struct Status<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
}

#[derive(Serialize)]
struct KeyValue<'a> {
    key: &'a str,
    value: AnyValue<'a>,
}

#[derive(Serialize)]
enum AnyValue<'a> {
    #[serde(rename = "stringValue")]
    String(std::borrow::Cow<'a, str>),
    /// A 64-bit integer, as the mapping writes it: a decimal string.
    #[serde(rename = "intValue")]
    Int(String),
    #[serde(rename = "boolValue")]
    Bool(bool),
}

fn attributes(list: &[Attribute]) -> Vec<KeyValue<'_>> {
    list.iter()
        .map(|(key, v)| KeyValue {
            key,
            value: match v {
                Value::Int(i) => AnyValue::Int(i.to_string()),
                Value::Str(s) => AnyValue::String(s.as_str().into()),
                Value::Bool(b) => AnyValue::Bool(*b),
            },
        })
        .collect()
}

fn span<'a>(trace_id: &'a str, s: &'a Span) -> OtlpSpan<'a> {
    // SPAN_KIND_INTERNAL, SPAN_KIND_SERVER, SPAN_KIND_CLIENT.
    let kind = match s.kind {
        Kind::Internal => 1,
        Kind::Server => 2,
        Kind::Client => 3,
    };
    OtlpSpan {
        trace_id,
        span_id: hex(u128::from(s.id), 16),
        parent_span_id: s.parent.map(|p| hex(u128::from(p), 16)),
        name: &s.name,
        kind,
        start_time_unix_nano: s.start.as_nanos().to_string(),
        end_time_unix_nano: s.end.as_nanos().to_string(),
        attributes: attributes(&s.attributes),
        events: s
            .events
            .iter()
            .map(|e| OtlpEvent {
                time_unix_nano: e.at.as_nanos().to_string(),
                name: e.name,
                attributes: attributes(&e.attributes),
            })
            .collect(),
        // STATUS_CODE_ERROR with the reason; a success leaves the status unset.
        status: Status {
            code: s.error.as_ref().map(|_| 2),
            message: s.error.as_deref(),
        },
    }
}

/// A service and its replica, if the span is a job's.
type Replica<'a> = (&'a str, Option<u32>);

/// Writes `trace` as one line.
pub(super) fn write(out: &mut impl Write, trace: &Trace) -> io::Result<()> {
    let trace_id = hex(trace.id, 32);
    // A resource per service replica, in the order of their first span.
    let mut resources: Vec<(Replica, Vec<OtlpSpan>)> = Vec::new();
    for s in &trace.spans {
        let key = (s.service.as_str(), s.replica);
        let i = match resources.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                resources.push((key, Vec::new()));
                resources.len() - 1
            }
        };
        resources[i].1.push(span(&trace_id, s));
    }
    let resource_spans = resources
        .into_iter()
        .map(|((service, replica), spans)| {
            let mut attributes = vec![KeyValue {
                key: "service.name",
                value: AnyValue::String(service.to_string().into()),
            }];
            if let Some(r) = replica {
                attributes.push(KeyValue {
                    key: "service.instance.id",
                    value: AnyValue::String(format!("{service}/{r}").into()),
                });
            }
            ResourceSpans {
                resource: Resource { attributes },
                scope_spans: [ScopeSpans {
                    scope: Scope {
                        name: SCOPE,
                        version: env!("CARGO_PKG_VERSION"),
                    },
                    spans,
                }],
            }
        })
        .collect();
    serde_json::to_writer(&mut *out, &Request { resource_spans })?;
    out.write_all(b"\n")
}
