//! Several Spring configuration files made one environment, as Spring Boot makes its property
//! sources one: each file's dotted keys nested, then the files laid over each other from the
//! lowest precedence up, a property of a higher one replacing the same property (by its
//! relaxed name) of a lower one, and each replaced value listed with both places.
//!
//! # Decisions
//!
//! The precedence is Spring Boot's for files of one location: a profile-specific file
//! (`application-prod.yml`) over a plain one, a `.properties` file over a YAML one of the same
//! kind (Spring's documented rule when both are present), and among files of the same kind a
//! later one on the command line over an earlier one (as later `spring.config.location`
//! entries override earlier ones). Maps merge key by key; a list is replaced whole, as Spring
//! binds a list from the highest source that has it.

use super::label;
use crate::import::ImportError;
use crate::import::ledger::{Skip, Skipped};
use crate::import::model::Origin;
use crate::import::spring::{self, relaxed};
use crate::import::tree::{Doc, Spots, child, parent};
use serde_json::Value;
use std::collections::BTreeMap;

/// How much a file counts: the higher wins (`index`: its place among the files given).
pub(crate) fn precedence(file: &str, index: usize) -> (bool, bool, usize) {
    let name = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let stem = name.split('.').next().unwrap_or(name);
    let profile = stem.starts_with("application-") || stem.starts_with("bootstrap-");
    (profile, name.ends_with(".properties"), index)
}

/// Why `file` wins over `lower`, in Spring's words (`index`: their places among the files).
pub(crate) fn why(file: &str, lower: &str, index: (usize, usize)) -> &'static str {
    match (precedence(file, index.0), precedence(lower, index.1)) {
        ((true, _, _), (false, _, _)) => "a profile-specific file wins over a plain one",
        ((_, true, _), (_, false, _)) => "Spring reads a .properties file over a YAML one",
        _ => "a later file on the command line wins over an earlier one",
    }
}

/// One file's nested tree, ready to lay over the others.
struct Source<'d> {
    doc: &'d Doc,
    index: usize,
    root: Value,
}

/// The environment of `docs`: one tree, the place of each value in its own file, and the
/// values a higher file replaced.
pub(super) fn environment(docs: &[Doc]) -> Result<(Doc, Vec<Skipped>), ImportError> {
    let mut sources = Vec::new();
    for (index, doc) in docs.iter().enumerate() {
        let root =
            spring::nest(&doc.root).map_err(|m| ImportError::new(format!("{}: {m}", doc.file)))?;
        sources.push(Source { doc, index, root });
    }
    sources.sort_by_key(|s| precedence(&s.doc.file, s.index));
    let mut replaced = Vec::new();
    let mut root = Value::Object(Default::default());
    let mut spots = Spots::default();
    // Which source gave each value (or subtree) so far, by path.
    let mut given: BTreeMap<String, usize> = BTreeMap::new();
    for (rank, s) in sources.iter().enumerate() {
        lay(
            &mut root,
            &s.root,
            "",
            rank,
            &mut given,
            &mut |path, lower| {
                let (low, high) = (&sources[lower], s);
                replaced.push(Skipped {
                    origin: origin(low.doc, path),
                    kind: Skip::Conflict,
                    reason: format!(
                        "overridden by {} ({}): {}",
                        origin(high.doc, path).label,
                        high.doc.place(path),
                        why(&high.doc.file, &low.doc.file, (high.index, low.index))
                    ),
                });
            },
        );
        spots.overlay(s.doc.spots.clone().in_file(s.index));
    }
    let files: Vec<String> = docs.iter().map(|d| d.file.clone()).collect();
    let doc = Doc {
        file: files.join(", "),
        files,
        root,
        spots,
    };
    Ok((doc, replaced))
}

/// Where `path` of `doc` is, named as resilience4j's comments name it.
fn origin(doc: &Doc, path: &str) -> Origin {
    let spot = doc.spots.at(path);
    Origin {
        file: doc.file.clone(),
        line: spot.map_or(0, |s| s.line),
        column: spot.map_or(0, |s| s.column),
        path: path.to_string(),
        label: format!("resilience4j: {}", label(path)),
    }
}

/// Lays `top` (of source `rank`) over `base` at `path`; `replaced(path, lower)` hears of each
/// value of a lower source that `top` replaces.
fn lay(
    base: &mut Value,
    top: &Value,
    path: &str,
    rank: usize,
    given: &mut BTreeMap<String, usize>,
    replaced: &mut dyn FnMut(&str, usize),
) {
    match (base, top) {
        (Value::Object(b), Value::Object(t)) => {
            for (k, v) in t {
                // The same property under another spelling is the same property.
                let same = b.keys().find(|bk| relaxed(bk) == relaxed(k)).cloned();
                match same {
                    Some(bk) => {
                        let mut old = b.remove(&bk).unwrap_or(Value::Null);
                        if bk != *k {
                            rename(given, &child(path, &bk), &child(path, k));
                        }
                        lay(&mut old, v, &child(path, k), rank, given, replaced);
                        b.insert(k.clone(), old);
                    }
                    None => {
                        b.insert(k.clone(), v.clone());
                        given.insert(child(path, k), rank);
                    }
                }
            }
        }
        (base, top) => {
            // The source of this value: its own, or the subtree's it came in with.
            let mut at = Some(path);
            while let Some(p) = at {
                if let Some(lower) = given.get(p) {
                    replaced(path, *lower);
                    break;
                }
                at = parent(p);
            }
            *base = top.clone();
            given.insert(path.to_string(), rank);
        }
    }
}

/// The values given at `from` (and under it) now stand at `to`.
fn rename(given: &mut BTreeMap<String, usize>, from: &str, to: &str) {
    let moved: Vec<String> = given
        .range(from.to_string()..)
        .map(|(p, _)| p)
        .take_while(|p| p.starts_with(from))
        .filter(|p| p.len() == from.len() || matches!(p.as_bytes()[from.len()], b'.' | b'['))
        .cloned()
        .collect();
    for p in moved {
        if let Some(rank) = given.remove(&p) {
            given.insert(format!("{to}{}", &p[from.len()..]), rank);
        }
    }
}
