//! `resim import`: a production resilience configuration read into the scenario format.
//!
//! An importer reads an external configuration (today: Envoy v3 clusters, routes and HTTP
//! filters, as YAML or JSON; Istio's `DestinationRule` and `VirtualService`, one or several
//! to a file; resilience4j's Spring Boot configuration, as YAML or `.properties`; a gRPC
//! service config, as JSON) and writes scenario RON text: a new scenario around the call it
//! configures, or the call stack and the target's service settings written into an existing
//! scenario (`--into FILE --call PATH`). Every value it writes carries a `//` comment naming
//! the field it came from (`// envoy: clusters[db].outlier_detection.consecutive_5xx`), and it
//! gives a mapping table: each source field, the scenario path it became and its value, then
//! every field of the file it did not import with the reason (no counterpart, a
//! simplification we make, a value out of range). Nothing is dropped without a line.
//!
//! Importers map semantics, not names: Envoy's circuit breakers are limits on requests and
//! connections in flight (a bulkhead and a retry budget here), not a resilience4j breaker;
//! its route timeout spans every retry (the call's `deadline`), its `per_try_timeout` is one
//! attempt's (the call's `timeout`). The reference's import chapter has the table per format.
//!
//! Several files are one system: every file is read into one neutral model ([`model`]:
//! upstreams, routes and policies, each value with its file, line, column and path), each
//! format's files together as the mesh or the library reads them, and one writer (`write`)
//! writes the scenario from it, with the one mapping table.
//!
//! | module | what |
//! |---|---|
//! | `calls` | the calls of a scenario by path (`services.api.calls[0]`), for `--call` |
//! | `tree` | a YAML, JSON or `.properties` file read into one tree, with the line and column of each value |
//! | `node` | a place in that tree as a reader walks it, and the typed reads every format shares |
//! | `ledger` | which fields of a file a reader took, which it left out and why, and how the format names its paths |
//! | `model` | the neutral model: upstreams, routes, policies and their origins; merging (`model::merge`) and the table (`model::table`) |
//! | `properties` | Java `.properties` (Spring's `application.properties`) read into that tree |
//! | `spring` | Spring Boot's binding: relaxed names, dotted YAML keys, `Duration` values |
//! | `ron` | scenario values with their origins, written as commented RON; the table's rows |
//! | `envoy` | Envoy v3: clusters, routes, the adaptive concurrency filter (`envoy::route`: routes and circuit breakers as a call) |
//! | `istio` | Istio `DestinationRule` and `VirtualService`, mapped through the Envoy settings they become (`istio::policy`, `istio::route`) |
//! | `resilience4j` | resilience4j instances, resolved through `baseConfig`, in Spring's aspect order |
//! | `grpc` | a gRPC service config: `methodConfig` timeouts, retry and hedging policies, throttling |
//! | `traces` | OTLP, Jaeger and Zipkin JSON traces: services, calls, stages, measured work and arrival rates |
//! | `write` | the one writer: a new scenario, or edits into an existing one, read back to check that it loads |
//!
//! **Layer rule:** import sits beside the format, above it: it may use `crate::format` (to
//! name paths, write edits, and check that what it writes loads and validates) and nothing
//! else of this crate; only the command line uses it.

pub mod calls;
mod envoy;
mod grpc;
mod istio;
pub mod ledger;
pub mod model;
pub mod node;
mod properties;
pub(crate) mod resilience4j;
pub mod ron;
pub(crate) mod spring;
pub mod traces;
pub mod tree;
mod write;

use crate::format::limits::RunLimits;
use model::System;
use std::fmt;
use tree::{Doc, Syntax};
pub use write::TableForm;

/// The configuration formats `resim import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFormat {
    /// Envoy's v3 API: a bootstrap's `static_resources`, or `clusters`, `resources` (xDS)
    /// and route configurations, in YAML or JSON.
    Envoy,
    /// Istio `DestinationRule` and `VirtualService`.
    Istio,
    /// resilience4j's Spring Boot configuration (`application.yml`, `.properties`).
    Resilience4j,
    /// gRPC service config (JSON).
    Grpc,
}

impl SourceFormat {
    /// The names `--from` takes.
    pub const NAMES: [&'static str; 4] = ["envoy", "istio", "resilience4j", "grpc"];

    /// The name, as `--from` and the comments write it.
    pub fn name(self) -> &'static str {
        match self {
            SourceFormat::Envoy => "envoy",
            SourceFormat::Istio => "istio",
            SourceFormat::Resilience4j => "resilience4j",
            SourceFormat::Grpc => "grpc",
        }
    }
}

impl std::str::FromStr for SourceFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "envoy" => Ok(SourceFormat::Envoy),
            "istio" => Ok(SourceFormat::Istio),
            "resilience4j" => Ok(SourceFormat::Resilience4j),
            "grpc" => Ok(SourceFormat::Grpc),
            _ => Err(format!(
                "unknown format {s:?}; expected one of: {}",
                SourceFormat::NAMES.join(", ")
            )),
        }
    }
}

/// An import that cannot be done: one line, with the file, the place and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportError(pub String);

impl ImportError {
    pub(crate) fn new(message: impl Into<String>) -> ImportError {
        ImportError(message.into())
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One configuration file as given: its path and its text.
#[derive(Debug, Clone)]
pub struct Input {
    /// The path as given.
    pub file: String,
    /// Its text.
    pub text: String,
}

/// Where the imported values go.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// An existing scenario (its path and text) to write into; `None` writes a new one.
    pub into: Option<Input>,
    /// The path of the call in it (`services.api.calls[0]`, `clients.users.call`).
    pub call: Option<String>,
    /// The upstream of the configuration that configures the call (a cluster, a host, an
    /// instance, a service); by default the one the call's target names.
    pub service: Option<String>,
    /// How the mapping table is written.
    pub table: TableForm,
    /// The share of requests traced, where the spans do not say it (`--sampling`).
    pub sampling: Option<f64>,
}

/// What an import gives: the scenario text and the mapping table.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The scenario, as RON text that loads and validates.
    pub text: String,
    /// The mapping table (for stderr), after the calibration report's table where traces
    /// were read.
    pub table: String,
    /// The calibration report, where traces were read.
    pub calibration: Option<traces::Calibration>,
}

/// The format of a file, from its content: `--from` when given, else what its keys say.
pub fn detect(
    input: &Input,
    from: Option<SourceFormat>,
) -> Result<(SourceFormat, Doc), ImportError> {
    let json = input.text.trim_start().starts_with(['{', '[']);
    let syntax = if input.file.ends_with(".properties") {
        Syntax::Properties
    } else if json {
        Syntax::Json
    } else {
        Syntax::Yaml
    };
    let doc = Doc::parse(&input.file, &input.text, syntax)?;
    if let Some(f) = from {
        return Ok((f, doc));
    }
    let root = &doc.root;
    let has = |k: &str| root.get(k).is_some();
    let format = if istio::holds_istio(root) {
        Some(SourceFormat::Istio)
    } else if root.as_object().is_some_and(|m| {
        // grpc-go reads a service config's keys in any case.
        m.keys().any(|k| {
            k.eq_ignore_ascii_case("methodConfig") || k.eq_ignore_ascii_case("retryThrottling")
        })
    }) {
        Some(SourceFormat::Grpc)
    } else if root.as_object().is_some_and(|m| {
        m.keys()
            .any(|k| k == "resilience4j" || k.starts_with("resilience4j."))
    }) {
        Some(SourceFormat::Resilience4j)
    } else if has("static_resources")
        || has("clusters")
        || has("virtual_hosts")
        || has("resources")
        || root.get("@type").is_some()
    {
        Some(SourceFormat::Envoy)
    } else {
        None
    };
    format.map(|f| (f, doc)).ok_or_else(|| {
        ImportError::new(format!(
            "{}: cannot tell the format from the content: expected Envoy v3 (`static_resources`, `clusters`, `resources` or `virtual_hosts` at the top), Istio (`kind: DestinationRule` or `VirtualService`), Spring (`resilience4j:`) or a gRPC service config (`methodConfig`); name it with --from {}",
            input.file,
            SourceFormat::NAMES.join("|")
        ))
    })
}

/// The system the files describe: each file read (its format from its content unless
/// `from`), each format's files read together as the mesh or library reads them, and the
/// formats' systems merged in the order of the files; trace files first, so that the
/// topology is theirs and the configurations' policies join it. `sampling` is the share of
/// requests the traces kept where their spans do not say it.
pub fn read(
    inputs: &[Input],
    streamed: &[traces::TraceFile],
    from: Option<SourceFormat>,
    sampling: Option<f64>,
) -> Result<(System, Option<traces::Calibration>), ImportError> {
    let traced: Vec<traces::Source> = streamed
        .iter()
        .map(traces::Source::File)
        .chain(
            inputs
                .iter()
                .filter_map(|i| traces::detect(&i.text).map(|f| traces::Source::Text(i, f))),
        )
        .collect();
    let mut by_format: Vec<(SourceFormat, Vec<Doc>)> = Vec::new();
    let mut systems = Vec::new();
    let mut calibration = None;
    if !traced.is_empty() {
        let (system, report) = traces::read(&traced, sampling)?;
        systems.push(system);
        calibration = Some(report);
    }
    for input in inputs {
        if traced
            .iter()
            .any(|t| matches!(t, traces::Source::Text(i, _) if std::ptr::eq(*i, input)))
        {
            continue;
        }
        let (format, doc) = detect(input, from)?;
        match by_format.iter_mut().find(|(f, _)| *f == format) {
            Some((_, docs)) => docs.push(doc),
            None => by_format.push((format, vec![doc])),
        }
    }
    for (format, docs) in &by_format {
        systems.push(match format {
            SourceFormat::Envoy => envoy::read(docs)?,
            SourceFormat::Resilience4j => resilience4j::read(docs)?,
            SourceFormat::Grpc => grpc::read(docs)?,
            SourceFormat::Istio => istio::read(docs)?,
        });
    }
    Ok((model::merge::merge(systems), calibration))
}

/// `resim import`: reads `inputs` (the format from each one's content unless `from`), and
/// writes the scenario `target` asks for, with its mapping table.
pub fn import(
    inputs: &[Input],
    from: Option<SourceFormat>,
    target: &Target,
    limits: &RunLimits,
) -> Result<Imported, ImportError> {
    import_streamed(inputs, &[], from, target, limits)
}

/// [`import`] with trace files read from disk as they go (`streamed`), before `inputs`.
pub fn import_streamed(
    inputs: &[Input],
    streamed: &[traces::TraceFile],
    from: Option<SourceFormat>,
    target: &Target,
    limits: &RunLimits,
) -> Result<Imported, ImportError> {
    let (system, calibration) = read(inputs, streamed, from, target.sampling)?;
    let files: Vec<&str> = streamed
        .iter()
        .map(|t| t.file.as_str())
        .chain(inputs.iter().map(|i| i.file.as_str()))
        .collect();
    let mut imported = write::write(&system, &files, target, limits)?;
    if let Some(mut c) = calibration {
        // The scenario written reads back (the writer checked it): a new one, or the one
        // `--into` wrote into, whose other calls keep their policies and are compared too.
        let file = target
            .into
            .as_ref()
            .map_or("imported.ron", |i| i.file.as_str());
        if let Ok(scenario) = crate::format::load::parse_with(file, &imported.text, limits) {
            c.disagreements = traces::policies::disagreements(&c, &scenario);
        }
        imported.table = format!("{}{}", c.text(), imported.table);
        imported.calibration = Some(c);
    }
    Ok(imported)
}
