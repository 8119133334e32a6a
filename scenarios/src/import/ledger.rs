//! The [`Ledger`] of one configuration file: which of its fields a reader took, which it left
//! out on purpose and why, and how the file's paths are named in comments, the table and
//! errors. After a reader ran, every leaf of the file it did not take is listed with a
//! reason ([`Ledger::not_imported`]): that is what makes "never silently dropped" hold.
//!
//! # Decisions
//!
//! The sets are `BTreeSet`s and `BTreeMap`s of paths, so "was anything under this path taken"
//! is one range query (the paths under `a.b` sort right after `a.b.` and `a.b[`), not a scan of
//! every path taken: listing what was not imported stays linear in the file.

use super::SourceFormat;
use super::model::Origin;
use super::tree::{Doc, child, item_name};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// Why a field of the file is not in the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Skip {
    /// resim has nothing that behaves like it.
    NoCounterpart,
    /// resim models it in a simpler way, said in the reason.
    Simplification,
    /// Its value is outside what resim (or the source format) accepts.
    OutOfRange,
    /// Another setting for the same thing wins, as the mesh or library decides; the reason
    /// names it and where it is.
    Conflict,
}

impl Skip {
    /// How the table names it.
    pub fn label(self) -> &'static str {
        match self {
            Skip::NoCounterpart => "no counterpart",
            Skip::Simplification => "a simplification",
            Skip::OutOfRange => "out of range",
            Skip::Conflict => "a conflict",
        }
    }
}

/// How a format names the paths of its files: `label` turns a path (with its objects named,
/// see [`Ledger::name_objects`]) into the words of the format's documentation.
#[derive(Debug, Clone, Copy)]
pub struct Naming {
    /// The format, which comments name first (`envoy: …`).
    pub format: SourceFormat,
    /// The path as comments write it after the format's name.
    pub label: fn(&str) -> String,
    /// How the format's reader matches a key to a field, where its files may spell it in
    /// another case (grpc-go); `None` matches exactly.
    pub fold_case: Option<&'static str>,
}

/// The fields a reader took from one file, by their path in it.
#[derive(Debug)]
pub struct Ledger {
    naming: Naming,
    used: RefCell<BTreeSet<String>>,
    /// Fields left out on purpose, with the reason (a path and everything under it).
    skipped: RefCell<BTreeMap<String, (Skip, String)>>,
    /// Objects named by kind and name (`[0]` → `DestinationRule[reviews]`), longest prefix
    /// first when looked up.
    objects: RefCell<BTreeMap<String, String>>,
    /// Keys read as a field of another spelling (`MaxAttempts` as `maxAttempts`), by path.
    folded: RefCell<BTreeMap<String, String>>,
}

/// One field not imported: where it is, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    /// Where the field is.
    pub origin: Origin,
    /// What kind of reason.
    pub kind: Skip,
    /// The reason, in a sentence.
    pub reason: String,
}

impl Ledger {
    /// An empty ledger for a file of the format `naming` names.
    pub fn new(naming: Naming) -> Ledger {
        Ledger {
            naming,
            used: RefCell::default(),
            skipped: RefCell::default(),
            objects: RefCell::default(),
            folded: RefCell::default(),
        }
    }

    /// The key of `object` that stands for field `k`: `k` itself, else, where the format's
    /// reader folds case, a key of another case, recorded so that its label says so.
    pub fn key<'v>(&self, object: &'v Value, path: &str, k: &str) -> Option<&'v str> {
        let map = object.as_object()?;
        if let Some((key, _)) = map.get_key_value(k) {
            return Some(key.as_str());
        }
        self.naming.fold_case?;
        let (key, _) = map.iter().find(|(key, _)| key.eq_ignore_ascii_case(k))?;
        self.folded
            .borrow_mut()
            .insert(child(path, key), k.to_string());
        Some(key.as_str())
    }

    /// The format of the file.
    pub fn format(&self) -> SourceFormat {
        self.naming.format
    }

    /// Names the objects of a file of several: the path `prefix` (and what is under it) is
    /// written `label` (`[0].spec.host` as `DestinationRule[reviews].spec.host`).
    pub fn name_objects(&self, objects: Vec<(String, String)>) {
        *self.objects.borrow_mut() = objects.into_iter().collect();
    }

    /// `path` with its object named, as errors name it.
    pub fn name(&self, path: &str) -> String {
        let objects = self.objects.borrow();
        // The longest named prefix that ends where a step of the path does: a lookup per
        // step, so that naming costs the path's length, not the number of objects.
        let ends = path
            .bytes()
            .enumerate()
            .filter(|(_, b)| matches!(b, b'.' | b'['))
            .map(|(i, _)| i)
            .chain([path.len()]);
        let found = std::iter::once(0)
            .chain(ends)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .find_map(|end| objects.get_key_value(&path[..end]));
        match found {
            Some((prefix, label)) => {
                let rest = path[prefix.len()..].trim_start_matches('.');
                match (label.is_empty(), rest.is_empty()) {
                    (_, true) => label.clone(),
                    (true, false) => rest.to_string(),
                    (false, false) if rest.starts_with('[') => format!("{label}{rest}"),
                    (false, false) => format!("{label}.{rest}"),
                }
            }
            None => path.to_string(),
        }
    }

    /// `path` as comments and the table name it: `envoy: clusters[db].connect_timeout`; a
    /// key read in another case says so.
    pub fn label(&self, path: &str) -> String {
        let label = format!(
            "{}: {}",
            self.naming.format.name(),
            (self.naming.label)(&self.name(path))
        );
        match (self.folded.borrow().get(path), self.naming.fold_case) {
            (Some(field), Some(how)) => format!("{label} (read as {field}: {how})"),
            _ => label,
        }
    }

    /// Where `path` of `doc` is.
    pub fn origin(&self, doc: &Doc, path: &str) -> Origin {
        let spot = doc.spots.at(path);
        Origin {
            file: doc.file_of(spot).to_string(),
            line: spot.map_or(0, |s| s.line),
            column: spot.map_or(0, |s| s.column),
            path: path.to_string(),
            label: self.label(path),
        }
    }

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
    /// `reason` says why a field nothing read is left out.
    pub fn unused(
        &self,
        path: &str,
        node: &Value,
        reason: &dyn Fn(&str) -> (Skip, String),
        out: &mut Vec<(String, Skip, String)>,
    ) {
        if let Some((kind, why)) = self.skipped.borrow().get(path) {
            out.push((path.to_string(), *kind, why.clone()));
            return;
        }
        if self.used.borrow().contains(path) {
            return;
        }
        let touched = self.touched_under(path);
        match node {
            Value::Object(map) if touched => {
                for (k, v) in map {
                    self.unused(&child(path, k), v, reason, out);
                }
            }
            Value::Array(items) if touched => {
                for (i, v) in items.iter().enumerate() {
                    self.unused(&format!("{path}[{}]", item_name(v, i)), v, reason, out);
                }
            }
            _ => {
                let (kind, why) = reason(path);
                out.push((path.to_string(), kind, why));
            }
        }
    }

    /// Everything of `doc` not imported ([`Ledger::unused`]), and every field left out on
    /// purpose that is not a field of the tree (a condition inside a string:
    /// `retry_on:foo`), each with where it is.
    pub fn not_imported(&self, doc: &Doc, reason: &dyn Fn(&str) -> (Skip, String)) -> Vec<Skipped> {
        let mut out = Vec::new();
        self.unused("", &doc.root, reason, &mut out);
        let listed: BTreeSet<String> = out.iter().map(|(p, _, _)| p.clone()).collect();
        for (path, (kind, why)) in self.skipped.borrow().iter() {
            if !listed.contains(path)
                && self
                    .used
                    .borrow()
                    .contains(path.split(':').next().unwrap_or(path))
            {
                out.push((path.clone(), *kind, why.clone()));
            }
        }
        out.into_iter()
            .map(|(path, kind, reason)| Skipped {
                origin: self.origin(doc, &path),
                kind,
                reason,
            })
            .collect()
    }

    /// Whether anything under `path` was taken or skipped.
    fn touched_under(&self, path: &str) -> bool {
        if path.is_empty() {
            return !self.used.borrow().is_empty() || !self.skipped.borrow().is_empty();
        }
        // The paths under `path` start with `path.` or `path[`, which sort together right
        // after them: one range query for each.
        let under = |set: &mut dyn Iterator<Item = &String>, sep: char| {
            let prefix = format!("{path}{sep}");
            set.next().is_some_and(|p| p.starts_with(&prefix))
        };
        for sep in ['.', '['] {
            let start = format!("{path}{sep}");
            let used = self.used.borrow();
            if under(&mut used.range(start.clone()..), sep) {
                return true;
            }
            let skipped = self.skipped.borrow();
            if under(&mut skipped.range(start..).map(|(k, _)| k), sep) {
                return true;
            }
        }
        false
    }
}

/// The reason of a field of `what` (`Istio's networking API`) at `path` that no reader took
/// and its format knows no better reason for.
pub fn unknown(what: &str, path: &str) -> (Skip, String) {
    let field = path
        .rsplit(['.', '['])
        .next()
        .unwrap_or(path)
        .trim_end_matches(']');
    (
        Skip::NoCounterpart,
        format!(
            "not a field of {what} that the import reads ({field}): a setting resim does not model, a newer field, or a misspelling"
        ),
    )
}
