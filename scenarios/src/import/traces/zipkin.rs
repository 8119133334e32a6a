//! Zipkin v2 JSON, as its API takes and answers spans: one list of spans (or of traces, each
//! a list of spans, as `/api/v2/traces` answers), each with `traceId`,
//! `id`, `parentId`, `kind` (`CLIENT`, `SERVER`, `PRODUCER`, `CONSUMER`; none for a local
//! span), `timestamp` and `duration` in microseconds, `localEndpoint.serviceName` and, on a
//! client span, `remoteEndpoint.serviceName`; a failure carries the `error` tag. Read a span
//! at a time: a serde visitor walks the list.

use super::{PEER_KEYS, Span, SpanKind, ids_given, micros, says_deadline, span_error};
use crate::import::ImportError;
use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSpan {
    #[serde(default)]
    trace_id: String,
    #[serde(default)]
    id: String,
    parent_id: Option<String>,
    kind: Option<String>,
    timestamp: Option<Value>,
    duration: Option<Value>,
    local_endpoint: Option<Endpoint>,
    remote_endpoint: Option<Endpoint>,
    #[serde(default)]
    tags: BTreeMap<String, String>,
    #[serde(default)]
    shared: bool,
}

/// An element of the top-level list: a span (`/api/v2/trace/{id}`, a file of spans) or a
/// trace's list of spans (`/api/v2/traces`, a list of traces).
#[derive(Deserialize)]
#[serde(untagged)]
enum Item {
    Span(Box<RawSpan>),
    Trace(Vec<RawSpan>),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Endpoint {
    service_name: Option<String>,
}

/// Reads the spans of `reader` into `sink`.
pub fn read(file: &str, reader: impl Read, sink: &mut dyn FnMut(Span)) -> Result<(), ImportError> {
    let mut failed = None;
    let mut de = serde_json::Deserializer::from_reader(reader);
    let list = List {
        file,
        sink,
        failed: &mut failed,
    };
    let read = list.deserialize(&mut de).and_then(|()| de.end());
    match (failed, read) {
        (Some(e), _) => Err(e),
        (None, Err(e)) => Err(ImportError::new(format!(
            "{file}:{}:{}: not Zipkin v2 JSON: {e} (expected a list of spans, [{{\"traceId\": …, \"id\": …, \"timestamp\": …}}])",
            e.line(),
            e.column()
        ))),
        (None, Ok(())) => Ok(()),
    }
}

struct List<'a> {
    file: &'a str,
    sink: &'a mut dyn FnMut(Span),
    failed: &'a mut Option<ImportError>,
}

impl<'de> DeserializeSeed<'de> for List<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for List<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of spans")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(item) = seq.next_element::<Item>()? {
            let raws = match item {
                Item::Span(raw) => vec![*raw],
                Item::Trace(raws) => raws,
            };
            for raw in raws {
                match span(self.file, raw) {
                    Ok(s) => (self.sink)(s),
                    Err(e) => {
                        *self.failed = Some(e);
                        return Err(de::Error::custom("a malformed span"));
                    }
                }
            }
        }
        Ok(())
    }
}

/// One span, checked.
fn span(file: &str, raw: RawSpan) -> Result<Span, ImportError> {
    let fail = |field: &str, what: String| span_error(file, &raw.trace_id, &raw.id, field, what);
    ids_given(file, &raw.trace_id, &raw.id, "id")?;
    let service = raw
        .local_endpoint
        .as_ref()
        .and_then(|e| e.service_name.clone())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            fail(
                "localEndpoint.serviceName",
                "missing: every span needs the service that recorded it".into(),
            )
        })?;
    let start = micros(raw.timestamp.as_ref()).map_err(|e| fail("timestamp", e))?;
    // Zipkin leaves the duration out of a span still open or of zero length.
    let duration = match &raw.duration {
        None => 0,
        Some(d) => micros(Some(d)).map_err(|e| fail("duration", e))?,
    };
    let kind = match raw.kind.as_deref() {
        None => SpanKind::Internal,
        Some(k) => SpanKind::named(k).ok_or_else(|| {
            fail(
                "kind",
                format!("expected CLIENT, SERVER, PRODUCER or CONSUMER, got {k:?}"),
            )
        })?,
    };
    // A shared server span (B3's single span id) has its client's id: it is the client's
    // child here, under an id of its own.
    let (id, parent) = if raw.shared && kind == SpanKind::Server {
        (format!("{}:shared", raw.id), Some(raw.id.clone()))
    } else {
        (
            raw.id.clone(),
            raw.parent_id.clone().filter(|p| !p.is_empty()),
        )
    };
    Ok(Span {
        parent,
        follows: false,
        service,
        kind,
        start: start * 1000,
        end: (start + duration) * 1000,
        error: raw.tags.contains_key("error"),
        deadline: raw.tags.iter().any(|(k, v)| says_deadline(k, v)),
        peer: peer(&raw),
        sampling: None,
        trace: raw.trace_id,
        id,
    })
}

/// The peer a span names: its remote endpoint's service, else a peer tag.
fn peer(raw: &RawSpan) -> Option<String> {
    raw.remote_endpoint
        .as_ref()
        .and_then(|e| e.service_name.clone())
        .or_else(|| PEER_KEYS.iter().find_map(|k| raw.tags.get(*k).cloned()))
}
