//! `resim export --against ORIGINAL`: the original configuration with only what the scenario
//! changed changed, edited in its own text ([`super::edit`]) so that its comments, order and
//! formatting stay.
//!
//! What changed is found in the target format's words: the call is exported twice, as the
//! original configures it (the original imported into the scenario at the call, `before`) and
//! as the scenario has it (`after`); the fields whose values differ are the changes. Each
//! exported object stands for one object of the original ([`Anchor`]: the cluster and the
//! route of an Envoy upstream, the DestinationRule (or its subset) and the VirtualService's
//! route of an Istio host, the resilience4j configuration, the gRPC `methodConfig` that names
//! the service and the config's top), and a changed field is written at the same path under
//! it: replaced where the original writes it, inserted beside its siblings where it does not.
//! Keys are matched as the formats match them (Spring's relaxed names, grpc-go's any case,
//! protobuf JSON's camelCase): case, `-` and `_` aside; a Spring YAML key with dots
//! (`resilience4j.retry:`, `retry.instances.backendA:`) stands for the keys it joins. A change that cannot be placed (a field
//! the scenario no longer has, a list written as a block) is listed, never dropped.

use super::edit::{self, Edit, Source};
use super::text::Document;
use super::{ExportError, TargetFormat};
use crate::import::spring::key_steps;
use crate::import::tree::{Doc, Spot, child, item_name};
use crate::import::{Input, detect};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One step of a path into a document.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Field(String),
    Index(usize),
}

/// An object of the exported document and the object of the original it stands for.
struct Anchor {
    exported: Vec<Key>,
    original: Vec<Key>,
    /// Fields of the exported object that are not the original's to change (names, matches).
    skip: &'static [&'static str],
}

/// The original, edited: its new text, the diff, and the changes that could not be placed.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    pub text: String,
    pub diff: String,
    pub left: Vec<String>,
}

/// `original` with the fields where `after` differs from `before` changed; `name` is the
/// upstream the call's configuration is in.
pub fn apply(
    format: TargetFormat,
    name: &str,
    original: &Input,
    before: &Document,
    after: &Document,
) -> Result<Applied, ExportError> {
    let (_, doc) = detect(original, Some(format)).map_err(|e| ExportError(e.0))?;
    let anchors = anchors(format, name, &doc.root);
    if anchors.is_empty() {
        return Err(ExportError(format!(
            "{}: --against: the original configures no {} named {name:?}; name the one that configures the call with --service",
            original.file,
            match format {
                TargetFormat::Envoy => "cluster",
                TargetFormat::Istio => "host",
                TargetFormat::Resilience4j => "instance",
                TargetFormat::Grpc => "service",
            }
        )));
    }
    let mut place = Placer::new(&doc, original);
    for a in &anchors {
        let (Some(b), Some(x)) = (
            get_in(before.values(), &a.exported),
            get_in(after.values(), &a.exported),
        ) else {
            continue;
        };
        let (mut was, mut now) = (BTreeMap::new(), BTreeMap::new());
        leaves(b, &mut Vec::new(), a.skip, &mut was);
        leaves(x, &mut Vec::new(), a.skip, &mut now);
        let paths: std::collections::BTreeSet<&Vec<Key>> = was.keys().chain(now.keys()).collect();
        for path in paths {
            let new = now.get(path);
            if was.get(path) != new {
                place.change(&a.original, path, new);
            }
        }
    }
    place.finish()
}

/// The value at `path` of `docs` (its first step the document's index).
fn get_in<'v>(docs: &'v [Value], path: &[Key]) -> Option<&'v Value> {
    let (Key::Index(d), rest) = path.split_first()? else {
        return None;
    };
    rest.iter().try_fold(docs.get(*d)?, |v, k| match k {
        Key::Field(f) => v.get(f),
        Key::Index(i) => v.get(i),
    })
}

/// The leaves of `v` by path: scalars and lists of scalars; objects and lists of objects are
/// walked into. `skip` names fields of the top to leave out.
fn leaves(v: &Value, at: &mut Vec<Key>, skip: &[&str], out: &mut BTreeMap<Vec<Key>, Value>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                if at.is_empty() && skip.contains(&k.as_str()) {
                    continue;
                }
                at.push(Key::Field(k.clone()));
                leaves(v, at, skip, out);
                at.pop();
            }
        }
        Value::Array(items) if items.iter().any(Value::is_object) => {
            for (i, v) in items.iter().enumerate() {
                at.push(Key::Index(i));
                leaves(v, at, skip, out);
                at.pop();
            }
        }
        leaf => {
            out.insert(at.clone(), leaf.clone());
        }
    }
}

/// A key as the formats compare them: case, `-` and `_` aside.
fn same_key(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        s.chars()
            .filter(|c| *c != '-' && *c != '_')
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    norm(a) == norm(b)
}

/// The field of `v` that `k` names, as the original writes its key.
fn field<'v>(v: &'v Value, k: &str) -> Option<(&'v str, &'v Value)> {
    let map = v.as_object()?;
    map.get_key_value(k)
        .or_else(|| map.iter().find(|(x, _)| same_key(x, k)))
        .map(|(x, v)| (x.as_str(), v))
}

/// The dotted keys of `v` whose steps are the first keys of `keys` (`resilience4j.retry` for
/// `resilience4j`, `retry`, …), as Spring reads a dotted YAML key: each key, how many steps it
/// has, its value.
fn dotted<'v>(v: &'v Value, keys: &[Key]) -> Vec<(&'v str, usize, &'v Value)> {
    let Some(map) = v.as_object() else {
        return Vec::new();
    };
    map.iter()
        .filter_map(|(k, n)| {
            let steps = key_steps(k);
            let matches = steps.len() > 1
                && steps.len() <= keys.len()
                && steps
                    .iter()
                    .zip(keys)
                    .all(|(s, k)| matches!(k, Key::Field(f) if same_key(s, f)));
            matches.then_some((k.as_str(), steps.len(), n))
        })
        .collect()
}

/// Changes of the original, placed as they come.
struct Placer<'d> {
    doc: &'d Doc,
    file: &'d str,
    text: &'d str,
    properties: bool,
    edits: Vec<Edit>,
    /// Fields to insert: the tree path of the object, the field, its value (merged).
    inserts: BTreeMap<(Vec<Key>, String), Value>,
    left: Vec<String>,
}

impl<'d> Placer<'d> {
    fn new(doc: &'d Doc, original: &'d Input) -> Placer<'d> {
        Placer {
            doc,
            file: &original.file,
            text: &original.text,
            properties: original.file.ends_with(".properties"),
            edits: Vec::new(),
            inserts: BTreeMap::new(),
            left: Vec::new(),
        }
    }

    /// How far the original has `keys`: the keys as it writes them (its tree path, as the
    /// tree's spots name it), how many of `keys` they cover, and the value there. A dotted key
    /// (Spring's `resilience4j.retry:`, or `retry.instances.backendA:` under `resilience4j:`)
    /// covers as many keys as it has steps; where a plain key and dotted ones could each
    /// start the path, the one that leads furthest into the original is taken.
    fn walk(&self, keys: &[Key]) -> (Vec<Key>, usize, String, &'d Value) {
        self.descend(&self.doc.root, String::new(), keys)
    }

    fn descend(
        &self,
        v: &'d Value,
        path: String,
        keys: &[Key],
    ) -> (Vec<Key>, usize, String, &'d Value) {
        let steps: Vec<(Key, usize, String, &'d Value)> = match keys.first() {
            None => Vec::new(),
            Some(Key::Field(f)) => field(v, f)
                .map(|(x, n)| (x, 1, n))
                .into_iter()
                .chain(dotted(v, keys))
                .map(|(x, steps, n)| (Key::Field(x.into()), steps, child(&path, x), n))
                .collect(),
            Some(Key::Index(i)) => v
                .get(i)
                .map(|n| {
                    (
                        Key::Index(*i),
                        1,
                        format!("{path}[{}]", item_name(n, *i)),
                        n,
                    )
                })
                .into_iter()
                .collect(),
        };
        let mut best = (Vec::new(), 0, path, v);
        for (key, steps, p, n) in steps {
            let (mut written, covered, p, n) = self.descend(n, p, &keys[steps..]);
            if steps + covered > best.1 {
                written.insert(0, key);
                best = (written, steps + covered, p, n);
            }
        }
        best
    }

    /// The field at `rel` under the original's `anchor` becomes `new` (`None`: the scenario
    /// has it no more).
    fn change(&mut self, anchor: &[Key], rel: &[Key], new: Option<&Value>) {
        let keys: Vec<Key> = anchor.iter().chain(rel).cloned().collect();
        let (written, covered, path, old) = self.walk(&keys);
        let shown = words(&keys);
        let Some(new) = new else {
            if covered == keys.len() {
                self.left.push(format!(
                    "{}: {shown}: the scenario no longer sets it (the export has no {shown}): remove it by hand if the scenario's meaning is wanted",
                    self.doc.place(&path)
                ));
            }
            return;
        };
        if covered == keys.len() {
            match self.replace(&path, old, new) {
                Ok(e) => self.edits.push(e),
                Err(why) => self.left.push(format!(
                    "{}: {shown} = {new}: not written: {why}; edit it by hand",
                    self.doc.place(&path)
                )),
            }
            return;
        }
        let (Key::Field(missing), rest) = (&keys[covered], &keys[covered + 1..]) else {
            self.left.push(format!(
                "{}: {shown} = {new}: not written: the original's list has no such entry; add it by hand",
                self.doc.place(&path)
            ));
            return;
        };
        let entry = self
            .inserts
            .entry((written, missing.clone()))
            .or_insert(Value::Null);
        nest(entry, rest, new.clone());
    }

    fn replace(&self, path: &str, old: &Value, new: &Value) -> Result<Edit, String> {
        let spot = self
            .doc
            .spots
            .exact(path)
            .ok_or("its place in the file is not known")?;
        if self.properties {
            return property_value(self.text, spot, new);
        }
        Source::new(self.text, self.json()).replace(spot, old, new)
    }

    fn json(&self) -> bool {
        self.text.trim_start().starts_with(['{', '['])
    }

    /// Every insertion made, the text edited, and its diff.
    fn finish(mut self) -> Result<Applied, ExportError> {
        for ((at, key), value) in std::mem::take(&mut self.inserts) {
            let (_, _, path, node) = self.walk(&at);
            let made = if self.properties {
                Ok(property_line(self.text, &child(&path, &key), &value))
            } else {
                let siblings: Vec<(String, Spot)> = node
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter_map(|(k, _)| Some((k.clone(), self.doc.spots.exact(&child(&path, k))?)))
                    .collect();
                let empty = self.doc.spots.exact(&path);
                Source::new(self.text, self.json()).insert(&siblings, empty, &key, &value)
            };
            match made {
                Ok(e) => self.edits.push(e),
                Err(why) => self.left.push(format!(
                    "{}: {}: not written: {why}; add it by hand",
                    self.doc.place(&path),
                    child(&path, &key)
                )),
            }
        }
        let text = edit::apply(self.text, self.edits).map_err(|e| {
            ExportError(format!(
                "{}: --against: {e}, which is a bug of resim export",
                self.file
            ))
        })?;
        Ok(Applied {
            diff: edit::diff(self.file, self.text, &text),
            text,
            left: self.left,
        })
    }
}

/// `value` placed at `rest` under `entry`, objects made on the way.
fn nest(entry: &mut Value, rest: &[Key], value: Value) {
    let Some((Key::Field(k), more)) = rest.split_first() else {
        *entry = value;
        return;
    };
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    if let Some(map) = entry.as_object_mut() {
        nest(map.entry(k.clone()).or_insert(Value::Null), more, value);
    }
}

/// A path in words (`route.retry_policy.num_retries`).
fn words(keys: &[Key]) -> String {
    keys.iter().fold(String::new(), |p, k| match k {
        Key::Field(f) => child(&p, f),
        Key::Index(i) => format!("{p}[{i}]"),
    })
}

/// A scalar as a `.properties` value (a list: its items joined by commas).
fn property_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(property_text)
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    }
}

/// The value of the property whose key is at `spot` replaced by `new`.
fn property_value(text: &str, spot: Spot, new: &Value) -> Result<Edit, String> {
    let src = Source::new(text, false);
    let start = src.offset(spot).ok_or("its place is not known")?;
    let end = text[start..].find('\n').map_or(text.len(), |e| start + e);
    let line = &text[start..end];
    let sep = line.find(['=', ':']).ok_or("its line has no `=`")?;
    let value_at = sep + 1 + (line[sep + 1..].len() - line[sep + 1..].trim_start().len());
    Ok(Edit {
        start: start + value_at,
        end: end - (line.len() - line.trim_end().len()),
        text: property_text(new),
    })
}

/// A new property line at the end of the file (each leaf of `value` its own line).
fn property_line(text: &str, key: &str, value: &Value) -> Edit {
    let mut lines = Vec::new();
    let mut stack = vec![(key.to_string(), value)];
    while let Some((k, v)) = stack.pop() {
        match v {
            Value::Object(map) => stack.extend(map.iter().rev().map(|(x, v)| (child(&k, x), v))),
            leaf => lines.push(format!("{k}={}", property_text(leaf))),
        }
    }
    let lead = if text.ends_with('\n') || text.is_empty() {
        ""
    } else {
        "\n"
    };
    Edit {
        start: text.len(),
        end: text.len(),
        text: format!("{lead}{}\n", lines.join("\n")),
    }
}

// ---- which object of the original each exported object stands for ----

fn f(k: &str) -> Key {
    Key::Field(k.to_string())
}

/// The anchors of the upstream `name` in the original `root`.
fn anchors(format: TargetFormat, name: &str, root: &Value) -> Vec<Anchor> {
    let mut out = Vec::new();
    let doc0 = |keys: &[Key]| -> Vec<Key> {
        std::iter::once(Key::Index(0))
            .chain(keys.iter().cloned())
            .collect()
    };
    match format {
        TargetFormat::Envoy => envoy(name, root, &mut out),
        TargetFormat::Istio => istio(name, root, &mut out),
        TargetFormat::Resilience4j => out.push(Anchor {
            exported: vec![Key::Index(0)],
            original: Vec::new(),
            skip: &[],
        }),
        TargetFormat::Grpc => {
            let names_it = |v: &Value, _: Option<&str>| {
                field(v, "name")
                    .and_then(|(_, n)| n.as_array())
                    .is_some_and(|entries| {
                        entries.iter().any(|e| {
                            field(e, "service").and_then(|(_, s)| s.as_str()) == Some(name)
                                || name == "default" && e.as_object().is_some_and(Map::is_empty)
                        })
                    })
            };
            if let Some(at) = find(root, &mut Vec::new(), &names_it) {
                out.push(Anchor {
                    exported: doc0(&[f("methodConfig"), Key::Index(0)]),
                    original: at,
                    skip: &["name"],
                });
                out.push(Anchor {
                    exported: vec![Key::Index(0)],
                    original: Vec::new(),
                    skip: &["methodConfig"],
                });
            }
        }
    }
    out
}

/// The Envoy anchors: the cluster named `name` and the route to it.
fn envoy(name: &str, root: &Value, out: &mut Vec<Anchor>) {
    let doc0 = |keys: &[Key]| -> Vec<Key> {
        std::iter::once(Key::Index(0))
            .chain(keys.iter().cloned())
            .collect()
    };
    if let Some(at) = find(root, &mut Vec::new(), &|v, parent| {
        v.get("name").and_then(Value::as_str) == Some(name)
            && (parent == Some("clusters")
                || v.get("@type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t.ends_with(".Cluster")))
    }) {
        out.push(Anchor {
            exported: doc0(&[f("resources"), Key::Index(0)]),
            original: at,
            skip: &[],
        });
    }
    if let Some(at) = find(root, &mut Vec::new(), &|v, _| {
        v.get("route")
            .and_then(|r| r.get("cluster"))
            .and_then(Value::as_str)
            == Some(name)
    }) {
        out.push(Anchor {
            exported: doc0(&[
                f("resources"),
                Key::Index(1),
                f("virtual_hosts"),
                Key::Index(0),
                f("routes"),
                Key::Index(0),
            ]),
            original: at,
            skip: &["match"],
        });
    }
}

/// The Istio anchors: the DestinationRule of the host (or its subset's entry) and the
/// VirtualService route to it. `name` is `host` or `host/subset`.
fn istio(name: &str, root: &Value, out: &mut Vec<Anchor>) {
    let (host, subset) = match name.split_once('/') {
        Some((h, s)) => (h, Some(s)),
        None => (name, None),
    };
    let answers =
        |h: Option<&str>| h.is_some_and(|h| h == host || h.starts_with(&format!("{host}.")));
    let kind = |v: &Value, k: &str| v.get("kind").and_then(Value::as_str) == Some(k);
    let rule = find(root, &mut Vec::new(), &|v, _| {
        kind(v, "DestinationRule") && answers(v.pointer("/spec/host").and_then(Value::as_str))
    });
    if let Some(mut at) = rule {
        at.push(f("spec"));
        match subset {
            None => out.push(Anchor {
                exported: vec![Key::Index(0), f("spec")],
                original: at,
                skip: &["host", "subsets"],
            }),
            Some(s) => {
                let spec = at.iter().try_fold(root, |v, k| match k {
                    Key::Field(x) => v.get(x),
                    Key::Index(i) => v.get(i),
                });
                let entry = spec
                    .and_then(|v| v.get("subsets"))
                    .and_then(Value::as_array)
                    .and_then(|l| {
                        l.iter()
                            .position(|e| e.get("name").and_then(Value::as_str) == Some(s))
                    });
                if let Some(i) = entry {
                    at.extend([f("subsets"), Key::Index(i)]);
                    out.push(Anchor {
                        exported: vec![Key::Index(0), f("spec"), f("subsets"), Key::Index(0)],
                        original: at,
                        skip: &["name", "labels"],
                    });
                }
            }
        }
    }
    let route = find(root, &mut Vec::new(), &|v, parent| {
        parent == Some("http")
            && v.get("route").and_then(Value::as_array).is_some_and(|ds| {
                ds.iter().any(|d| {
                    answers(d.pointer("/destination/host").and_then(Value::as_str))
                        && d.pointer("/destination/subset").and_then(Value::as_str) == subset
                })
            })
    });
    if let Some(at) = route {
        out.push(Anchor {
            exported: vec![Key::Index(1), f("spec"), f("http"), Key::Index(0)],
            original: at,
            skip: &["route", "match"],
        });
    }
}

/// The path of the first value under `v` (depth first, in the file's order) that `pred`
/// holds for, given the key of the field or list it is in.
fn find(
    v: &Value,
    at: &mut Vec<Key>,
    pred: &dyn Fn(&Value, Option<&str>) -> bool,
) -> Option<Vec<Key>> {
    fn go(
        v: &Value,
        parent: Option<&str>,
        at: &mut Vec<Key>,
        pred: &dyn Fn(&Value, Option<&str>) -> bool,
    ) -> Option<Vec<Key>> {
        if v.is_object() && pred(v, parent) {
            return Some(at.clone());
        }
        match v {
            Value::Object(map) => map.iter().find_map(|(k, x)| {
                at.push(Key::Field(k.clone()));
                let r = go(x, Some(k), at, pred);
                at.pop();
                r
            }),
            Value::Array(items) => items.iter().enumerate().find_map(|(i, x)| {
                at.push(Key::Index(i));
                let r = go(x, parent, at, pred);
                at.pop();
                r
            }),
            _ => None,
        }
    }
    go(v, None, at, pred)
}
