//! Simulated requests written as traces (`resim run --spans FILE`): each request the run
//! followed (`Followed`, handed over as it ends) becomes one trace ([`Trace`]), and a
//! [`SpanWriter`] streams the traces into a file in one of four formats.
//!
//! | module | what |
//! |---|---|
//! | `build` | a followed request's steps as spans: a call, its attempts, their jobs |
//! | `otlp` | OTLP JSON, as the OpenTelemetry Collector's file exporter writes it |
//! | `jaeger` | Jaeger's JSON model, as the Jaeger UI's "upload JSON" reads it |
//! | `zipkin` | Zipkin v2 JSON, a list of spans |
//! | `perfetto` | the Chrome trace-event format, for ui.perfetto.dev |
//!
//! **Layer rule:** spans are a view on what the run recorded: this module uses `figures.rs`
//! only (the followed steps, the reasons' status codes, the ids of `figures::sampling`),
//! never the world; `cli` opens the file and runs `run::run_streaming` with a writer.
//!
//! # The spans of a request
//!
//! Every call made for the request is an `INTERNAL` span of its caller (the client, or the
//! service whose job made it), named by its call site's path; each attempt of the call is a
//! `CLIENT` span under it, and each attempt that reached a replica a `SERVER` span of the
//! called service under the attempt. The calls a job made hang under the job's span; a
//! hedge's racing calls and a fan-out's leaves under the call they race or fan out for.
//! What a tool shows as a duration is one: a job's span runs from its arrival at the replica
//! (its enqueue, or the start of its work when a worker was free, or its refusal) to its
//! end there; an attempt's from its sending to the caller's learning its outcome.
//!
//! # Decisions
//!
//! - **Attributes for figures, events for instants.** The queue wait, the work and a retry's
//!   backoff are attributes in nanoseconds (`resim.queue.wait_ns`, `resim.work_ns`,
//!   `resim.retry.backoff_ns`), which Jaeger, Tempo and Zipkin can search and aggregate; the
//!   moments they start are span events (`queued`, `started`, `backoff`), which the tools
//!   draw on the span's bar. A refusal's reason is `error.type`, as OpenTelemetry's semantic
//!   conventions put the class of an error, with the status a caller sees as
//!   `http.response.status_code` (absent where no answer came) and the gRPC code as
//!   `rpc.grpc.status_code`, both from the reference's table of failure reasons
//!   ([`Reason::http_status`], [`Reason::grpc_code`]). A failed span has the status `ERROR`
//!   with the reason as its message; a success leaves the status unset, as the conventions
//!   ask of instrumentation.
//! - **Time zero is the Unix epoch.** A simulated run has no wall-clock start, and an offset
//!   would be a second source of truth: a span at 12.5s of the run starts 12.5s after
//!   1970-01-01T00:00:00Z. Jaeger and Zipkin count in microseconds, so their times are the
//!   run's nanoseconds rounded down (a duration rounded up to 1µs where Zipkin asks).
//! - **Ids from the seed.** Trace and span ids are hashes of the seed and the request, call
//!   and attempt ids (`figures::sampling`): the same file and seed give the same bytes.

mod build;
mod jaeger;
mod otlp;
mod perfetto;
mod zipkin;

pub use build::trace_of;

use crate::figures::Reason;
use sim_core::SimTime;
use std::io::{self, Write};

/// One request as a trace: its id and its spans, each after its parent.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The client request's id.
    pub request: u64,
    /// The trace id.
    pub id: u128,
    /// The spans, a parent before its children.
    pub spans: Vec<Span>,
}

/// What a span stands for, as OpenTelemetry's span kinds say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A call, with its retries, inside its caller.
    Internal,
    /// An attempt, at its caller.
    Client,
    /// An attempt's job, at its replica.
    Server,
}

/// A value of an attribute.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A whole number.
    Int(i64),
    /// A text.
    Str(String),
    /// A yes or no.
    Bool(bool),
}

/// An attribute: a name from OpenTelemetry's semantic conventions, or `resim.*`.
pub type Attribute = (&'static str, Value);

/// Something that happened at an instant of a span.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// When.
    pub at: SimTime,
    /// What (`queued`, `started`, `backoff`).
    pub name: &'static str,
    /// Its figures.
    pub attributes: Vec<Attribute>,
}

/// One span.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// Its id.
    pub id: u64,
    /// Its parent's id (`None`: the request's root).
    pub parent: Option<u64>,
    /// Its name: a call's path, or the service an attempt is for.
    pub name: String,
    /// Its kind.
    pub kind: Kind,
    /// The client or service it belongs to (`service.name`).
    pub service: String,
    /// The replica, for a job.
    pub replica: Option<u32>,
    /// The other end: the service a call or attempt is for.
    pub peer: Option<String>,
    /// When it started.
    pub start: SimTime,
    /// When it ended (the run's end, for a span still open then).
    pub end: SimTime,
    /// Why it failed, if it did (its status is then `ERROR`).
    pub error: Option<String>,
    /// Its attributes.
    pub attributes: Vec<Attribute>,
    /// Its events, in time order.
    pub events: Vec<Event>,
}

impl Span {
    /// The attributes of `reason`'s status (or of a success): the HTTP status where an
    /// answer came, the gRPC code, and `error.type`.
    fn set_outcome(&mut self, outcome: Option<Reason>) {
        match outcome {
            None => {
                self.attributes
                    .push(("http.response.status_code", Value::Int(200)));
                self.attributes
                    .push(("rpc.grpc.status_code", Value::Int(0)));
            }
            Some(reason) => {
                if let Some(status) = reason.http_status() {
                    self.attributes
                        .push(("http.response.status_code", Value::Int(i64::from(status))));
                }
                let code = reason.grpc_code().number();
                self.attributes
                    .push(("rpc.grpc.status_code", Value::Int(i64::from(code))));
                self.fail(reason.name());
            }
        }
    }

    /// The span failed for `why` (`error.type`).
    fn fail(&mut self, why: &str) {
        self.attributes
            .push(("error.type", Value::Str(why.to_string())));
        self.error = Some(why.to_string());
    }
}

/// The formats spans are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanFormat {
    /// OTLP JSON, one `ExportTraceServiceRequest` a line (the Collector's file exporter).
    Otlp,
    /// Jaeger's JSON model: `{"data": [trace, ...]}`.
    Jaeger,
    /// Zipkin v2 JSON: a list of spans.
    Zipkin,
    /// The Chrome trace-event format: `{"traceEvents": [...]}`.
    Perfetto,
}

impl SpanFormat {
    /// Every format, by the name `--spans-format` takes.
    pub const ALL: [(&'static str, SpanFormat); 4] = [
        ("otlp", SpanFormat::Otlp),
        ("jaeger", SpanFormat::Jaeger),
        ("zipkin", SpanFormat::Zipkin),
        ("perfetto", SpanFormat::Perfetto),
    ];
}

/// Writes traces into `out` in one format as they come, keeping nothing of a trace once
/// written (Perfetto's lanes excepted: a few numbers per replica).
pub struct SpanWriter<W: Write> {
    out: W,
    format: SpanFormat,
    /// Traces written so far.
    traces: u64,
    /// Spans written so far.
    spans: u64,
    perfetto: perfetto::Lanes,
}

impl<W: Write> SpanWriter<W> {
    /// Starts a document in `format` (its opening bracket, for the formats that have one).
    pub fn new(mut out: W, format: SpanFormat) -> io::Result<SpanWriter<W>> {
        match format {
            SpanFormat::Otlp => {}
            SpanFormat::Jaeger => out.write_all(b"{\"data\":[\n")?,
            SpanFormat::Zipkin => out.write_all(b"[\n")?,
            SpanFormat::Perfetto => {
                out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?
            }
        }
        Ok(SpanWriter {
            out,
            format,
            traces: 0,
            spans: 0,
            perfetto: perfetto::Lanes::default(),
        })
    }

    /// Writes one trace.
    pub fn write(&mut self, trace: &Trace) -> io::Result<()> {
        let first = self.traces == 0 && self.spans == 0;
        match self.format {
            SpanFormat::Otlp => otlp::write(&mut self.out, trace)?,
            SpanFormat::Jaeger => jaeger::write(&mut self.out, trace, first)?,
            SpanFormat::Zipkin => {
                zipkin::write(&mut self.out, trace, self.spans == 0)?;
            }
            SpanFormat::Perfetto => {
                self.perfetto.write(&mut self.out, trace)?;
            }
        }
        self.traces += 1;
        self.spans += trace.spans.len() as u64;
        Ok(())
    }

    /// Ends the document; the traces and spans written.
    pub fn finish(mut self) -> io::Result<(W, u64, u64)> {
        match self.format {
            SpanFormat::Otlp => {}
            SpanFormat::Jaeger => self.out.write_all(b"\n]}\n")?,
            SpanFormat::Zipkin => self.out.write_all(b"\n]\n")?,
            SpanFormat::Perfetto => self.perfetto.finish(&mut self.out)?,
        }
        self.out.flush()?;
        Ok((self.out, self.traces, self.spans))
    }
}

/// An id as lowercase hexadecimal of `digits` digits.
fn hex(id: u128, digits: usize) -> String {
    format!("{id:0digits$x}")
}

/// Nanoseconds since the run's start, as microseconds rounded down.
fn micros(t: SimTime) -> u64 {
    t.as_nanos() / 1_000
}
