//! `resim export --against ORIGINAL…`: the original configuration, one file or several, with
//! only what the scenario changed changed, edited in its own text ([`super::edit`]) so that
//! its comments, order and formatting stay.
//!
//! What changed is found in the target format's words: the call is exported twice, as the
//! original configures it (the original alone imported into the scenario at the call,
//! [`super::unwritten::alone`], `before`) and as the scenario has it (`after`); the fields
//! whose values differ are the changes. Each
//! exported object stands for one object of the original ([`super::anchors`]), and a changed
//! field is written at the same path under it: replaced where the original writes it,
//! inserted beside its siblings where it does not. A Spring YAML key with dots
//! (`resilience4j.retry:`, `retry.instances.backendA:`) stands for the keys it joins. A change
//! that cannot be placed (a field the scenario no longer has, a list written as a block) is
//! listed, never dropped; so is a change under an object the original does not have (a
//! host's DestinationRule when only its VirtualServices are given: [`super::unwritten`]).
//!
//! **Several files.** Each object is looked for in the files in the order given, and its
//! changes go to the first file that has it (an Istio DestinationRule and a VirtualService in
//! files of their own each get their own); a file no change reaches is left as it was, byte
//! for byte. Spring's files are one environment: a change goes to the file whose value Spring
//! reads, the one of highest precedence that sets the property (`.properties` over YAML, a
//! profile's file over a plain one, a later file over an earlier one), said so when another
//! file sets it too; a property no file sets goes where the most of its path is already
//! written (the instance's own block), the higher precedence on a tie.

use super::anchors::{Anchor, Key, anchors, field, same_key};
use super::edit::{self, Edit, Source};
use super::text::Document;
use super::unwritten;
use super::{ExportError, TargetFormat};
use crate::import::resilience4j::sources;
use crate::import::spring::key_steps;
use crate::import::tree::{Doc, Spot, child, item_name};
use crate::import::{Input, detect};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One original file, edited: its new text, the diff, the changes that could not be placed,
/// and notes on where a change went and why.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    pub text: String,
    pub diff: String,
    pub left: Vec<String>,
    pub notes: Vec<String>,
}

/// Each of `originals` with the fields where `after` differs from `before` changed; `name` is
/// the upstream the call's configuration is in. And the changes no object of the originals
/// holds, each a line for the table ([`super::unwritten`]).
pub fn apply(
    format: TargetFormat,
    name: &str,
    originals: &[Input],
    before: &Document,
    after: &Document,
) -> Result<(Vec<Applied>, Vec<String>), ExportError> {
    let docs = originals
        .iter()
        .map(|o| detect(o, Some(format)).map(|(_, d)| d))
        .collect::<Result<Vec<Doc>, _>>()
        .map_err(|e| ExportError(e.0))?;
    let anchored = anchored(format, name, &docs);
    if anchored.is_empty() {
        let files: Vec<&str> = originals.iter().map(|o| o.file.as_str()).collect();
        return Err(ExportError(format!(
            "{}: --against: the original configures no {} named {name:?}; name the one that configures the call with --service",
            files.join(", "),
            match format {
                TargetFormat::Envoy => "cluster",
                TargetFormat::Istio => "host",
                TargetFormat::Resilience4j => "instance",
                TargetFormat::Grpc => "service",
            }
        )));
    }
    let mut placers: Vec<Placer> = docs
        .iter()
        .zip(originals)
        .map(|(d, o)| Placer::new(d, o))
        .collect();
    for (file, a) in &anchored {
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
        let mut changes: Vec<(Vec<Key>, Option<Value>)> = paths
            .into_iter()
            .filter(|p| was.get(*p) != now.get(*p))
            .map(|p| (p.clone(), now.get(p).cloned()))
            .collect();
        if format == TargetFormat::Istio {
            changes = whole_components(&docs[*file].root, a, changes, &mut placers[*file]);
        }
        for (path, new) in changes {
            let at = match format {
                TargetFormat::Resilience4j => spring_file(&mut placers, &a.original, &path),
                _ => *file,
            };
            placers[at].change(&a.original, &path, new.as_ref());
        }
    }
    let held: Vec<&[Key]> = anchored.iter().map(|(_, a)| &a.exported[..]).collect();
    let applied = placers.into_iter().map(Placer::finish);
    Ok((
        applied.collect::<Result<_, _>>()?,
        unwritten::lines(before, after, &held),
    ))
}

/// An Istio subset's changes to a component of its traffic policy (`outlierDetection`,
/// `connectionPool`, …) that the subset does not have but its host does, as the host's
/// component with the changes, written whole into the subset: Istio replaces a host's
/// component with a subset's whole, so a subset's component of only the changed fields would
/// reset the others, and a change to the host's would change its other subsets too.
fn whole_components(
    root: &Value,
    anchor: &Anchor,
    changes: Vec<(Vec<Key>, Option<Value>)>,
    placer: &mut Placer,
) -> Vec<(Vec<Key>, Option<Value>)> {
    let at = |keys: &[Key]| {
        keys.iter().try_fold(root, |v, k| match k {
            Key::Field(x) => field(v, x).map(|(_, n)| n),
            Key::Index(i) => v.get(i),
        })
    };
    let n = anchor.original.len();
    let is_subset = n >= 2 && anchor.original[n - 2] == Key::Field("subsets".into());
    let host_policy = is_subset
        .then(|| at(&anchor.original[..n - 2]))
        .flatten()
        .and_then(|spec| field(spec, "trafficPolicy"))
        .map(|(_, p)| p);
    let own = at(&anchor.original).and_then(|e| field(e, "trafficPolicy"));
    let mut out = Vec::new();
    let mut whole: BTreeMap<String, Value> = BTreeMap::new();
    for (path, new) in changes {
        let component = match path.as_slice() {
            [Key::Field(tp), Key::Field(c), rest @ ..] if tp == "trafficPolicy" => host_policy
                .and_then(|p| field(p, c))
                .filter(|_| own.and_then(|(_, o)| field(o, c)).is_none())
                .map(|(written, host)| (c.clone(), written, host, rest)),
            _ => None,
        };
        let Some((c, written, host, rest)) = component else {
            out.push((path, new));
            continue;
        };
        let value = whole.entry(c).or_insert_with(|| host.clone());
        let mut spelled = Vec::new();
        let mut v: &Value = host;
        for k in rest {
            let Key::Field(x) = k else { break };
            let name = field(v, x).map_or(x.as_str(), |(w, _)| w);
            spelled.push(Key::Field(name.to_string()));
            v = field(v, x).map_or(&Value::Null, |(_, n)| n);
        }
        match new {
            Some(x) => nest(value, &spelled, x),
            None => drop_at(value, &spelled),
        }
        let (_, _, subset, _) = placer.walk(&anchor.original);
        placer.notes.push(format!(
            "{} ({subset}): the subset has no {written} of its own, and Istio replaces the host's whole with a subset's: the host's, with the change, is written into the subset (the host and its other subsets keep theirs)",
            placer.doc.place(&subset)
        ));
    }
    placer.notes.dedup();
    for (c, value) in whole {
        out.push((
            vec![Key::Field("trafficPolicy".into()), Key::Field(c)],
            Some(value),
        ));
    }
    out
}

/// `value` without the field at `path`.
fn drop_at(value: &mut Value, path: &[Key]) {
    match path {
        [Key::Field(k)] => {
            if let Some(m) = value.as_object_mut() {
                m.remove(k);
            }
        }
        [Key::Field(k), rest @ ..] => {
            if let Some(v) = value.get_mut(k) {
                drop_at(v, rest);
            }
        }
        _ => {}
    }
}

/// The anchors of the upstream `name` in the files `docs`, each with the first file (in the
/// order given) that has it.
fn anchored(format: TargetFormat, name: &str, docs: &[Doc]) -> Vec<(usize, Anchor)> {
    let mut out: Vec<(usize, Anchor)> = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        for a in anchors(format, name, &doc.root) {
            if !out.iter().any(|(_, b)| b.exported == a.exported) {
                out.push((i, a));
            }
        }
    }
    out
}

/// Which of Spring's files the change at `rel` under `anchor` goes to: the file of highest
/// precedence that sets it (a note on the file that wins when several do), else the one that
/// has the most of its path, the higher precedence on a tie.
fn spring_file(placers: &mut [Placer], anchor: &[Key], rel: &[Key]) -> usize {
    let keys: Vec<Key> = anchor.iter().chain(rel).cloned().collect();
    let rank = |i: usize, p: &Placer| sources::precedence(p.file, i);
    let covered: Vec<usize> = placers.iter().map(|p| p.walk(&keys).1).collect();
    let setting: Vec<usize> = (0..placers.len())
        .filter(|&i| covered[i] == keys.len())
        .collect();
    let best = |among: &[usize], by: &dyn Fn(usize) -> (usize, (bool, bool, usize))| {
        among.iter().copied().max_by_key(|&i| by(i)).unwrap_or(0)
    };
    if setting.is_empty() {
        let all: Vec<usize> = (0..placers.len()).collect();
        return best(&all, &|i| (covered[i], rank(i, &placers[i])));
    }
    let won = best(&setting, &|i| (0, rank(i, &placers[i])));
    let others: Vec<&str> = setting
        .iter()
        .filter(|&&i| i != won)
        .map(|&i| placers[i].file)
        .collect();
    if let Some(&lower) = setting.iter().find(|&&i| i != won) {
        let why = sources::why(placers[won].file, placers[lower].file, (won, lower));
        let note = format!(
            "{}: also set in {}; written into {}, whose value Spring reads: {why}",
            words(&keys),
            others.join(", "),
            placers[won].file
        );
        placers[won].notes.push(note);
    }
    won
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
pub(super) fn leaves(
    v: &Value,
    at: &mut Vec<Key>,
    skip: &[&str],
    out: &mut BTreeMap<Vec<Key>, Value>,
) {
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
    notes: Vec<String>,
}

impl<'d> Placer<'d> {
    fn new(doc: &'d Doc, original: &'d Input) -> Placer<'d> {
        Placer {
            doc,
            file: &original.file,
            text: &original.text,
            properties: original.file.ends_with(".properties"),
            edits: Vec::new(),
            notes: Vec::new(),
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
            notes: self.notes,
        })
    }
}

/// `value` placed at `rest` under `entry`, objects and lists made on the way (an Envoy
/// cluster's `circuit_breakers.thresholds[0]` is a list's entry, not the list).
fn nest(entry: &mut Value, rest: &[Key], value: Value) {
    match rest.split_first() {
        None => *entry = value,
        Some((Key::Field(k), more)) => {
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            if let Some(map) = entry.as_object_mut() {
                nest(map.entry(k.clone()).or_insert(Value::Null), more, value);
            }
        }
        Some((Key::Index(i), more)) => {
            if !entry.is_array() {
                *entry = Value::Array(Vec::new());
            }
            if let Some(items) = entry.as_array_mut() {
                if items.len() <= *i {
                    items.resize(*i + 1, Value::Null);
                }
                nest(&mut items[*i], more, value);
            }
        }
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
