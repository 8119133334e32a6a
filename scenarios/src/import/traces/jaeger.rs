//! Jaeger's JSON, as the UI downloads a trace and the query API answers:
//! `{"data": [{"traceID", "spans": […], "processes": {…}}]}`, each span's service its
//! process's `serviceName`, its parent a `CHILD_OF` or `FOLLOWS_FROM` reference, its times in
//! microseconds, its kind the `span.kind` tag. Read a trace at a time: a serde visitor walks
//! the `data` list and hands each trace over whole.

use super::assemble::Assembler;
use super::{PEER_KEYS, Span, SpanKind, micros, says_deadline, span_error};
use crate::import::ImportError;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTrace {
    #[serde(rename = "traceID", default)]
    trace_id: String,
    #[serde(default)]
    spans: Vec<RawSpan>,
    #[serde(default)]
    processes: BTreeMap<String, Process>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSpan {
    #[serde(rename = "traceID", default)]
    trace_id: String,
    #[serde(rename = "spanID", default)]
    span_id: String,
    #[serde(default)]
    references: Vec<Reference>,
    start_time: Option<Value>,
    duration: Option<Value>,
    #[serde(default)]
    tags: Vec<Tag>,
    #[serde(rename = "processID")]
    process_id: Option<String>,
    process: Option<Process>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Reference {
    #[serde(default)]
    ref_type: String,
    #[serde(rename = "spanID", default)]
    span_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Process {
    #[serde(default)]
    service_name: String,
    #[serde(default)]
    tags: Vec<Tag>,
}

#[derive(Deserialize)]
struct Tag {
    key: String,
    #[serde(default)]
    value: Value,
}

fn tag<'a>(tags: &'a [Tag], key: &str) -> Option<&'a Value> {
    tags.iter().find(|t| t.key == key).map(|t| &t.value)
}

fn text<'a>(tags: &'a [Tag], key: &str) -> Option<&'a str> {
    tag(tags, key).and_then(Value::as_str)
}

/// Reads the traces of `reader` into `traces`, each closed as it ends.
pub fn read<F: FnMut(Vec<Span>)>(
    file: &str,
    reader: impl Read,
    traces: &mut Assembler<F>,
) -> Result<(), ImportError> {
    let mut failed = None;
    let mut de = serde_json::Deserializer::from_reader(reader);
    let top = Top {
        file,
        traces,
        failed: &mut failed,
    };
    let read = top.deserialize(&mut de).and_then(|()| de.end());
    match (failed, read) {
        (Some(e), _) => Err(e),
        (None, Err(e)) => Err(ImportError::new(format!(
            "{file}:{}:{}: not Jaeger's JSON: {e} (expected {{\"data\": [{{\"traceID\": …, \"spans\": […], \"processes\": {{…}}}}]}})",
            e.line(),
            e.column()
        ))),
        (None, Ok(())) => Ok(()),
    }
}

/// The top-level object; only `data` is read.
struct Top<'a, F: FnMut(Vec<Span>)> {
    file: &'a str,
    traces: &'a mut Assembler<F>,
    failed: &'a mut Option<ImportError>,
}

impl<'de, F: FnMut(Vec<Span>)> DeserializeSeed<'de> for Top<'_, F> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, F: FnMut(Vec<Span>)> Visitor<'de> for Top<'_, F> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object with `data`, a list of traces")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "data" {
                map.next_value_seed(Data {
                    file: self.file,
                    traces: &mut *self.traces,
                    failed: &mut *self.failed,
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// The `data` list, a trace at a time.
struct Data<'a, F: FnMut(Vec<Span>)> {
    file: &'a str,
    traces: &'a mut Assembler<F>,
    failed: &'a mut Option<ImportError>,
}

impl<'de, F: FnMut(Vec<Span>)> DeserializeSeed<'de> for Data<'_, F> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, F: FnMut(Vec<Span>)> Visitor<'de> for Data<'_, F> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of traces")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(trace) = seq.next_element::<RawTrace>()? {
            let spans = match spans(self.file, trace) {
                Ok(spans) => spans,
                Err(e) => {
                    *self.failed = Some(e);
                    return Err(de::Error::custom("a malformed span"));
                }
            };
            let ids: Vec<String> = spans.iter().map(|s| s.trace.clone()).collect();
            for s in spans {
                self.traces.push(s);
            }
            for id in ids {
                self.traces.close(&id);
            }
        }
        Ok(())
    }
}

/// The spans of one trace, checked.
fn spans(file: &str, trace: RawTrace) -> Result<Vec<Span>, ImportError> {
    trace
        .spans
        .iter()
        .map(|raw| span(file, &trace, raw))
        .collect()
}

/// One span of `trace`, checked.
fn span(file: &str, trace: &RawTrace, raw: &RawSpan) -> Result<Span, ImportError> {
    let trace_id = if raw.trace_id.is_empty() {
        &trace.trace_id
    } else {
        &raw.trace_id
    };
    let fail = |field: &str, what: String| span_error(file, trace_id, &raw.span_id, field, what);
    if raw.span_id.is_empty() {
        return Err(fail(
            "spanID",
            "missing: every span needs its spanID (hex)".into(),
        ));
    }
    let process = process(trace, raw).map_err(|(field, what)| fail(field, what))?;
    let start = micros(raw.start_time.as_ref()).map_err(|e| fail("startTime", e))?;
    let duration = micros(raw.duration.as_ref()).map_err(|e| fail("duration", e))?;
    let kind = match text(&raw.tags, "span.kind") {
        None => SpanKind::Internal,
        Some(k) => SpanKind::named(k).ok_or_else(|| {
            fail(
                "tags[span.kind]",
                format!("expected server, client, producer, consumer or internal, got {k:?}"),
            )
        })?,
    };
    let parent = raw
        .references
        .iter()
        .find(|r| r.ref_type == "CHILD_OF" || r.ref_type == "FOLLOWS_FROM");
    let error = matches!(tag(&raw.tags, "error"), Some(Value::Bool(true)))
        || text(&raw.tags, "error") == Some("true")
        || text(&raw.tags, "otel.status_code") == Some("ERROR");
    let deadline = raw.tags.iter().any(|t| match &t.value {
        Value::String(v) => says_deadline(&t.key, v),
        Value::Number(n) => says_deadline(&t.key, &n.to_string()),
        _ => false,
    });
    let sampling = [&raw.tags, &process.tags].into_iter().find_map(|tags| {
        (text(tags, "sampler.type") == Some("probabilistic"))
            .then(|| tag(tags, "sampler.param").and_then(Value::as_f64))
            .flatten()
    });
    Ok(Span {
        trace: trace_id.clone(),
        id: raw.span_id.clone(),
        parent: parent.map(|r| r.span_id.clone()),
        follows: parent.is_some_and(|r| r.ref_type == "FOLLOWS_FROM"),
        service: process.service_name.clone(),
        kind,
        start: start * 1000,
        end: (start + duration) * 1000,
        error,
        deadline,
        peer: PEER_KEYS
            .iter()
            .find_map(|k| text(&raw.tags, k))
            .map(str::to_string),
        sampling,
    })
}

/// The process of `raw`: its own, or the one of the trace's it names; else the field and
/// what is wrong.
fn process<'a>(
    trace: &'a RawTrace,
    raw: &'a RawSpan,
) -> Result<&'a Process, (&'static str, String)> {
    let process = match (&raw.process, &raw.process_id) {
        (Some(p), _) => p,
        (None, Some(id)) => trace.processes.get(id).ok_or_else(|| {
            (
                "processID",
                format!("{id:?} is not among the trace's `processes`"),
            )
        })?,
        (None, None) => return Err(("processID", "missing: a span names its process".into())),
    };
    if process.service_name.is_empty() {
        return Err((
            "processes[].serviceName",
            "missing: a process needs its serviceName".into(),
        ));
    }
    Ok(process)
}
