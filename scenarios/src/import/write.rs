//! What an import writes: a new scenario around the imported calls, or the calls and their
//! targets' settings written into an existing scenario (`--into FILE --call PATH`), and the
//! mapping table. Whatever is written is read back through [`crate::format`] and must load and
//! validate: an import never hands over a file `resim run` would refuse.

use super::calls::{call_at, call_paths};
use super::ron::{self, Field, Ron, Row};
use super::tree::Skip;
use super::{ImportError, Imported, Plan, SourceFormat, Target, Upstream};
use crate::format::limits::RunLimits;
use crate::format::load::parse_with;
use crate::format::overrides::{Override, Source};
use crate::format::schema::Call;

/// The scenario `target` asks for, and the mapping table.
pub fn write(
    plan: &Plan,
    files: &[&str],
    target: &Target,
    limits: &RunLimits,
) -> Result<Imported, ImportError> {
    if plan.upstreams.is_empty() {
        let expected = match plan.format {
            Some(SourceFormat::Resilience4j) => {
                "at least one instance (`resilience4j.retry.instances.NAME`, or of another module); `configs` alone are templates"
            }
            Some(SourceFormat::Grpc) => {
                "at least one `methodConfig` entry with a `name` naming its service"
            }
            Some(SourceFormat::Istio) => {
                "a DestinationRule or a VirtualService with an HTTP route to a host (`kind: DestinationRule` with `spec.host`)"
            }
            _ => "at least one Envoy cluster (`clusters:` with a `name`)",
        };
        return Err(ImportError::new(format!(
            "{}: no upstream to import: expected {expected}",
            files.join(", ")
        )));
    }
    let (text, rows, file) = match (&target.into, &target.call) {
        (None, Some(call)) => {
            return Err(ImportError::new(format!(
                "--call {call} names a call of an existing scenario: give that scenario with --into FILE, or leave --call out to write a new one"
            )));
        }
        (None, None) => {
            let (text, rows) = new_scenario(plan, files);
            (text, rows, "imported.ron".to_string())
        }
        (Some(into), call) => {
            let (text, rows) =
                into_scenario(plan, &into.file, &into.text, call.as_deref(), limits)?;
            (text, rows, into.file.clone())
        }
    };
    // What is written must load: an error here is a bug of the importer, said as one.
    parse_with(&file, &text, limits).map_err(|e| {
        ImportError::new(format!(
            "the scenario written does not load, which is a bug of resim import: {e}"
        ))
    })?;
    Ok(Imported {
        table: table(plan, files, &rows),
        text,
    })
}

/// A name for the calling service that no upstream has.
fn caller_name(plan: &Plan) -> String {
    let taken = |n: &str| plan.upstreams.iter().any(|u| u.name == n);
    (0..)
        .map(|i| {
            if i == 0 {
                "app".to_string()
            } else {
                format!("app-{i}")
            }
        })
        .find(|n| !taken(n) && n != "users")
        .unwrap_or_default()
}

fn placeholder(name: &str, value: Ron) -> Field {
    Field::plain(name, value)
        .noted("placeholder: not in the configuration, set it to your system's")
}

/// A scenario of its own: a client `users` calls a service that calls each upstream (the
/// service whose sidecar the configuration is), each upstream a service of its own.
fn new_scenario(plan: &Plan, files: &[&str]) -> (String, Vec<Row>) {
    let caller = caller_name(plan);
    let mut calls = Vec::new();
    let mut services = Vec::new();
    for u in &plan.upstreams {
        let mut call = vec![Field::from("target", ron::string(&u.name), &u.source)];
        call.extend(u.call.iter().cloned());
        calls.push(Field::plain("", ron::fields(call)));
        let mut service = vec![
            placeholder("replicas", ron::scalar(3)),
            placeholder("workers", ron::scalar(16)),
            placeholder(
                "work",
                Ron::Scalar("Exponential(mean: \"10ms\")".to_string()),
            ),
        ];
        service.extend(u.service.iter().cloned());
        services.push(Field::plain(&u.name, ron::fields(service)));
    }
    let mut app = vec![
        placeholder("workers", ron::scalar(200)),
        placeholder(
            "work",
            Ron::Scalar("Exponential(mean: \"1ms\")".to_string()),
        ),
    ];
    if calls.len() > 1 {
        app.push(
            Field::plain("call_mode", ron::scalar("Pick"))
                .noted("each request calls one upstream, in proportion to the calls' weights"),
        );
    }
    app.push(Field::plain("calls", Ron::List(calls)));
    services.insert(0, Field::plain(&caller, ron::fields(app)));
    let client = ron::fields(vec![
        placeholder(
            "load",
            Ron::Scalar("Open(rate: Constant(\"100/s\"))".to_string()),
        ),
        Field::plain("call", Ron::Scalar(format!("(target: {:?})", caller))),
    ]);
    let scenario = ron::named(
        "Scenario",
        vec![
            Field::plain("name", ron::string("imported")),
            Field::plain(
                "description",
                ron::string(&format!("imported from {}", files.join(", "))),
            ),
            placeholder("duration", ron::string("60s")),
            Field::plain("clients", Ron::Map(vec![Field::plain("users", client)])),
            Field::plain("services", Ron::Map(services)),
        ],
    );
    let mut text = header(files);
    scenario.write(0, &mut text);
    text.push('\n');
    let mut rows = Vec::new();
    for (i, u) in plan.upstreams.iter().enumerate() {
        let call = format!("services.{caller}.calls[{i}]");
        for f in &u.call {
            ron::rows(&format!("{call}.{}", f.name), f, &mut rows);
        }
        for f in &u.service {
            ron::rows(&format!("services.{}.{}", u.name, f.name), f, &mut rows);
        }
    }
    (text, rows)
}

/// The opening comment of a new scenario.
fn header(files: &[&str]) -> String {
    format!(
        "// Written by `resim import` from: {}\n\
         // A value whose comment names a field of the configuration comes from it; a placeholder\n\
         // is what a configuration does not say (load, capacity, work): set it to your system's\n\
         // before you trust a run.\n",
        files.join(", ")
    )
}

/// The fields of `call` that an import leaves as they are (all but its stack and what the
/// import sets), as RON serialized from the scenario.
fn kept_fields(call: &Call, imported: &[Field]) -> Vec<Field> {
    let sets = |name: &str| imported.iter().any(|f| f.name == name);
    let mut kept = vec![Field::plain("target", ron::string(&call.target))];
    if let (Some(t), false) = (call.timeout, sets("timeout")) {
        kept.push(Field::plain("timeout", ron::duration(t)));
    }
    if let (Some(d), false) = (call.deadline, sets("deadline")) {
        kept.push(Field::plain("deadline", ron::duration(d)));
    }
    if call.weight != 1.0 {
        kept.push(Field::plain("weight", ron::float(call.weight)));
    }
    kept.push(Field::plain(
        "safety",
        Ron::Scalar(serialized(&call.safety)),
    ));
    if let Some(f) = &call.fan_out {
        kept.push(Field::plain("fan_out", Ron::Scalar(serialized(f))));
    }
    if let Some(p) = &call.pool {
        kept.push(Field::plain("pool", Ron::Scalar(serialized(p))));
    }
    kept
}

/// A value of the scenario as one line of RON.
fn serialized<T: serde::Serialize>(value: &T) -> String {
    ::ron::to_string(value).unwrap_or_default()
}

/// The calls and settings of `plan` written into the scenario `text` at the call `call`.
fn into_scenario(
    plan: &Plan,
    file: &str,
    text: &str,
    call: Option<&str>,
    limits: &RunLimits,
) -> Result<(String, Vec<Row>), ImportError> {
    let scenario = parse_with(file, text, limits).map_err(|e| ImportError::new(e.to_string()))?;
    let paths = call_paths(&scenario);
    let Some(call_path) = call else {
        return Err(ImportError::new(format!(
            "{file}: --into needs --call PATH, the call to write the imported stack into; the scenario has: {}",
            paths.join(", ")
        )));
    };
    let existing = call_at(&scenario, call_path).ok_or_else(|| {
        ImportError::new(format!(
            "{file}: --call {call_path}: no such call; the scenario has: {}",
            paths.join(", ")
        ))
    })?;
    let upstream: &Upstream = plan
        .upstreams
        .iter()
        .find(|u| u.name == existing.target)
        .ok_or_else(|| {
            let names: Vec<&str> = plan.upstreams.iter().map(|u| u.name.as_str()).collect();
            ImportError::new(format!(
                "{file}: --call {call_path} calls {:?}, which the configuration does not configure; it has the {}: {}",
                existing.target,
                match plan.format {
                    Some(SourceFormat::Resilience4j) => "instances",
                    Some(SourceFormat::Grpc) => "services",
                    Some(SourceFormat::Istio) => "hosts",
                    _ => "clusters",
                },
                names.join(", ")
            ))
        })?;
    let mut fields = kept_fields(existing, &upstream.call);
    fields.extend(upstream.call.iter().cloned());
    let mut value = String::new();
    ron::fields(fields).write(3, &mut value);
    let mut sets = vec![Override {
        path: call_path.to_string(),
        value,
        flag: Default::default(),
    }];
    let mut rows = Vec::new();
    for f in &upstream.call {
        ron::rows(&format!("{call_path}.{}", f.name), f, &mut rows);
    }
    for f in &upstream.service {
        let path = format!("services.{}.{}", upstream.name, f.name);
        let mut value = String::new();
        f.value.write(3, &mut value);
        ron::rows(&path, f, &mut rows);
        sets.push(Override {
            path,
            value,
            flag: Default::default(),
        });
    }
    let source = Source::read(file, text).map_err(|e| ImportError::new(e.to_string()))?;
    let written = source
        .rewrite(&sets)
        .map_err(|e| ImportError::new(e.to_string()))?;
    Ok((written, rows))
}

/// The mapping table: what was imported where, then what was not and why.
fn table(plan: &Plan, files: &[&str], rows: &[Row]) -> String {
    let format = plan.format.map_or("", |f| f.name());
    let mut out = format!("resim import: {} ({format})\n", files.join(", "));
    out.push_str(&format!(
        "imported, {} fields (source field -> scenario path = value):\n",
        rows.len()
    ));
    for r in rows {
        out.push_str(&format!("  {} -> {} = {}", r.source, r.path, r.value));
        if let Some(n) = &r.note {
            out.push_str(&format!("  ({n})"));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "not imported, {} fields (source field: reason):\n",
        plan.skipped.len()
    ));
    for kind in [Skip::OutOfRange, Skip::Simplification, Skip::NoCounterpart] {
        for (path, k, reason) in plan.skipped.iter().filter(|s| s.1 == kind) {
            out.push_str(&format!("  {path}: {}: {reason}\n", k.label()));
        }
    }
    out
}
