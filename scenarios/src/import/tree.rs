//! A configuration file read into one tree, whatever its syntax (YAML through `serde-saphyr`,
//! a multi-document YAML file as the list of its documents, JSON through `serde_json`), and a
//! [`Ledger`] of which of its fields an importer used.
//!
//! The tree is a `serde_json::Value`: both parsers give one, so every importer walks the same
//! shape. A syntax error keeps the parser's line and column; an error in a value names the
//! field by its path in the file (`clusters[db].outlier_detection.interval`), the way the
//! source format's own documentation names it. The ledger is what makes "never silently
//! dropped" hold: after an importer ran, every leaf of the file that it did not take is listed
//! with a reason ([`Ledger::unused`]).

use super::ImportError;
use serde_json::Value;
use sim_core::SimDuration;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// A parsed configuration file.
#[derive(Debug, Clone)]
pub struct Doc {
    /// The path as given on the command line.
    pub file: String,
    /// Its content.
    pub root: Value,
}

/// Which syntax a file is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// YAML (a JSON file is YAML too, but is read by `serde_json` for its own messages).
    Yaml,
    /// JSON.
    Json,
    /// Java properties (Spring's `application.properties`), read by [`super::properties`].
    Properties,
}

impl Doc {
    /// Reads `text` as `syntax`. A syntax error is `file:line:column: message`.
    pub fn parse(file: &str, text: &str, syntax: Syntax) -> Result<Doc, ImportError> {
        let root = match syntax {
            Syntax::Json => serde_json::from_str::<Value>(text).map_err(|e| {
                ImportError::new(format!(
                    "{file}:{}:{}: {}",
                    e.line(),
                    e.column(),
                    json_message(&e)
                ))
            })?,
            Syntax::Properties => super::properties::parse(file, text)?,
            Syntax::Yaml => {
                // An empty file is an empty map, not an error of its own.
                if text.trim().is_empty() {
                    Value::Object(Default::default())
                } else {
                    yaml(file, text)?
                }
            }
        };
        Ok(Doc {
            file: file.to_string(),
            root,
        })
    }
}

/// A YAML text: one document as its value; several (`---` between them, as `kubectl` files
/// hold) as the list of their values, empty documents left out.
fn yaml(file: &str, text: &str) -> Result<Value, ImportError> {
    match serde_saphyr::from_str::<Value>(text) {
        Ok(v) => Ok(v),
        Err(e) if e.to_string().contains("multiple YAML documents") => {
            let mut docs =
                serde_saphyr::from_multiple::<Value>(text).map_err(|e| yaml_error(file, &e))?;
            docs.retain(|d| !d.is_null());
            Ok(match docs.len() {
                0 => Value::Object(Default::default()),
                1 => docs.remove(0),
                _ => Value::Array(docs),
            })
        }
        Err(e) => Err(yaml_error(file, &e)),
    }
}

/// serde_json's message without its own " at line L column C" (the location comes first).
fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

fn yaml_error(file: &str, e: &serde_saphyr::Error) -> ImportError {
    let options = serde_saphyr::render_options! {
        snippets: serde_saphyr::SnippetMode::Off,
    };
    let message = e.render_with_options(options);
    // The rendering may carry its own " at line L, column C"; the location comes first here.
    let message = match message.find(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message,
    };
    let message = message
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    match e.location() {
        Some(l) => ImportError::new(format!(
            "{file}:{}:{}: {message} (YAML)",
            l.line(),
            l.column()
        )),
        None => ImportError::new(format!("{file}: {message} (YAML)")),
    }
}

/// The fields an importer took, by their path in the file.
#[derive(Debug, Default)]
pub struct Ledger {
    used: RefCell<BTreeSet<String>>,
    /// Fields left out on purpose, with the reason (a path and everything under it).
    skipped: RefCell<BTreeMap<String, (Skip, String)>>,
}

/// Why a field of the file is not in the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Skip {
    /// resim has nothing that behaves like it.
    NoCounterpart,
    /// resim models it in a simpler way, said in the reason.
    Simplification,
    /// Its value is outside what resim (or the source format) accepts.
    OutOfRange,
}

impl Skip {
    /// How the table names it.
    pub fn label(self) -> &'static str {
        match self {
            Skip::NoCounterpart => "no counterpart",
            Skip::Simplification => "a simplification",
            Skip::OutOfRange => "out of range",
        }
    }
}

impl Ledger {
    /// Marks `path` as imported.
    pub fn take(&self, path: &str) {
        self.used.borrow_mut().insert(path.to_string());
    }

    /// Whether `path` was left out on purpose, with a reason of its own.
    pub fn is_skipped(&self, path: &str) -> bool {
        self.skipped.borrow().contains_key(path)
    }

    /// Whether `path` was imported.
    pub fn is_taken(&self, path: &str) -> bool {
        self.used.borrow().contains(path)
    }

    /// Marks `path` (and what is under it) as left out, for `reason`.
    pub fn skip(&self, path: &str, kind: Skip, reason: impl Into<String>) {
        self.skipped
            .borrow_mut()
            .insert(path.to_string(), (kind, reason.into()));
    }

    /// Every leaf of `node` (named `path`) that was neither taken nor skipped, and every
    /// skipped path under it, with its reason; a subtree nothing was taken from is one line.
    pub fn unused(&self, path: &str, node: &Value, out: &mut Vec<(String, Skip, String)>) {
        if let Some((kind, reason)) = self.skipped.borrow().get(path) {
            out.push((path.to_string(), *kind, reason.clone()));
            return;
        }
        if self.used.borrow().contains(path) {
            return;
        }
        let touched = self.touched_under(path);
        match node {
            Value::Object(map) if touched => {
                for (k, v) in map {
                    self.unused(&child(path, k), v, out);
                }
            }
            Value::Array(items) if touched => {
                for (i, v) in items.iter().enumerate() {
                    self.unused(&format!("{path}[{}]", item_name(v, i)), v, out);
                }
            }
            _ => out.push((
                path.to_string(),
                Skip::NoCounterpart,
                "resim has no counterpart".to_string(),
            )),
        }
    }

    /// Everything of `root` not imported ([`Ledger::unused`]), and every field left out on
    /// purpose that is not a field of the tree (a condition inside a string: `retry_on:foo`).
    pub fn not_imported(&self, root: &Value) -> Vec<(String, Skip, String)> {
        let mut out = Vec::new();
        self.unused("", root, &mut out);
        for (path, (kind, reason)) in self.skipped.borrow().iter() {
            if !out.iter().any(|(p, _, _)| p == path)
                && self
                    .used
                    .borrow()
                    .contains(path.split(':').next().unwrap_or(path))
            {
                out.push((path.clone(), *kind, reason.clone()));
            }
        }
        out
    }

    fn touched_under(&self, path: &str) -> bool {
        if path.is_empty() {
            return !self.used.borrow().is_empty() || !self.skipped.borrow().is_empty();
        }
        let prefixes = [format!("{path}."), format!("{path}[")];
        let touched = |p: &String| prefixes.iter().any(|pre| p.starts_with(pre.as_str()));
        self.used.borrow().iter().any(touched) || self.skipped.borrow().keys().any(touched)
    }
}

/// The path of field `k` under `path` (the top level has an empty path).
pub fn child(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

/// How a list entry is named in a path: by its `name` field when it has one (as Envoy and
/// Istio name clusters, routes and filters), else by its index.
pub fn item_name(v: &Value, i: usize) -> String {
    match v.get("name").and_then(Value::as_str) {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => i.to_string(),
    }
}

/// A place in a file: its value and its path, with the ledger that records what is read.
#[derive(Clone)]
pub struct Node<'a> {
    /// The value there.
    pub value: &'a Value,
    /// Its path in the file.
    pub path: String,
    pub(super) doc: &'a Doc,
    pub(super) ledger: &'a Ledger,
}

/// A field read from a file, with its path.
pub struct Found<T> {
    /// The value as read.
    pub value: T,
    /// Where it is (`clusters[db].connect_timeout`).
    pub path: String,
}

impl<'a> Node<'a> {
    /// The top of `doc`.
    pub fn root(doc: &'a Doc, ledger: &'a Ledger) -> Node<'a> {
        Node {
            value: &doc.root,
            path: String::new(),
            doc,
            ledger,
        }
    }

    /// An error about the value at `path`: the file, the path, what was expected.
    pub fn error(&self, path: &str, message: impl std::fmt::Display) -> ImportError {
        ImportError::new(format!("{}: {path}: {message}", self.doc.file))
    }

    /// The raw value of field `k`, if present (not marked as used).
    pub fn raw(&self, k: &str) -> Option<&'a Value> {
        self.value.get(k).filter(|v| !v.is_null())
    }

    /// Marks field `k` as used.
    pub fn take(&self, k: &str) {
        self.ledger.take(&child(&self.path, k));
    }

    /// Marks field `k` as left out, for `reason`.
    pub fn skip(&self, k: &str, kind: Skip, reason: impl Into<String>) {
        if self.raw(k).is_some() {
            self.ledger.skip(&child(&self.path, k), kind, reason);
        }
    }

    /// An unsigned integer field (protobuf's `UInt32Value` is a plain number in JSON).
    pub fn u32(&self, k: &str) -> Result<Option<Found<u32>>, ImportError> {
        let Some(v) = self.raw(k) else {
            return Ok(None);
        };
        let path = child(&self.path, k);
        let n = match v {
            Value::Number(n) => n.as_u64(),
            // Protobuf's JSON form writes 64-bit integers as strings; YAML users quote numbers.
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        }
        .ok_or_else(|| self.error(&path, format!("expected an unsigned integer, got {v}")))?;
        let n = u32::try_from(n)
            .map_err(|_| self.error(&path, format!("expected at most {}, got {n}", u32::MAX)))?;
        self.ledger.take(&path);
        Ok(Some(Found { value: n, path }))
    }

    /// A number field (protobuf's `double`, or a `Percent` written `{value: 20}`).
    pub fn f64(&self, k: &str) -> Result<Option<Found<f64>>, ImportError> {
        let Some(mut v) = self.raw(k) else {
            return Ok(None);
        };
        let mut path = child(&self.path, k);
        if let Some(inner) = v.get("value") {
            self.ledger.take(&path);
            path = child(&path, "value");
            v = inner;
        }
        let x = match v {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        }
        .filter(|x| x.is_finite())
        .ok_or_else(|| self.error(&path, format!("expected a number, got {v}")))?;
        self.ledger.take(&path);
        Ok(Some(Found { value: x, path }))
    }

    /// A string field.
    pub fn str(&self, k: &str) -> Result<Option<Found<String>>, ImportError> {
        let Some(v) = self.raw(k) else {
            return Ok(None);
        };
        let path = child(&self.path, k);
        let s = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => return Err(self.error(&path, format!("expected a string, got {v}"))),
        };
        self.ledger.take(&path);
        Ok(Some(Found { value: s, path }))
    }

    /// A boolean field.
    pub fn bool(&self, k: &str) -> Result<Option<Found<bool>>, ImportError> {
        let Some(v) = self.raw(k) else {
            return Ok(None);
        };
        let path = child(&self.path, k);
        let b = match v {
            Value::Bool(b) => *b,
            Value::String(s) if s == "true" || s == "false" => s == "true",
            _ => return Err(self.error(&path, format!("expected true or false, got {v}"))),
        };
        self.ledger.take(&path);
        Ok(Some(Found { value: b, path }))
    }

    /// A protobuf `Duration`: `"0.25s"` as its JSON form writes it (what Envoy's YAML takes),
    /// or `{seconds: 1, nanos: 0}`.
    pub fn duration(&self, k: &str) -> Result<Option<Found<SimDuration>>, ImportError> {
        let Some(v) = self.raw(k) else {
            return Ok(None);
        };
        let path = child(&self.path, k);
        let d = proto_duration(v).ok_or_else(|| {
            self.error(
                &path,
                format!(
                    "expected a google.protobuf.Duration, seconds with an \"s\" suffix such as \"0.25s\" or \"5s\", got {v}"
                ),
            )
        })?;
        let d = checked(d).map_err(|m| self.error(&path, m))?;
        self.ledger.take(&path);
        Ok(Some(Found { value: d, path }))
    }

    /// The object at field `k`, if present.
    pub fn object(&self, k: &str) -> Result<Option<Owned<'a>>, ImportError> {
        let Some(v) = self.raw(k) else {
            return Ok(None);
        };
        let path = child(&self.path, k);
        if !v.is_object() {
            return Err(self.error(
                &path,
                format!("expected an object (a map of fields), got {v}"),
            ));
        }
        Ok(Some(Owned {
            value: v,
            path,
            doc: self.doc,
            ledger: self.ledger,
        }))
    }

    /// The entries of the list at field `k` (none when absent), each named as
    /// [`item_name`] names it.
    pub fn list(&self, k: &str) -> Result<Vec<Owned<'a>>, ImportError> {
        let Some(v) = self.raw(k) else {
            return Ok(Vec::new());
        };
        let path = child(&self.path, k);
        let Value::Array(items) = v else {
            return Err(self.error(&path, format!("expected a list, got {v}")));
        };
        Ok(items
            .iter()
            .enumerate()
            .map(|(i, v)| Owned {
                value: v,
                path: format!("{path}[{}]", item_name(v, i)),
                doc: self.doc,
                ledger: self.ledger,
            })
            .collect())
    }
}

/// A [`Node`] that owns its path (a child of another node).
#[derive(Clone)]
pub struct Owned<'a> {
    /// The value there.
    pub value: &'a Value,
    /// Its path.
    pub path: String,
    doc: &'a Doc,
    ledger: &'a Ledger,
}

impl<'a> Owned<'a> {
    /// The value `value` of `doc` at `path`.
    pub fn at(doc: &'a Doc, ledger: &'a Ledger, value: &'a Value, path: String) -> Owned<'a> {
        Owned {
            value,
            path,
            doc,
            ledger,
        }
    }

    /// The node, to read fields from.
    pub fn node(&self) -> Node<'a> {
        Node {
            value: self.value,
            path: self.path.clone(),
            doc: self.doc,
            ledger: self.ledger,
        }
    }
}

/// A duration within the scenario format's cap (100 years).
fn checked(nanos: u128) -> Result<SimDuration, String> {
    let cap = SimDuration::CONFIG_MAX.as_nanos();
    if nanos > u128::from(cap) {
        return Err(format!(
            "is longer than resim accepts ({}); check the unit",
            SimDuration::CONFIG_MAX
        ));
    }
    Ok(SimDuration::from_nanos(nanos as u64))
}

/// Nanoseconds of a protobuf `Duration` in its JSON or object form.
fn proto_duration(v: &Value) -> Option<u128> {
    match v {
        Value::String(s) => decimal_seconds(s.trim().strip_suffix('s')?),
        Value::Object(o) => {
            let seconds = o.get("seconds").map_or(Some(0), |s| match s {
                Value::Number(n) => n.as_u64(),
                Value::String(s) => s.parse().ok(),
                _ => None,
            })?;
            let nanos = o.get("nanos").map_or(Some(0), Value::as_u64)?;
            (nanos < 1_000_000_000).then(|| u128::from(seconds) * 1_000_000_000 + u128::from(nanos))
        }
        _ => None,
    }
}

/// Nanoseconds of `"1.25"` seconds (at most nine decimals, as protobuf allows).
pub fn decimal_seconds(s: &str) -> Option<u128> {
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if whole.is_empty() && frac.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || frac.len() > 9
        || whole.len() > 12
    {
        return None;
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let frac_nanos: u128 = format!("{frac:0<9}").parse().ok()?;
    Some(whole * 1_000_000_000 + frac_nanos)
}
