//! A whole service exported at once (`--call services.NAME`): each of its calls written as an
//! export of that call alone, the documents made one the way the format holds several
//! upstreams: Envoy's `resources` one list (a cluster and a route configuration per call),
//! Istio's documents one after another, resilience4j's instances under their modules, gRPC's
//! `methodConfig` one list (with one `retryThrottling`, which a service config has once).

use super::text::Document;
use super::{ExportError, Exported, TargetFormat, document};
use crate::format::overrides::segment;
use crate::format::schema::Scenario;
use serde_json::{Map, Value};

/// The service at `path` (`services.NAME`) of `scenario`, every call of it, in `format`.
pub fn export(
    scenario: &Scenario,
    file: &str,
    path: &str,
    format: TargetFormat,
) -> Result<Exported, ExportError> {
    let name = path
        .strip_prefix("services.")
        .map(|n| n.trim_matches('"'))
        .filter(|n| scenario.services.contains_key(*n))
        .ok_or_else(|| {
            ExportError(format!(
                "{file}: --call {path}: no such service; the scenario has: {}",
                scenario
                    .services
                    .keys()
                    .map(|s| format!("services.{}", segment(s)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
    let calls = scenario.services[name].calls.len();
    let (mut documents, mut table) = (Vec::new(), String::new());
    for i in 0..calls {
        let call = format!("services.{}.calls[{i}]", segment(name));
        match document(scenario, file, &call, format, None) {
            Ok((d, sheet)) => {
                documents.push(d);
                table.push_str(&sheet.table(&call, format));
            }
            Err(e) => table.push_str(&format!("resim export: {call}: not written: {e}\n")),
        }
    }
    if documents.is_empty() {
        return Err(ExportError(format!(
            "{file}: --call {path}: no call of the service has anything to export to {}:\n{table}",
            format.name()
        )));
    }
    let (merged, conflicts) = merge(format, documents);
    for c in conflicts {
        table.push_str(&format!("  not exported: {c}\n"));
    }
    Ok(Exported {
        text: merged.text(),
        table,
        diff: String::new(),
        files: Vec::new(),
        unwritten: 0,
    })
}

/// The documents of several calls as one, and what could not be merged.
fn merge(format: TargetFormat, documents: Vec<Document>) -> (Document, Vec<String>) {
    let mut values: Vec<Value> = documents
        .iter()
        .flat_map(|d| d.values().iter().cloned())
        .collect();
    let mut conflicts = Vec::new();
    let merged = match format {
        TargetFormat::Istio => return (Document::Yaml(values), conflicts),
        TargetFormat::Envoy => {
            let resources: Vec<Value> = values
                .iter_mut()
                .flat_map(|v| match v["resources"].take() {
                    Value::Array(items) => items,
                    _ => Vec::new(),
                })
                .collect();
            let mut top = Map::new();
            top.insert("resources".into(), Value::Array(resources));
            Value::Object(top)
        }
        TargetFormat::Resilience4j => {
            let mut top = Value::Object(Map::new());
            for v in &values {
                deep_merge(&mut top, v);
            }
            top
        }
        TargetFormat::Grpc => {
            let mut methods = Vec::new();
            let mut throttling: Option<Value> = None;
            for v in &mut values {
                if let Value::Array(m) = v["methodConfig"].take() {
                    methods.extend(m);
                }
                if let Some(t) = v.get("retryThrottling") {
                    match &throttling {
                        None => throttling = Some(t.clone()),
                        Some(first) if first != t => conflicts.push(format!(
                            "retryThrottling {t}: a service config has one retryThrottling, for every method; the first call's ({first}) is written"
                        )),
                        Some(_) => {}
                    }
                }
            }
            let mut top = Map::new();
            top.insert("methodConfig".into(), Value::Array(methods));
            if let Some(t) = throttling {
                top.insert("retryThrottling".into(), t);
            }
            return (Document::Json(Value::Object(top)), conflicts);
        }
    };
    (Document::Yaml(vec![merged]), conflicts)
}

/// `from`'s fields into `into`, objects merged key by key (the first value of a key stands).
fn deep_merge(into: &mut Value, from: &Value) {
    if let (Value::Object(a), Value::Object(b)) = (into, from) {
        for (k, v) in b {
            match a.get_mut(k) {
                Some(x) => deep_merge(x, v),
                None => {
                    a.insert(k.clone(), v.clone());
                }
            }
        }
    }
}
