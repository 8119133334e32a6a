//! Traces read into the neutral model: the services a system's spans show, who calls whom,
//! how often, in what order, how long each takes and how fast requests arrive. This module
//! owns the three trace formats `resim import` reads (recognised from their content like the
//! configuration formats), the one span they read into ([`Span`]), the grouping of spans into
//! traces with bounded memory (`assemble`) and the figures a trace gives (`graph`), made a
//! [`System`] (`system`).
//!
//! | module | what |
//! |---|---|
//! | `otlp` | OTLP JSON as the OpenTelemetry Collector's file exporter writes it: a JSON export request a line |
//! | `jaeger` | Jaeger's JSON (`{"data": [trace…]}`, the UI's download and the query API's answer) |
//! | `zipkin` | Zipkin v2 JSON, one list of spans |
//! | `assemble` | spans grouped by trace, each trace handed over when it is complete or too old |
//! | `graph` | one trace's figures: each server span's calls, self time, network time, errors |
//! | `calibration` | the report of what the import rests on, as JSON and as a table |
//! | `policies` | the retries and timeouts the spans show against the scenario's policies |
//! | `load` | whether a service's self time grows with its load (queueing measured as work) |
//! | `system` | the figures of every trace as services, calls, stages, work and arrival rates |
//!
//! # Decisions
//!
//! - **Hand-written serde structs** for the fields read, not `opentelemetry-proto` (which
//!   brings prost, tonic's types and futures into every build of the binary; it stays a
//!   dev-dependency that checks the writer) nor a Jaeger or Zipkin model crate (none is
//!   maintained apart from its client SDK).
//! - **Streamed**: each format is read record by record (a line of OTLP, a trace of Jaeger, a
//!   span of Zipkin, through a serde visitor over the top-level list), and the spans are held
//!   per trace only until the trace is complete (Jaeger), or until `assemble::OPEN_MAX`
//!   traces are open (the oldest is then taken as complete), so the spans held are bounded
//!   by the traces open at once. The readers take any `io::Read`: the command line hands
//!   them a trace file as a [`TraceFile`], read from disk through a buffer as it goes (its
//!   first kilobytes read once to tell its format), so a 100 MB file is never held whole.
//! - **Only what a span says about its own service's clock** orders things: a server span's
//!   calls are placed by their client spans (the same process's clock), and another service's
//!   spans give durations only, so clock skew between services (a child starting before its
//!   parent) moves nothing.

mod assemble;
mod calibration;
mod graph;
mod jaeger;
pub mod load;
mod otlp;
pub mod policies;
mod system;
mod zipkin;

pub use calibration::{Calibration, EdgeRow};

use super::{ImportError, Input};
use crate::import::model::System;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;

/// A trace file read from disk as it goes, not held whole: its path and its format.
#[derive(Debug, Clone)]
pub struct TraceFile {
    /// The path as given.
    pub file: String,
    /// Where it is read from.
    pub path: PathBuf,
    /// Its format, from its first kilobytes.
    pub format: TraceFormat,
}

impl TraceFile {
    /// `file` as a trace file when its first kilobytes say it is one (`None` when they do
    /// not: it is a configuration, read whole).
    pub fn sniff(file: &str) -> std::io::Result<Option<TraceFile>> {
        let mut head = Vec::with_capacity(HEAD);
        std::fs::File::open(file)?
            .take(HEAD as u64)
            .read_to_end(&mut head)?;
        Ok(
            detect(&String::from_utf8_lossy(&head)).map(|format| TraceFile {
                file: file.to_string(),
                path: PathBuf::from(file),
                format,
            }),
        )
    }
}

/// How much of a file says its format.
const HEAD: usize = 4096;

/// A trace file to read: one given as text, or one read from disk as it goes.
pub enum Source<'a> {
    /// A file's text, and its format.
    Text(&'a Input, TraceFormat),
    /// A file read from disk.
    File(&'a TraceFile),
}

impl Source<'_> {
    fn file(&self) -> &str {
        match self {
            Source::Text(input, _) => &input.file,
            Source::File(t) => &t.file,
        }
    }

    fn open(&self) -> Result<(TraceFormat, Box<dyn BufRead + '_>), ImportError> {
        Ok(match self {
            Source::Text(input, format) => (*format, Box::new(input.text.as_bytes())),
            Source::File(t) => {
                let f = std::fs::File::open(&t.path)
                    .map_err(|e| ImportError::new(format!("{}: cannot read: {e}", t.file)))?;
                (t.format, Box::new(BufReader::with_capacity(1 << 20, f)))
            }
        })
    }
}

/// What a span stands for, as OpenTelemetry's span kinds (and Jaeger's and Zipkin's
/// `span.kind`/`kind`) say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SpanKind {
    /// Work inside a service, neither end of a call.
    Internal,
    /// A request received: a service's job.
    Server,
    /// A request sent: one attempt of a call.
    Client,
    /// A message sent that nobody waits for (an asynchronous call).
    Producer,
    /// A message received (the job of an asynchronous call).
    Consumer,
}

impl SpanKind {
    /// Whether the span is a job of its service (a request or message received).
    pub fn receives(self) -> bool {
        matches!(self, SpanKind::Server | SpanKind::Consumer)
    }

    /// Whether the span sends a request or message to another service.
    pub fn sends(self) -> bool {
        matches!(self, SpanKind::Client | SpanKind::Producer)
    }

    /// From a kind's name in any of the formats' spellings (`SERVER`, `server`,
    /// `SPAN_KIND_SERVER`).
    pub fn named(name: &str) -> Option<SpanKind> {
        let n = name.trim_start_matches("SPAN_KIND_").to_ascii_lowercase();
        Some(match n.as_str() {
            "internal" | "unspecified" => SpanKind::Internal,
            "server" => SpanKind::Server,
            "client" => SpanKind::Client,
            "producer" => SpanKind::Producer,
            "consumer" => SpanKind::Consumer,
            _ => return None,
        })
    }

    /// From OTLP's enum number.
    pub fn numbered(n: i64) -> Option<SpanKind> {
        Some(match n {
            0 | 1 => SpanKind::Internal,
            2 => SpanKind::Server,
            3 => SpanKind::Client,
            4 => SpanKind::Producer,
            5 => SpanKind::Consumer,
            _ => return None,
        })
    }
}

/// One span, as every format reads into it: the fields the import uses, times in Unix
/// nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// The trace id, as the file writes it (hex).
    pub trace: String,
    /// The span id.
    pub id: String,
    /// The parent's span id.
    pub parent: Option<String>,
    /// Whether the parent only caused it and does not wait for it (Jaeger's `FOLLOWS_FROM`).
    pub follows: bool,
    /// The service that recorded it (`service.name`, Jaeger's process, Zipkin's
    /// `localEndpoint.serviceName`).
    pub service: String,
    /// What it stands for.
    pub kind: SpanKind,
    /// Its start.
    pub start: u64,
    /// Its end (at or after its start).
    pub end: u64,
    /// Whether it failed (status `ERROR`, the `error` tag).
    pub error: bool,
    /// Whether it ended for want of time: a timeout or a deadline (`says_deadline`).
    pub deadline: bool,
    /// The peer a client span names (`peer.service`, `server.address`, Zipkin's
    /// `remoteEndpoint.serviceName`), for a callee that records no spans of its own.
    pub peer: Option<String>,
    /// The share of requests the tracer kept, where the span carries it (Jaeger's
    /// `sampler.param` of a probabilistic sampler, OTLP's `ot=th:` trace state).
    pub sampling: Option<f64>,
}

impl Span {
    /// Its duration in nanoseconds.
    pub fn duration(&self) -> u64 {
        self.end - self.start
    }
}

/// The trace formats `resim import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// OTLP JSON, a request a line.
    Otlp,
    /// Jaeger's JSON.
    Jaeger,
    /// Zipkin v2 JSON.
    Zipkin,
}

impl TraceFormat {
    /// The format's name, as messages and the table write it.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Otlp => "otlp",
            TraceFormat::Jaeger => "jaeger",
            TraceFormat::Zipkin => "zipkin",
        }
    }
}

/// The trace format of `text`, from its first keys: `resourceSpans` (OTLP), `data` holding
/// `traceID`s (Jaeger), a list of objects with `traceId` (Zipkin); `None` for anything else.
pub fn detect(text: &str) -> Option<TraceFormat> {
    // The first few kilobytes say it; a 100 MB file is not scanned for a configuration key.
    let mut end = text.len().min(HEAD);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    let trimmed = head.trim_start();
    if trimmed.starts_with('{') && head.contains("\"resourceSpans\"") {
        Some(TraceFormat::Otlp)
    } else if trimmed.starts_with('{') && head.contains("\"data\"") && head.contains("\"traceID\"")
    {
        Some(TraceFormat::Jaeger)
    } else if trimmed.starts_with('[') && head.contains("\"traceId\"") {
        Some(TraceFormat::Zipkin)
    } else {
        None
    }
}

/// The attributes (tags) that name a client span's peer, in the order they are read.
pub(crate) const PEER_KEYS: [&str; 3] = ["peer.service", "server.address", "net.peer.name"];

/// Whether an attribute (a tag) says its span ended for want of time: the gRPC code
/// `DEADLINE_EXCEEDED` (4), HTTP 504 (a gateway's timeout) or 408 (the request's), an error
/// type, message or status description naming a timeout or a deadline
/// (`java.net.SocketTimeoutException`, `context deadline exceeded`), or Envoy's `UT` response
/// flag (upstream request timeout). `value` is the attribute's value as text.
pub(crate) fn says_deadline(key: &str, value: &str) -> bool {
    match key {
        "rpc.grpc.status_code" | "grpc.status_code" => {
            value == "4" || value.eq_ignore_ascii_case("DEADLINE_EXCEEDED")
        }
        "http.response.status_code" | "http.status_code" => value == "504" || value == "408",
        "error.type" | "exception.type" | "error" | "otel.status_description" => {
            let v = value.to_ascii_lowercase();
            v.contains("timeout") || v.contains("timed out") || v.contains("deadline")
        }
        "response_flags" => value.split(',').any(|f| f.trim() == "UT"),
        _ => false,
    }
}

/// Microseconds as a JSON number (Jaeger's and Zipkin's times), or what is wrong with them.
pub(crate) fn micros(v: Option<&serde_json::Value>) -> Result<u64, String> {
    v.and_then(serde_json::Value::as_u64).ok_or_else(|| {
        format!(
            "expected microseconds as a number, got {}",
            v.map_or("nothing".to_string(), serde_json::Value::to_string)
        )
    })
}

/// Where a span's error is: the file, the trace and span ids and the field.
pub(crate) fn span_error(
    file: &str,
    trace: &str,
    span: &str,
    field: &str,
    what: impl std::fmt::Display,
) -> ImportError {
    ImportError::new(format!(
        "{file}: trace {trace}, span {span}: {field}: {what}"
    ))
}

/// A span's trace and span ids, both required: the missing one named by its field in the
/// file's format (`traceId`, and `spanId` or `id`).
pub(crate) fn ids_given(
    file: &str,
    trace: &str,
    span: &str,
    span_field: &str,
) -> Result<(), ImportError> {
    let field = match (trace.is_empty(), span.is_empty()) {
        (false, false) => return Ok(()),
        (true, _) => "traceId",
        (false, true) => span_field,
    };
    Err(span_error(
        file,
        trace,
        span,
        field,
        format!("missing: every span needs its traceId and {span_field} (hex)"),
    ))
}

/// The system the trace files show, and the figures behind it (the calibration report):
/// each file read in its format, its spans grouped by trace, every trace's figures summed.
/// `sampling` is the share of requests traced where the spans do not say it.
pub fn read(
    inputs: &[Source<'_>],
    sampling: Option<f64>,
) -> Result<(System, Calibration), ImportError> {
    let mut figures = graph::Figures::default();
    for input in inputs {
        let mut traces = assemble::Assembler::new(|trace: Vec<Span>| figures.add(&trace));
        let file = input.file();
        let (format, reader) = input.open()?;
        match format {
            TraceFormat::Otlp => otlp::read(file, reader, &mut |s| traces.push(s))?,
            TraceFormat::Jaeger => jaeger::read(file, reader, &mut traces)?,
            TraceFormat::Zipkin => zipkin::read(file, reader, &mut |s| traces.push(s))?,
        }
        traces.finish();
    }
    let files: Vec<&str> = inputs.iter().map(Source::file).collect();
    system::system(&figures, &files, sampling)
}

#[cfg(test)]
mod tests {
    use super::ids_given;

    #[test]
    fn a_deadline_is_read_from_the_codes_and_words_the_formats_use() {
        use super::says_deadline;
        for (key, value) in [
            ("rpc.grpc.status_code", "4"),
            ("grpc.status_code", "DEADLINE_EXCEEDED"),
            ("http.response.status_code", "504"),
            ("http.status_code", "408"),
            ("error.type", "timeout"),
            ("error.type", "java.net.SocketTimeoutException"),
            ("error", "context deadline exceeded"),
            ("otel.status_description", "upstream request timed out"),
            ("response_flags", "URX,UT"),
        ] {
            assert!(says_deadline(key, value), "{key}={value}");
        }
        for (key, value) in [
            ("rpc.grpc.status_code", "14"),
            ("http.response.status_code", "503"),
            ("error.type", "connection_refused"),
            ("error", "true"),
            ("response_flags", "UTF"),
            ("peer.service", "timeout-service"),
        ] {
            assert!(!says_deadline(key, value), "{key}={value}");
        }
    }

    #[test]
    fn a_missing_id_is_named_by_its_field_in_the_format() {
        assert!(ids_given("f.json", "ab", "cd", "id").is_ok());
        let no_trace = ids_given("f.json", "", "cd", "spanId").unwrap_err().0;
        assert_eq!(
            no_trace,
            "f.json: trace , span cd: traceId: missing: every span needs its traceId and spanId (hex)"
        );
        let no_span = ids_given("f.json", "ab", "", "id").unwrap_err().0;
        assert!(no_span.contains("span : id: missing"), "{no_span}");
    }
}
