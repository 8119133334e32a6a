//! Zipkin v2 JSON (`zipkin2-api.yaml`'s `ListOfSpans`): one list of spans, times in
//! microseconds (a duration rounded up to 1µs, as the API asks), the kind `CLIENT` or
//! `SERVER` (an internal span has none), the service as `localEndpoint.serviceName` and the
//! other end as `remoteEndpoint.serviceName`, span events as annotations, attributes as
//! string tags and a failure as the `error` tag, which Zipkin's UI marks.

use super::{Kind, Trace, Value, hex, micros};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{self, Write};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ZipkinSpan<'a> {
    trace_id: &'a str,
    id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_id: Option<String>,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    timestamp: u64,
    duration: u64,
    local_endpoint: Endpoint<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    remote_endpoint: Option<Endpoint<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    annotations: Vec<Annotation<'a>>,
    tags: BTreeMap<&'a str, String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Endpoint<'a> {
    service_name: &'a str,
}

#[derive(Serialize)]
struct Annotation<'a> {
    timestamp: u64,
    value: &'a str,
}

fn text(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Str(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
    }
}

/// Writes the spans of `trace` as elements of the list (`first`: no comma before them).
pub(super) fn write(out: &mut impl Write, trace: &Trace, first: bool) -> io::Result<()> {
    let trace_id = hex(trace.id, 32);
    for (i, s) in trace.spans.iter().enumerate() {
        let mut tags: BTreeMap<&str, String> =
            s.attributes.iter().map(|(k, v)| (*k, text(v))).collect();
        if let Some(why) = &s.error {
            tags.insert("error", why.clone());
        }
        let span = ZipkinSpan {
            trace_id: &trace_id,
            id: hex(u128::from(s.id), 16),
            parent_id: s.parent.map(|p| hex(u128::from(p), 16)),
            name: &s.name,
            kind: match s.kind {
                Kind::Client => Some("CLIENT"),
                Kind::Server => Some("SERVER"),
                Kind::Internal => None,
            },
            timestamp: micros(s.start),
            duration: (micros(s.end) - micros(s.start)).max(1),
            local_endpoint: Endpoint {
                service_name: &s.service,
            },
            remote_endpoint: s.peer.as_deref().map(|p| Endpoint { service_name: p }),
            annotations: s
                .events
                .iter()
                .map(|e| Annotation {
                    timestamp: micros(e.at),
                    value: e.name,
                })
                .collect(),
            tags,
        };
        if !(first && i == 0) {
            out.write_all(b",\n")?;
        }
        serde_json::to_writer(&mut *out, &span)?;
    }
    Ok(())
}
