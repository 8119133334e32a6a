//! What `--against` cannot write back because the original's files have no object for it: a
//! change of the scenario under a host's DestinationRule when only its VirtualServices are
//! given, under a subset the rule does not list, under a cluster when only the routes are.
//!
//! The changes are found against the `--against` files alone ([`alone`]): the files imported
//! into the scenario file with the call's settings and its target's cleared first, so that
//! nothing the scenario says and the files do not is taken for what the files say. A change
//! under an object of the files is written there ([`super::against`]); every other one is
//! listed here ([`unanchored`], [`line`]), in the format's words, with its new value.
//!
//! Such a change is listed, never written as a new object of its own: a new object beside the
//! ones resim was given is not safe to apply, and resim cannot know whether one exists. Istio
//! keeps the oldest DestinationRule's traffic policy for a host (a new rule for a host that
//! has one in a file not given would change nothing, and one older than it would override
//! it), and Envoy refuses a second cluster of one name. The command line exits 1 when any
//! change was not written back, after writing those that were.

use super::ExportError;
use super::anchors::Key;
use super::text::Document;
use crate::format::overrides::{Override, Source, segment};
use crate::import::Input;
use crate::import::calls::call_at;
use crate::import::tree::{child, item_name};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The scenario file `scenario` with what the call at `call_path` and the service it calls
/// take from a configuration cleared: the call's `timeout` and `deadline`, the service's
/// `balancer`, `outlier`, `health_check` and `admission` (the call's stack the import writes
/// whole). Importing the `--against` files into it gives the call as those files alone
/// configure it.
pub(super) fn alone(scenario: &Input, call_path: &str) -> Result<Input, ExportError> {
    let error = |e: String| {
        ExportError(format!(
            "{}: --against: the scenario file as written: {e}",
            scenario.file
        ))
    };
    let parsed = crate::format::load::parse(&scenario.file, &scenario.text)
        .map_err(|e| error(e.to_string()))?;
    let Some(call) = call_at(&parsed, call_path) else {
        return Ok(scenario.clone());
    };
    let mut clear: Vec<(String, String)> = Vec::new();
    if call.timeout.is_some() {
        clear.push((format!("{call_path}.timeout"), "None".into()));
    }
    if call.deadline.is_some() {
        clear.push((format!("{call_path}.deadline"), "None".into()));
    }
    if let Some(s) = parsed.services.get(&call.target) {
        let at = |k: &str| format!("services.{}.{k}", segment(&call.target));
        if s.balancer != Default::default() {
            let default = crate::format::schema::Balancer::default();
            clear.push((at("balancer"), super::sheet::ron(&default)));
        }
        if s.outlier.is_some() {
            clear.push((at("outlier"), "None".into()));
        }
        if s.health_check.is_some() {
            clear.push((at("health_check"), "None".into()));
        }
        if !s.admission.is_empty() {
            clear.push((at("admission"), "[]".into()));
        }
    }
    if clear.is_empty() {
        return Ok(scenario.clone());
    }
    let sets: Vec<Override> = clear
        .into_iter()
        .map(|(path, value)| Override {
            path,
            value,
            flag: Default::default(),
        })
        .collect();
    let text = Source::read(&scenario.file, &scenario.text)
        .and_then(|s| s.rewrite(&sets))
        .map_err(|e| error(e.to_string()))?;
    Ok(Input {
        file: scenario.file.clone(),
        text,
    })
}

/// The table's section of the changes no object holds (`lines`), of the call at `call_path`
/// to the upstream `name`; empty when there are none.
pub(super) fn section(call_path: &str, name: &str, lines: &[String]) -> String {
    if lines.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "not written back, {} changes no object of the --against files holds (give the file that has the object with --against, or make the change in it by hand; resim writes no new object beside ones it was not given, which could override them or be overridden):\n",
        lines.len()
    );
    for line in lines {
        out.push_str(&format!("  {call_path} ({name}): {line}\n"));
    }
    out
}

/// The changes of `after` from `before` that no object of the original holds, each a line
/// for the table; `anchored` are the exported objects the original has.
pub(super) fn lines(before: &Document, after: &Document, anchored: &[&[Key]]) -> Vec<String> {
    unanchored(before, after, anchored)
        .into_iter()
        .map(|(path, new)| line(after, &path, new.as_ref()))
        .collect()
}

/// The changes of `after` from `before` that no object of the original holds: each leaf path
/// of the documents (its first step the document's index) whose value differs and that is
/// under none of `anchored` (the exported objects the original has), with its new value
/// (`None`: the scenario no longer has it).
fn unanchored(
    before: &Document,
    after: &Document,
    anchored: &[&[Key]],
) -> Vec<(Vec<Key>, Option<Value>)> {
    let leaves_of = |d: &Document| {
        let mut out = BTreeMap::new();
        for (i, v) in d.values().iter().enumerate() {
            super::against::leaves(v, &mut vec![Key::Index(i)], &[], &mut out);
        }
        out
    };
    let (was, now) = (leaves_of(before), leaves_of(after));
    let paths: BTreeSet<&Vec<Key>> = was.keys().chain(now.keys()).collect();
    paths
        .into_iter()
        .filter(|p| was.get(*p) != now.get(*p))
        .filter(|p| !anchored.iter().any(|a| p.starts_with(a)))
        .map(|p| (p.clone(), now.get(p).cloned()))
        .collect()
}

/// A change `unanchored` found, as the table lists it: the field in the format's words (the
/// object it is in by its kind and name, `DestinationRule[reviews].spec.subsets[v1]…`, which
/// says what the files would need), and its new value.
fn line(after: &Document, path: &[Key], new: Option<&Value>) -> String {
    let (object, field) = words(after.values(), path);
    let value = match new {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "unset (the scenario no longer has it)".to_string(),
    };
    format!("{object}{field} = {value}: no object of the --against files holds it")
}

/// `path` in words: the innermost object on it that has a kind and a name (an Istio resource,
/// an Envoy resource by its `@type`), and the rest of the path from there, list entries named
/// by their `name` where they have one.
fn words(docs: &[Value], path: &[Key]) -> (String, String) {
    let (Some(Key::Index(d)), rest) = (path.first(), path.get(1..).unwrap_or_default()) else {
        return (String::new(), String::new());
    };
    let mut v = docs.get(*d).unwrap_or(&Value::Null);
    let mut object = kind(v).unwrap_or_else(|| format!("document {}", d + 1));
    let mut field = String::new();
    for k in rest {
        let next = match k {
            Key::Field(f) => {
                field = child(&field, f);
                v.get(f)
            }
            Key::Index(i) => {
                let n = v.get(i).unwrap_or(&Value::Null);
                field = format!("{field}[{}]", item_name(n, *i));
                Some(n)
            }
        };
        v = next.unwrap_or(&Value::Null);
        if let Some(k) = kind(v) {
            object = k;
            field.clear();
        }
    }
    let field = if field.is_empty() || field.starts_with('[') {
        field
    } else {
        format!(".{field}")
    };
    (object, field)
}

/// An object's kind and name, `DestinationRule[reviews]`, `Cluster[search]`, when it has both.
fn kind(v: &Value) -> Option<String> {
    let kind = v
        .get("kind")
        .and_then(Value::as_str)
        .or_else(|| v.get("@type")?.as_str()?.rsplit('.').next())?;
    let name = v
        .pointer("/metadata/name")
        .or_else(|| v.get("name"))
        .and_then(Value::as_str)?;
    Some(format!("{kind}[{name}]"))
}
