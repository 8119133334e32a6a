//! Jaeger's JSON model (`model/json`), as the Jaeger UI's "upload JSON" and its query API
//! read it: `{"data": [trace, ...]}`, each trace with its spans and a `processes` map from a
//! process id to its service (a process per service replica), times in microseconds, tags
//! typed (`string`, `bool`, `int64`), the span kind as the `span.kind` tag and a failure as
//! `error: true` with OpenTelemetry's `otel.status_code`.

use super::{Kind, Span, Trace, Value, hex, micros};
use serde_json::{Map, Value as Json, json};
use std::io::{self, Write};

fn tag(key: &str, v: &Value) -> Json {
    match v {
        Value::Int(i) => json!({ "key": key, "type": "int64", "value": i }),
        Value::Str(s) => json!({ "key": key, "type": "string", "value": s }),
        Value::Bool(b) => json!({ "key": key, "type": "bool", "value": b }),
    }
}

/// Writes `trace` as one element of `data` (`first`: no comma before it).
pub(super) fn write(out: &mut impl Write, trace: &Trace, first: bool) -> io::Result<()> {
    let trace_id = hex(trace.id, 32);
    let mut processes = Map::new();
    let mut keys: Vec<(&str, Option<u32>)> = Vec::new();
    let mut spans = Vec::with_capacity(trace.spans.len());
    for s in &trace.spans {
        let key = (s.service.as_str(), s.replica);
        let n = match keys.iter().position(|k| *k == key) {
            Some(n) => n,
            None => {
                keys.push(key);
                let mut tags = Vec::new();
                if let Some(r) = s.replica {
                    let instance = Value::Str(format!("{}/{r}", s.service));
                    tags.push(tag("service.instance.id", &instance));
                }
                let process = json!({ "serviceName": s.service, "tags": tags });
                processes.insert(format!("p{}", keys.len()), process);
                keys.len() - 1
            }
        };
        spans.push(span(s, &trace_id, n));
    }
    if !first {
        out.write_all(b",\n")?;
    }
    let doc = json!({
        "traceID": trace_id,
        "spans": spans,
        "processes": processes,
        "warnings": null,
    });
    serde_json::to_writer(&mut *out, &doc)?;
    Ok(())
}

/// One span in Jaeger's model, under process `p{process + 1}`.
fn span(s: &Span, trace_id: &str, process: usize) -> Json {
    let kind = match s.kind {
        Kind::Internal => "internal",
        Kind::Client => "client",
        Kind::Server => "server",
    };
    let mut tags = vec![tag("span.kind", &Value::Str(kind.into()))];
    tags.extend(s.attributes.iter().map(|(k, v)| tag(k, v)));
    if let Some(why) = &s.error {
        tags.push(tag("error", &Value::Bool(true)));
        tags.push(tag("otel.status_code", &Value::Str("ERROR".into())));
        tags.push(tag("otel.status_description", &Value::Str(why.clone())));
    }
    let logs: Vec<Json> = s
        .events
        .iter()
        .map(|e| {
            let mut fields = vec![tag("event", &Value::Str(e.name.into()))];
            fields.extend(e.attributes.iter().map(|(k, v)| tag(k, v)));
            json!({ "timestamp": micros(e.at), "fields": fields })
        })
        .collect();
    let references: Vec<Json> = s
        .parent
        .iter()
        .map(|p| {
            json!({ "refType": "CHILD_OF", "traceID": trace_id, "spanID": hex(u128::from(*p), 16) })
        })
        .collect();
    json!({
        "traceID": trace_id,
        "spanID": hex(u128::from(s.id), 16),
        "operationName": s.name,
        "references": references,
        "flags": 1,
        "startTime": micros(s.start),
        "duration": micros(s.end) - micros(s.start),
        "tags": tags,
        "logs": logs,
        "processID": format!("p{}", process + 1),
        "warnings": null,
    })
}
