//! The one writer: a [`System`] as scenario text. Without `--into`, a new scenario: every
//! upstream a service, every route a call of its caller, each caller a service (the
//! configuration's own service is `app`), a client `users` calling the callers nobody calls.
//! With `--into FILE --call PATH [--service NAME]`, the one call at `PATH` and the settings of
//! the service it calls, written into the file as edits, every other byte of it kept.
//! Whatever is written is read back through [`crate::format`] and must load and validate: an
//! import never hands over a file `resim run` would refuse.

use super::calls::{call_at, call_paths};
use super::model::{Host, System, Upstream, table};
use super::ron::{self, Field, Ron, Row};
use super::{ImportError, Imported, Target};
use crate::format::limits::{CALLS_MAX, RunLimits};
use crate::format::load::parse_with;
use crate::format::overrides::{Override, Source, segment};
use crate::format::schema::Call;
use std::collections::{BTreeMap, BTreeSet};

/// How the mapping table is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TableForm {
    /// For people: a line per field.
    #[default]
    Text,
    /// One JSON object.
    Json,
}

/// The scenario `target` asks for, and the mapping table.
pub fn write(
    system: &System,
    files: &[&str],
    target: &Target,
    limits: &RunLimits,
) -> Result<Imported, ImportError> {
    if system.upstreams.is_empty() {
        return Err(nothing_to_import(system, files));
    }
    let (text, rows, file) = match (&target.into, &target.call) {
        (None, Some(call)) => {
            return Err(ImportError::new(format!(
                "--call {call} names a call of an existing scenario: give that scenario with --into FILE, or leave --call out to write a new one"
            )));
        }
        (None, None) => {
            let (text, rows) = new_scenario(system, files)?;
            (text, rows, "imported.ron".to_string())
        }
        (Some(into), call) => {
            let (text, rows) = into_scenario(
                system,
                target,
                &into.file,
                &into.text,
                call.as_deref(),
                limits,
            )?;
            (text, rows, into.file.clone())
        }
    };
    // What is written must load: an error here is a bug of the importer, said as one.
    parse_with(&file, &text, limits).map_err(|e| {
        ImportError::new(format!(
            "the scenario written does not load, which is a bug of resim import: {e}"
        ))
    })?;
    let table = match target.table {
        TableForm::Text => table::text(system, files, &rows),
        TableForm::Json => table::json(system, files, &rows),
    };
    Ok(Imported {
        table,
        text,
        calibration: None,
    })
}

/// What a configuration without upstreams was expected to have.
fn nothing_to_import(system: &System, files: &[&str]) -> ImportError {
    use super::SourceFormat as F;
    let expected = match system.formats.last() {
        Some(F::Resilience4j) => {
            "at least one instance (`resilience4j.retry.instances.NAME`, or of another module); `configs` alone are templates"
        }
        Some(F::Grpc) => "at least one `methodConfig` entry with a `name` naming its service",
        Some(F::Istio) => {
            "a DestinationRule or a VirtualService with an HTTP route to a host (`kind: DestinationRule` with `spec.host`)"
        }
        _ => "at least one Envoy cluster (`clusters:` with a `name`)",
    };
    ImportError::new(format!(
        "{}: no upstream to import: expected {expected}",
        files.join(", ")
    ))
}

fn placeholder(name: &str, value: Ron) -> Field {
    Field::plain(name, value)
        .noted("placeholder: not in the configuration, set it to your system's")
}

/// The services of a new scenario and who calls whom: each upstream's service name, each
/// route's caller, in the order they come.
struct Topology {
    /// The scenario's name of each upstream.
    names: Vec<String>,
    /// The callers, in the order their first route comes; each with its routes.
    callers: Vec<(String, Vec<usize>)>,
}

impl Topology {
    fn of(system: &System) -> Topology {
        let names = service_names(system);
        let own = caller_name(&names);
        let mut callers: Vec<(String, Vec<usize>)> = Vec::new();
        // Each caller's place in `callers`: a mesh has thousands.
        let mut at: BTreeMap<String, usize> = BTreeMap::new();
        for (i, r) in system.routes.iter().enumerate() {
            let caller = r.caller.as_ref().unwrap_or(&own);
            match at.get(caller) {
                Some(&k) => callers[k].1.push(i),
                None => {
                    at.insert(caller.clone(), callers.len());
                    callers.push((caller.clone(), vec![i]));
                }
            }
        }
        Topology { names, callers }
    }
}

/// A service name for each upstream: its host's name, qualified by its namespace where two
/// namespaces have one of that name, and by its subset where a host has several.
fn service_names(system: &System) -> Vec<String> {
    let hosts: Vec<_> = system.upstreams.iter().map(|u| &u.host).collect();
    // The hosts of each name.
    let mut named: BTreeMap<&str, Vec<&Host>> = BTreeMap::new();
    for h in &hosts {
        named.entry(h.name.as_str()).or_default().push(h);
    }
    let mut names: Vec<String> = hosts
        .iter()
        .map(|h| {
            let same = &named[h.name.as_str()];
            let spaces = same.iter().any(|o| o.namespace != h.namespace);
            let subsets = same
                .iter()
                .any(|o| o.namespace == h.namespace && o.subset != h.subset);
            let mut name = h.name.clone();
            if let (true, Some(ns)) = (spaces, &h.namespace) {
                name = format!("{name}.{ns}");
            }
            if let (true, Some(s)) = (subsets, &h.subset) {
                name = format!("{name}-{s}");
            }
            name
        })
        .collect();
    // A qualified name another host already has: the host's full name tells them apart.
    let mut given: BTreeSet<String> = BTreeSet::new();
    for i in 0..names.len() {
        if given.contains(&names[i]) {
            names[i] = match &hosts[i].subset {
                Some(s) => format!("{}-{s}", hosts[i].qualified),
                None => hosts[i].qualified.clone(),
            };
        }
        given.insert(names[i].clone());
    }
    names
}

/// A name for the calling service that no upstream has.
fn caller_name(names: &[String]) -> String {
    let taken = |n: &str| names.iter().any(|u| u == n);
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

/// A scenario of its own: each caller a service calling its upstreams, each upstream a
/// service of its own, a client `users` calling the callers that no route calls.
fn new_scenario(system: &System, files: &[&str]) -> Result<(String, Vec<Row>), ImportError> {
    let topology = Topology::of(system);
    let (calls_of, mut rows) = calls(system, &topology, files)?;
    let names = &topology.names;
    let upstream_names: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    let mut services = Vec::new();
    // The callers that are not upstreams come first, as the configuration's own service did.
    let mut roots = Vec::new();
    // Each caller's calls by its name (one entry a caller), each moved once into its service.
    let order: Vec<String> = calls_of.iter().map(|(c, _)| c.clone()).collect();
    let mut calls_of: BTreeMap<String, Vec<Field>> = calls_of.into_iter().collect();
    for caller in order {
        if upstream_names.contains(caller.as_str()) {
            continue;
        }
        let calls = calls_of.remove(&caller).unwrap_or_default();
        let mut app = vec![
            placeholder("workers", ron::scalar(200)),
            placeholder(
                "work",
                Ron::Scalar("Exponential(mean: \"1ms\")".to_string()),
            ),
        ];
        app.extend(call_mode(calls.len()));
        app.push(Field::plain("calls", Ron::List(calls)));
        services.push(Field::plain(&caller, ron::fields(app)));
        roots.push(caller);
    }
    if roots.is_empty() && system.entries.is_empty() {
        return Err(ImportError::new(format!(
            "{}: every service the configuration names is called by another, so no request comes in from outside: resim's calls may not go round in a cycle; leave out a route of the cycle, or import the configuration call by call (--into FILE --call PATH --service NAME)",
            files.join(", ")
        )));
    }
    for (i, u) in system.upstreams.iter().enumerate() {
        let calls = calls_of.remove(&names[i]);
        services.push(Field::plain(
            &names[i],
            ron::fields(upstream_service(u, calls)),
        ));
    }
    let scenario = ron::named(
        "Scenario",
        vec![
            Field::plain("name", ron::string("imported")),
            Field::plain(
                "description",
                ron::string(&format!("imported from {}", files.join(", "))),
            ),
            placeholder("duration", ron::string("60s")),
            Field::plain(
                "clients",
                Ron::Map(if system.entries.is_empty() {
                    clients(&roots)
                } else {
                    entry_clients(system, names, &mut rows)
                }),
            ),
            Field::plain("services", Ron::Map(services)),
        ],
    );
    let mut text = header(files);
    scenario.write(0, &mut text);
    text.push('\n');
    Ok((text, rows))
}

/// An upstream as a service: placeholders for what its configuration does not set, its
/// settings, and its own calls (with their `call_mode` unless it sets `stages`).
fn upstream_service(u: &Upstream, calls: Option<Vec<Field>>) -> Vec<Field> {
    let sets = |name: &str| u.service.iter().any(|f| f.name == name);
    let mut service: Vec<Field> = [
        placeholder("replicas", ron::scalar(3)),
        placeholder("workers", ron::scalar(16)),
        placeholder(
            "work",
            Ron::Scalar("Exponential(mean: \"10ms\")".to_string()),
        ),
    ]
    .into_iter()
    .filter(|f| !sets(&f.name))
    .collect();
    service.extend(u.service.iter().cloned());
    if let Some(calls) = calls {
        if !sets("stages") {
            service.extend(call_mode(calls.len()));
        }
        service.push(Field::plain("calls", Ron::List(calls)));
    }
    service
}

/// Each caller's calls, and the rows of the table in the order of the calls (an upstream's
/// settings after its first call, and those of upstreams no route calls at the end).
type Calls = Vec<(String, Vec<Field>)>;

fn calls(
    system: &System,
    topology: &Topology,
    files: &[&str],
) -> Result<(Calls, Vec<Row>), ImportError> {
    let names = &topology.names;
    let mut rows = Vec::new();
    let mut listed = vec![false; system.upstreams.len()];
    let mut calls_of = Vec::new();
    for (caller, routes) in &topology.callers {
        too_many_calls(caller, routes.len(), files)?;
        let mut calls = Vec::new();
        for (k, &r) in routes.iter().enumerate() {
            let route = &system.routes[r];
            let path = format!("services.{}.calls[{k}]", segment(caller));
            let target = target(system, route, &names[route.upstream]);
            if target.note.is_some() {
                ron::rows(&format!("{path}.target"), &target, &mut rows);
            }
            let mut call = vec![target];
            call.extend(route.call.iter().cloned());
            for f in &route.call {
                ron::rows(&format!("{path}.{}", f.name), f, &mut rows);
            }
            if !std::mem::replace(&mut listed[route.upstream], true) {
                upstream_rows(system, names, route.upstream, &mut rows);
            }
            let entry = Field::plain("", ron::fields(call));
            calls.push(match &route.matches {
                Some(m) => entry.noted(format!(
                    "the route for {m}; its share of the requests is the call's weight"
                )),
                None => entry,
            });
        }
        calls_of.push((caller.clone(), calls));
    }
    for (i, done) in listed.into_iter().enumerate() {
        if !done {
            upstream_rows(system, names, i, &mut rows);
        }
    }
    Ok((calls_of, rows))
}

/// The `target` of `route`'s call, named `name`, from where the route names it; a subset
/// says so.
fn target(system: &System, route: &super::model::Route, name: &str) -> Field {
    let upstream = &system.upstreams[route.upstream];
    let origin = route
        .destination
        .clone()
        .unwrap_or_else(|| upstream.origin.clone());
    let field = Field::from("target", ron::string(name), origin);
    match &upstream.host.subset {
        Some(s) => field.noted(format!(
            "the subset {s} of {}: its endpoints are the service's replicas",
            upstream.host.qualified
        )),
        None => field,
    }
}

/// A client for each root caller: `users` for one, `users-NAME` for several.
fn clients(roots: &[String]) -> Vec<Field> {
    roots
        .iter()
        .map(|root| {
            let name = if roots.len() == 1 {
                "users".to_string()
            } else {
                format!("users-{root}")
            };
            let client = ron::fields(vec![
                placeholder(
                    "load",
                    Ron::Scalar("Open(rate: Constant(\"100/s\"))".to_string()),
                ),
                Field::plain("call", Ron::Scalar(format!("(target: {root:?})"))),
            ]);
            Field::plain(&name, client)
        })
        .collect()
}

/// A client for each entry the traces show, named as the traces name it (with the service
/// it calls where one client calls several).
fn entry_clients(system: &System, names: &[String], rows: &mut Vec<Row>) -> Vec<Field> {
    let entries = &system.entries;
    entries
        .iter()
        .map(|e| {
            let target = &names[e.upstream];
            let name = if entries.iter().filter(|o| o.client == e.client).count() > 1 {
                format!("{}-{target}", e.client)
            } else {
                e.client.clone()
            };
            ron::rows(&format!("clients.{}.load", segment(&name)), &e.load, rows);
            let client = ron::fields(vec![
                e.load.clone(),
                Field::plain("call", Ron::Scalar(format!("(target: {target:?})"))),
            ]);
            Field::plain(&name, client)
        })
        .collect()
}

/// The table's rows of upstream `i`'s service settings.
fn upstream_rows(system: &System, names: &[String], i: usize, rows: &mut Vec<Row>) {
    for f in &system.upstreams[i].service {
        ron::rows(
            &format!("services.{}.{}", segment(&names[i]), f.name),
            f,
            rows,
        );
    }
}

/// A service's `call_mode` when it has several calls: each request makes one of them.
fn call_mode(calls: usize) -> Option<Field> {
    (calls > 1).then(|| {
        Field::plain("call_mode", ron::scalar("Pick"))
            .noted("each request calls one upstream, in proportion to the calls' weights")
    })
}

/// A caller with more upstreams than a service of the format may call is refused with the
/// number and the limit, in the configuration's words.
fn too_many_calls(caller: &str, calls: usize, files: &[&str]) -> Result<(), ImportError> {
    if calls <= CALLS_MAX {
        return Ok(());
    }
    Err(ImportError::new(format!(
        "{}: the service {caller:?} calls {calls} upstreams, and a resim service may make at most {CALLS_MAX} calls; import the configuration into an existing scenario call by call (--into FILE --call PATH --service NAME), or split it",
        files.join(", ")
    )))
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
    if call.weight != 1.0 && !sets("weight") {
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

/// The upstream whose settings go into the call: the one `--service` names, else the one the
/// call's target names.
fn chosen(
    system: &System,
    file: &str,
    call_path: &str,
    target: &str,
    service: Option<&str>,
) -> Result<usize, ImportError> {
    let name = service.unwrap_or(target);
    let found: Vec<usize> = (0..system.upstreams.len())
        .filter(|&i| system.upstreams[i].host.answers_to(name))
        .collect();
    let names = || {
        system
            .upstreams
            .iter()
            .map(|u| match &u.host.subset {
                Some(s) => format!("{}/{s}", u.host.qualified),
                None => u.host.qualified.clone(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (found.as_slice(), service) {
        ([one], _) => Ok(*one),
        ([], None) => Err(ImportError::new(format!(
            "{file}: --call {call_path} calls {target:?}, which the configuration does not configure; it has the {}: {}",
            system.kind().plural(),
            names()
        ))),
        ([], Some(s)) => Err(ImportError::new(format!(
            "--service {s}: the configuration has no such {}; it has: {}",
            &system.kind().plural()[..system.kind().plural().len() - 1],
            names()
        ))),
        (many, _) => Err(ImportError::new(format!(
            "--service {name}: names {} upstreams of the configuration ({}); name one by its full name (and /SUBSET), e.g. --service {}",
            many.len(),
            many.iter()
                .map(|&i| system.upstreams[i].host.qualified.clone())
                .collect::<Vec<_>>()
                .join(", "),
            system.upstreams[many[0]].host.qualified
        ))),
    }
}

/// The call and settings of one upstream of `system` written into the scenario `text` at the
/// call `call`.
fn into_scenario(
    system: &System,
    target: &Target,
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
    let upstream = chosen(
        system,
        file,
        call_path,
        &existing.target,
        target.service.as_deref(),
    )?;
    let route = system
        .routes
        .iter()
        .find(|r| r.upstream == upstream)
        .map_or(&[][..], |r| r.call.as_slice());
    let mut fields = kept_fields(existing, route);
    fields.extend(route.iter().cloned());
    let mut value = String::new();
    ron::fields(fields).write(3, &mut value);
    let mut sets = vec![Override {
        path: call_path.to_string(),
        value,
        flag: Default::default(),
    }];
    let mut rows = Vec::new();
    for f in route {
        ron::rows(&format!("{call_path}.{}", f.name), f, &mut rows);
    }
    for f in &system.upstreams[upstream].service {
        let path = format!("services.{}.{}", segment(&existing.target), f.name);
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
