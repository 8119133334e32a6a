//! `resim export`: one call's pattern stack, and the settings of the service it calls, written
//! back in a production configuration format (Envoy v3, Istio, resilience4j's Spring Boot
//! configuration, a gRPC service config).
//!
//! Export is the inverse of the import's mapping, field by field and by semantics: a `Retry`'s
//! fully jittered exponential back-off from `delay_initial` doubling to `delay_max` is Envoy's
//! `retry_back_off`; the call's `deadline` is Envoy's route timeout, its `timeout` the
//! `per_try_timeout`; a per-attempt `Bulkhead` is Envoy's circuit breakers. Each value written
//! comes from the scenario. A setting the target format cannot express (a CoDel shedder into
//! resilience4j, a back-off Envoy does not have) is not dropped silently: the table on stderr
//! lists each scenario path, the target field it became and the value, then every setting not
//! exported with the reason. Importing what is exported gives the same values back (the
//! round-trip property tests in `scenarios/tests/suite/export.rs`).
//!
//! What is written is the caller's side of the call: the sidecar's cluster and route, the
//! client library's instances. The target service's own admission control (Envoy's adaptive
//! concurrency filter sits in the target's inbound sidecar) is listed, not written.
//!
//! | module | what |
//! |---|---|
//! | `against` | `--against ORIGINAL…`: the changes found in the format's words, and the file of the original each goes to |
//! | `unwritten` | `--against`: the original's files alone as the baseline, and the changes no object of them holds, listed |
//! | `anchors` | the object of the original each exported object stands for, and keys matched as the formats match them |
//! | `edit` | edits of the original's own text at the places its tree records, and the unified diff |
//! | `service` | a whole service (`--call services.NAME`): every call, the documents made one |
//! | `sheet` | the mapping table: what was written where, what was not and why |
//! | `text` | documents as YAML (`serde-saphyr`) or JSON (`serde_json`); durations in each format's syntax |
//! | `envoy` | an Envoy v3 `Cluster` and `RouteConfiguration` (xDS resources) |
//! | `istio` | an Istio `DestinationRule` and `VirtualService` |
//! | `resilience4j` | a Spring Boot `application.yml`: one instance per module, and the aspect orders |
//! | `grpc` | a gRPC service config: one `methodConfig`, and `retryThrottling` |
//!
//! **Layer rule:** export sits beside the format and the import, above both: it may use
//! `crate::format` (to read the scenario and name its paths) and `crate::import` (the format
//! names, a call's path); only the command line and the experiments use it.

mod against;
mod anchors;
mod edit;
mod envoy;
mod grpc;
mod istio;
mod resilience4j;
mod service;
mod sheet;
mod text;
mod unwritten;

use crate::format::schema::{Call, CallStage, Layer, Scenario, Service};
pub use crate::import::SourceFormat as TargetFormat;
use crate::import::calls::{call_at, call_paths};
use sheet::Sheet;
use std::fmt;

/// An export that cannot be done: one line, with the place and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportError(pub String);

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What an export gives: the document and the mapping table.
#[derive(Debug, Clone)]
pub struct Exported {
    /// The configuration, in the target format's syntax.
    pub text: String,
    /// The mapping table (for stderr).
    pub table: String,
    /// With `--against`, the unified diff of each original file and what it becomes (for
    /// stderr); else empty.
    pub diff: String,
    /// With `--against`, every original file as written back, in the order given (`text` is
    /// the first's when there is one file, and empty when there are several).
    pub files: Vec<WrittenBack>,
    /// With `--against`, how many changes of the scenario were not written back (each listed
    /// in the table): the command line exits 1 when there are any.
    pub unwritten: usize,
}

/// One original file written back by `--against`.
#[derive(Debug, Clone)]
pub struct WrittenBack {
    /// Its path, as given.
    pub file: String,
    /// Its new text: the original's, byte for byte, when no change reached it.
    pub text: String,
    /// Whether a change reached it.
    pub changed: bool,
}

/// `--against`: the original configuration to write back with the scenario's changes (one
/// file or several, read together as the import reads them), and the scenario's own text,
/// into which the original is imported to see what it says.
#[derive(Debug, Clone)]
pub struct Against {
    /// The original configuration's files.
    pub originals: Vec<crate::import::Input>,
    /// The scenario file the call is in (its text as written, before overrides).
    pub scenario: crate::import::Input,
}

/// The call an export writes, with the service it calls.
pub(crate) struct Target<'s> {
    /// Its path (`services.app.calls[0]`).
    pub path: String,
    /// The call.
    pub call: &'s Call,
    /// The name the configuration gives the upstream (`--service`, else the call's target).
    pub name: String,
    /// The service called, and its path (`services.db`).
    pub service: &'s Service,
    pub service_path: String,
}

impl Target<'_> {
    /// The path of the call's `i`-th layer.
    pub fn layer(&self, i: usize) -> String {
        format!("{}.stack[{i}]", self.path)
    }

    /// Whether the `Retry` at `i` retries what a gate after it refuses (a breaker, bulkhead,
    /// rate limiter or adaptive throttle of every attempt), which Envoy never does.
    pub fn retries_local_rejections(&self, i: usize, r: &patterns::retry::RetryConfig) -> bool {
        r.retry_on_local_rejection
            && self.call.stack[i + 1..].iter().any(|l| {
                matches!(
                    l,
                    Layer::Breaker(_) | Layer::Bulkhead(_) | Layer::Limiter(_) | Layer::Throttle(_)
                )
            })
    }

    /// The index of the stack's `Retry`, if any: layers before it act once per call, after it
    /// on every attempt.
    pub fn retry_index(&self) -> Option<usize> {
        self.call
            .stack
            .iter()
            .position(|l| matches!(l, Layer::Retry(_)))
    }
}

/// `resim export`: the call at `call_path` of `scenario` (read from `file`) in `format`, the
/// upstream named `service` (default: the call's target).
pub fn export(
    scenario: &Scenario,
    file: &str,
    call_path: &str,
    format: TargetFormat,
    service: Option<&str>,
) -> Result<Exported, ExportError> {
    if service.is_none() && call_path.starts_with("services.") && !call_path.contains(".calls[") {
        return service::export(scenario, file, call_path, format);
    }
    let (document, sheet) = document(scenario, file, call_path, format, service)?;
    Ok(Exported {
        table: sheet.table(call_path, format),
        text: document.text(),
        diff: String::new(),
        files: Vec::new(),
        unwritten: 0,
    })
}

/// `resim export --against ORIGINAL…`: the original configuration (each of its files) with
/// the fields the scenario's call changed changed (in its own text: its comments, order and
/// formatting kept), the diff of each file, and the table of the call's export with which
/// files changed and what could not be written back.
pub fn export_against(
    scenario: &Scenario,
    file: &str,
    call_path: &str,
    format: TargetFormat,
    service: Option<&str>,
    against: &Against,
) -> Result<Exported, ExportError> {
    let (after, sheet) = document(scenario, file, call_path, format, service)?;
    let name =
        service.unwrap_or_else(|| call_at(scenario, call_path).map_or("", |c| c.target.as_str()));
    let target = crate::import::Target {
        into: Some(unwritten::alone(&against.scenario, call_path)?),
        call: Some(call_path.to_string()),
        service: Some(name.to_string()),
        table: crate::import::TableForm::default(),
        sampling: None,
    };
    let limits = crate::format::limits::RunLimits::default();
    let files: Vec<&str> = against.originals.iter().map(|o| o.file.as_str()).collect();
    let files = files.join(", ");
    let imported = crate::import::import(&against.originals, Some(format), &target, &limits)
        .map_err(|e| ExportError(format!("--against {files}: {e}")))?;
    let original = crate::format::load::parse(&against.scenario.file, &imported.text)
        .map_err(|e| ExportError(format!("--against {files}: the original imported into {} does not load, which is a bug of resim export: {e}", against.scenario.file)))?;
    let (before, _) = document(&original, file, call_path, format, service)?;
    let (applied, no_object) = against::apply(format, name, &against.originals, &before, &after)?;
    let mut table = sheet.table(call_path, format);
    let mut diff = String::new();
    let mut written = Vec::new();
    let mut unwritten = no_object.len();
    for (input, a) in against.originals.iter().zip(applied) {
        unwritten += a.left.len();
        let changed = !a.diff.is_empty();
        table.push_str(&format!(
            "written into {}: {}\n",
            input.file,
            match (changed, against.originals.len()) {
                (false, 1) => "nothing changed (the diff below)",
                (false, _) => "nothing changed (left as it was, byte for byte)",
                (true, _) => "only the fields the scenario changed (the diff below)",
            }
        ));
        for note in &a.notes {
            table.push_str(&format!("  {note}\n"));
        }
        for left in &a.left {
            table.push_str(&format!("  not written back: {left}\n"));
        }
        diff.push_str(&a.diff);
        written.push(WrittenBack {
            file: input.file.clone(),
            text: a.text,
            changed,
        });
    }
    table.push_str(&unwritten::section(call_path, name, &no_object));
    Ok(Exported {
        table,
        text: match written.as_slice() {
            [one] => one.text.clone(),
            _ => String::new(),
        },
        diff,
        files: written,
        unwritten,
    })
}

/// The document of the call at `call_path` in `format`, and its mapping table.
fn document(
    scenario: &Scenario,
    file: &str,
    call_path: &str,
    format: TargetFormat,
    service: Option<&str>,
) -> Result<(text::Document, Sheet), ExportError> {
    let call = call_at(scenario, call_path).ok_or_else(|| {
        ExportError(format!(
            "{file}: --call {call_path}: no such call; the scenario has: {}",
            call_paths(scenario).join(", ")
        ))
    })?;
    let called = scenario.services.get(&call.target).ok_or_else(|| {
        ExportError(format!(
            "{file}: {call_path}.target: {:?} is not a service of the scenario",
            call.target
        ))
    })?;
    if let Some(name) = service
        && (name.is_empty() || name.contains(char::is_whitespace))
    {
        return Err(ExportError(format!(
            "--service: must be a name without spaces, got {name:?}"
        )));
    }
    let target = Target {
        path: call_path.to_string(),
        call,
        name: service.unwrap_or(&call.target).to_string(),
        service: called,
        service_path: format!("services.{}", call.target),
    };
    let mut sheet = Sheet::default();
    let document = match format {
        TargetFormat::Envoy => envoy::write(&target, &mut sheet),
        TargetFormat::Istio => istio::write(&target, &mut sheet),
        TargetFormat::Resilience4j => resilience4j::write(&target, &mut sheet),
        TargetFormat::Grpc => grpc::write(&target, &mut sheet),
    };
    leave_stage(scenario, call_path, &mut sheet);
    if sheet.written() == 0 {
        return Err(ExportError(format!(
            "{file}: {call_path}: nothing to export to {}: the call has no timeout, deadline or layer the format can express, and its target no setting it has; the table of what was left out:\n{}",
            format.name(),
            sheet.table(call_path, format)
        )));
    }
    Ok((document, sheet))
}

/// Lists what a service's call says of when it is made, which no format configures: its
/// `call_ratio` below 1, and a stage of `stages` that runs it beside others or picks it.
fn leave_stage(scenario: &Scenario, call_path: &str, sheet: &mut Sheet) {
    let Some((name, i)) = crate::import::calls::service_call(scenario, call_path) else {
        return;
    };
    let service = &scenario.services[name];
    let call = &service.calls[i];
    if call.call_ratio < 1.0 {
        sheet.leave(
            format!("{call_path}.call_ratio"),
            call.call_ratio.to_string(),
            "no counterpart: which requests make a call is the calling application's code, not its proxy's or client library's configuration",
        );
    }
    let stage = service.stages.iter().enumerate().find(|(_, st)| {
        st.calls().contains(&(i as u32))
            && (st.calls().len() > 1 || matches!(st, CallStage::Pick(_)))
    });
    if let Some((k, st)) = stage {
        sheet.leave(
            format!("services.{}.stages[{k}]", crate::format::overrides::segment(name)),
            st.to_string(),
            "no counterpart: which calls run together, or which one a request takes, is the calling application's code",
        );
    }
}

/// Lists layer `i` of the call as not exported, for `reason`.
pub(crate) fn leave_layer(t: &Target, i: usize, sheet: &mut Sheet, reason: &str) {
    let layer = &t.call.stack[i];
    sheet.leave(t.layer(i), layer.name(), reason);
}

/// The settings of the called service that `format` has no place for, listed: those it
/// does write are the ones in `written` (`balancer`, `outlier`, `health_check`).
pub(crate) fn leave_service(t: &Target, sheet: &mut Sheet, written: &[&str], format: &str) {
    let s = t.service;
    let at = |k: &str| format!("{}.{k}", t.service_path);
    let default = crate::format::schema::Balancer::default();
    if s.balancer != default && !written.contains(&"balancer") {
        sheet.leave(at("balancer"), sheet::ron(&s.balancer), format!("{format} configures no balancer on the call: set the channel's or proxy's load balancing by hand"));
    }
    if let (Some(o), false) = (&s.outlier, written.contains(&"outlier")) {
        sheet.leave(
            at("outlier"),
            sheet::ron(o),
            format!("{format} has no outlier ejection on the call"),
        );
    }
    if let (Some(h), false) = (&s.health_check, written.contains(&"health_check")) {
        sheet.leave(
            at("health_check"),
            sheet::ron(h),
            format!("{format} has no active health check on the call"),
        );
    }
    for (i, a) in s.admission.iter().enumerate() {
        sheet.leave(
            format!("{}.admission[{i}]", t.service_path),
            sheet::ron(a),
            "the target's own admission control, configured at the target (its inbound sidecar or server), not on the caller's call",
        );
    }
}

/// Lists the retry's settings that no format has a place for, when not resim's defaults.
pub(crate) fn leave_retry_extras(
    t: &Target,
    i: usize,
    r: &patterns::retry::RetryConfig,
    sheet: &mut Sheet,
    retry_after: bool,
) {
    let d = patterns::retry::RetryConfig::default();
    let at = |k: &str| format!("{}.{k}", t.layer(i));
    if r.attempt_duration_min != d.attempt_duration_min {
        sheet.leave(
            at("attempt_duration_min"),
            r.attempt_duration_min,
            "no counterpart: the format starts an attempt whatever time is left",
        );
    }
    if !retry_after && r.retry_after_max != d.retry_after_max {
        sheet.leave(
            at("retry_after_max"),
            r.retry_after_max,
            "no counterpart: the format does not wait for a Retry-After",
        );
    }
}
